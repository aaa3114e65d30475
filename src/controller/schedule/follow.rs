//! The follower's side: labels commands with the leader's slots, read from `psprobe.phase`,
//! and writes the same segments to its own phase log, until it takes the lead or stops.
//!
//! The leader writes one row per slot when the scenario is in effect, with the slot's settle
//! and measured times. A follower sees it up to one poll interval late, so it measures only
//! inside what it is sure of: from when it read the row plus the settle time, to the end of the
//! leader's window minus one poll interval and the round trip. Commands outside that window
//! keep the scenario's label in the metrics but are not measured.

use std::time::{Duration, Instant};

use tokio::sync::watch;

use crate::observe::ControllerHandle;
use crate::stats::{ScenarioId, SlotState, NO_SCENARIO};

use super::follow_server::FollowServer;
use super::phase_tracker::{PhaseTracker, SlotStart};
use crate::clock::now_ms;
use crate::controller::client::heartbeat::STALE_AFTER;
use crate::controller::client::leadership::LockPoll;
use crate::controller::error::Result;
use crate::controller::model::phase_row::PhaseRow;
use crate::phase_log::{PhaseLog, FAST};

/// How often a follower reads the leader's row and tries the lock, at most.
pub(crate) const FOLLOW_POLL: Duration = Duration::from_millis(250);
/// Fastest poll (for short slots).
const MIN_POLL: Duration = Duration::from_millis(20);

/// Where a follower that took the lead goes on: the last row it saw.
pub(crate) type Resume = Option<PhaseRow>;

pub(crate) struct Follower<'a, S: FollowServer> {
    pub lead: &'a mut S,
    pub observer: &'a ControllerHandle,
    pub tracker: &'a mut PhaseTracker,
    pub log: &'a mut PhaseLog,
    pub stop: &'a mut watch::Receiver<bool>,
    /// A KILL of a stalled leader's connections was refused (warned once).
    pub kill_refused: bool,
}

struct Window {
    id: ScenarioId,
    in_effect: Instant,
    from: Instant,
    to: Instant,
    measuring: bool,
    /// Measuring stopped at its end while a statement was outstanding (the slot ends there).
    stopped_at: Option<Instant>,
}

/// Notes on the window that measuring stopped at `stopped` (if it did).
fn stopped_early(window: &mut Option<Window>, stopped: Option<Instant>) {
    if let (Some(w), Some(at)) = (window.as_mut(), stopped) {
        w.stopped_at.get_or_insert(at);
    }
}

impl<S: FollowServer> Follower<'_, S> {
    fn publish(&self, id: ScenarioId, state: SlotState, in_effect: Instant) {
        self.observer.scenarios().publish_slot(id, state, in_effect);
    }

    fn unmeasured(&mut self) {
        self.observer.scenarios().stop_measuring();
        self.tracker.slot_ended();
    }

    /// Ends the measured window at `at`, when commands stopped being measured (earlier than
    /// now if a slow poll held the loop up).
    fn unmeasured_at(&mut self, at: Instant) {
        self.observer.scenarios().stop_measuring();
        self.tracker.slot_ended_at(at);
    }

    /// Follows until this psprobe takes the lead (`Some(last row seen)`) or stops (`None`).
    pub(crate) async fn run(&mut self) -> Result<Option<Resume>> {
        let round_trip = self.lead.ping().await.unwrap_or(Duration::from_millis(5));
        let margin = round_trip * 2 + Duration::from_millis(10);
        let mut poll = FOLLOW_POLL;
        let mut next_poll = Instant::now() + poll;
        let mut last: Option<PhaseRow> = None;
        let mut window: Option<Window> = None;
        loop {
            let wake = match &window {
                Some(w) if !w.measuring => w.from.min(next_poll),
                Some(w) => w.to.min(next_poll),
                None => next_poll,
            };
            if !self.sleep_until(wake).await {
                self.tracker.abandon_slot();
                self.tracker.finish_segment(self.log)?;
                return Ok(None);
            }
            let now = Instant::now();
            if let Some(w) = window.as_mut() {
                if !w.measuring && now >= w.from {
                    w.measuring = true;
                    self.publish(w.id, SlotState::Measuring, w.in_effect);
                    self.tracker.measuring();
                }
                if w.measuring && now >= w.to {
                    let ended = w.stopped_at.unwrap_or(now);
                    window = None;
                    self.unmeasured_at(ended);
                }
            }
            if now < next_poll {
                continue;
            }
            next_poll = now + poll;
            // A poll the server is slow to answer (a cut link) must not stretch the window.
            let end = window.as_ref().filter(|w| w.measuring).map(|w| w.to);
            let observer = self.observer;
            let (polled, stopped) = on_time(self.poll_lock(), end, observer).await;
            stopped_early(&mut window, stopped);
            if polled? {
                self.tracker.abandon_slot();
                self.tracker.finish_segment(self.log)?;
                // The leader may have completed the schedule and let the lock go between two
                // polls: its last word is then "done", and there is nothing to take over.
                let finished = last.is_some()
                    && matches!(self.lead.read().await, Ok(Some(row)) if row.state == "done");
                if finished {
                    // (The caller releases the lock it now holds.)
                    self.observer.scenarios().set_current(NO_SCENARIO);
                    return Ok(None);
                }
                return Ok(Some(last));
            }
            let (read, stopped) = on_time(self.lead.read(), end, observer).await;
            stopped_early(&mut window, stopped);
            let Some(row) = read? else {
                continue;
            };
            if last.as_ref() == Some(&row) {
                continue;
            }
            if let Some(at) = window.as_ref().and_then(|w| w.stopped_at) {
                // The window ended while the read was outstanding: its slot ends there.
                window = None;
                self.unmeasured_at(at);
            }
            let slot = (row.block, row.phase, &row.scenario, &row.schedule);
            let new_slot = last.as_ref().is_none_or(|l| {
                (l.block, l.phase, &l.scenario, &l.schedule) != slot || l.state != row.state
            });
            match row.state.as_str() {
                // The leader completed its schedule while we followed: nothing to take over.
                // (A "done" already there when we started is an earlier run's.)
                "done" | "idle" => {
                    window = None;
                    self.tracker.abandon_slot();
                    self.tracker.finish_segment(self.log)?;
                    self.observer.scenarios().set_current(NO_SCENARIO);
                    if row.state == "done" && last.is_some() {
                        return Ok(None);
                    }
                }
                "switching" => {
                    window = None;
                    self.unmeasured();
                }
                _ if new_slot => {
                    let schedule: &'static str = if row.schedule == "slow" {
                        crate::phase_log::SLOW
                    } else {
                        FAST
                    };
                    if self.tracker.segment() != Some((schedule, row.block)) {
                        self.tracker.finish_segment(self.log)?;
                        self.tracker.begin_segment(schedule, row.block);
                    }
                    let id = self
                        .observer
                        .scenarios()
                        .intern(&row.scenario)
                        .unwrap_or(NO_SCENARIO);
                    let settle = Duration::from_millis(row.settle_ms);
                    let measure = Duration::from_millis(row.measure_ms);
                    self.publish(id, SlotState::Settling, now);
                    self.tracker.slot_started(&SlotStart {
                        scenario: &row.scenario,
                        id,
                        phase: row.phase,
                        switched_at_ms: now_ms(),
                        in_effect: now,
                        switch: None,
                        settle,
                        slot: None,
                        restarted: schedule != FAST,
                        verified: true,
                    });
                    // Rows of older leaders carry no timing: measure until the next row.
                    let to = if row.schedule.is_empty() {
                        now + Duration::from_secs(86_400)
                    } else {
                        (now + settle + measure)
                            .checked_sub(poll + margin)
                            .unwrap_or(now)
                    };
                    // A window too short to hold anything after the margins is not waited
                    // for (waking at its start would spin until the next poll).
                    let from = now + settle;
                    window = (from < to).then_some(Window {
                        id,
                        in_effect: now,
                        from,
                        to,
                        measuring: false,
                        stopped_at: None,
                    });
                    let slot = settle + measure;
                    if !slot.is_zero() {
                        poll = (slot / 4).clamp(MIN_POLL, FOLLOW_POLL);
                    }
                }
                _ => {}
            }
            last = Some(row);
        }
    }

    /// Tries the lock (true: this psprobe leads now). A holder whose heartbeat is older than
    /// [`STALE_AFTER`] is stopped or cut off while it keeps the lock: its connections are
    /// ended, which frees the lock for the next poll (of this follower or another).
    async fn poll_lock(&mut self) -> Result<bool> {
        let holder = match self.lead.poll_lock().await? {
            LockPoll::Acquired => return Ok(true),
            LockPoll::Held(holder) => holder,
        };
        let Some(beat) = holder.as_ref().and_then(|h| h.stalled(STALE_AFTER)) else {
            return Ok(false);
        };
        let (leader, age, conns) = (beat.leader.clone(), beat.age, beat.conns.clone());
        match self.lead.kill(&conns).await {
            Ok(()) => tracing::warn!(
                "the leading psprobe ({leader}) has not beaten for {:.1} s while holding the lock \
                 (stopped or cut off): ended its {} connection(s) to take over",
                age.as_secs_f64(),
                conns.len()
            ),
            Err(e) if !self.kill_refused => {
                self.kill_refused = true;
                tracing::warn!(
                    "the leading psprobe ({leader}) has not beaten for {:.1} s, but its \
                     connections cannot be ended ({e}): followers need the leader's account (or \
                     CONNECTION ADMIN) to take over from a stalled leader",
                    age.as_secs_f64()
                );
            }
            Err(_) => {}
        }
        Ok(false)
    }

    /// Sleeps until `at` unless `stop` turns true first (returns false then).
    async fn sleep_until(&mut self, at: Instant) -> bool {
        if *self.stop.borrow() {
            return false;
        }
        tokio::select! {
            () = tokio::time::sleep_until(tokio::time::Instant::from_std(at)) => true,
            changed = self.stop.changed() => changed.is_ok() && !*self.stop.borrow(),
        }
    }
}

/// Awaits `statement`; if the measured window's `end` comes first, stops measuring then and
/// goes on waiting. Returns the statement's output and when measuring was stopped, if it was.
async fn on_time<T>(
    statement: impl std::future::Future<Output = T>,
    end: Option<Instant>,
    observer: &ControllerHandle,
) -> (T, Option<Instant>) {
    tokio::pin!(statement);
    let Some(end) = end else {
        return (statement.await, None);
    };
    tokio::select! {
        done = &mut statement => (done, None),
        () = tokio::time::sleep_until(tokio::time::Instant::from_std(end)) => {
            observer.scenarios().stop_measuring();
            let stopped = Instant::now();
            (statement.await, Some(stopped))
        }
    }
}

#[cfg(test)]
#[path = "follow_tests.rs"]
mod scripted;

#[cfg(test)]
mod tests {
    use super::*;

    fn observer() -> ControllerHandle {
        ControllerHandle::for_tests()
    }

    fn measuring(o: &ControllerHandle) {
        o.scenarios()
            .publish_slot(1, SlotState::Measuring, o.scenarios().base());
    }

    #[tokio::test]
    async fn a_slow_statement_does_not_stretch_the_measured_window() {
        let o = observer();
        measuring(&o);
        let end = Instant::now() + Duration::from_millis(20);
        // The statement answers only once measuring has stopped: the window ended first.
        let (tx, rx) = tokio::sync::oneshot::channel::<u32>();
        let statement = async { rx.await.unwrap_or(0) };
        let answer_after_the_window = async {
            // (Bounded: without the fix the statement must still end, and the test fail.)
            for _ in 0..5_000 {
                if o.scenarios().now().state == SlotState::Switching {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(1)).await; // poll: no event to wait on
            }
            let _ = tx.send(7);
        };
        let ((out, stopped), ()) =
            tokio::join!(on_time(statement, Some(end), &o), answer_after_the_window);
        assert_eq!(out, 7, "the statement is still awaited to its end");
        assert!(
            stopped.is_some_and(|at| at >= end),
            "stopped at the window's end"
        );
        assert_eq!(o.scenarios().now().id, 1, "the label stays");

        // A statement answered in time changes nothing.
        measuring(&o);
        let end = Instant::now() + Duration::from_secs(60);
        assert_eq!(on_time(async { 8 }, Some(end), &o).await, (8, None));
        assert_eq!(o.scenarios().now().state, SlotState::Measuring);
        // Outside a measured window there is nothing to end.
        assert_eq!(on_time(async { 9 }, None, &o).await, (9, None));
    }
}
