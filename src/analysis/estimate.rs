//! The analysis's public results: one [`Estimate`] per (scenario, metric) against the
//! baseline, [`Drift`] checks, and the [`Analysis`] that holds them, all serialisable so a
//! report can print them as JSON.

use serde::Serialize;

use super::baseline::BaselineRule;

/// What is compared. Throughput is in statements per second, latencies in nanoseconds, the
/// error rate a fraction of statements.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Metric {
    Throughput,
    /// Mix-adjusted mean statement latency.
    MeanLatency,
    /// Mix-adjusted latency percentiles.
    P50Latency,
    P95Latency,
    P99Latency,
    ErrorRate,
    /// mysqld's CPU time per statement (phases recorded with `--mysqld-pid`): the cost that
    /// shows when the server is not saturated and throughput cannot move.
    ServerCpu,
}

impl Metric {
    pub(crate) const ALL: [Metric; 7] = [
        Metric::Throughput,
        Metric::MeanLatency,
        Metric::P50Latency,
        Metric::P95Latency,
        Metric::P99Latency,
        Metric::ErrorRate,
        Metric::ServerCpu,
    ];

    /// The metrics whose intervals "stop when precise" waits for.
    pub(crate) const HEADLINE: [Metric; 2] = [Metric::Throughput, Metric::MeanLatency];

    pub(crate) fn label(self) -> &'static str {
        match self {
            Metric::Throughput => "throughput",
            Metric::MeanLatency => "mean_latency",
            Metric::P50Latency => "p50_latency",
            Metric::P95Latency => "p95_latency",
            Metric::P99Latency => "p99_latency",
            Metric::ErrorRate => "error_rate",
            Metric::ServerCpu => "server_cpu",
        }
    }

    /// The quantile a percentile metric reads.
    pub(crate) fn quantile(self) -> Option<f64> {
        match self {
            Metric::P50Latency => Some(0.50),
            Metric::P95Latency => Some(0.95),
            Metric::P99Latency => Some(0.99),
            _ => None,
        }
    }
}

/// How [`Estimate::ratio`] and its bounds read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Scale {
    /// Relative: scenario / baseline − 1 (−0.05 is 5% lower than the baseline).
    Ratio,
    /// Absolute: scenario − baseline (error rates, which are often zero, so a ratio would be
    /// undefined); 0.001 is 0.1 percentage point more errors.
    Difference,
}

/// How the interval was computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Method {
    /// Student's t on the per-block log-ratios (or differences), standard error the larger of
    /// the plain and the Newey–West one, variance pooled across comparisons when few blocks.
    T,
    /// Expanded-percentile block bootstrap of the per-block log-ratios, never narrower than
    /// the t interval.
    Bootstrap,
}

/// One scenario's difference from the baseline in one metric, paired by block.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Estimate {
    /// `fast` (switched at runtime) or `slow` (entered through restarts).
    pub schedule: String,
    pub metric: Metric,
    pub scenario: String,
    pub baseline: String,
    pub scale: Scale,
    /// Scenario vs baseline: `S/B − 1` (the geometric mean over blocks of the per-block
    /// ratios, minus one) for [`Scale::Ratio`], `S − B` for [`Scale::Difference`]. For
    /// throughput a negative value is a loss; for latency a positive value is overhead.
    pub ratio: f64,
    /// Bounds of the interval at [`Analysis::level`], on the same scale; `None` with fewer
    /// than two paired blocks (a point estimate only, never significant).
    pub ci_low: Option<f64>,
    pub ci_high: Option<f64>,
    /// The interval excludes zero.
    pub significant: bool,
    /// Two-sided p-value (for the bootstrap, the share of resampled means across zero).
    pub p_value: Option<f64>,
    pub method: Method,
    /// Blocks that contributed a pair.
    pub n_blocks: usize,
    /// Plain means over those blocks of the phases' own values (not paired, not
    /// mix-adjusted), for tables: statements/s, ns or a fraction.
    pub baseline_value: f64,
    pub scenario_value: f64,
    /// Latency compared at the baseline's query mix (every block had per-digest data).
    pub mix_adjusted: bool,
    /// Smallest share, over the blocks, of the baseline's latency time held by digests seen in
    /// both phases (latency metrics with per-digest data only).
    pub digest_coverage: Option<f64>,
    /// A comparison of scenarios entered by restart with too few pairs for an honest interval
    /// (no bounds then): how many more it needs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub needs: Option<MoreBlocks>,
}

/// What an estimate without an interval would need: about `blocks` more blocks (slow pairs,
/// or fast segments), `minutes` of schedule, for an interval of +-`halfwidth_points`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct MoreBlocks {
    pub blocks: u64,
    pub minutes: f64,
    pub halfwidth_points: f64,
    /// `slow` (restart pairs) or `fast` (segments of runtime slots).
    pub schedule: String,
}

impl MoreBlocks {
    /// "not enough restarts (blocks) for an interval: about N more blocks (M minutes) for +-P
    /// points".
    pub(crate) fn text(&self) -> String {
        let what = if self.schedule == crate::phase_log::SLOW {
            "restarts"
        } else {
            "blocks"
        };
        format!(
            "not enough {what} for an interval: about {} more blocks ({:.0} minutes) for +-{} points",
            self.blocks,
            self.minutes.max(1.0).ceil(),
            self.halfwidth_points
        )
    }
}

impl Estimate {
    /// Half the interval's width in percentage points (`None` without an interval).
    pub(crate) fn halfwidth_points(&self) -> Option<f64> {
        Some((self.ci_high? - self.ci_low?) * 50.0)
    }
}

/// A trend, over blocks, of a scenario's paired log-ratios (throughput, mean latency).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Drift {
    pub scenario: String,
    pub baseline: String,
    pub metric: Metric,
    /// Change of the log-ratio per block (≈ change of the relative difference per block).
    pub slope_per_block: f64,
    pub ci_low: f64,
    pub ci_high: f64,
    pub p_value: f64,
    /// The slope's interval excludes zero: the average hides a trend.
    pub flagged: bool,
    pub n_blocks: usize,
}

/// Everything the analysis found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Analysis {
    /// `fast` (switched at runtime) or `slow` (entered through restarts).
    pub schedule: String,
    pub baseline: String,
    pub baseline_rule: BaselineRule,
    /// Scenarios in the log, in order of first appearance.
    pub scenarios: Vec<String>,
    /// Confidence level of every interval (0.95).
    pub level: f64,
    /// Blocks with at least one usable phase, and those in which every scenario has one.
    pub blocks: usize,
    pub complete_blocks: usize,
    pub estimates: Vec<Estimate>,
    pub drift: Vec<Drift>,
    pub warnings: Vec<String>,
}

impl Analysis {
    pub(crate) fn estimate(&self, scenario: &str, metric: Metric) -> Option<&Estimate> {
        self.estimates
            .iter()
            .find(|e| e.scenario == scenario && e.metric == metric)
    }

    #[cfg(test)]
    pub(crate) fn drift_of(&self, scenario: &str, metric: Metric) -> Option<&Drift> {
        self.drift
            .iter()
            .find(|d| d.scenario == scenario && d.metric == metric)
    }

    pub(crate) fn flagged_drift(&self) -> impl Iterator<Item = &Drift> {
        self.drift.iter().filter(|d| d.flagged)
    }
}

/// Knobs of the analysis; the defaults are what reports use.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Options {
    /// Confidence level of the intervals.
    pub level: f64,
    /// Bootstrap resamples for the percentiles.
    pub resamples: usize,
    /// Base seed of the bootstrap (mixed with the scenario and metric names).
    pub seed: u64,
    /// Only [`Metric::HEADLINE`] (cheap: for a stopping rule checked every segment).
    pub headline_only: bool,
    /// An attribution run's advice: the throughput percent it may spend, and the groups it
    /// must hold.
    pub budget: Option<f64>,
    pub need: Vec<String>,
    /// The half-width (points) a restart comparison without an interval is told how far it is
    /// from.
    pub slow_target: f64,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            level: 0.95,
            resamples: super::bootstrap::DEFAULT_RESAMPLES,
            seed: 0x7073_7072_6f62_6521, // "psprobe!"
            headline_only: false,
            budget: None,
            need: Vec::new(),
            slow_target: 3.0,
        }
    }
}
