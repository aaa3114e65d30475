//! Phase records → one set of numbers per (scenario, block): the measured window, statement
//! counts and errors, latency sums and merged histograms, and the same per digest.
//!
//! Definitions (docs/measurement.md has them for users):
//! - **statements** are the commands that carry the workload's SQL: `query`, `stmt_execute`
//!   and `stmt_bulk_execute` (the commands that get a digest). Connection chatter (prepare,
//!   close, ping, quit, change_user, ...) is left out: a pooled and an unpooled client running
//!   the same transactions would otherwise show different "throughput", and prepare/close
//!   rates follow connection churn, not the server's speed.
//! - **throughput** = statements finished in the measured window / the window's seconds;
//! - **mean latency** = latency sum / timed statements; **error rate** = errors / statements;
//! - percentiles come from the statements' merged histograms.
//!
//! The aggregates already cover only the measured window (the settle time after a switch is
//! not in them). Records that cannot be trusted are dropped with a warning: not verified (the
//! scenario was not confirmed in effect), an empty or inverted window, a newer format version.
//! Records with the same (scenario, block, phase) come from several psprobes in front of one
//! server (logs merged): their counts add up over one window. Records with the same (scenario,
//! block) but different phase numbers (a log holding several runs) are pooled: counts and
//! windows both add up.

use psprobe_core::protocol::CommandKind;
use std::collections::{BTreeMap, BTreeSet};

use crate::phase_log::{Aggregate, PhaseRecord, PHASE_LOG_VERSION};

use super::weighted_hist::{self, Hist};

/// Latency aggregates of one digest in one phase.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct DigestData {
    pub timed: u64,
    pub latency_sum_ns: f64,
    pub histogram: Hist,
}

impl DigestData {
    pub(crate) fn mean_ns(&self) -> Option<f64> {
        (self.timed > 0).then(|| self.latency_sum_ns / self.timed as f64)
    }
}

/// One scenario's numbers in one block.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct PhaseData {
    pub scenario: String,
    pub block: u64,
    pub window_s: f64,
    pub statements: u64,
    pub errors: u64,
    pub timed: u64,
    pub latency_sum_ns: f64,
    pub histogram: Hist,
    /// Digest id (or text when the id is missing) → its aggregates.
    pub digests: BTreeMap<String, DigestData>,
    /// mysqld CPU ms over the measured time, when every record had it.
    pub server_cpu_ms: Option<f64>,
    /// Fastest and slowest statement (ns), to keep quantiles read from buckets within them.
    pub min_ns: Option<f64>,
    pub max_ns: Option<f64>,
}

impl PhaseData {
    /// Statements per second.
    pub(crate) fn throughput(&self) -> Option<f64> {
        (self.window_s > 0.0).then(|| self.statements as f64 / self.window_s)
    }

    pub(crate) fn mean_latency_ns(&self) -> Option<f64> {
        (self.timed > 0).then(|| self.latency_sum_ns / self.timed as f64)
    }

    /// Server CPU ms per statement.
    pub(crate) fn cpu_per_statement(&self) -> Option<f64> {
        let cpu = self.server_cpu_ms?;
        (self.statements > 0 && cpu > 0.0).then(|| cpu / self.statements as f64)
    }

    pub(crate) fn error_rate(&self) -> Option<f64> {
        (self.statements > 0).then(|| self.errors as f64 / self.statements as f64)
    }

    /// The q-quantile read from the buckets (within 2.5%), clamped to the exact min and max.
    pub(crate) fn raw_quantile_ns(&self, q: f64) -> Option<f64> {
        let v = weighted_hist::quantile_ns(&self.histogram, q)?;
        let v = self.max_ns.map_or(v, |m| v.min(m));
        Some(self.min_ns.map_or(v, |m| v.max(m)))
    }

    fn add_counts(&mut self, record: &PhaseRecord) {
        for agg in &record.commands {
            if agg
                .command
                .as_deref()
                .is_some_and(CommandKind::is_statement_label)
            {
                let t = &agg.totals;
                self.statements += t.count;
                self.errors += t.errors;
                if t.timed > 0 && t.latency_max_ns >= t.latency_min_ns {
                    let (lo, hi) = (t.latency_min_ns as f64, t.latency_max_ns as f64);
                    self.min_ns = Some(self.min_ns.map_or(lo, |m| m.min(lo)));
                    self.max_ns = Some(self.max_ns.map_or(hi, |m| m.max(hi)));
                }
                self.timed += t.timed;
                self.latency_sum_ns += t.latency_sum_ns as f64;
                weighted_hist::add(&mut self.histogram, &agg.histogram, 1.0);
            }
        }
        for agg in &record.digests {
            let key = digest_key(agg);
            let d = self.digests.entry(key).or_default();
            d.timed += agg.totals.timed;
            d.latency_sum_ns += agg.totals.latency_sum_ns as f64;
            weighted_hist::add(&mut d.histogram, &agg.histogram, 1.0);
        }
    }

    fn absorb(&mut self, other: PhaseData) {
        self.window_s += other.window_s;
        self.server_cpu_ms = self
            .server_cpu_ms
            .zip(other.server_cpu_ms)
            .map(|(a, b)| a + b);
        self.statements += other.statements;
        self.errors += other.errors;
        self.timed += other.timed;
        self.latency_sum_ns += other.latency_sum_ns;
        weighted_hist::merge(&mut self.histogram, &other.histogram, 1.0);
        for (key, d) in other.digests {
            let mine = self.digests.entry(key).or_default();
            mine.timed += d.timed;
            mine.latency_sum_ns += d.latency_sum_ns;
            weighted_hist::merge(&mut mine.histogram, &d.histogram, 1.0);
        }
    }
}

fn digest_key(agg: &Aggregate) -> String {
    agg.digest
        .clone()
        .or_else(|| agg.text.clone())
        .unwrap_or_else(|| "other".to_string())
}

/// The phase log, reduced.
#[derive(Debug, Clone, Default)]
pub(crate) struct Collected {
    /// Scenarios in order of first appearance (usable or not).
    pub scheduled: Vec<String>,
    /// One entry per (scenario, block) with at least one usable record, sorted by block, then
    /// scenario.
    pub phases: Vec<PhaseData>,
    pub warnings: Vec<String>,
    /// The records' design: `fast` or `slow` (version 1 logs: `fast`).
    pub schedule: String,
}

impl Collected {
    pub(crate) fn get(&self, scenario: &str, block: u64) -> Option<&PhaseData> {
        self.phases
            .iter()
            .find(|p| p.block == block && p.scenario == scenario)
    }

    pub(crate) fn blocks(&self) -> BTreeSet<u64> {
        self.phases.iter().map(|p| p.block).collect()
    }
}

/// One (scenario, block, phase) window, from the records of every psprobe that saw it: their
/// counts add, the time does not.
struct Window {
    from: u64,
    to: u64,
    /// Measured ms of the longest record (version 2).
    measured: u64,
    /// Server CPU ms, the same in every record of the window (the server's own figure);
    /// `None` once a record lacks it.
    cpu: Option<f64>,
    data: PhaseData,
}

/// Reduces phase records to one [`PhaseData`] per (scenario, block).
pub(crate) fn collect(records: &[PhaseRecord]) -> Collected {
    let mut out = Collected::default();
    let (mut unverified, mut empty, mut newer, mut unsettled) = (0, 0, 0, 0);
    let mut failed: Vec<String> = Vec::new();
    let mut windows: BTreeMap<(String, u64, u64), Window> = BTreeMap::new();
    for r in records.iter().filter(|r| r.kind == "phase") {
        if out.schedule.is_empty() {
            out.schedule = r.schedule().to_string();
        }
        if !out.scheduled.contains(&r.scenario) {
            out.scheduled.push(r.scenario.clone());
        }
        if r.version > PHASE_LOG_VERSION {
            newer += 1;
            continue;
        }
        if let Some(why) = &r.failure {
            failed.push(format!(
                "{} (block {}, phase {}) left out: {why}",
                r.scenario, r.block, r.phase
            ));
            continue;
        }
        if !r.verified {
            unverified += 1;
            continue;
        }
        if r.measure_to_ms <= r.measure_from_ms {
            empty += 1;
            continue;
        }
        if r.measure_from_ms <= r.switched_at_ms {
            unsettled += 1;
        }
        let key = (r.scenario.clone(), r.block, r.phase);
        let cpu = r.server_cpu_ms.map(|c| c as f64);
        let w = windows.entry(key).or_insert_with(|| Window {
            from: r.measure_from_ms,
            to: r.measure_to_ms,
            measured: 0,
            cpu,
            data: PhaseData {
                scenario: r.scenario.clone(),
                block: r.block,
                ..PhaseData::default()
            },
        });
        w.from = w.from.min(r.measure_from_ms);
        w.to = w.to.max(r.measure_to_ms);
        if r.measured_ms.is_some() {
            w.measured = w.measured.max(r.measured_ms());
        }
        w.cpu = w.cpu.zip(cpu).map(|(a, b)| a.max(b));
        w.data.add_counts(r);
    }
    let mut pooled: BTreeMap<(u64, String), (PhaseData, usize)> = BTreeMap::new();
    for ((scenario, block, _), w) in windows {
        let mut data = w.data;
        // Version 2 records say how long they measured (slots of a segment are not one
        // stretch); version 1 records measured from `from` to `to`.
        let ms = if w.measured > 0 {
            w.measured
        } else {
            w.to - w.from
        };
        data.window_s = ms as f64 / 1000.0;
        data.server_cpu_ms = w.cpu;
        match pooled.entry((block, scenario)) {
            std::collections::btree_map::Entry::Vacant(v) => {
                v.insert((data, 1));
            }
            std::collections::btree_map::Entry::Occupied(mut o) => {
                let (mine, n) = o.get_mut();
                mine.absorb(data);
                *n += 1;
            }
        }
    }
    let repeated = pooled.values().filter(|(_, n)| *n > 1).count();
    out.phases = pooled.into_values().map(|(d, _)| d).collect();

    out.warnings.extend(failed);
    let mut warn = |n: usize, what: &str| {
        if n > 0 {
            out.warnings.push(format!("{n} phase record(s) {what}"));
        }
    };
    warn(newer, "of a newer log format ignored");
    warn(
        unverified,
        "not verified (scenario not confirmed in effect) ignored",
    );
    warn(empty, "with an empty measured window ignored");
    warn(
        unsettled,
        "measured from the switch on (no settle time): the transition is in the numbers",
    );
    warn(
        repeated,
        "share a (scenario, block) with a different phase number (several runs in one log?); \
         pooled",
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::phase_log::test_aggregate as agg;

    fn record(scenario: &str, block: u64, phase: u64, from: u64, to: u64) -> PhaseRecord {
        PhaseRecord {
            version: 1,
            kind: "phase".into(),
            scenario: scenario.into(),
            block,
            phase,
            switched_at_ms: from - 1000,
            measure_from_ms: from,
            measure_to_ms: to,
            restarted: false,
            verified: true,
            commands: vec![
                agg(Some("query"), None, 1000),
                agg(Some("stmt_execute"), None, 500),
                agg(Some("ping"), None, 300),
                agg(Some("stmt_prepare"), None, 50),
            ],
            digests: vec![agg(None, Some("aa"), 1000), agg(None, Some("bb"), 500)],
            server_cpu_ms: None,
            ..PhaseRecord::default()
        }
    }

    #[test]
    fn statements_define_throughput_latency_and_errors() {
        let c = collect(&[record("a", 0, 0, 10_000, 20_000)]);
        assert_eq!(c.scheduled, vec!["a"]);
        let p = c.get("a", 0).unwrap();
        assert_eq!(p.statements, 1500);
        assert_eq!(p.throughput(), Some(150.0));
        assert_eq!(p.error_rate(), Some(150.0 / 1500.0));
        assert_eq!(p.mean_latency_ns(), Some(2_000_000.0));
        assert_eq!(weighted_hist::total(&p.histogram), 1500.0);
        assert!(p.raw_quantile_ns(0.99).is_some());
        assert_eq!(p.digests.len(), 2);
        assert_eq!(p.digests["bb"].mean_ns(), Some(2_000_000.0));
        assert!(c.warnings.is_empty(), "{:?}", c.warnings);
    }

    #[test]
    fn merges_proxies_pools_runs_and_drops_untrusted_records() {
        let mut unverified = record("b", 0, 1, 30_000, 40_000);
        unverified.verified = false;
        let mut inverted = record("b", 1, 3, 50_000, 50_000);
        inverted.scenario = "c".into();
        let c = collect(&[
            record("a", 0, 0, 10_000, 20_000),
            // A second psprobe's view of the same phase: one window, counts add.
            record("a", 0, 0, 10_100, 20_000),
            unverified,
            inverted,
            // The same block number in a second run: pooled, windows add.
            record("a", 0, 7, 90_000, 100_000),
        ]);
        assert_eq!(c.scheduled, vec!["a", "b", "c"]);
        assert_eq!(c.phases.len(), 1);
        let p = c.get("a", 0).unwrap();
        assert_eq!(p.statements, 4500);
        assert_eq!(p.window_s, 20.0);
        assert_eq!(p.digests["aa"].timed, 3000);
        assert_eq!(c.warnings.len(), 3, "{:?}", c.warnings);
        assert!(c.get("b", 0).is_none());
    }
}
