//! Mix adjustment: compare a scenario's phase with the baseline's phase of the same block as
//! if both had run the baseline's query mix, so a shift in the traffic mix (more slow reports
//! in one phase) is not reported as overhead.
//!
//! Over the digests timed in both phases, with `n_d` the baseline's timed count of digest d
//! and `m_d` a phase's mean latency of d:
//!
//! - mean latency: `Σ n_d·m_d(S) / Σ n_d·m_d(B)`, which is `Σ τ_d · m_d(S)/m_d(B)` with
//!   `τ_d = n_d·m_d(B) / Σ n·m(B)` the baseline's time share: the per-digest slowdowns, weighted
//!   by where the baseline spends its time. (A ratio of weighted sums rather than an average
//!   of per-digest ratios, so a rare digest's noisy mean counts only by its time share.)
//! - percentiles: the scenario's distribution is rebuilt from its per-digest histograms, each
//!   normalised to the baseline's count of that digest (`Σ n_d · H_d(S) / n_d(S)`), and
//!   compared with the baseline's distribution over the same digests.
//!
//! Digests seen in only one of the two phases are left out; `coverage` says what share of the
//! baseline's time the compared digests hold. Without per-digest data the phases' own
//! statement histograms are compared, unadjusted.

use super::phase_data::PhaseData;
use super::weighted_hist::{self, Hist};

/// Latency of a scenario's phase and its baseline's phase, made comparable.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LatencyPair {
    /// Mean latency (ns) of the scenario at the baseline's mix.
    pub scenario_mean_ns: f64,
    /// Mean latency (ns) of the baseline over the compared digests.
    pub baseline_mean_ns: f64,
    /// The scenario's latency distribution at the baseline's mix.
    pub scenario_hist: Hist,
    pub baseline_hist: Hist,
    /// Timed statements behind each side (for the percentiles' sample-size rule).
    pub scenario_samples: f64,
    pub baseline_samples: f64,
    /// Share of the baseline's latency time in the compared digests; `None` when no per-digest
    /// data existed and the comparison is unadjusted.
    pub coverage: Option<f64>,
}

impl LatencyPair {
    /// Log-ratio of the q-quantiles, when both sides have enough samples.
    pub(crate) fn quantile_log_ratio(&self, q: f64) -> Option<f64> {
        if !weighted_hist::enough_for(self.scenario_samples, q)
            || !weighted_hist::enough_for(self.baseline_samples, q)
        {
            return None;
        }
        let s = weighted_hist::quantile_ns(&self.scenario_hist, q)?;
        let b = weighted_hist::quantile_ns(&self.baseline_hist, q)?;
        Some((s / b).ln())
    }

    pub(crate) fn mean_log_ratio(&self) -> Option<f64> {
        (self.scenario_mean_ns > 0.0 && self.baseline_mean_ns > 0.0)
            .then(|| (self.scenario_mean_ns / self.baseline_mean_ns).ln())
    }
}

/// Compares the latency of `scenario`'s phase with `baseline`'s (same block). `None` when there
/// is nothing to compare (no timed statements, or no digest timed in both).
pub(crate) fn latency_pair(baseline: &PhaseData, scenario: &PhaseData) -> Option<LatencyPair> {
    if baseline.digests.is_empty() || scenario.digests.is_empty() {
        return unadjusted(baseline, scenario);
    }
    let baseline_time: f64 = baseline.digests.values().map(|d| d.latency_sum_ns).sum();
    let mut pair = LatencyPair {
        scenario_mean_ns: 0.0,
        baseline_mean_ns: 0.0,
        scenario_hist: Hist::new(),
        baseline_hist: Hist::new(),
        scenario_samples: 0.0,
        baseline_samples: 0.0,
        coverage: None,
    };
    let (mut s_time, mut b_time, mut n) = (0.0, 0.0, 0.0);
    for (key, b) in &baseline.digests {
        let Some(s) = scenario.digests.get(key) else {
            continue;
        };
        let (Some(s_mean), Some(_)) = (s.mean_ns(), b.mean_ns()) else {
            continue;
        };
        let nb = b.timed as f64;
        s_time += nb * s_mean;
        b_time += b.latency_sum_ns;
        n += nb;
        let s_in_hist = weighted_hist::total(&s.histogram);
        if s_in_hist > 0.0 {
            weighted_hist::merge(&mut pair.scenario_hist, &s.histogram, nb / s_in_hist);
        }
        weighted_hist::merge(&mut pair.baseline_hist, &b.histogram, 1.0);
        pair.scenario_samples += s.timed as f64;
        pair.baseline_samples += nb;
    }
    if n <= 0.0 {
        return None;
    }
    pair.scenario_mean_ns = s_time / n;
    pair.baseline_mean_ns = b_time / n;
    pair.coverage = Some(if baseline_time > 0.0 {
        b_time / baseline_time
    } else {
        1.0
    });
    Some(pair)
}

fn unadjusted(baseline: &PhaseData, scenario: &PhaseData) -> Option<LatencyPair> {
    Some(LatencyPair {
        scenario_mean_ns: scenario.mean_latency_ns()?,
        baseline_mean_ns: baseline.mean_latency_ns()?,
        scenario_hist: scenario.histogram.clone(),
        baseline_hist: baseline.histogram.clone(),
        scenario_samples: weighted_hist::total(&scenario.histogram),
        baseline_samples: weighted_hist::total(&baseline.histogram),
        coverage: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::phase_data::DigestData;
    use crate::stats::histogram::bucket_of;

    /// A phase running `fast` queries of 1 ms and `slow` of 10 ms, each `factor` times slower.
    fn phase(fast: u64, slow: u64, factor: f64) -> PhaseData {
        let mut p = PhaseData {
            window_s: 10.0,
            ..PhaseData::default()
        };
        for (key, count, ns) in [("fast", fast, 1e6), ("slow", slow, 1e7)] {
            if count == 0 {
                continue;
            }
            let ns = ns * factor;
            let mut d = DigestData {
                timed: count,
                latency_sum_ns: count as f64 * ns,
                histogram: Hist::new(),
            };
            weighted_hist::add(&mut d.histogram, &[(bucket_of(ns as u64), count)], 1.0);
            p.statements += count;
            p.timed += count;
            p.latency_sum_ns += d.latency_sum_ns;
            weighted_hist::merge(&mut p.histogram, &d.histogram, 1.0);
            p.digests.insert(key.to_string(), d);
        }
        p
    }

    #[test]
    fn a_mix_shift_alone_is_no_overhead() {
        let base = phase(800, 200, 1.0);
        let shifted = phase(500, 500, 1.0);
        // Unadjusted, the mean rises by 2.1x (2.8 ms → 5.5 ms).
        let raw = shifted.mean_latency_ns().unwrap() / base.mean_latency_ns().unwrap();
        assert!(raw > 1.9);
        let pair = latency_pair(&base, &shifted).unwrap();
        assert!(pair.mean_log_ratio().unwrap().abs() < 1e-12);
        for q in [0.5, 0.95, 0.99] {
            assert!(pair.quantile_log_ratio(q).unwrap().abs() < 1e-12, "q {q}");
        }
        assert_eq!(pair.coverage, Some(1.0));
    }

    #[test]
    fn a_uniform_slowdown_shows_through_any_mix() {
        let base = phase(800, 200, 1.0);
        let slower = phase(300, 700, 1.10);
        let pair = latency_pair(&base, &slower).unwrap();
        assert!((pair.mean_log_ratio().unwrap() - 1.1f64.ln()).abs() < 1e-9);
        let p50 = pair.quantile_log_ratio(0.5).unwrap();
        assert!((p50 - 1.1f64.ln()).abs() < 0.05, "{p50}");
    }

    #[test]
    fn time_share_weighting_and_coverage() {
        // Only the slow digest slows down (by 20%); it holds 10/(8+10) of the baseline's time
        // at an 80/20 mix of 1 ms and 10 ms.
        let base = phase(800, 200, 1.0);
        let mut scen = phase(800, 200, 1.0);
        let slow = scen.digests.get_mut("slow").unwrap();
        slow.latency_sum_ns *= 1.2;
        let pair = latency_pair(&base, &scen).unwrap();
        let want = 0.8 / 2.8 + (2.0 / 2.8) * 1.2;
        assert!((pair.mean_log_ratio().unwrap().exp() - want).abs() < 1e-12);

        // A digest the scenario never ran is left out and coverage says so.
        let only_fast = phase(800, 0, 1.0);
        let pair = latency_pair(&base, &only_fast).unwrap();
        assert!((pair.coverage.unwrap() - 0.8 / 2.8).abs() < 1e-12);
        assert!(pair.mean_log_ratio().unwrap().abs() < 1e-12);

        // No per-digest data: unadjusted comparison.
        let mut a = phase(800, 200, 1.0);
        let mut b = phase(500, 500, 1.0);
        a.digests.clear();
        b.digests.clear();
        let pair = latency_pair(&a, &b).unwrap();
        assert_eq!(pair.coverage, None);
        assert!(pair.mean_log_ratio().unwrap() > 0.5);
    }
}
