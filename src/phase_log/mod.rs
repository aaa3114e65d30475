//! The phase log: an append-only JSON Lines file, written and fsynced record by record, so a
//! crash loses at most the segment in progress.
//!
//! Format (version 2), documented in docs/phase-log.md:
//! - first line of each run: `{"version":2,"kind":"run",...}` with the schedule and the
//!   histogram layout;
//! - then `{"version":2,"kind":"phase",...}` per scenario and segment: the aggregates, per
//!   command kind and per digest, of the scenario's measured windows in that segment (one slot
//!   of a slow schedule, or every slot of a few seconds of a fast one), the measured time, the
//!   cost of the switches and the statements binned by time since the switch;
//! - `{"version":2,"kind":"traffic",...}` when the run ends: every command relayed during it,
//!   per command kind and per digest, measured or not (traffic.rs).
//!
//! Version 1 logs (one record per phase, no segment fields) read as they always did: every new
//! field is optional, and a record without `measured_ms` measured from `measure_from_ms` to
//! `measure_to_ms`.
//!
//! The log is the one on-disk format shared by the controller (which writes it) and the
//! analysis, reports, admin tables, live view and demo (which read it); it sits below all of
//! them and must not depend on any of them. The schedule conventions a reader needs to make
//! sense of the records (the block order, the names of startup twins) live here too.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use psprobe_core::protocol::CommandKind;
use serde::{Deserialize, Serialize};

mod block_order;
mod claims;
pub(crate) mod group_names;
mod naming;
mod traffic;

#[cfg(test)]
mod format_tests;

pub(crate) use block_order::block_order;
pub(crate) use claims::ClaimRecord;
pub(crate) use naming::{twin_name, SUFFIX};
pub(crate) use traffic::{traffic_between, TrafficRecord};

use crate::stats::histogram::{BUCKET_FACTOR, FIRST_BOUND_NS};
use crate::stats::store::DigestId;
use crate::stats::{DigestStats, ScenarioId, StoreSnapshot, Totals};

pub(crate) const PHASE_LOG_VERSION: u32 = 2;

/// `schedule` of records switched at runtime, fast or slow.
pub(crate) const FAST: &str = "fast";
/// `schedule` of records entered through a server restart (pfsoff, startup scenarios, and the
/// reference they are compared with).
pub(crate) const SLOW: &str = "slow";

fn is_false(b: &bool) -> bool {
    !*b
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub(crate) struct RunRecord {
    pub version: u32,
    pub kind: String,
    pub started_at_ms: u64,
    pub upstream: String,
    pub role: String,
    pub scenarios: Vec<String>,
    pub phase_ms: u64,
    pub settle_ms: u64,
    pub restart_settle_ms: u64,
    pub blocks: Option<u64>,
    pub seed: u64,
    /// Bucket `i` of every histogram spans `[first_bound_ns·factor^i, first_bound_ns·factor^(i+1))`.
    pub histogram_first_bound_ns: f64,
    pub histogram_factor: f64,
    /// Target length of a fast segment (version 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub segment_ms: Option<u64>,
    /// The settle time is chosen from the carryover profile as the run goes.
    #[serde(default, skip_serializing_if = "is_false")]
    pub settle_auto: bool,
    /// Scenarios entered through a restart, in slow blocks, and their reference.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub slow_scenarios: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slow_phase_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slow_blocks: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_halfwidth_pct: Option<f64>,
    /// Width of a since-switch bin.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bin_ms: Option<u64>,
    /// An attribution run's plan (`--attribute`): its groups and design.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attribution: Option<AttributionRecord>,
    /// A duet run's side ("a" or "b"): its partner's log holds the other server's phases.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duet_side: Option<String>,
}

/// What an attribution run measures: the groups (what each turns on, so a report can print the
/// advice's SQL without the config file), the design, and the advice asked for.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub(crate) struct AttributionRecord {
    pub groups: Vec<GroupRecord>,
    /// Design points per replicate.
    pub runs: u64,
    /// Length of the design's shortest defining word (`None`: full factorial).
    pub resolution: Option<u32>,
    /// The server's consumers (every my.cnf line names each).
    pub consumers: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<f64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub need: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirm_ms: Option<u64>,
}

/// One instrument group as run.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub(crate) struct GroupRecord {
    pub name: String,
    pub description: String,
    pub consumers: Vec<String>,
    pub instruments: Vec<String>,
}

/// What switching into a scenario cost during a segment: apply + verify, from the first
/// statement sent to the verification read back (the slot's time not measured because of it).
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq)]
pub struct SwitchCost {
    pub count: u64,
    pub sum_ms: f64,
    pub max_ms: f64,
    /// Statements sent to the server for these switches (apply and verify).
    #[serde(default)]
    pub statements: u64,
}

impl SwitchCost {
    pub fn add(&mut self, ms: f64, statements: u64) {
        self.count += 1;
        self.sum_ms += ms;
        self.max_ms = self.max_ms.max(ms);
        self.statements += statements;
    }

    pub fn merge(&mut self, o: &SwitchCost) {
        self.count += o.count;
        self.sum_ms += o.sum_ms;
        self.max_ms = self.max_ms.max(o.max_ms);
        self.statements += o.statements;
    }
}

/// Statements that started in one since-switch bin during a segment.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq)]
pub struct BinRecord {
    pub bin: u16,
    /// Slots whose post-switch time covered the whole bin (its exposure, for rates).
    pub slots: u64,
    pub count: u64,
    pub timed: u64,
    pub latency_sum_ns: u64,
}

/// Aggregates of one command kind or one digest over a phase's measured window.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Aggregate {
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub command: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub digest: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub text: Option<String>,
    /// `count` ... `latency_max_ns`, written as fields of the aggregate itself (as they always
    /// were: the format is the same as when they were listed here one by one).
    #[serde(flatten)]
    pub totals: Totals,
    /// `[bucket index, count]` of the non-empty buckets.
    pub histogram: Vec<(u16, u64)>,
}

/// An aggregate of no command kind or digest yet (the caller names it).
impl From<&DigestStats> for Aggregate {
    fn from(stats: &DigestStats) -> Self {
        Aggregate {
            command: None,
            digest: None,
            text: None,
            totals: stats.totals,
            histogram: stats.latency.buckets().collect(),
        }
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct PhaseRecord {
    pub version: u32,
    pub kind: String,
    pub scenario: String,
    pub block: u64,
    /// Position of the phase in the run, from 0.
    pub phase: u64,
    pub switched_at_ms: u64,
    pub measure_from_ms: u64,
    pub measure_to_ms: u64,
    /// The server was restarted to enter this phase (performance_schema ON/OFF).
    pub restarted: bool,
    /// The scenario was read back from the server and found in effect.
    pub verified: bool,
    pub commands: Vec<Aggregate>,
    pub digests: Vec<Aggregate>,
    /// mysqld's CPU time (user + system) during the measured window, when `--mysqld-pid` was
    /// given (same host only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_cpu_ms: Option<u64>,
    /// `fast` or `slow` (version 2; version 1 records have none and are analysed together).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule: Option<String>,
    /// Slots of this scenario in the segment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slots: Option<u64>,
    /// Sum of the measured windows (ms); without it, `measure_to_ms - measure_from_ms`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured_ms: Option<u64>,
    /// Settle time in effect at the end of the segment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settle_ms: Option<u64>,
    /// Length of the segment's fast slots (`--phase`, or lengthened from the switch cost).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slot_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub switch: Option<SwitchCost>,
    /// Statements by time since the switch, settle included (non-empty bins only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub since_switch: Vec<BinRecord>,
    /// Set by `psprobe report` when it merged this slot from several probes' logs: how many.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merged_from: Option<u64>,
    /// A phase entered through a restart: how the restart went and how the statement rate came
    /// back (the leader's records only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restart: Option<RestartRecord>,
    /// Why this phase is left out (a restart that failed, hung, or brought the server back
    /// with the wrong setting); such a record measures nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
}

/// A restart as psprobe saw it, from the moment it ran the restart command: when the server
/// stopped accepting connections, when it accepted them again, when the command returned, when
/// the first query succeeded with performance_schema as asked; then the statements finished
/// through the proxy in each `bin_ms` bin from that first query on (settle and measured window).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct RestartRecord {
    /// Until the server refused connections (`None`: never seen down between two probes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_ms: Option<u64>,
    /// From then until it accepted them again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_ms: Option<u64>,
    /// The restart command's own run time.
    pub command_ms: u64,
    /// Until the first successful query with the setting asked for.
    pub first_query_ms: u64,
    /// The settle time used before the measured window.
    pub settle_ms: u64,
    pub bin_ms: u64,
    /// Statements finished in each bin after the first query.
    pub after: Vec<u64>,
}

impl PhaseRecord {
    /// The measured time in ms (version 1: the one window).
    pub fn measured_ms(&self) -> u64 {
        self.measured_ms
            .unwrap_or_else(|| self.measure_to_ms.saturating_sub(self.measure_from_ms))
    }

    /// How many probes' records of this slot were summed into this one (1: not merged).
    pub fn probes_merged(&self) -> u64 {
        self.merged_from.unwrap_or(1)
    }

    /// `fast`, `slow`, or `fast` for version 1 records (one design, analysed together).
    pub fn schedule(&self) -> &str {
        self.schedule.as_deref().unwrap_or(FAST)
    }
}

/// A test aggregate: `count` commands of 2 ms each (one histogram bucket), a tenth of them
/// errors; a digest's text is `select DIGEST`.
#[cfg(test)]
pub(crate) fn test_aggregate(command: Option<&str>, digest: Option<&str>, count: u64) -> Aggregate {
    Aggregate {
        command: command.map(str::to_string),
        digest: digest.map(str::to_string),
        text: digest.map(|d| format!("select {d}")),
        totals: Totals {
            count,
            errors: count / 10,
            timed: count,
            latency_sum_ns: count * 2_000_000,
            ..Totals::default()
        },
        histogram: vec![(150, count)],
    }
}

/// Digests a record lists one by one; the rest are summed into one [`REST`] aggregate, so a
/// segment record stays a few KiB whatever the number of query shapes.
pub(crate) const MAX_DIGESTS_PER_RECORD: usize = 20;
/// `text` of the aggregate that sums a record's digests past [`MAX_DIGESTS_PER_RECORD`] (no
/// `digest` id). The records of one segment list the same digests (those with the most latency
/// time over all its scenarios), so their rests hold the same query shapes and compare like
/// one digest.
pub(crate) const REST: &str = "(rest)";

/// The digests a segment's records list one by one: the [`MAX_DIGESTS_PER_RECORD`] with the
/// most latency time over `scenarios` between two snapshots. `None`: every digest fits.
pub(crate) fn listed_digests(
    start: &StoreSnapshot,
    end: &StoreSnapshot,
    scenarios: &[ScenarioId],
) -> Option<HashSet<DigestId>> {
    let mut time: HashMap<DigestId, u64> = HashMap::new();
    for ((s, id), later) in &end.entries {
        if !scenarios.contains(s) {
            continue;
        }
        let before = start
            .entries
            .get(&(*s, *id))
            .map_or(0, |e| e.totals.latency_sum_ns);
        *time.entry(*id).or_default() += later.totals.latency_sum_ns.saturating_sub(before);
    }
    if time.len() <= MAX_DIGESTS_PER_RECORD {
        return None;
    }
    let mut by_time: Vec<_> = time.into_iter().collect();
    by_time.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    Some(
        by_time
            .into_iter()
            .take(MAX_DIGESTS_PER_RECORD)
            .map(|(id, _)| id)
            .collect(),
    )
}

/// What `scenario` added between two snapshots: (per command kind, per digest), the digests
/// by latency time; with `listed`, only those digests one by one and the others summed into a
/// [`REST`] aggregate.
pub(crate) fn window_aggregates(
    start: &StoreSnapshot,
    end: &StoreSnapshot,
    scenario: ScenarioId,
    listed: Option<&HashSet<DigestId>>,
) -> (Vec<Aggregate>, Vec<Aggregate>) {
    let empty = DigestStats::default();
    let mut commands: Vec<Aggregate> = CommandKind::ALL
        .iter()
        .filter_map(|kind| {
            let later = end.commands.get(&(scenario, *kind))?;
            let earlier = start.commands.get(&(scenario, *kind)).unwrap_or(&empty);
            let d = later.since(earlier);
            (d.totals.count > 0).then(|| Aggregate {
                command: Some(kind.label().to_string()),
                ..Aggregate::from(&d)
            })
        })
        .collect();
    commands.sort_by(|a, b| a.command.cmp(&b.command));
    let mut rest = DigestStats::default();
    let mut digests: Vec<Aggregate> = end
        .entries
        .iter()
        .filter(|((s, _), _)| *s == scenario)
        .filter_map(|((_, id), later)| {
            let earlier = start.entries.get(&(scenario, *id)).unwrap_or(&empty);
            let d = later.since(earlier);
            if d.totals.count == 0 {
                return None;
            }
            if listed.is_some_and(|l| !l.contains(id)) {
                rest.merge(&d);
                return None;
            }
            Some(Aggregate {
                digest: Some(id.to_string()),
                text: end.texts.get(id).map(|t| t.to_string()),
                ..Aggregate::from(&d)
            })
        })
        .collect();
    digests.sort_by(|a, b| {
        b.totals
            .latency_sum_ns
            .cmp(&a.totals.latency_sum_ns)
            .then(b.totals.count.cmp(&a.totals.count))
            .then(a.digest.cmp(&b.digest))
    });
    if rest.totals.count > 0 {
        digests.push(Aggregate {
            text: Some(REST.to_string()),
            ..Aggregate::from(&rest)
        });
    }
    (commands, digests)
}

#[derive(Debug, thiserror::Error)]
#[error("cannot write the phase log {path}: {source}")]
pub struct PhaseLogError {
    pub path: PathBuf,
    pub source: std::io::Error,
}

pub(crate) struct PhaseLog {
    path: PathBuf,
    file: File,
}

impl PhaseLog {
    pub(crate) fn open(path: &Path) -> Result<Self, PhaseLogError> {
        let err = |source| PhaseLogError {
            path: path.to_path_buf(),
            source,
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            crate::private_fs::create_dir_all(dir).map_err(err)?;
        }
        let file = crate::private_fs::append(path).map_err(err)?;
        Ok(PhaseLog {
            path: path.to_path_buf(),
            file,
        })
    }

    /// Appends one record as a line and makes it durable before returning.
    pub(crate) fn append<T: Serialize>(&mut self, record: &T) -> Result<(), PhaseLogError> {
        let err = |source| PhaseLogError {
            path: self.path.clone(),
            source,
        };
        let mut line = serde_json::to_vec(record).map_err(|e| err(std::io::Error::other(e)))?;
        line.push(b'\n');
        self.file.write_all(&line).map_err(err)?;
        self.file.sync_data().map_err(err)
    }
}

/// The histogram layout every record's buckets refer to.
pub(crate) fn histogram_layout() -> (f64, f64) {
    (FIRST_BOUND_NS, BUCKET_FACTOR)
}

/// Reads the phase records of a phase log (versions 1 and 2).
pub(crate) fn read_phases(path: &Path) -> std::io::Result<Vec<PhaseRecord>> {
    Ok(read_log(path)?.phases)
}

/// Every record of a phase log.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct LogContents {
    pub runs: Vec<RunRecord>,
    pub phases: Vec<PhaseRecord>,
    /// One per run that ended (a killed probe's run has none).
    pub traffic: Vec<TrafficRecord>,
    /// Rows someone else changed during the runs.
    pub claims: Vec<ClaimRecord>,
    /// Lines (numbered from 1) that are no record psprobe reads: torn by a crash or a full
    /// disk, or edited. Whoever reads the log says so.
    pub torn: Vec<usize>,
}

/// Reads every record of a phase log; lines that are not records (a torn last line after a
/// crash) are counted in [`LogContents::torn`].
pub(crate) fn read_log(path: &Path) -> std::io::Result<LogContents> {
    let text = std::fs::read_to_string(path)?;
    Ok(parse_log(&text))
}

pub(crate) fn parse_log(text: &str) -> LogContents {
    let mut out = LogContents::default();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let read = if line.contains("\"kind\":\"phase\"") {
            serde_json::from_str(line)
                .map(|r| out.phases.push(r))
                .is_ok()
        } else if line.contains("\"kind\":\"run\"") {
            serde_json::from_str(line).map(|r| out.runs.push(r)).is_ok()
        } else if line.contains("\"kind\":\"traffic\"") {
            serde_json::from_str(line)
                .map(|r| out.traffic.push(r))
                .is_ok()
        } else if line.contains("\"kind\":\"claim\"") {
            serde_json::from_str(line)
                .map(|r| out.claims.push(r))
                .is_ok()
        } else {
            // A record of a kind a later psprobe writes is not torn; anything else is.
            serde_json::from_str::<serde_json::Value>(line).is_ok_and(|v| v.get("kind").is_some())
        };
        if !read {
            out.torn.push(n + 1);
        }
    }
    out
}

/// "lines 7, 9 and 12 of FILE": where torn lines are, for a warning.
pub(crate) fn describe_torn(torn: &[usize], file: &str) -> String {
    const SHOWN: usize = 5;
    let mut list: Vec<String> = torn.iter().take(SHOWN).map(usize::to_string).collect();
    if torn.len() > SHOWN {
        list.push(format!("and {} more", torn.len() - SHOWN));
    }
    let (which, verb) = if torn.len() == 1 {
        ("line", "is")
    } else {
        ("lines", "are")
    };
    format!(
        "{} {which} of {file} ({}) {verb} no record",
        torn.len(),
        list.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::digest_stats::Sample;
    use crate::stats::DigestStore;
    use psprobe_core::digest::DigestId;

    #[test]
    fn window_is_the_difference_and_log_round_trips() {
        let store = DigestStore::new(10);
        let id = store.admit(DigestId(5), b"select ?");
        let sample = |ns| Sample {
            latency_ns: Some(ns),
            ..Sample::default()
        };
        let tag = crate::stats::store::Tag::plain;
        store.record(tag(1), CommandKind::Query, Some(id), &sample(1_000_000));
        let start = store.snapshot();
        for _ in 0..3 {
            store.record(tag(1), CommandKind::Query, Some(id), &sample(2_000_000));
        }
        store.record(tag(2), CommandKind::Query, Some(id), &sample(9_000_000));
        let end = store.snapshot();
        let (commands, digests) = window_aggregates(&start, &end, 1, None);
        assert_eq!(commands.len(), 1);
        assert_eq!(commands[0].command.as_deref(), Some("query"));
        assert_eq!(commands[0].totals.count, 3);
        assert_eq!(commands[0].totals.latency_sum_ns, 6_000_000);
        assert_eq!(digests[0].totals.count, 3);
        assert_eq!(digests[0].text.as_deref(), Some("select ?"));
        assert_eq!(digests[0].histogram.iter().map(|b| b.1).sum::<u64>(), 3);

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/phases.jsonl");
        let mut log = PhaseLog::open(&path).unwrap();
        let record = PhaseRecord {
            version: PHASE_LOG_VERSION,
            kind: "phase".into(),
            scenario: "a".into(),
            block: 0,
            phase: 0,
            switched_at_ms: 1,
            measure_from_ms: 2,
            measure_to_ms: 3,
            restarted: false,
            verified: true,
            commands,
            digests,
            server_cpu_ms: Some(12),
            ..PhaseRecord::default()
        };
        log.append(&record).unwrap();
        log.append(&record).unwrap();
        let back = read_phases(&path).unwrap();
        assert_eq!(back, vec![record.clone(), record]);
    }
}
