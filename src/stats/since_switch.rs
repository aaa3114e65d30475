//! Statements binned by the time from the scenario switch to their start (50 ms bins), per
//! scenario: the raw material of the carryover profile, which shows how long the effect of a
//! switch takes to settle and so how much of each slot must be left out of measurement.

use std::collections::HashMap;

use super::digest_stats::Sample;
use super::scenario::ScenarioId;

/// Width of one bin.
pub(crate) const BIN_MS: u64 = 50;
/// Bins kept: the first 3.2 s after a switch (later starts are not binned).
pub(crate) const BINS: usize = 64;

/// Statements that started in one bin.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BinAgg {
    pub count: u64,
    pub timed: u64,
    pub latency_sum_ns: u64,
}

impl BinAgg {
    pub fn record(&mut self, s: &Sample) {
        self.count = self.count.saturating_add(1);
        if let Some(ns) = s.latency_ns {
            self.timed = self.timed.saturating_add(1);
            self.latency_sum_ns = self.latency_sum_ns.saturating_add(ns);
        }
    }

    pub fn merge(&mut self, o: &BinAgg) {
        self.count = self.count.saturating_add(o.count);
        self.timed = self.timed.saturating_add(o.timed);
        self.latency_sum_ns = self.latency_sum_ns.saturating_add(o.latency_sum_ns);
    }

    pub fn since(&self, earlier: &BinAgg) -> BinAgg {
        BinAgg {
            count: self.count.saturating_sub(earlier.count),
            timed: self.timed.saturating_sub(earlier.timed),
            latency_sum_ns: self.latency_sum_ns.saturating_sub(earlier.latency_sum_ns),
        }
    }
}

/// Bin of a start `ms_after_switch` after the switch, if it is in the kept range.
pub(crate) fn bin_of(ms_after_switch: u64) -> Option<u8> {
    let bin = ms_after_switch / BIN_MS;
    (bin < BINS as u64).then_some(bin as u8)
}

/// One thread's bins for every scenario (indexed by scenario id; grows only when a scenario
/// with a higher id appears, so recording allocates nothing in the steady state).
#[derive(Debug, Default)]
pub(crate) struct SwitchBins {
    by_scenario: Vec<[BinAgg; BINS]>,
}

impl SwitchBins {
    pub(crate) fn record(&mut self, scenario: ScenarioId, bin: u8, s: &Sample) {
        let i = usize::from(scenario);
        if i >= self.by_scenario.len() {
            self.by_scenario.resize(i + 1, [BinAgg::default(); BINS]);
        }
        if let Some(b) = self.by_scenario[i].get_mut(usize::from(bin)) {
            b.record(s);
        }
    }

    /// Adds this thread's bins into `into`.
    pub(crate) fn merge_into(&self, into: &mut HashMap<ScenarioId, Vec<BinAgg>>) {
        for (id, bins) in self.by_scenario.iter().enumerate() {
            if bins.iter().all(|b| b.count == 0) {
                continue;
            }
            let mine = into
                .entry(id as ScenarioId)
                .or_insert_with(|| vec![BinAgg::default(); BINS]);
            for (m, b) in mine.iter_mut().zip(bins) {
                m.merge(b);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bins_cover_the_first_seconds_only() {
        assert_eq!(bin_of(0), Some(0));
        assert_eq!(bin_of(49), Some(0));
        assert_eq!(bin_of(50), Some(1));
        assert_eq!(bin_of(BIN_MS * BINS as u64 - 1), Some(BINS as u8 - 1));
        assert_eq!(bin_of(BIN_MS * BINS as u64), None);
    }

    #[test]
    fn record_merge_and_difference() {
        let mut t = SwitchBins::default();
        let s = Sample {
            latency_ns: Some(1_000),
            ..Sample::default()
        };
        t.record(3, 0, &s);
        t.record(3, 0, &Sample::default());
        t.record(3, 5, &s);
        let mut all = HashMap::new();
        t.merge_into(&mut all);
        t.merge_into(&mut all);
        assert_eq!(all.len(), 1, "empty scenarios are not copied");
        let b = &all[&3];
        assert_eq!((b[0].count, b[0].timed, b[0].latency_sum_ns), (4, 2, 2_000));
        assert_eq!(b[5].count, 2);
        let d = b[0].since(&BinAgg {
            count: 1,
            timed: 1,
            latency_sum_ns: 1_000,
        });
        assert_eq!((d.count, d.timed, d.latency_sum_ns), (3, 1, 1_000));
    }
}
