//! Rate-limited log lines, for events a peer can repeat as fast as it likes (refused logins,
//! accept failures while out of file descriptors, refused clients, slowloris timeouts): the
//! first occurrence is logged at once; later ones within the interval are only counted, and the
//! count goes into the next line (or into [`RateLimited::take_overdue`], called from a periodic
//! tick, so a burst that stops is still reported). The proxy, the admin interface and the
//! metrics endpoint share it.
//!
//! Must not: drop the count of what it left out.

use std::sync::{Mutex, MutexGuard, PoisonError};
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
        // The state is two plain numbers, valid whatever a panicking holder left.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// One occurrence now: `Some(n)` when it is to be logged (`n` occurrences were suppressed
    /// since the last line), `None` when it was only counted.
    pub(crate) fn check(&self) -> Option<u64> {
        self.check_at(Instant::now())
    }

    /// [`RateLimited::check`] at `now`.
    pub(crate) fn check_at(&self, now: Instant) -> Option<u64> {
        let mut state = self.lock();
        if self.due(&state, now) {
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
        if state.suppressed > 0 && self.due(&state, now) {
            state.last = Some(now);
            Some(std::mem::take(&mut state.suppressed))
        } else {
            None
        }
    }

    /// A line may be written at `now`: none yet, or the last one an interval ago.
    fn due(&self, state: &State, now: Instant) -> bool {
        state
            .last
            .is_none_or(|last| now.saturating_duration_since(last) >= self.interval)
    }
}

/// " (N more like it since the last line)" when lines were left out, for the end of a line
/// [`RateLimited::check`] allowed.
pub(crate) fn more(suppressed: u64) -> String {
    if suppressed == 0 {
        String::new()
    } else {
        format!(" ({suppressed} more like it since the last line)")
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

    /// The proxy's floods (accept errors, refusals, handshake timeouts): one line a second,
    /// each with the count left out since the one before, the count starting again after it.
    #[test]
    fn one_line_per_interval_with_the_count_left_out() {
        let limit = RateLimited::new(Duration::from_secs(1));
        let start = Instant::now();
        let at = |ms| start + Duration::from_millis(ms);
        assert_eq!(limit.check_at(at(0)), Some(0));
        let within: Vec<_> = (1..=40).map(|i| limit.check_at(at(i * 20))).collect();
        assert!(within.iter().all(Option::is_none), "{within:?}");
        assert_eq!(limit.check_at(at(1000)), Some(40));
        assert_eq!(limit.check_at(at(1500)), None);
        assert_eq!(limit.check_at(at(2000)), Some(1));
        assert_eq!(limit.check_at(at(9000)), Some(0));
    }

    #[test]
    fn more_says_nothing_when_nothing_was_left_out() {
        assert_eq!(more(0), "");
        assert_eq!(more(3), " (3 more like it since the last line)");
    }
}
