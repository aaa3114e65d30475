//! At most one log line per interval for events that can come in floods (accept errors while
//! out of file descriptors, refused clients, slowloris timeouts): the line that is written
//! says how many were left out since the previous one.

use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

pub(crate) struct Throttle {
    every: Duration,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    last: Option<Instant>,
    suppressed: u64,
}

impl Throttle {
    pub(crate) const fn new(every: Duration) -> Self {
        Throttle {
            every,
            state: Mutex::new(State {
                last: None,
                suppressed: 0,
            }),
        }
    }

    /// `Some(events left out since the last line)` when a line may be written at `now`;
    /// `None` (and the event is counted as left out) otherwise.
    pub(crate) fn allow(&self, now: Instant) -> Option<u64> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let due = state
            .last
            .is_none_or(|last| now.saturating_duration_since(last) >= self.every);
        if due {
            state.last = Some(now);
            Some(std::mem::take(&mut state.suppressed))
        } else {
            state.suppressed += 1;
            None
        }
    }
}

/// " (N more like it since the last line)" when lines were left out.
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
    fn one_line_per_interval_with_the_count_left_out() {
        let t = Throttle::new(Duration::from_secs(1));
        let start = Instant::now();
        let at = |ms| start + Duration::from_millis(ms);
        assert_eq!(t.allow(at(0)), Some(0));
        let within: Vec<_> = (1..=40).map(|i| t.allow(at(i * 20))).collect();
        assert!(within.iter().all(Option::is_none), "{within:?}");
        assert_eq!(t.allow(at(1000)), Some(40));
        assert_eq!(t.allow(at(1500)), None);
        assert_eq!(t.allow(at(2000)), Some(1));
        assert_eq!(t.allow(at(9000)), Some(0));
    }
}
