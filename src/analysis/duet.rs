//! A duet run's estimate: two servers measured over the same seconds, side B's scenario the
//! other of side A's in every phase, the roles swapped from one phase of a pair to the next
//! (`controller::schedule::duet`).
//!
//! In a pair (block) side A runs scenario X then the reference R (or R then X) while side B
//! runs R then X. With e₁ = ln(A's rate in X) − ln(B's rate in R) (the phase where A runs X)
//! and e₂ = ln(B's rate in X) − ln(A's rate in R), each a comparison within the same seconds:
//!
//! - the pair's estimate is (e₁ + e₂)/2: the host's noise of each phase hits both sides of it
//!   and cancels, and a difference between the two servers (δ, side A faster than B) enters e₁
//!   as +δ and e₂ as −δ and cancels too. It equals the mean of the two sides' own sequential
//!   pairs, so the same records also give the sequential estimate to set beside it;
//! - (e₁ − e₂)/2 estimates δ, reported as the sides' difference;
//! - the centre is the 20% trimmed mean of the pairs' estimates and the interval Yuen's
//!   (Student's t on the winsorized variance, n − 2g − 1 degrees of freedom, with the
//!   Newey–West standard error as insurance against drift), the pair being the sample; fewer
//!   than [`MIN_SLOW_PAIRS`] pairs give none. Trimmed because the duet's differences are
//!   heavy-tailed: the host's noise that both sides share cancels, and what is left is mostly
//!   small, except in the few phases one side alone was disturbed (a stall on its CPU, its
//!   load generator back late after the restart), which move a plain mean by whole points
//!   (docs/measurement.md). Under the null the differences are symmetric (the roles are
//!   randomized), so the trimmed mean estimates the same effect. The sequential comparisons
//!   beside it use the same estimator, so the two differ by the design, not the statistic;
//!
//! A pair counts only when its phases ran at the same time on both sides (their measured
//! windows overlap by at least half); the CPU each server used in them gives the sides'
//! shares of the machine.
//!
//! Must not: read files or print.

use std::collections::BTreeMap;

use serde::Serialize;

use super::paired::{pairs_needed, MAX_LOG_HALFWIDTH, MIN_SLOW_PAIRS, PRIOR_SLOW_PAIR_SD};
use super::phase_data::{collect, Collected, PhaseData};
use super::stats_math::{mean, newey_west_se, sd, t_quantile};

/// Share of the pairs trimmed from each end.
const TRIM: f64 = 0.2;
use crate::phase_log::{PhaseRecord, SLOW};

/// A change in percent with its interval (`None` below [`MIN_SLOW_PAIRS`] pairs, or wider
/// than [`MAX_LOG_HALFWIDTH`]: one that says nothing).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Change {
    pub percent: f64,
    pub low: Option<f64>,
    pub high: Option<f64>,
    pub pairs: usize,
    /// Spread (SD) of the per-pair log-ratios, winsorized as the trimming does (the spread
    /// that sets the interval's width).
    pub pair_sd: Option<f64>,
}

/// A trimmed mean with Yuen's interval: (centre, bounds, winsorized SD).
type Trimmed = (f64, Option<(f64, f64)>, Option<f64>);

/// The [`TRIM`]med mean of `diffs` (in time order) and Yuen's interval at `level`; no bounds
/// below [`MIN_SLOW_PAIRS`] differences; `None` when empty or not finite.
pub(crate) fn trimmed(diffs: &[f64], level: f64) -> Option<Trimmed> {
    let n = diffs.len();
    if n == 0 || diffs.iter().any(|d| !d.is_finite()) {
        return None;
    }
    let mut sorted = diffs.to_vec();
    sorted.sort_by(f64::total_cmp);
    let g = (TRIM * n as f64).floor() as usize;
    let center = mean(&sorted[g..n - g])?;
    let (low, high) = (sorted[g], sorted[n - g - 1]);
    let winsorized: Vec<f64> = diffs.iter().map(|d| d.clamp(low, high)).collect();
    let spread = sd(&winsorized);
    let h = n - 2 * g;
    let (Some(sw), true) = (spread, n >= MIN_SLOW_PAIRS && h >= 2) else {
        return Some((center, None, spread));
    };
    let (n_f, h_f) = (n as f64, h as f64);
    // Yuen: the winsorized variance scaled by (n - 1) / (h (h - 1)); the Newey-West standard
    // error of the winsorized series (of its mean, so over n) scaled alike.
    let scale = (n_f * (n_f - 1.0) / (h_f * (h_f - 1.0))).sqrt();
    let yuen = sw / n_f.sqrt() * scale;
    let se = newey_west_se(&winsorized).map_or(yuen, |nw| yuen.max(nw * scale));
    let half = t_quantile(0.5 + level / 2.0, h_f - 1.0) * se;
    Some((center, Some((center - half, center + half)), spread))
}

impl Change {
    fn of(diffs: &[f64], level: f64) -> Option<Change> {
        let (center, bounds, spread) = trimmed(diffs, level)?;
        // An interval too wide to say anything is not given (the rule of every estimate).
        let bounds = bounds.filter(|(lo, hi)| (hi - lo) / 2.0 <= MAX_LOG_HALFWIDTH);
        Some(Change {
            percent: center.exp_m1() * 100.0,
            low: bounds.map(|b| b.0.exp_m1() * 100.0),
            high: bounds.map(|b| b.1.exp_m1() * 100.0),
            pairs: diffs.len(),
            pair_sd: spread,
        })
    }

    /// Half the interval's width in points.
    pub(crate) fn halfwidth(&self) -> Option<f64> {
        Some((self.high? - self.low?) / 2.0)
    }

    /// Pairs needed in all for +-`points` (the spread measured so far, or the prior). The
    /// trimmed mean's standard error is the winsorized spread over (1 - 2·TRIM)·√n.
    pub(crate) fn pairs_for(&self, points: f64, level: f64) -> u64 {
        let sd = self.pair_sd.unwrap_or(PRIOR_SLOW_PAIR_SD) / (1.0 - 2.0 * TRIM);
        pairs_needed(sd, points / 100.0, level)
    }
}

/// One scenario against the reference in a duet.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct DuetComparison {
    pub scenario: String,
    pub reference: String,
    /// Throughput (statements per second) of the scenario against the reference.
    pub throughput: Change,
    /// Mean statement latency.
    pub latency: Option<Change>,
    /// The same phases compared in time on one server (side A's, side B's): what sequential
    /// restart pairs would have said.
    pub sequential: [Option<Change>; 2],
    /// Side A's throughput against side B's in the same scenario, percent (the servers'
    /// difference the swapped roles cancel).
    pub side_difference: Option<f64>,
    /// Side A's share of the two servers' CPU time in the pairs' windows.
    pub cpu_share_a: Option<f64>,
    /// The scenario's side's share of the two servers' CPU time (0.5: as much as the
    /// reference's).
    pub cpu_share_scenario: Option<f64>,
}

impl DuetComparison {
    /// Pairs counted.
    pub(crate) fn pairs(&self) -> usize {
        self.throughput.pairs
    }
}

/// Per side, scenario and block: the phase's numbers and its measured window.
struct Side {
    data: Collected,
    windows: BTreeMap<(String, u64), (u64, u64)>,
}

impl Side {
    fn new(records: &[PhaseRecord]) -> Self {
        let slow: Vec<PhaseRecord> = records
            .iter()
            .filter(|r| r.kind == "phase" && r.schedule() == SLOW)
            .cloned()
            .collect();
        let mut windows = BTreeMap::new();
        for r in &slow {
            windows.insert(
                (r.scenario.clone(), r.block),
                (r.measure_from_ms, r.measure_to_ms),
            );
        }
        Side {
            data: collect(&slow),
            windows,
        }
    }

    fn get(&self, scenario: &str, block: u64) -> Option<(&PhaseData, (u64, u64))> {
        Some((
            self.data.get(scenario, block)?,
            *self.windows.get(&(scenario.to_string(), block))?,
        ))
    }
}

/// The two windows overlap by at least half of the shorter.
fn together(x: (u64, u64), y: (u64, u64)) -> bool {
    let overlap = x.1.min(y.1).saturating_sub(x.0.max(y.0));
    let shorter = (x.1 - x.0).min(y.1 - y.0);
    shorter > 0 && overlap * 2 >= shorter
}

/// A pair's four phases: side A's in the scenario and the reference, side B's likewise.
struct Pair<'a> {
    a: [&'a PhaseData; 2],
    b: [&'a PhaseData; 2],
}

impl Pair<'_> {
    fn log_ratio(&self, value: impl Fn(&PhaseData) -> Option<f64>) -> Option<[f64; 2]> {
        let ln = |p: &PhaseData| value(p).filter(|v| *v > 0.0).map(f64::ln);
        // e1: A in X against B in R; e2: B in X against A in R.
        let e1 = ln(self.a[0])? - ln(self.b[1])?;
        let e2 = ln(self.b[0])? - ln(self.a[1])?;
        Some([e1, e2])
    }
}

/// Every scenario of the duet against `reference`, at confidence `level`.
pub(crate) fn analyze_duet(
    a: &[PhaseRecord],
    b: &[PhaseRecord],
    reference: &str,
    level: f64,
) -> Vec<DuetComparison> {
    let (sa, sb) = (Side::new(a), Side::new(b));
    let scenarios: Vec<String> = sa
        .data
        .scheduled
        .iter()
        .filter(|s| s.as_str() != reference && sb.data.scheduled.contains(s))
        .cloned()
        .collect();
    let mut out = Vec::new();
    for scenario in scenarios {
        let mut pairs = Vec::new();
        for block in sa.data.blocks() {
            let (Some(ax), Some(ar), Some(bx), Some(br)) = (
                sa.get(&scenario, block),
                sa.get(reference, block),
                sb.get(&scenario, block),
                sb.get(reference, block),
            ) else {
                continue;
            };
            if together(ax.1, br.1) && together(bx.1, ar.1) {
                pairs.push(Pair {
                    a: [ax.0, ar.0],
                    b: [bx.0, br.0],
                });
            }
        }
        if let Some(c) = compare(&scenario, reference, &pairs, level) {
            out.push(c);
        }
    }
    out
}

fn compare<'a>(
    scenario: &str,
    reference: &str,
    pairs: &[Pair<'a>],
    level: f64,
) -> Option<DuetComparison> {
    let thr: Vec<[f64; 2]> = pairs
        .iter()
        .filter_map(|p| p.log_ratio(PhaseData::throughput))
        .collect();
    let duet: Vec<f64> = thr.iter().map(|[e1, e2]| (e1 + e2) / 2.0).collect();
    let throughput = Change::of(&duet, level)?;
    let lat: Vec<f64> = pairs
        .iter()
        .filter_map(|p| p.log_ratio(PhaseData::mean_latency_ns))
        .map(|[e1, e2]| (e1 + e2) / 2.0)
        .collect();
    let sequential = |side: fn(&Pair<'a>) -> [&'a PhaseData; 2]| {
        let diffs: Vec<f64> = pairs
            .iter()
            .filter_map(|p| {
                let [x, r] = side(p);
                Some(x.throughput()?.ln() - r.throughput()?.ln())
            })
            .filter(|d| d.is_finite())
            .collect();
        Change::of(&diffs, level)
    };
    let sides: Vec<f64> = thr.iter().map(|[e1, e2]| (e1 - e2) / 2.0).collect();
    let side_difference = trimmed(&sides, level).map(|(d, _, _)| d.exp_m1() * 100.0);
    let cpu = |f: fn(&Pair<'a>) -> [&'a PhaseData; 2]| -> Option<f64> {
        pairs
            .iter()
            .map(|p| f(p).iter().map(|d| d.server_cpu_ms).sum::<Option<f64>>())
            .sum::<Option<f64>>()
    };
    let share = |x: Option<f64>, y: Option<f64>| {
        let (x, y) = (x?, y?);
        (x + y > 0.0).then(|| x / (x + y))
    };
    let cpu_share_a = share(cpu(|p| p.a), cpu(|p| p.b));
    let cpu_share_scenario = share(cpu(|p| [p.a[0], p.b[0]]), cpu(|p| [p.a[1], p.b[1]]));
    Some(DuetComparison {
        scenario: scenario.to_string(),
        reference: reference.to_string(),
        throughput,
        latency: Change::of(&lat, level),
        sequential: [sequential(|p| p.a), sequential(|p| p.b)],
        side_difference,
        cpu_share_a,
        cpu_share_scenario,
    })
}

/// The widest half-width (points) of the duet's throughput and latency estimates; `None`
/// while any has no interval yet.
pub(crate) fn widest_halfwidth(comparisons: &[DuetComparison]) -> Option<f64> {
    let mut widest: Option<f64> = None;
    if comparisons.is_empty() {
        return None;
    }
    for c in comparisons {
        for change in std::iter::once(&c.throughput).chain(c.latency.as_ref()) {
            let h = change.halfwidth()?;
            widest = Some(widest.map_or(h, |w: f64| w.max(h)));
        }
    }
    widest
}

#[cfg(test)]
#[path = "duet_tests.rs"]
mod tests;
