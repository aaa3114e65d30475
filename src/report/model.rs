//! The report's content, computed once from the phase log and the analysis; every output
//! format renders this.

use psprobe_core::protocol::CommandKind;
use std::collections::BTreeMap;

use serde::Serialize;

use crate::analysis::{Analysis, Estimate, Metric, RunAnalysis};
use crate::phase_log::group_names::{point_groups, BASE_CHECK};
use crate::phase_log::PhaseRecord;
use crate::stats::histogram::bucket_value_ns;

#[derive(Debug, Serialize)]
pub(crate) struct HeadlineRow {
    /// `fast` (switched at runtime) or `slow` (entered by restart).
    pub schedule: String,
    pub baseline: String,
    pub scenario: String,
    pub is_baseline: bool,
    /// Statements per second in the scenario's measured windows (mean over segments).
    pub qps: f64,
    pub qps_change: Option<Interval>,
    pub p99_ms: f64,
    pub p99_change: Option<Interval>,
    pub mean_change: Option<Interval>,
    /// mysqld CPU time per statement (µs), from windows that recorded it (`--mysqld-pid`).
    pub server_cpu_us_per_statement: Option<f64>,
    pub cpu_change: Option<Interval>,
}

/// A change in percent with its interval.
#[derive(Debug, Serialize, Clone)]
pub(crate) struct Interval {
    pub percent: f64,
    pub low: Option<f64>,
    pub high: Option<f64>,
    pub significant: bool,
    /// Why there is no interval, when a restart comparison has too few pairs: what it needs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub needs: Option<String>,
}

impl Interval {
    pub(crate) fn of(e: &Estimate) -> Self {
        Interval {
            percent: e.ratio * 100.0,
            low: e.ci_low.map(|v| v * 100.0),
            high: e.ci_high.map(|v| v * 100.0),
            significant: e.significant,
            needs: e.needs.as_ref().map(|n| n.text()),
        }
    }

    pub(crate) fn text(&self) -> String {
        match (self.low, self.high) {
            (Some(lo), Some(hi)) => format!(
                "{:+.1}% ({:+.1}..{:+.1}){}",
                self.percent,
                lo,
                hi,
                if self.significant { " *" } else { "" }
            ),
            _ => match &self.needs {
                Some(needs) => format!("{:+.1}% ({needs})", self.percent),
                None => format!("{:+.1}% (no interval)", self.percent),
            },
        }
    }
}

#[derive(Debug, Serialize)]
pub(crate) struct DigestRow {
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
pub(crate) struct TimelineRow {
    pub schedule: String,
    pub phase: u64,
    pub block: u64,
    pub scenario: String,
    pub from_s: f64,
    pub to_s: f64,
    /// Statements per second of measured time.
    pub qps: f64,
    pub mean_ms: f64,
    pub restarted: bool,
}

#[derive(Debug, Serialize)]
pub(crate) struct Report {
    pub analysis: RunAnalysis,
    pub headline: Vec<HeadlineRow>,
    pub digests: Vec<DigestRow>,
    pub timeline: Vec<TimelineRow>,
    /// Phase logs of how many probes were summed slot by slot (1: one probe's log).
    pub probes: u64,
    /// Every statement the probes relayed during the run, per digest (their logs' traffic
    /// records summed); `None` when no log has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub traffic: Option<super::traffic::Traffic>,
    /// Latency distribution per scenario: (latency ms, cumulative fraction) points.
    #[serde(skip)]
    pub distributions: Vec<(String, Vec<(f64, f64)>)>,
    /// The run records of the logs (an attribution's group definitions).
    #[serde(skip)]
    pub runs: Vec<crate::phase_log::RunRecord>,
    /// Setup-table rows someone else changed during the run: kept, never switched or restored.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub claims: Vec<crate::phase_log::ClaimRecord>,
    /// Lines of the logs that are no record (torn by a crash or a full disk): (log, line numbers).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub torn: Vec<(std::path::PathBuf, Vec<usize>)>,
}

impl Report {
    /// The row that says most about `scenario`: where it is compared, else where it is the
    /// baseline.
    pub(crate) fn row(&self, scenario: &str) -> Option<&HeadlineRow> {
        let mut rows = self.headline.iter().filter(|h| h.scenario == scenario);
        let first = rows.clone().find(|h| !h.is_baseline);
        first.or_else(|| rows.next())
    }

    /// Every scenario in the log, fast ones first, each once.
    pub(crate) fn scenarios(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for a in self.analysis.analyses() {
            for s in &a.scenarios {
                if !out.contains(s) {
                    out.push(s.clone());
                }
            }
        }
        out
    }
}

fn statements(p: &PhaseRecord) -> (u64, u64, u64) {
    p.commands
        .iter()
        .filter(|c| {
            c.command
                .as_deref()
                .is_some_and(CommandKind::is_statement_label)
        })
        .fold((0, 0, 0), |(n, t, sum), c| {
            (
                n + c.totals.count,
                t + c.totals.timed,
                sum + c.totals.latency_sum_ns,
            )
        })
}

/// Measured seconds of a record (the same definition the analysis uses).
fn seconds(p: &PhaseRecord) -> f64 {
    (p.measured_ms() as f64 / 1000.0).max(1e-3)
}

fn headline_rows(a: &Analysis, phases: &[PhaseRecord]) -> Vec<HeadlineRow> {
    a.scenarios
        .iter()
        .map(|s| {
            let est = |m| a.estimate(s, m);
            let is_baseline = *s == a.baseline;
            let base_value = |m: Metric| {
                a.estimates
                    .iter()
                    .find(|e| e.metric == m)
                    .map_or(0.0, |e| e.baseline_value)
            };
            let own_value = |m: Metric| est(m).map_or(0.0, |e| e.scenario_value);
            let value = |m| {
                if is_baseline {
                    base_value(m)
                } else {
                    own_value(m)
                }
            };
            let change = |m| est(m).filter(|_| !is_baseline).map(Interval::of);
            let (cpu_ms, cpu_statements) = phases
                .iter()
                .filter(|p| &p.scenario == s && p.schedule() == a.schedule)
                .filter_map(|p| Some((p.server_cpu_ms?, statements(p).0)))
                .fold((0u64, 0u64), |(c, n), (pc, pn)| (c + pc, n + pn));
            HeadlineRow {
                schedule: a.schedule.clone(),
                baseline: a.baseline.clone(),
                server_cpu_us_per_statement: (cpu_statements > 0 && cpu_ms > 0)
                    .then(|| cpu_ms as f64 * 1000.0 / cpu_statements as f64),
                cpu_change: change(Metric::ServerCpu),
                scenario: s.clone(),
                is_baseline,
                qps: value(Metric::Throughput),
                qps_change: change(Metric::Throughput),
                p99_ms: value(Metric::P99Latency) / 1e6,
                p99_change: change(Metric::P99Latency),
                mean_change: change(Metric::MeanLatency),
            }
        })
        .collect()
}

pub(crate) fn build(analysis: RunAnalysis, phases: &[PhaseRecord]) -> Report {
    let headline = analysis
        .analyses()
        .flat_map(|a| headline_rows(a, phases))
        .collect();

    // Digests against the baseline of the fast design (else the slow one).
    let reference = analysis.analyses().next();
    let (baseline, schedule) = reference.map_or((String::new(), String::new()), |a| {
        (a.baseline.clone(), a.schedule.clone())
    });
    let mine: Vec<&PhaseRecord> = phases.iter().filter(|p| p.schedule() == schedule).collect();
    // Per digest and scenario over all its records: (text, timed, latency sum).
    let mut per: BTreeMap<(String, String), (String, u64, u64)> = BTreeMap::new();
    let mut time_of: BTreeMap<String, f64> = BTreeMap::new();
    for p in &mine {
        *time_of.entry(p.scenario.clone()).or_default() += seconds(p);
        for d in &p.digests {
            let key = (p.scenario.clone(), d.digest.clone().unwrap_or_default());
            let e = per
                .entry(key)
                .or_insert((d.text.clone().unwrap_or_default(), 0, 0));
            e.1 += d.totals.timed;
            e.2 += d.totals.latency_sum_ns;
        }
    }
    let mut digests = Vec::new();
    for ((scenario, digest), (text, timed, sum)) in &per {
        // An attribution's design points have their own per-digest breakdown.
        let design_point = point_groups(scenario).is_some() || scenario == BASE_CHECK;
        if *scenario == baseline || *timed == 0 || design_point {
            continue;
        }
        let Some((_, b_timed, b_sum)) = per.get(&(baseline.clone(), digest.clone())) else {
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
                schedule: p.schedule().to_string(),
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

    let mut report = Report {
        analysis,
        headline,
        digests,
        timeline,
        probes: phases
            .iter()
            .map(PhaseRecord::probes_merged)
            .max()
            .unwrap_or(1),
        traffic: None,
        distributions: Vec::new(),
        runs: Vec::new(),
        claims: Vec::new(),
        torn: Vec::new(),
    };
    report.distributions = report
        .scenarios()
        .into_iter()
        .map(|s| {
            let mut hist: BTreeMap<u16, u64> = BTreeMap::new();
            for p in phases.iter().filter(|p| p.scenario == s) {
                for c in p.commands.iter().filter(|c| {
                    c.command
                        .as_deref()
                        .is_some_and(CommandKind::is_statement_label)
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
            (s, points)
        })
        .collect();
    report
}
