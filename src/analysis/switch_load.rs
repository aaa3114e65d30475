//! How much of the fast slots' time the switches take. A switch (the scenario's UPDATEs on
//! the setup tables, then a read-back) runs at the start of its slot and is never measured;
//! on a loaded server it slows down with the load (on 2 cores, MariaDB 11.8, oltp_read_only:
//! 23 ms at 8 client threads, 114-142 ms at 64, 359-517 ms at 512), and once it takes a large
//! share of a 250 ms slot the slots measure little, some nothing, blocks go incomplete and the
//! intervals widen (512 threads: 80% of the slots' time, 12 complete blocks of 23).
//!
//! Read by the run's analysis (a warning in the report), and by the leader: a warning while
//! the run goes on, and, unless --phase was given, the slot length it moves to (up to
//! [`MAX_AUTO_SLOT_MS`]). Must not: change the schedule itself; the leader's tuning does.

use crate::phase_log::PhaseRecord;

/// Share of the slots' time spent switching above which the run and its report warn.
pub(crate) const WARN_SHARE: f64 = 0.25;

/// Slot lengths suggested in steps of this many milliseconds.
const SUGGEST_STEP_MS: f64 = 250.0;
/// Longest slot the leader lengthens to on its own (switches of a second or more: the server
/// is saturated, and a longer slot would leave too few blocks for an interval in a run).
pub(crate) const MAX_AUTO_SLOT_MS: u64 = 5000;

/// The switches of a run's fast slots, all scenarios together.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct SwitchLoad {
    pub switches: u64,
    pub mean_ms: f64,
    /// Switching time over the slots' time (switch, settle and measured window).
    pub share: f64,
}

/// The time a fast record's slots took: their switches, settle times and measured windows.
pub(crate) fn slots_time_ms(p: &PhaseRecord, switching_ms: f64) -> f64 {
    let settle = p.settle_ms.unwrap_or(0) as f64;
    let slots = p.slots.unwrap_or(0) as f64;
    p.measured_ms() as f64 + slots * settle + switching_ms
}

/// The load of the switches in `fast` (records of the fast schedule); `None` without any
/// timed switch.
pub(crate) fn switch_load<'a>(
    fast: impl IntoIterator<Item = &'a PhaseRecord>,
) -> Option<SwitchLoad> {
    let (mut switches, mut switching, mut time) = (0u64, 0.0f64, 0.0f64);
    for p in fast {
        let Some(sw) = &p.switch else { continue };
        switches += sw.count;
        switching += sw.sum_ms;
        time += slots_time_ms(p, sw.sum_ms);
    }
    (switches > 0 && time > 0.0).then(|| SwitchLoad {
        switches,
        mean_ms: switching / switches as f64,
        share: switching / time,
    })
}

/// The load of the switches in the records at the run's last slot length (`slot_ms`; all of
/// them in logs without it): slots lengthened from the switch cost are judged as they ended.
pub(crate) fn switch_load_at_last_slot(fast: &[PhaseRecord]) -> Option<SwitchLoad> {
    let last = fast.iter().rev().find_map(|p| p.slot_ms);
    switch_load(fast.iter().filter(|p| last.is_none() || p.slot_ms == last))
}

/// Share of a run's blocks that must hold every scenario for switches at the longest slot
/// psprobe chooses to be no concern of the user's.
pub(crate) const COMPLETE_SHARE: f64 = 0.9;

/// What a run's report says about its switches: the warning for the slots as they ended,
/// unless the leader chose them (several lengths) and either was still lengthening them (the
/// last below the cap: had the run gone on, the next segment's slots would have fitted) or
/// reached the cap with the blocks complete (`blocks`: complete and all; at least
/// [`COMPLETE_SHARE`]): switching then costs measured time, which the intervals already
/// show, not blocks, and there is no setting for the user to change.
pub(crate) fn run_warning(fast: &[PhaseRecord], blocks: Option<(usize, usize)>) -> Option<String> {
    let lengths = slot_lengths_ms(fast);
    if lengths.len() > 1 && !needs_the_user(&lengths, blocks) {
        return None;
    }
    switch_load_at_last_slot(fast).and_then(|l| l.warning())
}

/// Whether slots the leader lengthened (`lengths`, in order) still call for the user: only
/// at the cap with blocks going incomplete (or not known).
fn needs_the_user(lengths: &[u64], blocks: Option<(usize, usize)>) -> bool {
    let at_cap = lengths.last().is_some_and(|&l| l >= MAX_AUTO_SLOT_MS);
    at_cap && !blocks.is_some_and(blocks_complete)
}

/// At least [`COMPLETE_SHARE`] of `all` blocks complete.
fn blocks_complete((complete, all): (usize, usize)) -> bool {
    all > 0 && complete as f64 >= COMPLETE_SHARE * all as f64
}

/// The slot lengths of a run's fast records, each once, in the order they were used.
pub(crate) fn slot_lengths_ms(fast: &[PhaseRecord]) -> Vec<u64> {
    let mut lengths: Vec<u64> = Vec::new();
    for ms in fast.iter().filter_map(|p| p.slot_ms) {
        if lengths.last() != Some(&ms) {
            lengths.push(ms);
        }
    }
    lengths
}

impl SwitchLoad {
    /// The slot length (ms) in which switching as long as now would take a fifth.
    pub(crate) fn suggested_phase_ms(&self) -> u64 {
        let want = self.mean_ms * 5.0;
        ((want / SUGGEST_STEP_MS).ceil().max(2.0) * SUGGEST_STEP_MS) as u64
    }

    /// What the run's report and log say when switching takes too much of the slots.
    pub(crate) fn warning(&self) -> Option<String> {
        (self.share >= WARN_SHARE).then(|| {
            format!(
                "switching took {:.0} ms on average, {:.0}% of the fast slots' time ({} \
                 switches): under this load a slot measures little and some measure nothing, \
                 so blocks go incomplete and intervals widen; lengthen --phase (e.g. --phase \
                 {}ms) so that switching takes a fifth of a slot",
                self.mean_ms,
                self.share * 100.0,
                self.switches,
                self.suggested_phase_ms()
            )
        })
    }
}

/// Test records: four 250 ms slots whose switches took `mean_ms` each, after which a 50 ms
/// settle and then the rest of each slot is measured.
#[cfg(test)]
pub(crate) fn with_test_switches(p: &mut PhaseRecord, mean_ms: f64) {
    with_test_switches_in(p, mean_ms, 250);
}

/// Test records: four slots of `slot_ms` whose switches took `mean_ms` each, then a 50 ms
/// settle, then the rest measured.
#[cfg(test)]
pub(crate) fn with_test_switches_in(p: &mut PhaseRecord, mean_ms: f64, slot_ms: u64) {
    p.slots = Some(4);
    p.settle_ms = Some(50);
    p.slot_ms = Some(slot_ms);
    p.measured_ms = Some((4.0 * (slot_ms as f64 - 50.0 - mean_ms)).max(0.0) as u64);
    p.switch = Some(crate::phase_log::SwitchCost {
        count: 4,
        sum_ms: 4.0 * mean_ms,
        max_ms: mean_ms,
        statements: 16,
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fast_slots(mean_ms: f64) -> PhaseRecord {
        let mut p = PhaseRecord {
            kind: "phase".into(),
            schedule: Some("fast".into()),
            ..PhaseRecord::default()
        };
        with_test_switches(&mut p, mean_ms);
        p
    }

    /// The 8-thread run of docs/seed-study (23 ms switches in 250 ms slots) passes quietly;
    /// the 512-thread one (about 450 ms) is warned about, with a slot five times as long.
    #[test]
    fn warns_only_when_switching_takes_a_quarter_of_the_slots() {
        let light = switch_load(&[fast_slots(23.0)]).expect("switches");
        assert_eq!(light.switches, 4);
        assert!((light.mean_ms - 23.0).abs() < 1e-9);
        assert!(light.share < 0.15, "{light:?}");
        assert!(light.warning().is_none());

        let heavy = switch_load(&[fast_slots(450.0), fast_slots(450.0)]).expect("switches");
        assert_eq!(heavy.switches, 8);
        assert!(heavy.share > 0.8, "{heavy:?}");
        let warning = heavy.warning().expect("a warning");
        assert!(warning.contains("450 ms on average"), "{warning}");
        assert!(warning.contains("--phase 2250ms"), "{warning}");
        assert_eq!(heavy.suggested_phase_ms(), 2250);
    }

    #[test]
    fn nothing_to_say_without_timed_switches() {
        let mut untimed = fast_slots(23.0);
        untimed.switch = None;
        assert!(switch_load(&[untimed]).is_none());
        assert!(switch_load(&[]).is_none());
    }

    #[test]
    fn a_suggestion_is_never_shorter_than_half_a_second() {
        let quick = SwitchLoad {
            switches: 1,
            mean_ms: 10.0,
            share: 0.5,
        };
        assert_eq!(quick.suggested_phase_ms(), 500);
    }
}
