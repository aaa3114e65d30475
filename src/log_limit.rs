//! Rate-limited log lines, for events a peer can repeat as fast as it likes (refused logins,
//! accept failures): the first occurrence is logged at once; later ones within the interval are
//! only counted, and the count goes into the next line (or into [`RateLimited::take_overdue`],
//! called from a periodic tick, so a burst that stops is still reported).
//!
//! Must not: drop the count of what it left out.

use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

#[derive(Debug)]
pub(crate) struct RateLimited {
    interval: Duration,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// When the last line was allowed.
    last: Option<Instant>,
    /// Occurrences since then that were not logged.
    suppressed: u64,
}

impl RateLimited {
    pub(crate) const fn new(interval: Duration) -> Self {
        RateLimited {
            interval,
            state: Mutex::new(State {
                last: None,
                suppressed: 0,
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// One occurrence now: `Some(n)` when it is to be logged (`n` occurrences were suppressed
    /// since the last line), `None` when it was only counted.
    pub(crate) fn check(&self) -> Option<u64> {
        self.check_at(Instant::now())
    }

    pub(crate) fn check_at(&self, now: Instant) -> Option<u64> {
        let mut state = self.lock();
        let due = state
            .last
            .is_none_or(|last| now.saturating_duration_since(last) >= self.interval);
        if due {
            state.last = Some(now);
            Some(std::mem::take(&mut state.suppressed))
        } else {
            state.suppressed += 1;
            None
        }
    }

    /// The occurrences counted but not logged, once the interval since the last line has
    /// passed (they are then reported, and the interval starts again).
    pub(crate) fn take_overdue(&self, now: Instant) -> Option<u64> {
        let mut state = self.lock();
        let overdue = state.suppressed > 0
            && state
                .last
                .is_none_or(|last| now.saturating_duration_since(last) >= self.interval);
        if overdue {
            state.last = Some(now);
            Some(std::mem::take(&mut state.suppressed))
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_logs_then_counts_then_reports_the_count() {
        let limit = RateLimited::new(Duration::from_secs(10));
        let t0 = Instant::now();
        assert_eq!(limit.check_at(t0), Some(0));
        for i in 1..=99 {
            assert_eq!(limit.check_at(t0 + Duration::from_millis(i)), None);
        }
        assert_eq!(limit.take_overdue(t0 + Duration::from_secs(5)), None);
        assert_eq!(limit.check_at(t0 + Duration::from_secs(10)), Some(99));
        assert_eq!(limit.take_overdue(t0 + Duration::from_secs(30)), None);
    }

    #[test]
    fn a_burst_that_stops_is_reported_by_the_tick() {
        let limit = RateLimited::new(Duration::from_secs(1));
        let t0 = Instant::now();
        assert_eq!(limit.check_at(t0), Some(0));
        assert_eq!(limit.check_at(t0), None);
        assert_eq!(limit.check_at(t0), None);
        assert_eq!(limit.take_overdue(t0 + Duration::from_millis(500)), None);
        assert_eq!(limit.take_overdue(t0 + Duration::from_secs(1)), Some(2));
        assert_eq!(limit.take_overdue(t0 + Duration::from_secs(5)), None);
    }
}
