//! Paired comparison by block: each block contributes one difference between a scenario's
//! phase and the baseline's phase of the same block (a log-ratio for throughput and latency,
//! a plain difference for error rates). Slow changes in the workload hit both phases of a
//! block alike and cancel; what is left varies from block to block, and the phase, not the
//! query, is the sample: thousands of queries in a phase are one observation.
//!
//! - interval: Student's t on the differences, n − 1 degrees of freedom (few blocks, unknown
//!   variance: the t interval is exact for normal differences and robust for log-ratios of
//!   phase aggregates, which are averages of many queries). The standard error is the larger
//!   of the plain one and the Newey–West one, so noise correlated from block to block (a host
//!   drifting over seconds) cannot make the interval too narrow; with the order randomized
//!   inside every block the plain one is already right, and Newey–West is the insurance.
//!   With few blocks, the variance is pooled with the run's other comparisons (they share the
//!   host's noise), so three blocks that agree by chance do not give an absurdly narrow
//!   interval;
//! - drift: least-squares slope of the differences over block number, t-tested with n − 2
//!   degrees of freedom; a significant slope means the scenario's cost changed during the run
//!   (warming caches, growing PS tables, a changing workload), so the average hides a trend.

use std::collections::BTreeSet;

use super::phase_data::{Collected, PhaseData};
use super::stats_math::{mean, newey_west_se, ols_slope, sd, t_quantile, t_two_sided_p};

/// Below this many pairs a comparison's own variance is not trusted alone.
pub(crate) const MIN_OWN_PAIRS: usize = 6;
/// Below this many pairs a comparison of scenarios entered by restart gets no interval: with
/// two or three, Student's t on a handful of restart-separated pairs gives intervals of
/// hundreds of points that say nothing (the report says how many more it needs instead).
pub(crate) const MIN_SLOW_PAIRS: usize = 5;
/// Widest interval shown, as a half-width on the log scale (x/÷1.35, about +-30 points
/// near zero): wider, an estimate of any schedule gets no interval and says what it needs
/// instead. Fast cells at 512 threads with slots eaten by switching gave -90%..+400% once,
/// which says nothing and stretched the study's chart until every other cell was unreadable.
pub(crate) const MAX_LOG_HALFWIDTH: f64 = 0.3;
/// Noise of one slow pair's log-ratio assumed before two pairs say otherwise (the spread of
/// restart-separated 10-30 s phases measured here: 5-10%).
pub(crate) const PRIOR_SLOW_PAIR_SD: f64 = 0.08;

/// Pairs needed for an interval of +-`halfwidth` (a fraction) with pairs of spread `sd`, at
/// `level`: the smallest n (at least [`MIN_SLOW_PAIRS`]) with t(n-1)·sd/√n within it.
pub(crate) fn pairs_needed(sd: f64, halfwidth: f64, level: f64) -> u64 {
    (MIN_SLOW_PAIRS as u64..100_000)
        .find(|&n| {
            let n_f = n as f64;
            t_quantile(0.5 + level / 2.0, n_f - 1.0) * sd / n_f.sqrt() <= halfwidth
        })
        .unwrap_or(100_000)
}

/// A noise estimate shared by the comparisons of one run and metric: the variance of the
/// per-block differences around each comparison's own mean, and its degrees of freedom.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Pooled {
    pub variance: f64,
    pub df: f64,
}

/// Pools the residual variance of several comparisons' differences (`None` without any
/// degree of freedom).
pub(crate) fn pooled(series: &[&[f64]]) -> Option<Pooled> {
    let (mut ss, mut df) = (0.0, 0.0);
    for xs in series.iter().filter(|xs| xs.len() >= 2) {
        let m = mean(xs)?;
        ss += xs.iter().map(|x| (x - m).powi(2)).sum::<f64>();
        df += (xs.len() - 1) as f64;
    }
    (df > 0.0).then(|| Pooled {
        variance: ss / df,
        df,
    })
}

/// The blocks in which both `scenario` and `baseline` have a usable phase, with the phases.
pub(crate) fn pair_blocks<'a>(
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
pub(crate) struct Interval {
    pub center: f64,
    /// `None` with fewer than two differences.
    pub bounds: Option<(f64, f64)>,
    pub p_value: Option<f64>,
    pub n: usize,
}

impl Interval {
    /// The interval excludes zero.
    pub(crate) fn significant(&self) -> bool {
        self.bounds.is_some_and(|(lo, hi)| lo > 0.0 || hi < 0.0)
    }
}

/// Student's t interval of the mean difference at confidence `level`; `None` when empty.
pub(crate) fn t_interval(diffs: &[f64], level: f64) -> Option<Interval> {
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
    Some(with_se(
        center,
        n,
        s / (n as f64).sqrt(),
        (n - 1) as f64,
        level,
    ))
}

/// The t interval around `center` with standard error `se` and `df` degrees of freedom.
fn with_se(center: f64, n: usize, se: f64, df: f64, level: f64) -> Interval {
    let half = t_quantile(0.5 + level / 2.0, df) * se;
    let p_value = if se > 0.0 {
        t_two_sided_p(center / se, df)
    } else if center == 0.0 {
        1.0
    } else {
        0.0
    };
    Interval {
        center,
        bounds: Some((center - half, center + half)),
        p_value: Some(p_value),
        n,
    }
}

/// The interval the analysis reports: Student's t on the per-block differences with the
/// larger of the plain and the Newey–West standard error; below [`MIN_OWN_PAIRS`] pairs the
/// variance is at least the pooled one (and the pooled degrees of freedom are used when it is
/// the larger). `None` when empty; no bounds with a single difference and nothing pooled.
pub(crate) fn robust_interval(diffs: &[f64], level: f64, pool: Option<Pooled>) -> Option<Interval> {
    let center = mean(diffs)?;
    let n = diffs.len();
    let own = sd(diffs).map(|s| (s * s, (n - 1) as f64));
    let (variance, df) = match (own, pool.filter(|_| n < MIN_OWN_PAIRS)) {
        (Some((v, _)), Some(p)) if p.variance > v => (p.variance, p.df),
        (Some(own), _) => own,
        (None, Some(p)) => (p.variance, p.df),
        (None, None) => {
            return Some(Interval {
                center,
                bounds: None,
                p_value: None,
                n,
            })
        }
    };
    let plain = (variance / n as f64).sqrt();
    let se = newey_west_se(diffs).map_or(plain, |nw| nw.max(plain));
    Some(with_se(center, n, se, df, level))
}

/// A trend of the paired differences over blocks.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Trend {
    /// Change of the difference per block.
    pub slope: f64,
    pub bounds: (f64, f64),
    pub p_value: f64,
    pub n: usize,
}

impl Trend {
    pub(crate) fn flagged(&self) -> bool {
        self.bounds.0 > 0.0 || self.bounds.1 < 0.0
    }
}

/// Slope of `ys` over `xs` with its t interval at `level`; `None` below three points.
pub(crate) fn trend(xs: &[f64], ys: &[f64], level: f64) -> Option<Trend> {
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
    fn robust_interval_pools_when_few_and_never_narrower_than_plain() {
        let d = [0.01, 0.011, 0.012];
        let plain = t_interval(&d, 0.95).unwrap().bounds.unwrap();
        let pool = pooled(&[&[0.1, -0.1, 0.05, -0.05], &d]).unwrap();
        assert_eq!(pool.df, 5.0);
        let wide = robust_interval(&d, 0.95, Some(pool))
            .unwrap()
            .bounds
            .unwrap();
        assert!(
            wide.1 - wide.0 > 5.0 * (plain.1 - plain.0),
            "{wide:?} vs {plain:?}"
        );
        // Enough pairs: its own variance only (pool ignored), never narrower than plain t.
        let many: Vec<f64> = (0..30).map(|i| 0.01 * f64::from(i % 5)).collect();
        let own = robust_interval(&many, 0.95, Some(pool))
            .unwrap()
            .bounds
            .unwrap();
        let t = t_interval(&many, 0.95).unwrap().bounds.unwrap();
        assert!(own.1 - own.0 >= t.1 - t.0 - 1e-12);
        assert!(own.1 - own.0 < wide.1 - wide.0);
        // One difference: bounds only from the pool.
        assert!(robust_interval(&[0.3], 0.95, None)
            .unwrap()
            .bounds
            .is_none());
        assert!(robust_interval(&[0.3], 0.95, Some(pool))
            .unwrap()
            .bounds
            .is_some());
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
