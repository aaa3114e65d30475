//! Paired comparison by block: each block contributes one difference between a scenario's
//! phase and the baseline's phase of the same block (a log-ratio for throughput and latency,
//! a plain difference for error rates). Slow changes in the workload hit both phases of a
//! block alike and cancel; what is left varies from block to block, and the phase, not the
//! query, is the sample: thousands of queries in a phase are one observation.
//!
//! - interval: Student's t on the differences, n − 1 degrees of freedom (few blocks, unknown
//!   variance: the t interval is exact for normal differences and robust for log-ratios of
//!   phase aggregates, which are averages of many queries);
//! - drift: least-squares slope of the differences over block number, t-tested with n − 2
//!   degrees of freedom; a significant slope means the scenario's cost changed during the run
//!   (warming caches, growing PS tables, a changing workload), so the average hides a trend.

use std::collections::BTreeSet;

use super::phase_data::{Collected, PhaseData};
use super::stats_math::{mean, ols_slope, sd, t_quantile, t_two_sided_p};

/// The blocks in which both `scenario` and `baseline` have a usable phase, with the phases.
pub fn pair_blocks<'a>(
    data: &'a Collected,
    blocks: &BTreeSet<u64>,
    baseline: &str,
    scenario: &str,
) -> Vec<(u64, &'a PhaseData, &'a PhaseData)> {
    blocks
        .iter()
        .filter_map(|&b| Some((b, data.get(baseline, b)?, data.get(scenario, b)?)))
        .collect()
}

/// A central value with its interval (on the scale the differences were taken on).
#[derive(Debug, Clone, PartialEq)]
pub struct Interval {
    pub center: f64,
    /// `None` with fewer than two differences.
    pub bounds: Option<(f64, f64)>,
    pub p_value: Option<f64>,
    pub n: usize,
}

impl Interval {
    /// The interval excludes zero.
    pub fn significant(&self) -> bool {
        self.bounds.is_some_and(|(lo, hi)| lo > 0.0 || hi < 0.0)
    }
}

/// Student's t interval of the mean difference at confidence `level`; `None` when empty.
pub fn t_interval(diffs: &[f64], level: f64) -> Option<Interval> {
    let center = mean(diffs)?;
    let n = diffs.len();
    let Some(s) = sd(diffs) else {
        return Some(Interval {
            center,
            bounds: None,
            p_value: None,
            n,
        });
    };
    let df = (n - 1) as f64;
    let se = s / (n as f64).sqrt();
    let half = t_quantile(0.5 + level / 2.0, df) * se;
    let p_value = if se > 0.0 {
        t_two_sided_p(center / se, df)
    } else if center == 0.0 {
        1.0
    } else {
        0.0
    };
    Some(Interval {
        center,
        bounds: Some((center - half, center + half)),
        p_value: Some(p_value),
        n,
    })
}

/// A trend of the paired differences over blocks.
#[derive(Debug, Clone, PartialEq)]
pub struct Trend {
    /// Change of the difference per block.
    pub slope: f64,
    pub bounds: (f64, f64),
    pub p_value: f64,
    pub n: usize,
}

impl Trend {
    pub fn flagged(&self) -> bool {
        self.bounds.0 > 0.0 || self.bounds.1 < 0.0
    }
}

/// Slope of `ys` over `xs` with its t interval at `level`; `None` below three points.
pub fn trend(xs: &[f64], ys: &[f64], level: f64) -> Option<Trend> {
    let (slope, se, df) = ols_slope(xs, ys)?;
    let half = t_quantile(0.5 + level / 2.0, df) * se;
    let p_value = if se > 0.0 {
        t_two_sided_p(slope / se, df)
    } else if slope == 0.0 {
        1.0
    } else {
        0.0
    };
    Some(Trend {
        slope,
        bounds: (slope - half, slope + half),
        p_value,
        n: xs.len(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn t_interval_by_hand() {
        // mean 0.02, sd 0.01, n 4: half-width t(0.975, 3) · 0.005 = 3.182 · 0.005.
        let d = [0.01, 0.02, 0.03, 0.02];
        let sd_ = sd(&d).unwrap();
        let i = t_interval(&d, 0.95).unwrap();
        let half = 3.182_446 * sd_ / 2.0;
        let (lo, hi) = i.bounds.unwrap();
        assert!((i.center - 0.02).abs() < 1e-12);
        assert!((lo - (0.02 - half)).abs() < 1e-6 && (hi - (0.02 + half)).abs() < 1e-6);
        assert!(i.significant() && i.p_value.unwrap() < 0.05);

        let one = t_interval(&[0.5], 0.95).unwrap();
        assert_eq!((one.bounds, one.p_value, one.n), (None, None, 1));
        assert!(!one.significant());
        assert!(t_interval(&[], 0.95).is_none());
        let flat = t_interval(&[0.0, 0.0, 0.0], 0.95).unwrap();
        assert!(!flat.significant() && flat.p_value == Some(1.0));
    }

    #[test]
    fn trend_flags_a_slope_only() {
        let xs: Vec<f64> = (0..10).map(f64::from).collect();
        let noise = [0.3, -0.2, 0.1, -0.4, 0.2, 0.0, -0.1, 0.4, -0.3, 0.1];
        let up: Vec<f64> = xs.iter().zip(noise).map(|(x, e)| x + e).collect();
        assert!(trend(&xs, &up, 0.95).unwrap().flagged());
        assert!(!trend(&xs, &noise, 0.95).unwrap().flagged());
        assert!(trend(&xs[..2], &up[..2], 0.95).is_none());
    }
}
