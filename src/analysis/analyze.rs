//! The driver: phase records → per-block pairs → estimates, drift checks and warnings.

use crate::phase_log::PhaseRecord;

use super::baseline;
use super::bootstrap;
use super::error::AnalysisError;
use super::estimate::{Analysis, Drift, Estimate, Method, Metric, MoreBlocks, Options, Scale};
use super::mix::latency_pair;
use super::paired::{
    pair_blocks, pairs_needed, pooled, robust_interval, trend, Interval, Pooled, MAX_LOG_HALFWIDTH,
    MIN_SLOW_PAIRS, PRIOR_SLOW_PAIR_SD,
};
use super::phase_data::{collect, PhaseData};
use super::rng::seed_of;
use super::stats_math::{mean, sd};
use crate::phase_log::SLOW;

/// Below this share of the baseline's latency time in digests common to both phases, the
/// mix-adjusted latency speaks for only part of the workload: warned.
const MIN_COVERAGE: f64 = 0.9;

/// Analyses phase records of one design (see [`super::run::analyze_run`] for a whole log)
/// with the default [`Options`] (95% intervals).
#[cfg(test)]
pub(crate) fn analyze(
    phases: &[PhaseRecord],
    baseline: Option<&str>,
) -> Result<Analysis, AnalysisError> {
    analyze_with(phases, baseline, &Options::default())
}

/// One metric's per-block values for one scenario.
#[derive(Default)]
struct Series {
    blocks: Vec<f64>,
    diffs: Vec<f64>,
    base: Vec<f64>,
    scen: Vec<f64>,
    adjusted: bool,
    coverage: Option<f64>,
}

impl Series {
    fn new() -> Self {
        Series {
            adjusted: true,
            ..Series::default()
        }
    }

    fn push(&mut self, block: u64, diff: f64, base: Option<f64>, scen: Option<f64>) {
        if !diff.is_finite() {
            return;
        }
        self.blocks.push(block as f64);
        self.diffs.push(diff);
        self.base.extend(base);
        self.scen.extend(scen);
    }
}

pub(crate) fn analyze_with(
    phases: &[PhaseRecord],
    requested: Option<&str>,
    options: &Options,
) -> Result<Analysis, AnalysisError> {
    if !(options.level > 0.0 && options.level < 1.0) {
        return Err(AnalysisError::BadLevel(options.level));
    }
    let data = collect(phases);
    if data.scheduled.is_empty() {
        return Err(AnalysisError::NoPhases);
    }
    let (base_name, rule) = baseline::select(&data.scheduled, requested)?;
    if data.scheduled.len() < 2 {
        return Err(AnalysisError::NothingToCompare { only: base_name });
    }
    let mut warnings = data.warnings.clone();
    if let Some(r) = requested.filter(|r| *r != base_name) {
        warnings.push(format!(
            "baseline {base_name} (scheduled) is used instead of the requested {r}"
        ));
    }
    let blocks = data.blocks();
    let block_seconds = block_seconds(phases);
    let complete = blocks
        .iter()
        .filter(|&&b| data.scheduled.iter().all(|s| data.get(s, b).is_some()))
        .count();
    if complete < blocks.len() {
        warnings.push(format!(
            "{} of {} block(s) incomplete (run stopped mid-block, or phases dropped); their \
             pairs are still used",
            blocks.len() - complete,
            blocks.len()
        ));
    }

    // Every comparison's per-block series first: comparisons with few blocks borrow the
    // noise estimate of the others (same run, same host).
    let mut compared: Vec<(&String, Vec<(Metric, Series)>)> = Vec::new();
    for scenario in data.scheduled.iter().filter(|s| **s != base_name) {
        let pairs = pair_blocks(&data, &blocks, &base_name, scenario);
        if pairs.is_empty() {
            warnings.push(format!(
                "{scenario}: no block with usable phases of it and of {base_name}; not compared"
            ));
            continue;
        }
        let metrics: &[Metric] = if options.headline_only {
            &Metric::HEADLINE
        } else {
            &Metric::ALL
        };
        compared.push((scenario, block_series(&pairs, metrics)));
    }
    let pools: Vec<(Metric, Option<Pooled>)> = Metric::ALL
        .iter()
        .map(|m| {
            let of_metric: Vec<&[f64]> = compared
                .iter()
                .flat_map(|(_, series)| series.iter())
                .filter(|(metric, _)| metric == m)
                .map(|(_, s)| s.diffs.as_slice())
                .collect();
            (*m, pooled(&of_metric))
        })
        .collect();
    let pool_of = |m: Metric| pools.iter().find(|(x, _)| *x == m).and_then(|(_, p)| *p);

    let mut estimates = Vec::new();
    let mut drift = Vec::new();
    for (scenario, series) in &compared {
        let cmp = Comparison {
            scenario,
            baseline: &base_name,
            options,
            schedule: data.schedule.as_str(),
            block_seconds,
        };
        let mut fewest = usize::MAX;
        for (metric, s) in series {
            if s.diffs.is_empty() {
                if *metric != Metric::ServerCpu {
                    warnings.push(format!(
                        "{scenario}: no block has enough data for {}",
                        metric.label()
                    ));
                }
                continue;
            }
            fewest = fewest.min(s.diffs.len());
            let e = cmp.estimate(*metric, s, pool_of(*metric));
            if e.digest_coverage.is_some_and(|c| c < MIN_COVERAGE)
                && e.metric == Metric::MeanLatency
            {
                warnings.push(format!(
                    "{scenario}: digests seen in both phases hold only {:.0}% of {base_name}'s \
                     latency time in some block; latency compares that part",
                    e.digest_coverage.unwrap_or(0.0) * 100.0
                ));
            }
            estimates.push(e);
            if matches!(metric, Metric::Throughput | Metric::MeanLatency) {
                if s.diffs.len() == 2 {
                    warnings.push(format!(
                        "{scenario}: 2 paired blocks for {}: drift not checked",
                        metric.label()
                    ));
                }
                if let Some(d) = cmp.drift(*metric, s) {
                    if d.flagged {
                        warnings.push(format!(
                            "{scenario}: {} ratio drifts by {:+.2}% per block (p = {:.3}); \
                             the average hides a trend",
                            metric.label(),
                            d.slope_per_block * 100.0,
                            d.p_value
                        ));
                    }
                    drift.push(d);
                }
            }
        }
        if fewest < 2 {
            warnings.push(format!(
                "{scenario}: a single paired block for some metrics: point estimates without \
                 intervals unless the run's other comparisons lend a noise estimate"
            ));
        } else if fewest < super::paired::MIN_OWN_PAIRS {
            warnings.push(format!(
                "{scenario}: only {fewest} paired blocks: its intervals use the noise of the \
                 run's other comparisons where that is larger (run at least {} blocks)",
                super::paired::MIN_OWN_PAIRS
            ));
        }
    }
    if estimates.is_empty() {
        return Err(AnalysisError::NoPairedBlocks {
            baseline: base_name,
        });
    }
    Ok(Analysis {
        schedule: data.schedule.clone(),
        baseline: base_name,
        baseline_rule: rule,
        scenarios: data.scheduled.clone(),
        level: options.level,
        blocks: blocks.len(),
        complete_blocks: complete,
        estimates,
        drift,
        warnings,
    })
}

/// Mean time from a block's first switch to its last measured moment, seconds.
fn block_seconds(phases: &[PhaseRecord]) -> Option<f64> {
    let mut spans: std::collections::BTreeMap<u64, (u64, u64)> = std::collections::BTreeMap::new();
    for p in phases.iter().filter(|p| p.kind == "phase") {
        let e = spans
            .entry(p.block)
            .or_insert((p.switched_at_ms, p.measure_to_ms));
        e.0 = e.0.min(p.switched_at_ms);
        e.1 = e.1.max(p.measure_to_ms);
    }
    let n = spans.len();
    (n > 0).then(|| {
        spans
            .values()
            .map(|(a, b)| b.saturating_sub(*a) as f64 / 1000.0)
            .sum::<f64>()
            / n as f64
    })
}

/// Every metric's per-block values for one scenario, from its (block, baseline, scenario)
/// phases.
fn block_series(
    pairs: &[(u64, &PhaseData, &PhaseData)],
    metrics: &[Metric],
) -> Vec<(Metric, Series)> {
    let mut out: Vec<(Metric, Series)> = metrics.iter().map(|m| (*m, Series::new())).collect();
    let ln_ratio = |s: f64, b: f64| (s > 0.0 && b > 0.0).then(|| (s / b).ln());
    for &(block, b, s) in pairs {
        let latency = latency_pair(b, s);
        for (metric, series) in &mut out {
            match metric {
                Metric::Throughput => {
                    let (tb, ts) = (b.throughput(), s.throughput());
                    if let Some(d) = tb.zip(ts).and_then(|(tb, ts)| ln_ratio(ts, tb)) {
                        series.push(block, d, tb, ts);
                    }
                }
                Metric::ErrorRate => {
                    if let (Some(eb), Some(es)) = (b.error_rate(), s.error_rate()) {
                        series.push(block, es - eb, Some(eb), Some(es));
                    }
                }
                Metric::ServerCpu => {
                    let (cb, cs) = (b.cpu_per_statement(), s.cpu_per_statement());
                    if let Some(d) = cb.zip(cs).and_then(|(cb, cs)| ln_ratio(cs, cb)) {
                        series.push(block, d, cb, cs);
                    }
                }
                Metric::MeanLatency
                | Metric::P50Latency
                | Metric::P95Latency
                | Metric::P99Latency => {
                    let Some(pair) = &latency else { continue };
                    let diff = match metric.quantile() {
                        Some(q) => pair.quantile_log_ratio(q),
                        None => pair.mean_log_ratio(),
                    };
                    let Some(diff) = diff else { continue };
                    let raw = |p: &PhaseData| match metric.quantile() {
                        Some(q) => p.raw_quantile_ns(q),
                        None => p.mean_latency_ns(),
                    };
                    series.push(block, diff, raw(b), raw(s));
                    series.adjusted &= pair.coverage.is_some();
                    if let Some(c) = pair.coverage {
                        series.coverage = Some(series.coverage.map_or(c, |m: f64| m.min(c)));
                    }
                }
            }
        }
    }
    out
}

struct Comparison<'a> {
    scenario: &'a str,
    baseline: &'a str,
    options: &'a Options,
    schedule: &'a str,
    /// Mean length of a block (a slow pair: both phases, restarts included), seconds.
    block_seconds: Option<f64>,
}

impl Comparison<'_> {
    fn estimate(&self, metric: Metric, s: &Series, pool: Option<Pooled>) -> Estimate {
        let (method, scale) = match metric {
            Metric::ErrorRate => (Method::T, Scale::Difference),
            m if m.quantile().is_some() => (Method::Bootstrap, Scale::Ratio),
            _ => (Method::T, Scale::Ratio),
        };
        let interval = match method {
            Method::T => robust_interval(&s.diffs, self.options.level, pool),
            Method::Bootstrap => {
                let seed =
                    self.options.seed ^ seed_of(&[self.scenario, self.baseline, metric.label()]);
                bootstrap::percentile_interval(
                    &s.diffs,
                    self.options.level,
                    self.options.resamples,
                    seed,
                )
            }
        };
        let Interval {
            center,
            bounds,
            p_value,
            n,
        } = interval.clone().expect("series is not empty");
        let to_scale = |x: f64| match scale {
            Scale::Ratio => x.exp_m1(),
            Scale::Difference => x,
        };
        let latency = !matches!(
            metric,
            Metric::Throughput | Metric::ErrorRate | Metric::ServerCpu
        );
        // A restart comparison with too few pairs, or any comparison whose interval is too
        // wide to say anything, gets no interval, and says what it needs.
        let too_wide = bounds.is_some_and(|(lo, hi)| (hi - lo) / 2.0 > MAX_LOG_HALFWIDTH);
        let too_few = self.schedule == SLOW && n < MIN_SLOW_PAIRS;
        let (bounds, p_value, significant, needs) =
            if (too_few || too_wide) && scale == Scale::Ratio {
                (None, None, false, Some(self.more_blocks(&s.diffs)))
            } else {
                (
                    bounds,
                    p_value,
                    interval.is_some_and(|i| i.significant()),
                    None,
                )
            };
        Estimate {
            schedule: self.schedule.to_string(),
            metric,
            scenario: self.scenario.to_string(),
            baseline: self.baseline.to_string(),
            scale,
            ratio: to_scale(center),
            ci_low: bounds.map(|b| to_scale(b.0)),
            ci_high: bounds.map(|b| to_scale(b.1)),
            significant,
            p_value,
            method,
            n_blocks: n,
            baseline_value: mean(&s.base).unwrap_or(f64::NAN),
            scenario_value: mean(&s.scen).unwrap_or(f64::NAN),
            mix_adjusted: latency && s.adjusted,
            digest_coverage: if latency { s.coverage } else { None },
            needs,
        }
    }

    /// How many more slow pairs (and minutes of them) an interval of the target half-width
    /// needs, from the pairs' own spread once there are two, else a prior.
    fn more_blocks(&self, diffs: &[f64]) -> MoreBlocks {
        let spread = sd(diffs).filter(|s| *s > 0.0).unwrap_or(PRIOR_SLOW_PAIR_SD);
        let target = self.options.slow_target;
        let needed = pairs_needed(spread, target / 100.0, self.options.level);
        let more = needed.saturating_sub(diffs.len() as u64).max(1);
        MoreBlocks {
            blocks: more,
            minutes: more as f64 * self.block_seconds.unwrap_or(60.0) / 60.0,
            halfwidth_points: target,
            schedule: self.schedule.to_string(),
        }
    }

    fn drift(&self, metric: Metric, s: &Series) -> Option<Drift> {
        let t = trend(&s.blocks, &s.diffs, self.options.level)?;
        Some(Drift {
            scenario: self.scenario.to_string(),
            baseline: self.baseline.to_string(),
            metric,
            slope_per_block: t.slope,
            ci_low: t.bounds.0,
            ci_high: t.bounds.1,
            p_value: t.p_value,
            flagged: t.flagged(),
            n_blocks: t.n,
        })
    }
}
