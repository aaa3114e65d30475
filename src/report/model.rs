//! The report's content, computed once from the phase log and the analysis; every output
//! format renders this.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::analysis::{Analysis, Estimate, Metric};
use crate::controller::phase_log::PhaseRecord;
use crate::stats::histogram::bucket_value_ns;

/// Statements are what a workload issues: text queries and prepared executions.
const STATEMENT_COMMANDS: [&str; 3] = ["query", "stmt_execute", "stmt_bulk_execute"];

#[derive(Debug, Serialize)]
pub struct HeadlineRow {
    pub scenario: String,
    pub is_baseline: bool,
    pub qps: f64,
    pub qps_change: Option<Interval>,
    pub p99_ms: f64,
    pub p99_change: Option<Interval>,
    pub mean_change: Option<Interval>,
    /// mysqld CPU time per statement (µs), from phases that recorded it (`--mysqld-pid`).
    pub server_cpu_us_per_statement: Option<f64>,
}

/// A change in percent with its interval.
#[derive(Debug, Serialize, Clone, Copy)]
pub struct Interval {
    pub percent: f64,
    pub low: Option<f64>,
    pub high: Option<f64>,
    pub significant: bool,
}

impl Interval {
    fn of(e: &Estimate) -> Self {
        Interval {
            percent: e.ratio * 100.0,
            low: e.ci_low.map(|v| v * 100.0),
            high: e.ci_high.map(|v| v * 100.0),
            significant: e.significant,
        }
    }

    pub fn text(&self) -> String {
        match (self.low, self.high) {
            (Some(lo), Some(hi)) => format!(
                "{:+.1}% ({:+.1}..{:+.1}){}",
                self.percent,
                lo,
                hi,
                if self.significant { " *" } else { "" }
            ),
            _ => format!("{:+.1}% (no interval)", self.percent),
        }
    }
}

#[derive(Debug, Serialize)]
pub struct DigestRow {
    pub scenario: String,
    pub digest: String,
    pub text: String,
    pub baseline_mean_ms: f64,
    pub scenario_mean_ms: f64,
    pub change_percent: f64,
    /// Extra time per second of measurement the scenario cost this digest.
    pub added_ms_per_s: f64,
}

#[derive(Debug, Serialize)]
pub struct TimelineRow {
    pub phase: u64,
    pub block: u64,
    pub scenario: String,
    pub from_s: f64,
    pub to_s: f64,
    pub qps: f64,
    pub mean_ms: f64,
    pub restarted: bool,
}

#[derive(Debug, Serialize)]
pub struct Report {
    pub analysis: Analysis,
    pub headline: Vec<HeadlineRow>,
    pub digests: Vec<DigestRow>,
    pub timeline: Vec<TimelineRow>,
    /// Latency distribution per scenario: (latency ms, cumulative fraction) points.
    #[serde(skip)]
    pub distributions: Vec<(String, Vec<(f64, f64)>)>,
}

fn statements(p: &PhaseRecord) -> (u64, u64, u64) {
    p.commands
        .iter()
        .filter(|c| {
            c.command
                .as_deref()
                .is_some_and(|c| STATEMENT_COMMANDS.contains(&c))
        })
        .fold((0, 0, 0), |(n, t, sum), c| {
            (n + c.count, t + c.timed, sum + c.latency_sum_ns)
        })
}

fn seconds(p: &PhaseRecord) -> f64 {
    (p.measure_to_ms.saturating_sub(p.measure_from_ms) as f64 / 1000.0).max(1e-3)
}

pub fn build(analysis: Analysis, phases: &[PhaseRecord]) -> Report {
    let baseline = analysis.baseline.clone();
    let headline = analysis
        .scenarios
        .iter()
        .map(|s| {
            let est = |m| analysis.estimate(s, m);
            let thr = est(Metric::Throughput);
            let p99 = est(Metric::P99Latency);
            let is_baseline = *s == baseline;
            let (qps, p99_ns) = if is_baseline {
                (
                    analysis
                        .estimates
                        .iter()
                        .find(|e| e.metric == Metric::Throughput)
                        .map_or(0.0, |e| e.baseline_value),
                    analysis
                        .estimates
                        .iter()
                        .find(|e| e.metric == Metric::P99Latency)
                        .map_or(0.0, |e| e.baseline_value),
                )
            } else {
                (
                    thr.map_or(0.0, |e| e.scenario_value),
                    p99.map_or(0.0, |e| e.scenario_value),
                )
            };
            let (cpu_ms, cpu_statements) = phases
                .iter()
                .filter(|p| &p.scenario == s)
                .filter_map(|p| Some((p.server_cpu_ms?, statements(p).0)))
                .fold((0u64, 0u64), |(c, n), (pc, pn)| (c + pc, n + pn));
            HeadlineRow {
                server_cpu_us_per_statement: (cpu_statements > 0)
                    .then(|| cpu_ms as f64 * 1000.0 / cpu_statements as f64),
                scenario: s.clone(),
                is_baseline,
                qps,
                qps_change: thr.filter(|_| !is_baseline).map(Interval::of),
                p99_ms: p99_ns / 1e6,
                p99_change: p99.filter(|_| !is_baseline).map(Interval::of),
                mean_change: est(Metric::MeanLatency)
                    .filter(|_| !is_baseline)
                    .map(Interval::of),
            }
        })
        .collect();

    // Per digest and scenario over all its phases: (count, timed, latency sum, seconds).
    let mut per: BTreeMap<(String, String), (String, u64, u64, f64)> = BTreeMap::new();
    let mut time_of: BTreeMap<String, f64> = BTreeMap::new();
    for p in phases {
        *time_of.entry(p.scenario.clone()).or_default() += seconds(p);
        for d in &p.digests {
            let key = (p.scenario.clone(), d.digest.clone().unwrap_or_default());
            let e = per
                .entry(key)
                .or_insert((d.text.clone().unwrap_or_default(), 0, 0, 0.0));
            e.1 += d.timed;
            e.2 += d.latency_sum_ns;
        }
    }
    let mut digests = Vec::new();
    for ((scenario, digest), (text, timed, sum, _)) in &per {
        if *scenario == baseline || *timed == 0 {
            continue;
        }
        let Some((_, b_timed, b_sum, _)) = per.get(&(baseline.clone(), digest.clone())) else {
            continue;
        };
        if *b_timed == 0 {
            continue;
        }
        let b_mean = *b_sum as f64 / *b_timed as f64 / 1e6;
        let s_mean = *sum as f64 / *timed as f64 / 1e6;
        let rate = *timed as f64 / time_of.get(scenario).copied().unwrap_or(1.0);
        digests.push(DigestRow {
            scenario: scenario.clone(),
            digest: digest.clone(),
            text: text.clone(),
            baseline_mean_ms: b_mean,
            scenario_mean_ms: s_mean,
            change_percent: (s_mean / b_mean - 1.0) * 100.0,
            added_ms_per_s: (s_mean - b_mean) * rate,
        });
    }
    digests.sort_by(|a, b| b.added_ms_per_s.total_cmp(&a.added_ms_per_s));
    digests.truncate(15);

    let t0 = phases.iter().map(|p| p.switched_at_ms).min().unwrap_or(0);
    let timeline = phases
        .iter()
        .map(|p| {
            let (n, timed, sum) = statements(p);
            TimelineRow {
                phase: p.phase,
                block: p.block,
                scenario: p.scenario.clone(),
                from_s: p.measure_from_ms.saturating_sub(t0) as f64 / 1000.0,
                to_s: p.measure_to_ms.saturating_sub(t0) as f64 / 1000.0,
                qps: n as f64 / seconds(p),
                mean_ms: if timed > 0 {
                    sum as f64 / timed as f64 / 1e6
                } else {
                    0.0
                },
                restarted: p.restarted,
            }
        })
        .collect();

    let distributions = analysis
        .scenarios
        .iter()
        .map(|s| {
            let mut hist: BTreeMap<u16, u64> = BTreeMap::new();
            for p in phases.iter().filter(|p| &p.scenario == s) {
                for c in p.commands.iter().filter(|c| {
                    c.command
                        .as_deref()
                        .is_some_and(|c| STATEMENT_COMMANDS.contains(&c))
                }) {
                    for (b, n) in &c.histogram {
                        *hist.entry(*b).or_default() += n;
                    }
                }
            }
            let total: u64 = hist.values().sum();
            let mut seen = 0;
            let points = hist
                .iter()
                .map(|(b, n)| {
                    seen += n;
                    (bucket_value_ns(*b) / 1e6, seen as f64 / total.max(1) as f64)
                })
                .collect();
            (s.clone(), points)
        })
        .collect();

    Report {
        analysis,
        headline,
        digests,
        timeline,
        distributions,
    }
}
