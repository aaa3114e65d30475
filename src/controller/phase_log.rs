//! The phase log: an append-only JSON Lines file, one record per finished phase, written and
//! fsynced when the phase ends, so a crash loses at most the phase in progress.
//!
//! Format (version 1), documented in docs/phase-log.md:
//! - first line of each run: `{"version":1,"kind":"run",...}` with the schedule and the
//!   histogram layout;
//! - then `{"version":1,"kind":"phase",...}` per phase, with the measured window's aggregates
//!   per command kind and per digest.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::protocol::CommandKind;
use crate::stats::histogram::{BUCKET_FACTOR, FIRST_BOUND_NS};
use crate::stats::{DigestStats, ScenarioId, StoreSnapshot};

pub const PHASE_LOG_VERSION: u32 = 1;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RunRecord {
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
    pub count: u64,
    pub errors: u64,
    pub rows_sent: u64,
    pub rows_affected: u64,
    pub timed: u64,
    pub latency_sum_ns: u64,
    pub latency_min_ns: u64,
    pub latency_max_ns: u64,
    /// `[bucket index, count]` of the non-empty buckets.
    pub histogram: Vec<(u16, u64)>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
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
}

fn aggregate(stats: &DigestStats) -> Aggregate {
    Aggregate {
        command: None,
        digest: None,
        text: None,
        count: stats.count,
        errors: stats.errors,
        rows_sent: stats.rows_sent,
        rows_affected: stats.rows_affected,
        timed: stats.timed,
        latency_sum_ns: stats.latency_sum_ns,
        latency_min_ns: stats.latency_min_ns,
        latency_max_ns: stats.latency_max_ns,
        histogram: stats.latency.buckets().collect(),
    }
}

/// What `scenario` added between two snapshots: (per command kind, per digest).
pub fn window_aggregates(
    start: &StoreSnapshot,
    end: &StoreSnapshot,
    scenario: ScenarioId,
) -> (Vec<Aggregate>, Vec<Aggregate>) {
    let empty = DigestStats::default();
    let mut commands: Vec<Aggregate> = CommandKind::ALL
        .iter()
        .filter_map(|kind| {
            let later = end.commands.get(&(scenario, *kind))?;
            let earlier = start.commands.get(&(scenario, *kind)).unwrap_or(&empty);
            let d = later.since(earlier);
            (d.count > 0).then(|| Aggregate {
                command: Some(kind.label().to_string()),
                ..aggregate(&d)
            })
        })
        .collect();
    commands.sort_by(|a, b| a.command.cmp(&b.command));
    let mut digests: Vec<Aggregate> = end
        .entries
        .iter()
        .filter(|((s, _), _)| *s == scenario)
        .filter_map(|((_, id), later)| {
            let earlier = start.entries.get(&(scenario, *id)).unwrap_or(&empty);
            let d = later.since(earlier);
            (d.count > 0).then(|| Aggregate {
                digest: Some(id.to_string()),
                text: end.texts.get(id).map(|t| t.to_string()),
                ..aggregate(&d)
            })
        })
        .collect();
    digests.sort_by(|a, b| b.count.cmp(&a.count).then(a.digest.cmp(&b.digest)));
    (commands, digests)
}

#[derive(Debug, thiserror::Error)]
#[error("cannot write the phase log {path}: {source}")]
pub struct PhaseLogError {
    pub path: PathBuf,
    pub source: std::io::Error,
}

pub struct PhaseLog {
    path: PathBuf,
    file: File,
}

impl PhaseLog {
    pub fn open(path: &Path) -> Result<Self, PhaseLogError> {
        let err = |source| PhaseLogError {
            path: path.to_path_buf(),
            source,
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(err)?;
        }
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(err)?;
        Ok(PhaseLog {
            path: path.to_path_buf(),
            file,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends one record as a line and makes it durable before returning.
    pub fn append<T: Serialize>(&mut self, record: &T) -> Result<(), PhaseLogError> {
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
pub fn histogram_layout() -> (f64, f64) {
    (FIRST_BOUND_NS, BUCKET_FACTOR)
}

/// Reads every record of a phase log (run records and phase records).
pub fn read_phases(path: &Path) -> std::io::Result<Vec<PhaseRecord>> {
    let text = std::fs::read_to_string(path)?;
    Ok(text
        .lines()
        .filter(|l| l.contains("\"kind\":\"phase\""))
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::digest::DigestId;
    use crate::stats::{DigestStore, Sample};

    #[test]
    fn window_is_the_difference_and_log_round_trips() {
        let store = DigestStore::new(10);
        let id = store.admit(DigestId(5), b"select ?");
        let sample = |ns| Sample {
            latency_ns: Some(ns),
            ..Sample::default()
        };
        store.record(1, CommandKind::Query, Some(id), &sample(1_000_000));
        let start = store.snapshot();
        for _ in 0..3 {
            store.record(1, CommandKind::Query, Some(id), &sample(2_000_000));
        }
        store.record(2, CommandKind::Query, Some(id), &sample(9_000_000));
        let end = store.snapshot();
        let (commands, digests) = window_aggregates(&start, &end, 1);
        assert_eq!(commands.len(), 1);
        assert_eq!(commands[0].command.as_deref(), Some("query"));
        assert_eq!(commands[0].count, 3);
        assert_eq!(commands[0].latency_sum_ns, 6_000_000);
        assert_eq!(digests[0].count, 3);
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
        };
        log.append(&record).unwrap();
        log.append(&record).unwrap();
        let back = read_phases(&path).unwrap();
        assert_eq!(back, vec![record.clone(), record]);
    }
}
