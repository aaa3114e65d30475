//! Several probes in front of one server, one schedule: their phase logs merged into one.
//!
//! Every probe of a fleet writes its own phase log: the leader for the slots it switches, the
//! followers for the same slots as they saw them published. A record sums one scenario's slots
//! in one segment (schedule, block), so merging sums, per (schedule, block, scenario), what each
//! probe measured (counts and histograms per command and digest), then the usual analysis runs
//! on the sums. Logs of different schedules are refused: a random schedule's sequence of
//! scenarios is its fingerprint, so two logs of one schedule never name different scenarios for
//! the same slot (a record's `phase` is the first slot it covers), and they see each segment at
//! about the same time (clocks of one fleet agree within seconds).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::phase_log::{Aggregate, BinRecord, LogContents, PhaseRecord};

/// Clock difference tolerated between probes for the same slot.
pub(super) const MAX_SKEW_MS: u64 = 10_000;

/// One phase log as read, with where it came from (for messages).
pub(super) struct NamedLog {
    pub name: PathBuf,
    pub contents: LogContents,
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub(super) enum MergeError {
    #[error("{0} holds no phase records: is it a psprobe phase log (--phase-log)?")]
    Empty(PathBuf),
    #[error(
        "{other} is not from the same schedule as {first}: slot {slot} is {other_scenario} \
         there and {first_scenario} in {first}; report each run on its own"
    )]
    ScenarioDiffers {
        first: PathBuf,
        other: PathBuf,
        /// `block/phase (schedule)`
        slot: String,
        first_scenario: String,
        other_scenario: String,
    },
    #[error(
        "{other} is not from the same schedule as {first}: slot {slot} started {skew_s:.0} s \
         apart in the two logs; report each run on its own"
    )]
    TooFarApart {
        first: PathBuf,
        other: PathBuf,
        slot: String,
        skew_s: f64,
    },
    #[error(
        "{other} shares no slot with {first}: they are different runs (or one probe joined \
         after the other left); report each run on its own"
    )]
    NothingShared { first: PathBuf, other: PathBuf },
}

/// (schedule, block, scenario): one record per scenario and segment in every probe's log.
type SlotKey = (String, u64, String);

fn key(p: &PhaseRecord) -> SlotKey {
    (p.schedule().to_string(), p.block, p.scenario.clone())
}

/// The phases of one log, or of several logs of one schedule summed slot by slot.
pub(super) fn merge(logs: Vec<NamedLog>) -> Result<Vec<PhaseRecord>, MergeError> {
    for log in &logs {
        if log.contents.phases.is_empty() {
            return Err(MergeError::Empty(log.name.clone()));
        }
    }
    let mut logs = logs.into_iter();
    let Some(first) = logs.next() else {
        return Ok(Vec::new());
    };
    let first_name = first.name;
    // A log may hold the same slot twice only if a run was restarted into the same file;
    // the later record wins, as the analysis of one log would see it.
    let mut merged: BTreeMap<SlotKey, PhaseRecord> = first
        .contents
        .phases
        .into_iter()
        .map(|p| (key(&p), p))
        .collect();
    for log in logs {
        check_same_schedule(&first_name, &merged, &log)?;
        for p in log.contents.phases {
            match merged.get_mut(&key(&p)) {
                Some(into) => add(into, &p),
                None => {
                    merged.insert(key(&p), p);
                }
            }
        }
    }
    let mut phases: Vec<PhaseRecord> = merged.into_values().collect();
    phases.sort_by_key(|p| (p.switched_at_ms, p.phase));
    Ok(phases)
}

fn slot_name(p: &PhaseRecord) -> String {
    format!("{}/{} ({})", p.block, p.phase, p.schedule())
}

fn check_same_schedule(
    first: &Path,
    merged: &BTreeMap<SlotKey, PhaseRecord>,
    log: &NamedLog,
) -> Result<(), MergeError> {
    // Which scenario each slot that starts a record was, in the logs merged so far.
    let slot_of: BTreeMap<(&str, u64, u64), &str> = merged
        .values()
        .map(|m| ((m.schedule(), m.block, m.phase), m.scenario.as_str()))
        .collect();
    let mut shared = 0;
    for p in &log.contents.phases {
        if let Some(&scenario) = slot_of.get(&(p.schedule(), p.block, p.phase)) {
            if scenario != p.scenario {
                return Err(MergeError::ScenarioDiffers {
                    first: first.to_path_buf(),
                    other: log.name.clone(),
                    slot: slot_name(p),
                    first_scenario: scenario.to_string(),
                    other_scenario: p.scenario.clone(),
                });
            }
        }
        let Some(m) = merged.get(&key(p)) else {
            continue;
        };
        shared += 1;
        let skew = m.switched_at_ms.abs_diff(p.switched_at_ms);
        if skew > MAX_SKEW_MS {
            return Err(MergeError::TooFarApart {
                first: first.to_path_buf(),
                other: log.name.clone(),
                slot: slot_name(p),
                skew_s: skew as f64 / 1000.0,
            });
        }
    }
    if shared == 0 {
        return Err(MergeError::NothingShared {
            first: first.to_path_buf(),
            other: log.name.clone(),
        });
    }
    Ok(())
}

/// Adds another probe's record of the same slot into `into`.
fn add(into: &mut PhaseRecord, other: &PhaseRecord) {
    // Both probes measured (about) the same windows: rates are count / time, so the summed
    // counts go over the mean of the two measured times (the sum of the two rates).
    let probes = into.probes_merged();
    let mean_ms = (into.measured_ms() * probes + other.measured_ms()) / (probes + 1);
    into.measured_ms = Some(mean_ms);
    // A follower that joined the segment late starts its record a slot or more later.
    into.phase = into.phase.min(other.phase);
    into.switched_at_ms = into.switched_at_ms.min(other.switched_at_ms);
    into.verified &= other.verified;
    into.restarted |= other.restarted;
    // One server: its CPU time is the same whoever read it; keep the one that has it.
    into.server_cpu_ms = into.server_cpu_ms.max(other.server_cpu_ms);
    // The switch is the leader's: only its record carries the cost.
    if into.switch.is_none() {
        into.switch = other.switch;
    }
    add_aggregates(&mut into.commands, &other.commands, |a| a.command.clone());
    add_aggregates(&mut into.digests, &other.digests, |a| {
        a.digest.clone().or_else(|| a.text.clone())
    });
    add_bins(&mut into.since_switch, &other.since_switch);
    into.merged_from = Some(probes + 1);
}

fn add_aggregates(
    into: &mut Vec<Aggregate>,
    other: &[Aggregate],
    id: impl Fn(&Aggregate) -> Option<String>,
) {
    for o in other {
        match into.iter_mut().find(|a| id(a) == id(o)) {
            Some(a) => add_aggregate(a, o),
            None => into.push(o.clone()),
        }
    }
}

fn add_aggregate(a: &mut Aggregate, o: &Aggregate) {
    a.totals.merge(&o.totals);
    let mut buckets: BTreeMap<u16, u64> = a.histogram.iter().copied().collect();
    for &(b, n) in &o.histogram {
        let slot = buckets.entry(b).or_default();
        *slot = slot.saturating_add(n);
    }
    a.histogram = buckets.into_iter().collect();
}

fn add_bins(into: &mut Vec<BinRecord>, other: &[BinRecord]) {
    for o in other {
        match into.iter_mut().find(|b| b.bin == o.bin) {
            // The exposure (slots covering the bin) is the schedule's, the same for every
            // probe: the statements add up over it.
            Some(b) => {
                b.count = b.count.saturating_add(o.count);
                b.timed = b.timed.saturating_add(o.timed);
                b.latency_sum_ns = b.latency_sum_ns.saturating_add(o.latency_sum_ns);
                b.slots = b.slots.max(o.slots);
            }
            None => into.push(*o),
        }
    }
    into.sort_by_key(|b| b.bin);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::Totals;

    fn agg(command: &str, count: u64, hist: &[(u16, u64)]) -> Aggregate {
        Aggregate {
            command: Some(command.into()),
            digest: None,
            text: None,
            totals: Totals {
                count,
                errors: 0,
                rows_sent: count,
                rows_affected: 0,
                timed: count,
                latency_sum_ns: count * 1_000_000,
                latency_min_ns: 500_000,
                latency_max_ns: 2_000_000,
            },
            histogram: hist.to_vec(),
        }
    }

    fn phase(scenario: &str, block: u64, phase: u64, at: u64, count: u64) -> PhaseRecord {
        PhaseRecord {
            version: 2,
            kind: "phase".into(),
            scenario: scenario.into(),
            block,
            phase,
            switched_at_ms: at,
            measure_from_ms: at + 50,
            measure_to_ms: at + 250,
            verified: true,
            commands: vec![agg("query", count, &[(10, count)])],
            schedule: Some("fast".into()),
            measured_ms: Some(1000),
            ..PhaseRecord::default()
        }
    }

    fn log(name: &str, phases: Vec<PhaseRecord>) -> NamedLog {
        NamedLog {
            name: name.into(),
            contents: LogContents {
                phases,
                ..LogContents::default()
            },
        }
    }

    #[test]
    fn the_same_slots_are_summed() {
        let a = log(
            "a",
            vec![phase("x", 0, 0, 1_000, 100), phase("y", 0, 1, 2_000, 80)],
        );
        let mut late = phase("y", 0, 1, 2_300, 40);
        late.measured_ms = Some(900);
        late.verified = false;
        let b = log("b", vec![phase("x", 0, 0, 1_200, 50), late]);
        let merged = merge(vec![a, b]).unwrap();
        assert_eq!(merged.len(), 2);
        assert_eq!(merged[0].commands[0].totals.count, 150);
        assert_eq!(merged[0].commands[0].histogram, vec![(10, 150)]);
        assert_eq!(merged[0].merged_from, Some(2));
        assert_eq!(merged[1].commands[0].totals.count, 120);
        assert_eq!(merged[1].measured_ms, Some(950));
        assert!(!merged[1].verified, "one probe saw the slot unverified");
    }

    #[test]
    fn another_schedule_is_refused() {
        let a = log(
            "a",
            vec![phase("x", 0, 0, 1_000, 1), phase("y", 0, 1, 2_000, 1)],
        );
        let b = log("b", vec![phase("y", 0, 0, 1_000, 1)]);
        let err = merge(vec![a, b]).unwrap_err();
        assert!(matches!(err, MergeError::ScenarioDiffers { .. }), "{err}");
        assert!(err.to_string().contains("not from the same schedule"));

        let a = log("a", vec![phase("x", 0, 0, 1_000, 1)]);
        let b = log("b", vec![phase("x", 0, 0, 900_000, 1)]);
        assert!(matches!(
            merge(vec![a, b]),
            Err(MergeError::TooFarApart { .. })
        ));

        let a = log("a", vec![phase("x", 0, 0, 1_000, 1)]);
        let b = log("b", vec![phase("x", 5, 9, 1_000, 1)]);
        assert!(matches!(
            merge(vec![a, b]),
            Err(MergeError::NothingShared { .. })
        ));
        assert!(matches!(
            merge(vec![log("a", vec![])]),
            Err(MergeError::Empty(_))
        ));
    }

    #[test]
    fn one_log_is_unchanged() {
        let phases = vec![phase("x", 0, 0, 1_000, 3), phase("y", 0, 1, 2_000, 4)];
        assert_eq!(merge(vec![log("a", phases.clone())]).unwrap(), phases);
    }
}
