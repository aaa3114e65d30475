//! `psprobe experiment --budget`: one total time for a whole study, spread evenly over its cells
//! (one workload at one concurrency each). A cell's time goes to its schedule: the runtime
//! scenarios switched fast, with the slow blocks (pfsoff and its reference, each entered by a
//! restart) spread through it; what is not schedule (the study's server and tables, each
//! cell's start and stop) is taken off first, so the study ends near the budget, not past it.
//!
//! Must not: plan a cell too short for its slow blocks and a fast part, or a schedule of zero.

use std::time::Duration;

use thiserror::Error;

use crate::demo::stage_costs::{CELL_OVERHEAD, STUDY_SETUP};

/// The least fast part worth a cell: a few dozen slots per scenario.
pub(crate) const MIN_FAST: Duration = Duration::from_secs(30);

#[derive(Debug, Error, PartialEq, Eq)]
pub(crate) enum BudgetError {
    #[error("--budget {} is too short for {cells} cells: each needs at least {} ({}), so the study needs at least {}; give a longer --budget, fewer --threads or --workloads{}", text(.budget), text(.per_cell), needs(.slow), text(.needed), if .slow.is_some_and(|s| s.blocks > 1 && !s.duet) { " or --slow-blocks" } else { "" })]
    TooShort {
        budget: Duration,
        cells: usize,
        /// A cell's least schedule and its start and stop.
        per_cell: Duration,
        slow: Option<Slow>,
        needed: Duration,
    },
}

fn text(d: &Duration) -> String {
    human(*d)
}

/// What a cell's least schedule holds.
fn needs(slow: &Option<Slow>) -> String {
    match slow {
        Some(s) if s.duet => format!(
            "a duet of {} pairs of two {} phases and {} of fast slots",
            s.blocks,
            human(s.phase),
            human(MIN_FAST)
        ),
        Some(s) => format!(
            "{} slow blocks of two {} phases and {} of fast slots",
            s.blocks,
            human(s.phase),
            human(MIN_FAST)
        ),
        None => format!("{} of fast slots", human(MIN_FAST)),
    }
}

/// The slow part of each cell: blocks of two restart phases.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Slow {
    pub blocks: u64,
    pub phase: Duration,
    /// The blocks are a duet's pairs (`--duet`: their number is the duet's least, not
    /// `--slow-blocks`).
    pub duet: bool,
}

impl Slow {
    fn length(self) -> Duration {
        self.phase * 2 * u32::try_from(self.blocks).unwrap_or(u32::MAX)
    }
}

/// The schedule length of each of `cells` cells that `budget` allows (`slow`: the blocks each
/// cell must hold, when pfsoff is studied).
pub(crate) fn cell_duration(
    budget: Duration,
    cells: usize,
    slow: Option<Slow>,
) -> Result<Duration, BudgetError> {
    let least = MIN_FAST + slow.map_or(Duration::ZERO, Slow::length);
    let count = u32::try_from(cells.max(1)).unwrap_or(u32::MAX);
    let per_cell = budget
        .saturating_sub(STUDY_SETUP)
        .checked_div(count)
        .unwrap_or_default()
        .saturating_sub(CELL_OVERHEAD);
    if per_cell < least {
        return Err(BudgetError::TooShort {
            budget,
            cells,
            per_cell: least + CELL_OVERHEAD,
            slow,
            needed: STUDY_SETUP + (least + CELL_OVERHEAD) * count,
        });
    }
    // Whole seconds: the phase log and the progress line count in them.
    Ok(Duration::from_secs(per_cell.as_secs()))
}

/// 90m, 2m38s, 45s: durations as `--budget` takes them.
pub(crate) fn human(d: Duration) -> String {
    let s = d.as_secs();
    match (s / 3600, s % 3600 / 60, s % 60) {
        (0, 0, sec) => format!("{sec}s"),
        (0, min, 0) => format!("{min}m"),
        (0, min, sec) => format!("{min}m{sec}s"),
        (h, 0, 0) => format!("{h}h"),
        (h, min, 0) => format!("{h}h{min}m"),
        (h, min, sec) => format!("{h}h{min}m{sec}s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SLOW: Slow = Slow {
        blocks: 3,
        phase: Duration::from_secs(12),
        duet: false,
    };

    #[test]
    fn the_budget_less_setup_is_shared_by_the_cells() {
        // 90 minutes over the seed study's 33 cells: 5340 s / 33 = 161 s, less 15 s each.
        let per = cell_duration(Duration::from_secs(90 * 60), 33, Some(SLOW)).unwrap();
        assert_eq!(per, Duration::from_secs(146));
        let total = STUDY_SETUP + (per + CELL_OVERHEAD) * 33;
        assert!(total <= Duration::from_secs(90 * 60), "{total:?}");
        assert_eq!(
            cell_duration(Duration::from_secs(600), 2, None).unwrap(),
            Duration::from_secs(255)
        );
    }

    #[test]
    fn a_budget_without_room_for_the_blocks_is_refused_with_what_it_needs() {
        // 3 blocks of two 12 s phases and 30 s fast: 102 s a cell, 117 s with its overhead.
        let err = cell_duration(Duration::from_secs(10 * 60), 33, Some(SLOW)).unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("--budget 10m is too short for 33 cells"),
            "{text}"
        );
        assert!(text.contains("at least 1m57s"), "{text}");
        assert!(text.contains("at least 1h5m21s"), "{text}");
        assert!(text.contains("--slow-blocks"), "{text}");
        // A duet's least is not --slow-blocks: the message says what it is instead.
        let duet = Slow { duet: true, ..SLOW };
        let text = cell_duration(Duration::from_secs(10 * 60), 33, Some(duet))
            .unwrap_err()
            .to_string();
        assert!(!text.contains("--slow-blocks"), "{text}");
        assert!(
            text.contains("a duet of 3 pairs of two 12s phases"),
            "{text}"
        );
        // Exactly enough is enough.
        let needed = STUDY_SETUP + Duration::from_secs(117) * 33;
        assert_eq!(
            cell_duration(needed, 33, Some(SLOW)).unwrap(),
            Duration::from_secs(102)
        );
        assert!(cell_duration(needed - Duration::from_secs(1), 33, Some(SLOW)).is_err());
        // Shorter than the setup alone.
        assert!(cell_duration(Duration::from_secs(30), 1, None).is_err());
    }

    #[test]
    fn durations_read_as_written() {
        assert_eq!(human(Duration::from_secs(45)), "45s");
        assert_eq!(human(Duration::from_secs(90 * 60)), "1h30m");
        assert_eq!(human(Duration::from_secs(158)), "2m38s");
        assert_eq!(human(Duration::from_secs(3600)), "1h");
        assert_eq!(human(Duration::from_secs(3661)), "1h1m1s");
        assert_eq!(human(Duration::from_secs(600)), "10m");
    }
}
