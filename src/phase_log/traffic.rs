//! The run's traffic record: every command a probe relayed while it took part in a schedule,
//! whatever the scenario and whether or not it fell in a measured window.
//!
//! Phase records hold the measured windows only (the settle time after each switch is left
//! out) and list a segment's busiest digests one by one; they cannot add up to what the server
//! counted. This record does: one per run of `psprobe proxy --scenarios`, written when the run
//! ends (schedule done, stopped, or the controller failed), with every digest the probe admitted
//! one by one. Summed over a fleet's logs it is what the server's
//! `events_statements_summary_by_digest` counted from the same clients, per digest.
//!
//! Must not: sample, cap or reorder what it sums (exact counts are its reason to exist).

use std::collections::HashMap;

use psprobe_core::protocol::CommandKind;
use serde::{Deserialize, Serialize};

use crate::stats::store::DigestId;
use crate::stats::{DigestStats, StoreSnapshot};

use super::{Aggregate, PHASE_LOG_VERSION};

/// `kind` of the record.
pub(crate) const TRAFFIC: &str = "traffic";

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub(crate) struct TrafficRecord {
    pub version: u32,
    pub kind: String,
    /// Wall-clock ms of the two snapshots the record is the difference of.
    pub from_ms: u64,
    pub to_ms: u64,
    /// Per command kind, summed over every scenario (and the time outside any).
    pub commands: Vec<Aggregate>,
    /// Per digest, every one, most frequent first.
    pub digests: Vec<Aggregate>,
}

/// Everything relayed between two snapshots of the probe's store, scenarios summed.
pub(crate) fn traffic_between(
    start: &StoreSnapshot,
    end: &StoreSnapshot,
    from_ms: u64,
    to_ms: u64,
) -> TrafficRecord {
    let empty = DigestStats::default();
    let mut per_kind: HashMap<CommandKind, DigestStats> = HashMap::new();
    for (key, later) in &end.commands {
        let d = later.since(start.commands.get(key).unwrap_or(&empty));
        if d.totals.count > 0 {
            per_kind.entry(key.1).or_default().merge(&d);
        }
    }
    let mut per_digest: HashMap<DigestId, DigestStats> = HashMap::new();
    for (key, later) in &end.entries {
        let d = later.since(start.entries.get(key).unwrap_or(&empty));
        if d.totals.count > 0 {
            per_digest.entry(key.1).or_default().merge(&d);
        }
    }
    let mut commands: Vec<Aggregate> = per_kind
        .iter()
        .map(|(kind, stats)| Aggregate {
            command: Some(kind.label().to_string()),
            ..Aggregate::from(stats)
        })
        .collect();
    commands.sort_by(|a, b| a.command.cmp(&b.command));
    let mut digests: Vec<Aggregate> = per_digest
        .iter()
        .map(|(id, stats)| Aggregate {
            digest: Some(id.to_string()),
            text: end.texts.get(id).map(|t| t.to_string()),
            ..Aggregate::from(stats)
        })
        .collect();
    digests.sort_by_key(|d| (std::cmp::Reverse(d.totals.count), d.digest.clone()));
    TrafficRecord {
        version: PHASE_LOG_VERSION,
        kind: TRAFFIC.into(),
        from_ms,
        to_ms,
        commands,
        digests,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::digest_stats::Sample;
    use crate::stats::store::Tag;
    use crate::stats::DigestStore;
    use psprobe_core::digest::DigestId as RawId;

    /// Every command counts, in whichever scenario (or none) it ran, measured or not.
    #[test]
    fn sums_every_scenario_and_keeps_every_digest() {
        let store = DigestStore::new(100);
        let sample = Sample {
            latency_ns: Some(1_000_000),
            ..Sample::default()
        };
        let a = store.admit(RawId(1), b"select ?");
        store.record(Tag::plain(1), CommandKind::Query, Some(a), &sample);
        let start = store.snapshot();
        for scenario in [0, 1, 2, 1] {
            store.record(Tag::plain(scenario), CommandKind::Query, Some(a), &sample);
        }
        // 30 shapes: more than a phase record lists one by one.
        for i in 0..30 {
            let id = store.admit(RawId(100 + i), format!("select {i}").as_bytes());
            store.record(Tag::plain(2), CommandKind::Query, Some(id), &sample);
        }
        store.record(Tag::plain(1), CommandKind::Ping, None, &sample);
        let end = store.snapshot();
        let t = traffic_between(&start, &end, 5, 9);
        assert_eq!((t.kind.as_str(), t.from_ms, t.to_ms), (TRAFFIC, 5, 9));
        assert_eq!(t.digests.len(), 31);
        assert_eq!(t.digests[0].text.as_deref(), Some("select ?"));
        assert_eq!(t.digests[0].totals.count, 4);
        assert_eq!(t.digests.iter().map(|d| d.totals.count).sum::<u64>(), 34);
        let count = |label: &str| {
            t.commands
                .iter()
                .find(|c| c.command.as_deref() == Some(label))
                .map(|c| c.totals.count)
        };
        assert_eq!((count("query"), count("ping")), (Some(34), Some(1)));
    }
}
