//! What the throwaway server's setup and each stage's start and stop take: the durations the
//! demo (`--quick`'s help) and the study's budget (study/budget.rs) promise include them.
//!
//! Must not: hold a schedule's own length (that is the schedule's).

use std::time::Duration;

/// Starting a throwaway server and preparing its tables (measured: 20-40 s).
pub(crate) const STUDY_SETUP: Duration = Duration::from_secs(60);
/// Each stage's (a study's cell's) own start and stop around its schedule: psprobe, sysbench
/// connecting, the report (the progress estimate's 15 s).
pub(crate) const CELL_OVERHEAD: Duration = Duration::from_secs(15);
