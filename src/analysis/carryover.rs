//! The carryover profile: how a scenario's statements behave as a function of the time since
//! the switch into it, from the 50 ms since-switch bins of the fast schedule's records.
//!
//! For each scenario, early bin (the first half of a slot) and segment:
//! - the **effect** in the bin: the scenario's mean latency and statement rate against the
//!   baseline's in the same bin after its own switch (the latency ratio in 50 ms bins after
//!   each switch), compared with the same ratio in the steady state (the bins of the second
//!   half of the slots, always measured). A shift is carryover: the effect is not yet what it
//!   will be (or still what the previous scenario's was);
//! - the **disturbance**: the scenario's own rate and latency against its steady state. A
//!   switch slows what is in flight, so the first bins after any switch differ from the rest
//!   for every scenario alike; alike, it does not bias the comparison, and it is shown but not
//!   held against the settle time.
//!
//! Each is a log-ratio per segment, averaged over segments with a t interval, so the host's
//! drift cancels as in the headline estimates. A shift counts when its interval excludes zero
//! *and* it is larger than [`TOLERANCE`] (a 0.3% effect over 600 segments is real but does not
//! matter). The settle time suggested is the end of the last early bin with a shift, at least
//! one bin: the switch's own disturbance always lands in the first.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::phase_log::{BinRecord, PhaseRecord};

use super::stats_math::{mean, sd, t_quantile};

/// Deviations smaller than this (as a ratio) are not carryover worth excluding.
pub(crate) const TOLERANCE: f64 = 0.01;
/// Confidence of the per-bin intervals (several bins are tested: strict).
pub(crate) const LEVEL: f64 = 0.99;
/// Segments a bin needs before it is judged.
pub(crate) const MIN_SEGMENTS: usize = 4;
/// Statements a bin needs in a segment to count there.
const MIN_COUNT: u64 = 10;

/// A mean log-ratio with its interval, as a relative change (`exp(x) - 1`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(crate) struct Change {
    pub change: f64,
    pub low: f64,
    pub high: f64,
    pub segments: usize,
}

impl Change {
    fn of(xs: &[f64]) -> Option<Self> {
        if xs.len() < MIN_SEGMENTS {
            return None;
        }
        let m = mean(xs)?;
        let half = t_quantile(0.5 + LEVEL / 2.0, (xs.len() - 1) as f64) * sd(xs)?
            / (xs.len() as f64).sqrt();
        Some(Change {
            change: m.exp_m1(),
            low: (m - half).exp_m1(),
            high: (m + half).exp_m1(),
            segments: xs.len(),
        })
    }

    /// Significantly away from zero by more than the tolerance.
    pub(crate) fn deviates(&self) -> bool {
        (self.low > TOLERANCE) || (self.high < -TOLERANCE)
    }
}

/// One early bin of one scenario.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct BinPoint {
    pub bin: u16,
    /// Start of the bin after the switch, ms.
    pub from_ms: u64,
    /// Statement rate against the scenario's own steady state.
    pub rate: Option<Change>,
    /// Mean latency against the scenario's own steady state.
    pub latency: Option<Change>,
    /// Mean latency against the baseline's in the same bin (absent for the baseline).
    pub vs_baseline: Option<Change>,
    /// How far that latency ratio is from the steady one (carryover of the effect).
    pub latency_shift: Option<Change>,
    /// How far the rate ratio against the baseline is from the steady one.
    pub rate_shift: Option<Change>,
}

impl BinPoint {
    /// The effect in this bin is not the steady one.
    pub(crate) fn shifted(&self) -> bool {
        [self.latency_shift, self.rate_shift]
            .iter()
            .flatten()
            .any(Change::deviates)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct ScenarioProfile {
    pub scenario: String,
    pub points: Vec<BinPoint>,
    /// Mean latency against the baseline over the steady bins, for comparison with
    /// `vs_baseline` early on.
    pub steady_vs_baseline: Option<Change>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct CarryoverProfile {
    pub bin_ms: u64,
    pub baseline: String,
    /// Bins from here on are the steady state.
    pub steady_from_bin: u16,
    pub scenarios: Vec<ScenarioProfile>,
    /// End of the last early bin that deviates, ms after the switch (none: no carryover seen).
    pub carryover_ms: Option<u64>,
    /// The settle time the profile supports: `carryover_ms`, at least one bin.
    pub suggested_settle_ms: u64,
    /// The deviation reaches the end of the early half: the slot is too short to see its end.
    pub reaches_steady: bool,
}

impl CarryoverProfile {
    #[cfg(test)]
    pub(crate) fn seen(&self) -> bool {
        self.carryover_ms.is_some()
    }
}

/// Sums of one segment's bins.
#[derive(Clone, Copy, Default)]
struct Sums {
    slots: u64,
    count: u64,
    timed: u64,
    latency_sum_ns: u64,
}

impl Sums {
    fn add(&mut self, b: &BinRecord) {
        self.slots += b.slots;
        self.count += b.count;
        self.timed += b.timed;
        self.latency_sum_ns += b.latency_sum_ns;
    }

    fn rate(&self) -> Option<f64> {
        (self.slots > 0 && self.count >= MIN_COUNT).then(|| self.count as f64 / self.slots as f64)
    }

    fn mean(&self) -> Option<f64> {
        (self.timed >= MIN_COUNT && self.latency_sum_ns > 0)
            .then(|| self.latency_sum_ns as f64 / self.timed as f64)
    }
}

/// Per segment: (bin sums by bin, steady sums).
type Segments = BTreeMap<u64, (BTreeMap<u16, Sums>, Sums)>;

/// The profile of the fast records of a run, against `baseline`. `None` when no record has
/// since-switch bins.
pub(crate) fn profile(
    phases: &[PhaseRecord],
    baseline: &str,
    bin_ms: u64,
) -> Option<CarryoverProfile> {
    let fast: Vec<&PhaseRecord> = phases
        .iter()
        .filter(|p| p.schedule() == "fast" && p.verified && !p.since_switch.is_empty())
        .collect();
    // Bins a slot covers: the highest covered bin over the records, plus one.
    let covered = fast
        .iter()
        .flat_map(|p| p.since_switch.iter())
        .filter(|b| b.slots > 0)
        .map(|b| b.bin + 1)
        .max()?;
    let steady_from = covered.div_ceil(2).max(1);
    let mut by_scenario: BTreeMap<&str, Segments> = BTreeMap::new();
    for p in &fast {
        let segs = by_scenario.entry(p.scenario.as_str()).or_default();
        let (bins, steady) = segs.entry(p.block).or_default();
        for b in &p.since_switch {
            if b.bin >= steady_from && b.bin < covered {
                steady.add(b);
            } else if b.bin < steady_from {
                bins.entry(b.bin).or_default().add(b);
            }
        }
    }
    let base = by_scenario.get(baseline);
    let mut scenarios = Vec::new();
    let mut last_deviating: Option<u16> = None;
    for (name, segs) in &by_scenario {
        let mut points = Vec::new();
        for bin in 0..steady_from {
            let mut rate = Vec::new();
            let mut latency = Vec::new();
            let mut vs_base = Vec::new();
            let mut latency_shift = Vec::new();
            let mut rate_shift = Vec::new();
            for (block, (bins, steady)) in segs {
                let Some(b) = bins.get(&bin) else { continue };
                if let (Some(r), Some(rs)) = (b.rate(), steady.rate()) {
                    rate.push((r / rs).ln());
                }
                if let (Some(m), Some(ms)) = (b.mean(), steady.mean()) {
                    latency.push((m / ms).ln());
                }
                if *name == baseline {
                    continue;
                }
                let Some((base_bins, base_steady)) = base.and_then(|segs| segs.get(block)) else {
                    continue;
                };
                let theirs = base_bins.get(&bin);
                if let (Some(m), Some(mb)) = (b.mean(), theirs.and_then(Sums::mean)) {
                    vs_base.push((m / mb).ln());
                    if let (Some(ms), Some(mbs)) = (steady.mean(), base_steady.mean()) {
                        latency_shift.push((m / mb).ln() - (ms / mbs).ln());
                    }
                }
                let their_rate = theirs.and_then(Sums::rate);
                if let (Some(r), Some(rb), Some(rs), Some(rbs)) =
                    (b.rate(), their_rate, steady.rate(), base_steady.rate())
                {
                    rate_shift.push((r / rb).ln() - (rs / rbs).ln());
                }
            }
            let point = BinPoint {
                bin,
                from_ms: u64::from(bin) * bin_ms,
                rate: Change::of(&rate),
                latency: Change::of(&latency),
                vs_baseline: Change::of(&vs_base),
                latency_shift: Change::of(&latency_shift),
                rate_shift: Change::of(&rate_shift),
            };
            if point.shifted() {
                last_deviating = Some(last_deviating.map_or(bin, |l| l.max(bin)));
            }
            points.push(point);
        }
        let steady_vs_baseline = (*name != baseline)
            .then(|| {
                let xs: Vec<f64> = segs
                    .iter()
                    .filter_map(|(block, (_, steady))| {
                        let mb = base?.get(block)?.1.mean()?;
                        Some((steady.mean()? / mb).ln())
                    })
                    .collect();
                Change::of(&xs)
            })
            .flatten();
        scenarios.push(ScenarioProfile {
            scenario: name.to_string(),
            points,
            steady_vs_baseline,
        });
    }
    let carryover_ms = last_deviating.map(|b| (u64::from(b) + 1) * bin_ms);
    Some(CarryoverProfile {
        bin_ms,
        baseline: baseline.to_string(),
        steady_from_bin: steady_from,
        scenarios,
        carryover_ms,
        suggested_settle_ms: carryover_ms.unwrap_or(bin_ms).max(bin_ms),
        reaches_steady: last_deviating.is_some_and(|b| b + 1 >= steady_from),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::rng::Rng;

    /// Records of `segments` segments for scenarios a (baseline) and b, 1 s slots: each bin's
    /// rate and latency scaled by `shape(bin)` for b (a carryover), with noise.
    fn records(segments: u64, shape: impl Fn(u16) -> (f64, f64)) -> Vec<PhaseRecord> {
        let mut rng = Rng::new(11);
        let mut out = Vec::new();
        for seg in 0..segments {
            let host = 1.0 + 0.1 * rng.normal();
            for (name, carry) in [("a", false), ("b", true)] {
                let since_switch = (0..20)
                    .map(|bin| {
                        let (r, l) = if carry { shape(bin) } else { (1.0, 1.0) };
                        let count = (200.0 * host * r * (1.0 + 0.02 * rng.normal())) as u64;
                        let mean = 1e6 * l * (1.0 + 0.02 * rng.normal()) / host;
                        BinRecord {
                            bin,
                            slots: 3,
                            count,
                            timed: count,
                            latency_sum_ns: (mean * count as f64) as u64,
                        }
                    })
                    .collect();
                out.push(PhaseRecord {
                    kind: "phase".into(),
                    scenario: name.into(),
                    block: seg,
                    verified: true,
                    schedule: Some("fast".into()),
                    since_switch,
                    ..PhaseRecord::default()
                });
            }
        }
        out
    }

    #[test]
    fn no_carryover_suggests_one_bin() {
        let p = profile(&records(30, |_| (1.0, 1.0)), "a", 50).unwrap();
        assert_eq!(p.steady_from_bin, 10);
        assert!(!p.seen(), "{:?}", p.carryover_ms);
        assert_eq!(p.suggested_settle_ms, 50);
        assert!(!p.reaches_steady);
        let b = p.scenarios.iter().find(|s| s.scenario == "b").unwrap();
        assert!(b.points[0].vs_baseline.is_some());
    }

    #[test]
    fn a_carryover_of_150ms_is_found() {
        // b's latency is 30% higher for the first three bins, then settles.
        let p = profile(
            &records(30, |bin| if bin < 3 { (0.8, 1.3) } else { (1.0, 1.0) }),
            "a",
            50,
        )
        .unwrap();
        assert_eq!(p.carryover_ms, Some(150), "{p:#?}");
        assert_eq!(p.suggested_settle_ms, 150);
        let b = p.scenarios.iter().find(|s| s.scenario == "b").unwrap();
        let first = b.points[0].latency.unwrap();
        assert!((first.change - 0.3).abs() < 0.05, "{first:?}");
    }

    #[test]
    fn carryover_through_the_slot_is_flagged() {
        let p = profile(
            &records(30, |bin| (1.0, 1.0 + 0.05 * f64::from(10 - bin.min(10)))),
            "a",
            50,
        )
        .unwrap();
        assert!(p.reaches_steady, "{:?}", p.carryover_ms);
        assert!(profile(&[], "a", 50).is_none());
    }
}
