//! A running admin query's clock: its time limit, and its share of the CPU. After each
//! [`SLICE`] of running a query pauses for [`PAUSE`], so one query takes at most a quarter of a
//! core and the two that may run at once half of one, however long they run. Admin threads are
//! already in the idle scheduling class, but on a small virtual machine that is not enough:
//! measured with `scripts/bench_admin.sh` (2 cores, 16 sysbench threads through psprobe, four
//! admin clients looping on a query only the time limit stops), the proxied traffic lost 16-28%
//! of its rate and its p99 latency went to 2.3-2.5x while the admin queries ran, because a busy
//! idle-class thread still uses the machine's CPU time (and its caches) whenever a proxy thread
//! waits for the network. A query shorter than one slice (all the usual ones) never pauses.

use std::time::{Duration, Instant};

/// Running time between two pauses.
pub(crate) const SLICE: Duration = Duration::from_millis(5);
/// Length of each pause.
pub(crate) const PAUSE: Duration = Duration::from_millis(15);

/// What SQLite's progress handler does next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Past the time limit: interrupt the query.
    Interrupt,
    /// The slice is used up: sleep this long, then [`Running::resume`].
    Pause(Duration),
    /// Go on.
    Go,
}

/// One query from its start to its end.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Running {
    deadline: Instant,
    slice_began: Instant,
}

impl Running {
    /// A query that starts at `now` and may run for `timeout`; its first slice begins.
    pub(crate) fn new(now: Instant, timeout: Duration) -> Self {
        Running {
            deadline: now + timeout,
            slice_began: now,
        }
    }

    /// What to do at `now`.
    pub(crate) fn check(&self, now: Instant) -> Verdict {
        if now >= self.deadline {
            Verdict::Interrupt
        } else if now.saturating_duration_since(self.slice_began) >= SLICE {
            Verdict::Pause(PAUSE)
        } else {
            Verdict::Go
        }
    }

    /// A pause is over at `now`: the next slice begins.
    pub(crate) fn resume(&mut self, now: Instant) {
        self.slice_began = now;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMIT: Duration = Duration::from_secs(10);

    #[test]
    fn a_query_pauses_once_per_slice_and_stops_at_its_limit() {
        let t0 = Instant::now();
        let mut running = Running::new(t0, LIMIT);
        assert_eq!(
            running.check(t0 + SLICE / 2),
            Verdict::Go,
            "a short query never pauses"
        );
        assert_eq!(running.check(t0 + SLICE), Verdict::Pause(PAUSE));
        let after = t0 + SLICE + PAUSE;
        running.resume(after);
        assert_eq!(
            running.check(after + SLICE / 2),
            Verdict::Go,
            "a new slice began"
        );
        assert_eq!(running.check(after + SLICE), Verdict::Pause(PAUSE));
        assert_eq!(running.check(t0 + LIMIT), Verdict::Interrupt);
    }

    #[test]
    fn running_at_most_a_quarter_of_the_time() {
        // A query that runs for a second of wall time, checked every 50 µs as SQLite's
        // progress handler would: its share of running time.
        let t0 = Instant::now();
        let mut running = Running::new(t0, LIMIT);
        let (mut now, mut ran) = (t0, Duration::ZERO);
        let step = Duration::from_micros(50);
        while now < t0 + Duration::from_secs(1) {
            match running.check(now) {
                Verdict::Pause(pause) => {
                    now += pause;
                    running.resume(now);
                }
                Verdict::Go => {
                    now += step;
                    ran += step;
                }
                Verdict::Interrupt => panic!("interrupted before its limit"),
            }
        }
        let share = ran.as_secs_f64() / (now - t0).as_secs_f64();
        assert!((0.2..=0.26).contains(&share), "share {share}");
    }
}
