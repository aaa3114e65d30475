//! What the leader re-chooses as its run goes, from the analysis of what it has measured so
//! far (the one arrow from the schedule to `analysis`, once per written segment, see
//! docs/architecture.md): the fast slots' length (from the switch cost, unless `--phase` was
//! given), the settle time after a switch (from the carryover profile), the settle time after
//! a restart (from the restart profile), whether every estimate is precise enough to stop
//! (`--target-halfwidth`), and the warnings about slots too short for what happens in them.
//!
//! Must not: talk to the server, or change the schedule's order (the timeline's).

use std::time::Duration;

use crate::analysis::duet::{analyze_duet, widest_halfwidth};
use crate::analysis::restart_profile::restart_profile;
use crate::analysis::switch_load::{
    run_warning, switch_load, switch_load_at_last_slot, MAX_AUTO_SLOT_MS,
};
use crate::analysis::{analyze_run, carryover, Options};
use crate::phase_log::group_names::{point_name, NONE_POINT};
use crate::phase_log::PhaseRecord;
use crate::stats::since_switch::BIN_MS;

use super::settings::{initial_settle, ControllerSettings};

/// Segments of every fast scenario before the carryover profile picks the settle time.
const PROFILE_AFTER_SEGMENTS: usize = 4;
/// Segments of every fast scenario before the target half-width may stop the run.
const PRECISE_AFTER_SEGMENTS: usize = 6;
/// Slow phases with a rate profile before it chooses the restart settle time.
const RESTART_PROFILE_AFTER: usize = 4;

/// The leader's choices and what it has said about them.
pub(crate) struct Tuning {
    /// The fast slots' length: `--phase`, or lengthened from the switch cost.
    pub(crate) slot: Duration,
    /// Left out of measurement after each switch.
    pub(crate) settle: Duration,
    /// Left out of measurement after a restart.
    pub(crate) restart_settle: Duration,
    /// Recent switch time, to announce a slot's measured window before switching.
    pub(crate) switch_estimate: Duration,
    /// Every fast estimate is within the target half-width.
    pub(crate) precise: bool,
    /// Every restart comparison is within the target half-width.
    pub(crate) slow_precise: bool,
    warned_long_carryover: bool,
    /// Switching was said to take too much of the slots (once a run).
    warned_switch_load: bool,
}

impl Tuning {
    pub(crate) fn new(s: &ControllerSettings) -> Self {
        Tuning {
            slot: s.phase,
            settle: s.settle.unwrap_or_else(|| initial_settle(s.phase)),
            restart_settle: s.restart_settle,
            switch_estimate: Duration::from_millis(5),
            precise: false,
            slow_precise: false,
            warned_long_carryover: false,
            warned_switch_load: false,
        }
    }

    /// A switch took `took`: the next slot's announced window counts on about as long.
    pub(crate) fn switched(&mut self, took: Duration) {
        self.switch_estimate = (self.switch_estimate * 3 + took) / 4;
    }

    /// After a fast segment: the settle time from the carryover profile, the warnings, the
    /// stopping rule.
    pub(crate) fn after_fast_segment(&mut self, s: &ControllerSettings, fast: &[PhaseRecord]) {
        let segments = fast.len() / s.fast_scenarios().len().max(1);
        if s.phase_auto {
            self.fit_slot_to_switches(fast);
        }
        if s.settle.is_none() && segments >= PROFILE_AFTER_SEGMENTS {
            if let Some(p) = carryover_of(s, fast) {
                let most = (self.slot / 2).max(Duration::from_millis(BIN_MS));
                let settle = Duration::from_millis(p.suggested_settle_ms).min(most);
                if settle != self.settle {
                    tracing::info!(
                        "settle time {}ms -> {}ms from the carryover profile ({} segments)",
                        self.settle.as_millis(),
                        settle.as_millis(),
                        segments
                    );
                    self.settle = settle;
                }
                if p.reaches_steady && !self.warned_long_carryover {
                    self.warned_long_carryover = true;
                    tracing::warn!(
                        "the effect of a switch lasts past half a slot ({} ms): lengthen --phase",
                        p.carryover_ms.unwrap_or(0)
                    );
                }
            }
        }
        // Said about the slots as they are now, by the report's rule (run_warning): slots
        // lengthened from the switch cost are warned about only once they can grow no more
        // and blocks go incomplete. The blocks are counted only when switching is heavy.
        let can_grow = s.phase_auto && self.slot < Duration::from_millis(MAX_AUTO_SLOT_MS);
        let heavy = || switch_load_at_last_slot(fast).is_some_and(|l| l.warning().is_some());
        if segments >= PROFILE_AFTER_SEGMENTS && !self.warned_switch_load && !can_grow && heavy() {
            let blocks = analyze_run(fast, None, &headline())
                .ok()
                .and_then(|a| a.fast.map(|f| (f.complete_blocks, f.blocks)));
            if let Some(w) = run_warning(fast, blocks) {
                self.warned_switch_load = true;
                tracing::warn!("{w}");
            }
        }
        if let Some(target) = s.target_halfwidth {
            if segments >= PRECISE_AFTER_SEGMENTS {
                let widest = analyze_run(fast, None, &headline())
                    .ok()
                    .and_then(|a| a.fast_halfwidth());
                self.precise = widest.is_some_and(|w| w <= target);
                if self.precise {
                    tracing::info!(
                        "every fast estimate is within +-{target} points (widest +-{:.2}); stopping the fast schedule",
                        widest.unwrap_or(0.0)
                    );
                }
            }
        }
    }

    /// The switches of the segment just written took more than a fifth of its slots (they
    /// queue behind a loaded server's clients: 23 ms at 8 threads, 359-517 ms at 512 here):
    /// the slots are lengthened so that they take a fifth, up to [`MAX_AUTO_SLOT_MS`]; never
    /// shortened (a run's slots grow a few times at most, and the blocks stay comparable).
    fn fit_slot_to_switches(&mut self, fast: &[PhaseRecord]) {
        let Some(last) = fast.last() else { return };
        let Some(load) = switch_load(fast.iter().filter(|r| r.block == last.block)) else {
            return;
        };
        let want = Duration::from_millis(load.suggested_phase_ms().min(MAX_AUTO_SLOT_MS));
        if want > self.slot && load.mean_ms * 5.0 > self.slot.as_secs_f64() * 1000.0 {
            tracing::info!(
                "slot {}ms -> {}ms: switching took {:.0} ms on average in the last segment \
                 ({:.0}% of its slots' time), so that it takes about a fifth of a slot",
                self.slot.as_millis(),
                want.as_millis(),
                load.mean_ms,
                load.share * 100.0
            );
            self.slot = want;
        }
    }

    /// After a slow segment: the restart settle time from the restart profile, and whether
    /// every restart comparison is precise enough.
    pub(crate) fn after_slow_segment(&mut self, s: &ControllerSettings, slow: &[PhaseRecord]) {
        if s.restart_settle_auto {
            self.retune_restart_settle(s, slow);
        }
        if let Some(duet) = &s.duet {
            duet.record_slow(slow);
        }
        let Some(target) = s.target_halfwidth else {
            return;
        };
        let (widest, what) = match &s.duet {
            // Both sides stop on the duet's interval (each side's own is the sequential one).
            Some(duet) => {
                let (a, b) = duet.slow_records();
                let reference = s.slow_scenarios().first().map(|&i| s.scenarios[i].clone());
                let duet = reference.map(|r| analyze_duet(&a, &b, &r, Options::default().level));
                (
                    duet.and_then(|d| widest_halfwidth(&d)),
                    "every duet comparison",
                )
            }
            None => (
                analyze_run(slow, None, &headline())
                    .ok()
                    .and_then(|a| a.slow_halfwidth()),
                "every restart comparison",
            ),
        };
        self.slow_precise = widest.is_some_and(|w| w <= target);
        if self.slow_precise {
            tracing::info!(
                "{what} is within +-{target} points (widest +-{:.2}); ending the slow blocks",
                widest.unwrap_or(0.0)
            );
        }
    }

    /// From when the statement rate is back to steady after a restart.
    fn retune_restart_settle(&mut self, s: &ControllerSettings, slow: &[PhaseRecord]) {
        let Some(p) = restart_profile(slow) else {
            return;
        };
        if p.phases < RESTART_PROFILE_AFTER {
            return;
        }
        let most = s.slow_phase.saturating_sub(Duration::from_secs(2));
        let settle = Duration::from_millis(p.suggested_settle_ms)
            .min(most)
            .max(Duration::from_secs(1));
        if settle != self.restart_settle {
            tracing::info!(
                "settle time after a restart {:.1}s -> {:.1}s from the restart profile ({} restarts: the statement rate is steady {})",
                self.restart_settle.as_secs_f64(),
                settle.as_secs_f64(),
                p.phases,
                p.steady_after_ms.map_or("only at the end".to_string(), |ms| format!(
                    "{:.1}s after the first query",
                    ms as f64 / 1000.0
                ))
            );
            self.restart_settle = settle;
        }
    }
}

fn headline() -> Options {
    Options {
        headline_only: true,
        ..Options::default()
    }
}

/// The carryover profile of a run's fast records: against the first scenario, or for an
/// attribution, its largest switch (nothing instrumented to every group on).
fn carryover_of(
    s: &ControllerSettings,
    fast: &[PhaseRecord],
) -> Option<carryover::CarryoverProfile> {
    let Some(plan) = &s.attribution else {
        let baseline = &fast.first()?.scenario;
        return carryover::profile(fast, baseline, BIN_MS);
    };
    let names: Vec<&str> = plan.groups.iter().map(|g| g.name.as_str()).collect();
    let all_on = point_name(&names);
    let pair: Vec<PhaseRecord> = fast
        .iter()
        .filter(|r| r.scenario == NONE_POINT || r.scenario == all_on)
        .cloned()
        .collect();
    carryover::profile(&pair, NONE_POINT, BIN_MS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::switch_load::with_test_switches_in;
    use crate::phase_log::FAST;

    fn segment(block: u64, switch_ms: f64, slot_ms: u64) -> Vec<PhaseRecord> {
        ["pfson_conoff_insoff", "pfson_conon_inson"]
            .iter()
            .map(|s| {
                let mut p = PhaseRecord {
                    kind: "phase".into(),
                    scenario: s.to_string(),
                    block,
                    schedule: Some(FAST.into()),
                    ..PhaseRecord::default()
                };
                with_test_switches_in(&mut p, switch_ms, slot_ms);
                p
            })
            .collect()
    }

    fn settings(auto: bool) -> ControllerSettings {
        let mut s = super::super::settings::tests::settings(std::path::Path::new("/tmp"));
        s.phase = Duration::from_millis(250);
        s.phase_auto = auto;
        s
    }

    /// 450 ms switches (512 threads here) move a 250 ms slot to 2250 ms; 23 ms ones (8
    /// threads) leave it; a slot never grows past the cap nor shrinks.
    #[test]
    fn the_slot_follows_the_switch_cost_up_to_the_cap() {
        let s = settings(true);
        let mut t = Tuning::new(&s);
        t.after_fast_segment(&s, &segment(0, 23.0, 250));
        assert_eq!(t.slot, Duration::from_millis(250));
        let mut fast = segment(0, 23.0, 250);
        fast.extend(segment(1, 450.0, 250));
        t.after_fast_segment(&s, &fast);
        assert_eq!(t.slot, Duration::from_millis(2250));
        fast.extend(segment(2, 30.0, 2250));
        t.after_fast_segment(&s, &fast);
        assert_eq!(t.slot, Duration::from_millis(2250), "never shortened");
        fast.extend(segment(3, 3000.0, 2250));
        t.after_fast_segment(&s, &fast);
        assert_eq!(t.slot, Duration::from_millis(MAX_AUTO_SLOT_MS));

        let fixed = settings(false);
        let mut t = Tuning::new(&fixed);
        t.after_fast_segment(&fixed, &segment(0, 450.0, 250));
        assert_eq!(t.slot, Duration::from_millis(250), "--phase given");
    }

    /// A run whose early short slots were eaten by switching but whose lengthened ones are not
    /// is judged as it ended: no warning (the run's analysis: analysis/tests.rs).
    #[test]
    fn slots_lengthened_in_time_are_not_warned_about() {
        let mut fast = Vec::new();
        for b in 0..2 {
            fast.extend(segment(b, 450.0, 250));
        }
        for b in 2..6 {
            fast.extend(segment(b, 450.0, 2250));
        }
        let at_last = switch_load_at_last_slot(&fast).expect("switches");
        assert!(at_last.warning().is_none(), "{at_last:?}");
        assert!(switch_load(&fast).and_then(|l| l.warning()).is_some());
    }
}
