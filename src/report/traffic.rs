//! The report's traffic section: every statement the probes relayed during the run, per digest,
//! summed over the logs given (each probe's traffic records; see `phase_log::traffic`).
//!
//! Must not: estimate anything (these are plain counts) or read anything but the logs.

use psprobe_core::protocol::CommandKind;
use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Serialize;

use super::merge::NamedLog;

#[derive(Debug, Serialize, PartialEq)]
pub(crate) struct Traffic {
    /// Logs whose traffic records were summed.
    pub probes: u64,
    /// Logs with phase records but no traffic record (a probe killed before its run ended, or
    /// a psprobe older than the record): the sums leave out what they relayed.
    pub missing: Vec<PathBuf>,
    /// Wall-clock ms: the earliest start and the latest end of the records summed.
    pub from_ms: u64,
    pub to_ms: u64,
    /// Statements (text queries and prepared executions) and every command, all digests.
    pub statements: u64,
    pub commands: u64,
    pub errors: u64,
    /// Every digest, most frequent first.
    pub digests: Vec<TrafficDigest>,
}

#[derive(Debug, Serialize, PartialEq)]
pub(crate) struct TrafficDigest {
    pub digest: String,
    pub text: String,
    pub count: u64,
    pub errors: u64,
    /// Mean latency over the timed executions, ms (0 when none was timed).
    pub mean_ms: f64,
}

/// The sums of every traffic record of `logs`; `None` when no log has one.
pub(super) fn sum(logs: &[NamedLog]) -> Option<Traffic> {
    let records: Vec<_> = logs.iter().flat_map(|l| &l.contents.traffic).collect();
    if records.is_empty() {
        return None;
    }
    let mut per: BTreeMap<String, (String, u64, u64, u64, u64)> = BTreeMap::new();
    for d in records.iter().flat_map(|r| &r.digests) {
        let id = d.digest.clone().unwrap_or_default();
        let e = per.entry(id).or_default();
        if e.0.is_empty() {
            e.0 = d.text.clone().unwrap_or_default();
        }
        e.1 = e.1.saturating_add(d.totals.count);
        e.2 = e.2.saturating_add(d.totals.errors);
        e.3 = e.3.saturating_add(d.totals.timed);
        e.4 = e.4.saturating_add(d.totals.latency_sum_ns);
    }
    let mut digests: Vec<TrafficDigest> = per
        .into_iter()
        .map(
            |(digest, (text, count, errors, timed, sum_ns))| TrafficDigest {
                digest,
                text,
                count,
                errors,
                mean_ms: if timed > 0 {
                    sum_ns as f64 / timed as f64 / 1e6
                } else {
                    0.0
                },
            },
        )
        .collect();
    digests.sort_by(|a, b| b.count.cmp(&a.count).then(a.digest.cmp(&b.digest)));
    let commands = records.iter().flat_map(|r| &r.commands);
    let statements = commands
        .clone()
        .filter(|c| {
            c.command
                .as_deref()
                .is_some_and(CommandKind::is_statement_label)
        })
        .map(|c| c.totals.count)
        .sum();
    Some(Traffic {
        probes: logs
            .iter()
            .filter(|l| !l.contents.traffic.is_empty())
            .count() as u64,
        missing: logs
            .iter()
            .filter(|l| l.contents.traffic.is_empty() && !l.contents.phases.is_empty())
            .map(|l| l.name.clone())
            .collect(),
        from_ms: records.iter().map(|r| r.from_ms).min().unwrap_or(0),
        to_ms: records.iter().map(|r| r.to_ms).max().unwrap_or(0),
        statements,
        commands: commands.clone().map(|c| c.totals.count).sum(),
        errors: commands.map(|c| c.totals.errors).sum(),
        digests,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::phase_log::{parse_log, test_aggregate as agg, TrafficRecord};

    fn log(name: &str, records: &[TrafficRecord]) -> NamedLog {
        let text: Vec<String> = records
            .iter()
            .map(|r| serde_json::to_string(r).unwrap())
            .collect();
        NamedLog {
            name: name.into(),
            contents: parse_log(&text.join("\n")),
        }
    }

    fn record(from: u64, to: u64, digests: &[(&str, u64)]) -> TrafficRecord {
        TrafficRecord {
            version: 2,
            kind: "traffic".into(),
            from_ms: from,
            to_ms: to,
            commands: vec![
                agg(Some("query"), None, digests.iter().map(|d| d.1).sum()),
                agg(Some("ping"), None, 3),
            ],
            digests: digests
                .iter()
                .map(|(d, n)| agg(None, Some(d), *n))
                .collect(),
        }
    }

    #[test]
    fn every_probe_and_every_run_of_it_adds_up() {
        let a = log(
            "a",
            &[
                record(100, 200, &[("1", 10), ("2", 20)]),
                // The same probe restarted into the same log: its second run adds.
                record(300, 400, &[("1", 5)]),
            ],
        );
        let b = log("b", &[record(90, 350, &[("2", 1), ("3", 7)])]);
        let t = sum(&[a, b]).expect("traffic");
        assert_eq!((t.probes, t.from_ms, t.to_ms), (2, 90, 400));
        let counts: Vec<(&str, u64)> = t
            .digests
            .iter()
            .map(|d| (d.digest.as_str(), d.count))
            .collect();
        assert_eq!(counts, [("2", 21), ("1", 15), ("3", 7)]);
        assert_eq!(t.digests[1].text, "select 1");
        assert!((t.digests[0].mean_ms - 2.0).abs() < 1e-9);
        assert_eq!((t.statements, t.commands), (43, 52));
        assert!(t.missing.is_empty());
    }

    #[test]
    fn logs_without_one_are_named_and_none_at_all_is_none() {
        let phase = r#"{"version":2,"kind":"phase","scenario":"x","block":0,"phase":0,"switched_at_ms":1,"measure_from_ms":1,"measure_to_ms":2,"restarted":false,"verified":true,"commands":[],"digests":[]}"#;
        let killed = NamedLog {
            name: "killed.jsonl".into(),
            contents: parse_log(phase),
        };
        assert_eq!(sum(std::slice::from_ref(&killed)), None);
        let t = sum(&[log("a", &[record(1, 2, &[("1", 1)])]), killed]).unwrap();
        assert_eq!(t.probes, 1);
        assert_eq!(t.missing, [PathBuf::from("killed.jsonl")]);
    }
}
