//! A long admin query's share of the CPU: after each [`SLICE`] of running it pauses for
//! [`PAUSE`], so one query takes at most a quarter of a core and the two that may run at once
//! half of one, however long they run. Admin threads are already in the idle scheduling
//! class, but on a small virtual machine that is not enough: measured with
//! `scripts/bench_admin.sh` (2 cores, 16 sysbench threads through psprobe, four admin clients
//! looping on a query only the time limit stops), the proxied traffic lost 16-28% of its rate
//! and its p99 latency went to 2.3-2.5x while the admin queries ran, because a busy idle-class
//! thread still uses the machine's CPU time (and its caches) whenever a proxy thread waits for
//! the network. A query shorter than one slice (all the usual ones) never pauses.

use std::time::{Duration, Instant};

/// Running time between two pauses.
pub const SLICE: Duration = Duration::from_millis(5);
/// Length of each pause.
pub const PAUSE: Duration = Duration::from_millis(15);

/// Paces one connection's queries; fed from SQLite's progress handler.
#[derive(Debug, Default)]
pub struct Pacer {
    /// When the current slice began; `None` between queries.
    slice_began: Option<Instant>,
}

impl Pacer {
    /// A query starts running at `now`: its first slice begins.
    pub fn start(&mut self, now: Instant) {
        self.slice_began = Some(now);
    }

    /// The query ended.
    pub fn stop(&mut self) {
        self.slice_began = None;
    }

    /// How long to pause at `now`, if the current slice is used up; the next slice begins
    /// after the pause (`resume`).
    pub fn pause_at(&self, now: Instant) -> Option<Duration> {
        let began = self.slice_began?;
        (now.saturating_duration_since(began) >= SLICE).then_some(PAUSE)
    }

    /// The pause is over at `now`: the next slice begins (unless the query ended meanwhile).
    pub fn resume(&mut self, now: Instant) {
        if self.slice_began.is_some() {
            self.slice_began = Some(now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_query_pauses_once_per_slice_and_never_between_queries() {
        let t0 = Instant::now();
        let mut pacer = Pacer::default();
        assert_eq!(pacer.pause_at(t0), None, "no query running");
        pacer.start(t0);
        assert_eq!(
            pacer.pause_at(t0 + SLICE / 2),
            None,
            "a short query never pauses"
        );
        assert_eq!(pacer.pause_at(t0 + SLICE), Some(PAUSE));
        let after = t0 + SLICE + PAUSE;
        pacer.resume(after);
        assert_eq!(pacer.pause_at(after + SLICE / 2), None, "a new slice began");
        assert_eq!(pacer.pause_at(after + SLICE), Some(PAUSE));
        pacer.stop();
        pacer.resume(after + SLICE + PAUSE);
        assert_eq!(
            pacer.pause_at(after + 10 * SLICE),
            None,
            "ended: resume starts nothing"
        );
    }

    #[test]
    fn running_at_most_a_quarter_of_the_time() {
        // A query that runs for a second of wall time, checked every 50 µs as SQLite's
        // progress handler would: its share of running time.
        let t0 = Instant::now();
        let mut pacer = Pacer::default();
        pacer.start(t0);
        let (mut now, mut running) = (t0, Duration::ZERO);
        let step = Duration::from_micros(50);
        while now < t0 + Duration::from_secs(1) {
            match pacer.pause_at(now) {
                Some(pause) => {
                    now += pause;
                    pacer.resume(now);
                }
                None => {
                    now += step;
                    running += step;
                }
            }
        }
        let share = running.as_secs_f64() / (now - t0).as_secs_f64();
        assert!((0.2..=0.26).contains(&share), "share {share}");
    }
}
