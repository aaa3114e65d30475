//! Duet runs: two servers (same version, same data) each behind its own proxy and leader, loaded
//! at once, restarted at the same moment into the two scenarios of a slow pair and measured
//! over the same seconds, with the roles swapped at the next phase (side B's timeline mirrors
//! side A's inside every pair). The host's second-to-second noise, which sequential restart
//! pairs cannot average away quickly (docs/measurement.md), hits both sides of a phase alike
//! and cancels in the duet's estimate (`analysis::duet`).
//!
//! This is the meeting point of the two leaders: each waits here before its restart and once
//! its server is back, so both restarts start together and both windows open together. A
//! side that ends (done, stopped, failed) leaves, and its partner ends at its next meeting
//! instead of waiting for ever. Each side also hands in its slow records, so both decide the
//! stopping rule on the duet's interval, not on their own sequential one.
//!
//! Must not: talk to a server or decide the order (the timeline's, mirrored for side B).

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::Notify;

use crate::phase_log::PhaseRecord;

/// Which of the two servers a leader drives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Side {
    A,
    B,
}

impl Side {
    fn index(self) -> usize {
        match self {
            Side::A => 0,
            Side::B => 1,
        }
    }

    /// "a" or "b", as the phase log and the reports name the side.
    pub(crate) fn label(self) -> &'static str {
        match self {
            Side::A => "a",
            Side::B => "b",
        }
    }
}

/// The partner ended (its run is over, stopped or failed): this side ends too.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PartnerGone;

/// Steps each side remembers for a partner that arrives late (a side is at most one meeting
/// ahead of the other).
const KEPT_STEPS: usize = 4;

#[derive(Default)]
struct SideState {
    /// The meetings reached, latest last, with the value each brought.
    reached: Vec<(u64, Duration)>,
    left: bool,
    /// This side has led once (a second lead would not be in step with the partner).
    led: bool,
    slow: Vec<PhaseRecord>,
}

#[derive(Default)]
struct Shared {
    sides: Mutex<[SideState; 2]>,
    changed: Notify,
}

/// One side's handle on the duet (settings hold it; clones share the meeting point).
#[derive(Clone)]
pub(crate) struct DuetSide {
    pub side: Side,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for DuetSide {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DuetSide({})", self.side.label())
    }
}

impl DuetSide {
    /// The two sides of a new duet.
    pub(crate) fn pair() -> (DuetSide, DuetSide) {
        let shared = Arc::new(Shared::default());
        (
            DuetSide {
                side: Side::A,
                shared: shared.clone(),
            },
            DuetSide {
                side: Side::B,
                shared,
            },
        )
    }

    fn lock(&self) -> MutexGuard<'_, [SideState; 2]> {
        // A panic while holding the lock leaves plain data behind: go on with it.
        self.shared
            .sides
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn partner(&self) -> usize {
        1 - self.side.index()
    }

    /// Waits until the partner has reached meeting `step` too (steps only grow) and returns
    /// the larger of the two sides' `value`s (a settle time both then use), or
    /// [`PartnerGone`] once the partner left without reaching it.
    pub(crate) async fn meet(&self, step: u64, value: Duration) -> Result<Duration, PartnerGone> {
        {
            let mut sides = self.lock();
            let mine = &mut sides[self.side.index()];
            mine.reached.push((step, value));
            if mine.reached.len() > KEPT_STEPS {
                mine.reached.remove(0);
            }
        }
        self.shared.changed.notify_waiters();
        loop {
            let notified = self.shared.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let sides = self.lock();
                let partner = &sides[self.partner()];
                let latest = partner.reached.last().map(|&(s, _)| s);
                if latest.is_some_and(|s| s >= step) {
                    // The partner's value at this step; a partner that skipped it (a failed
                    // restart) brought none.
                    let theirs = partner
                        .reached
                        .iter()
                        .find(|&&(s, _)| s == step)
                        .map_or(value, |&(_, v)| v);
                    return Ok(value.max(theirs));
                }
                if partner.left {
                    return Err(PartnerGone);
                }
            }
            notified.await;
        }
    }

    /// Whether this is the side's first lead (and marks it led). A lead resumed after an
    /// interruption (a stall, a lost connection) would number its phases from the last one
    /// published, out of step with the partner's: a duet side leads once, and its partner
    /// ends with it.
    pub(crate) fn first_lead(&self) -> bool {
        let mut sides = self.lock();
        let me = &mut sides[self.side.index()];
        !std::mem::replace(&mut me.led, true)
    }

    /// This side's run is over: the partner stops waiting for it.
    pub(crate) fn leave(&self) {
        self.lock()[self.side.index()].left = true;
        self.shared.changed.notify_waiters();
    }

    #[cfg(test)]
    /// Whether the partner has ended.
    pub(crate) fn partner_left(&self) -> bool {
        self.lock()[self.partner()].left
    }

    /// Hands in this side's slow records so far (the duet's stopping rule reads both sides').
    pub(crate) fn record_slow(&self, slow: &[PhaseRecord]) {
        self.lock()[self.side.index()].slow = slow.to_vec();
    }

    /// Both sides' slow records, side A's first.
    pub(crate) fn slow_records(&self) -> (Vec<PhaseRecord>, Vec<PhaseRecord>) {
        let sides = self.lock();
        (sides[0].slow.clone(), sides[1].slow.clone())
    }
}

/// Leaves the duet when dropped, however the leader's run ends.
pub(crate) struct LeaveOnDrop<'a>(pub Option<&'a DuetSide>);

impl Drop for LeaveOnDrop<'_> {
    fn drop(&mut self) {
        if let Some(side) = self.0 {
            side.leave();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn both_pass_a_meeting_together_with_the_larger_value() {
        let (a, b) = DuetSide::pair();
        let ms = Duration::from_millis;
        let first = tokio::spawn({
            let a = a.clone();
            async move { a.meet(1, ms(10)).await }
        });
        // A waits until B arrives.
        tokio::task::yield_now().await;
        assert!(!first.is_finished());
        assert_eq!(b.meet(1, ms(30)).await, Ok(ms(30)));
        assert_eq!(first.await.unwrap(), Ok(ms(30)));
        // B runs ahead to the next meeting; A arriving late still gets B's value of it.
        let ahead = tokio::spawn({
            let b = b.clone();
            async move { b.meet(2, ms(5)).await }
        });
        tokio::task::yield_now().await;
        assert_eq!(a.meet(2, ms(1)).await, Ok(ms(5)));
        assert_eq!(ahead.await.unwrap(), Ok(ms(5)));
    }

    #[tokio::test]
    async fn a_partner_that_leaves_ends_the_wait() {
        let (a, b) = DuetSide::pair();
        let waiting = tokio::spawn({
            let a = a.clone();
            async move { a.meet(7, Duration::ZERO).await }
        });
        tokio::task::yield_now().await;
        {
            let _guard = LeaveOnDrop(Some(&b));
        }
        assert_eq!(waiting.await.unwrap(), Err(PartnerGone));
        assert!(a.partner_left());
        assert!(!b.partner_left());
        // A step the partner reached before leaving still passes.
        let (a, b) = DuetSide::pair();
        let b2 = b.clone();
        let reached = tokio::spawn(async move { b2.meet(1, Duration::ZERO).await });
        tokio::task::yield_now().await;
        b.leave();
        assert_eq!(a.meet(1, Duration::ZERO).await, Ok(Duration::ZERO));
        assert_eq!(reached.await.unwrap(), Ok(Duration::ZERO));
    }

    #[test]
    fn a_side_leads_once() {
        let (a, b) = DuetSide::pair();
        assert!(a.first_lead());
        assert!(!a.first_lead());
        assert!(b.first_lead());
    }

    #[test]
    fn records_are_kept_per_side() {
        let (a, b) = DuetSide::pair();
        let record = PhaseRecord {
            scenario: "pfsoff".into(),
            ..PhaseRecord::default()
        };
        b.record_slow(std::slice::from_ref(&record));
        let (of_a, of_b) = a.slow_records();
        assert!(of_a.is_empty());
        assert_eq!(of_b, vec![record]);
    }
}
