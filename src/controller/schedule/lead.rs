//! The leader's side of a schedule: runs the steps of the [`Timeline`] against the server.
//!
//! A fast slot: switch (apply + verify, the slot's first few ms, not measured), settle (binned
//! by time since the switch, not measured), measure, and a short guard before the next switch
//! (not measured: a statement started there would be slowed by the switch). A slow phase:
//! restart into the scenario (pfsoff, `NAME@startup`, or the runtime reference with its rows
//! applied after the restart), settle for `--restart-settle`, measure. Every phase of a slow
//! block is entered through a restart, so the cold start after it is the same for both sides.
//!
//! Rows someone else changed, seen at a switch, are recorded here (phase log, admin) as well as
//! kept (the switcher leaves them out). After each segment [`Tuning`] re-chooses the settle
//! times and checks the stopping rule.

use std::time::{Duration, Instant};

use tokio::sync::watch;

use crate::observe::ControllerHandle;
use crate::stats::{ScenarioId, SlotState};

use super::as_found::record_claim;
use super::duet::PartnerGone;
use super::lead_server::LeadServer;
use super::mode::{ServerMode, MAX_RESTART_FAILURES};
use super::phase_tracker::{PhaseTracker, SlotStart};
use super::settings::ControllerSettings;
use super::timeline::{Progress, Step, Timeline};
use super::tuning::Tuning;
use crate::clock::now_ms;
use crate::controller::client::heartbeat::FENCE_AFTER;
use crate::controller::client::restart::RestartTiming;
use crate::controller::error::{ControllerError, Result};
use crate::controller::model::ownership::Claim;
use crate::controller::model::phase_row::PhaseRow;
use crate::controller::model::scenario::Settings;
use crate::controller::model::startup;
use crate::phase_log::{PhaseLog, PhaseRecord, RestartRecord, FAST, SLOW};

/// Not measured before each switch: statements started there would be slowed by it.
pub(crate) const GUARD: Duration = Duration::from_millis(20);
/// The statement rate after a restart is sampled in bins this wide (the restart profile).
pub(crate) const RATE_BIN: Duration = Duration::from_millis(250);

/// Where the leader's measurements go: the scenarios' ids, the observer (labels and metrics),
/// the phase tracker and the phase log.
pub(crate) struct Out<'a> {
    pub ids: &'a [ScenarioId],
    pub observer: &'a ControllerHandle,
    pub tracker: &'a mut PhaseTracker,
    pub log: &'a mut PhaseLog,
}

/// How this run's restarts went.
#[derive(Default)]
pub(crate) struct Restarts {
    /// Failed in a row.
    failures: u32,
    /// Succeeded this run.
    ok: u32,
    last_failure: Option<String>,
    /// How long the last restart took to the first query (whether another fits the run).
    last_took: Option<Duration>,
    /// The slow blocks were cut short for lack of time (said once).
    out_of_time: bool,
}

/// The leader's slot loop: what it decides (which slot, how long, what counts) is here; what it
/// asks of the server goes through `server`.
pub(crate) struct Leader<'a, S: LeadServer> {
    // What the runner lends: the settings, the server, where records and the phase log go,
    // the stop signal and what the server is in.
    pub s: &'a ControllerSettings,
    pub server: S,
    pub out: Out<'a>,
    pub stop: &'a mut watch::Receiver<bool>,
    pub mode: &'a mut ServerMode,
    /// What the leader re-chooses as the run goes (tuning.rs).
    pub tuning: Tuning,
    /// What this run has measured.
    pub measured: Measured,
    /// Where this run is.
    pub state: LeadState,
}

/// This run's records: the fast ones (settle choice, stopping rule) and the slow ones (the
/// restart profile).
#[derive(Default)]
pub(crate) struct Measured {
    pub fast: Vec<PhaseRecord>,
    pub slow: Vec<PhaseRecord>,
}

/// Where the leader's run is.
pub(crate) struct LeadState {
    /// When the run began (a lead resumed after an interruption keeps the run's clock, so
    /// --duration and the slow blocks' spread count from the run's start).
    pub started: Instant,
    /// The phase number the next slot takes (a confirmation goes on from there).
    pub next_phase: u64,
    /// The scenario (index) of the last fast slot, whose rows the next switch checks.
    last_fast: Option<usize>,
    restarts: Restarts,
    /// The duet's partner ended, so this side's run is over (done, not stopped).
    duet_over: bool,
}

/// A stop was requested (the step did not complete).
pub(crate) struct Stopped;

impl<'a, S: LeadServer> Leader<'a, S> {
    pub(crate) fn new(
        s: &'a ControllerSettings,
        server: S,
        out: Out<'a>,
        stop: &'a mut watch::Receiver<bool>,
        mode: &'a mut ServerMode,
        (tuning, next_phase): (Tuning, u64),
    ) -> Self {
        Leader {
            s,
            server,
            out,
            stop,
            mode,
            tuning,
            measured: Measured::default(),
            state: LeadState {
                started: Instant::now(),
                next_phase,
                last_fast: None,
                restarts: Restarts::default(),
                duet_over: false,
            },
        }
    }

    /// Runs the timeline to its end (true) or until stopped (false).
    pub(crate) async fn run(&mut self, mut timeline: Timeline) -> Result<bool> {
        loop {
            let progress = Progress {
                elapsed: self.state.started.elapsed(),
                precise: self.tuning.precise,
                slow_precise: self.tuning.slow_precise,
            };
            let step = timeline.next(progress);
            if let Step::Fast { phase, .. } | Step::Slow { phase, .. } = step {
                self.state.next_phase = phase + 1;
            }
            let outcome = match step {
                Step::Fast {
                    scenario,
                    segment,
                    phase,
                    ..
                } => {
                    if self.out.tracker.segment() != Some((FAST, segment)) {
                        self.out.tracker.begin_segment(FAST, segment);
                    }
                    self.fast_slot(scenario, segment, phase).await?
                }
                Step::Slow {
                    scenario,
                    block,
                    phase,
                } => {
                    if self.no_time_for_a_restart() {
                        continue;
                    }
                    if self.out.tracker.segment() != Some((SLOW, block)) {
                        self.out.tracker.begin_segment(SLOW, block);
                    }
                    self.slow_phase(scenario, block, phase).await?
                }
                Step::EndSegment => {
                    if self.out.tracker.segment().is_some_and(|(s, _)| s == FAST) {
                        self.end_fast_segment().await?;
                        // The tuning may have lengthened the slots (switches slowed by load).
                        timeline.set_slot(self.tuning.slot);
                    } else {
                        self.end_segment()?;
                    }
                    Ok(())
                }
                Step::Done => return self.done(),
            };
            if outcome.is_err() {
                // Keep what the segment measured so far; the slot in progress counts for nothing.
                self.out.tracker.abandon_slot();
                self.end_segment()?;
                if self.state.duet_over {
                    return self.done();
                }
                return Ok(false);
            }
        }
    }

    /// With `--duration`: whether a restart phase (the last restart's time plus the slow
    /// phase) no longer fits the run. Said once; the slow steps left are skipped.
    fn no_time_for_a_restart(&mut self) -> bool {
        let (Some(duration), Some(took)) = (self.s.duration, self.state.restarts.last_took) else {
            return false;
        };
        let left = duration.saturating_sub(self.state.started.elapsed());
        let fits = took + self.s.slow_phase <= left;
        if !fits && !self.state.restarts.out_of_time {
            self.state.restarts.out_of_time = true;
            // The run ending as planned, not a fault: nothing for the user to act on.
            tracing::info!(
                "no restart phase fits the {:.0?} left of --duration (the last restart took \
                 {:.1} s, a slow phase is {:.1?}): the slow blocks end here",
                left,
                took.as_secs_f64(),
                self.s.slow_phase
            );
        }
        !fits
    }

    /// The timeline ended: an error if every restart it asked for failed (nothing slow was
    /// measured, and the hook needs fixing), finished otherwise.
    fn done(&self) -> Result<bool> {
        match &self.state.restarts.last_failure {
            Some(last) if self.state.restarts.ok == 0 => Err(ControllerError::Restart {
                reason: format!(
                    "every restart of this run failed ({} in a row), so nothing slow was \
                     measured; the last: {last}",
                    self.state.restarts.failures
                ),
            }),
            _ => Ok(true),
        }
    }

    fn end_segment(&mut self) -> Result<()> {
        let records = self.out.tracker.finish_segment(self.out.log)?;
        self.record_segment(records);
        Ok(())
    }

    /// Checks the rows of the scenario in effect held, then writes the segment.
    async fn end_fast_segment(&mut self) -> Result<()> {
        if let Some(i) = self.state.last_fast {
            if self.server.confirm().await? == Some(false) {
                self.out.tracker.unverify(self.out.ids[i]);
            }
        }
        self.end_segment()
    }

    fn record_segment(&mut self, records: Vec<PhaseRecord>) {
        for r in &records {
            self.out
                .observer
                .phase_written(&r.scenario, r.slots.unwrap_or(1), r.verified);
        }
        if records.first().is_some_and(|r| r.schedule() == FAST) {
            self.measured.fast.extend(records);
            self.tuning.after_fast_segment(self.s, &self.measured.fast);
        } else {
            self.measured.slow.extend(records);
            self.tuning.after_slow_segment(self.s, &self.measured.slow);
        }
    }

    /// Rows someone else set, seen by a switch: in the phase log and the admin's table (the
    /// server side, the log lines and the snapshot, is the server's [`LeadServer::switch`]).
    fn record_claims(&mut self, claims: &[Claim]) -> Result<()> {
        for claim in claims {
            record_claim(claim, self.out.observer, self.out.log)?;
        }
        Ok(())
    }

    fn publish_state(&self, id: ScenarioId, state: SlotState, in_effect: Instant) {
        self.out
            .observer
            .scenarios()
            .publish_slot(id, state, in_effect);
    }

    /// Marks what starts from now on as not measured (a switch or restart is coming).
    fn unmeasured(&self) {
        self.out.observer.scenarios().stop_measuring();
    }

    async fn sleep_until(&mut self, at: Instant) -> std::result::Result<(), Stopped> {
        if *self.stop.borrow() {
            return Err(Stopped);
        }
        // Lateness counts from when the sleep should end (now, if `at` has passed already).
        let due = at.max(Instant::now());
        let deadline = tokio::time::Instant::from_std(at);
        let slept = tokio::select! {
            () = tokio::time::sleep_until(deadline) => Ok(()),
            changed = self.stop.changed() => {
                if changed.is_ok() && !*self.stop.borrow() {
                    // A spurious wake-up: sleep on.
                    tokio::time::sleep_until(deadline).await;
                    Ok(())
                } else {
                    Err(Stopped)
                }
            }
        };
        self.check_not_frozen(due);
        slept
    }

    /// A wake-up far past its time: this psprobe was stopped (SIGSTOP, a frozen VM) or
    /// starved. Commands relayed while it woke would carry the old slot's label, and a
    /// follower may have taken over meanwhile: the segment in progress counts for nothing.
    fn check_not_frozen(&mut self, due: Instant) {
        let late = Instant::now().saturating_duration_since(due);
        if late >= FENCE_AFTER && self.out.tracker.segment().is_some() {
            self.unmeasured();
            self.out.tracker.abandon();
            tracing::warn!(
                "this psprobe woke {late:?} late (stopped or starved): the segment in progress \
                 is left out"
            );
        }
    }

    /// Publishes a slow phase's row (fast slots publish theirs in the switch's batch).
    async fn publish_slow(
        &mut self,
        i: usize,
        (block, phase): (u64, u64),
        state: &str,
        (settle, measure): (Duration, Duration),
    ) -> Result<()> {
        let row = PhaseRow {
            scenario: self.s.scenarios[i].clone(),
            block,
            phase,
            state: state.to_string(),
            leader: self.s.identity.clone(),
            schedule: SLOW.to_string(),
            settle_ms: settle.as_millis() as u64,
            measure_ms: measure.as_millis() as u64,
        };
        self.server.publish(&row).await
    }

    async fn fast_slot(
        &mut self,
        i: usize,
        segment: u64,
        phase: u64,
    ) -> Result<std::result::Result<(), Stopped>> {
        if *self.mode != ServerMode::Default {
            if let Err(stopped) = self.back_to_default().await? {
                return Ok(Err(stopped));
            }
        }
        let name = &self.s.scenarios[i];
        let scenario = self.s.catalog.get(name)?.clone();
        self.server.ensure_lead().await?;
        let t0 = Instant::now();
        let switched_at_ms = now_ms();
        self.unmeasured();
        let (settle, slot) = (self.tuning.settle, self.tuning.slot);
        let announced = slot.saturating_sub(GUARD + settle + self.tuning.switch_estimate);
        let row = PhaseRow {
            scenario: name.clone(),
            block: segment,
            phase,
            state: "settling".into(),
            leader: self.s.identity.clone(),
            schedule: FAST.into(),
            settle_ms: settle.as_millis() as u64,
            measure_ms: announced.as_millis() as u64,
        };
        let switched = self.server.switch(&scenario, Some(&row)).await?;
        if switched.previous_held == Some(false) {
            if let Some(prev) = self.state.last_fast {
                self.out.tracker.unverify(self.out.ids[prev]);
            }
        }
        self.record_claims(&switched.claims)?;
        self.state.last_fast = Some(i);
        let t1 = Instant::now();
        self.tuning.switched(t1 - t0);
        self.publish_state(self.out.ids[i], SlotState::Settling, t1);
        self.out.tracker.slot_started(&SlotStart {
            scenario: name,
            id: self.out.ids[i],
            phase,
            switched_at_ms,
            in_effect: t1,
            switch: Some((t1 - t0, switched.statements)),
            settle,
            slot: Some(slot),
            restarted: false,
            verified: true,
        });
        let from = t1 + settle;
        // A switch that eats its slot (on a loaded server its statements queue behind the
        // clients': 0.4-1.5 s at 512 threads here) would leave the slot measuring nothing and
        // its block incomplete; the slot is lengthened instead, to measure at least half of
        // what an instant switch would have left. The next slot starts that much later;
        // rates do not depend on a window's length, and the tuning lengthens the slots of
        // the next segment from these switches.
        let least = slot.saturating_sub(GUARD + settle) / 2;
        let end = (t0 + slot.saturating_sub(GUARD)).max(from + least);
        if from < end {
            if let Err(stopped) = self.sleep_until(from).await {
                return Ok(Err(stopped));
            }
            self.publish_state(self.out.ids[i], SlotState::Measuring, t1);
            self.out.tracker.measuring();
            if let Err(stopped) = self.sleep_until(end).await {
                return Ok(Err(stopped));
            }
        } else {
            tracing::debug!("slot {phase}: the switch took the whole slot; nothing measured");
        }
        self.unmeasured();
        self.out.tracker.slot_ended();
        Ok(self.sleep_until(end + GUARD).await)
    }

    /// After a slow block: restart with the server's own options (unmeasured), settle.
    async fn back_to_default(&mut self) -> Result<std::result::Result<(), Stopped>> {
        self.server.ensure_lead().await?;
        self.unmeasured();
        let timing = loop {
            match self.restart(&ServerMode::Default, "").await {
                Ok(timing) => break timing,
                Err(ControllerError::Restart { reason }) => {
                    tracing::warn!(
                        "the restart with the server's own options failed: {reason}; trying again"
                    );
                    self.count_restart_failure(&reason)?;
                }
                Err(e) => return Err(e),
            }
        };
        tracing::info!(
            "restarted the server with its own options for the runtime scenarios: {}",
            timing.describe()
        );
        Ok(self
            .sleep_until(Instant::now() + self.tuning.restart_settle)
            .await)
    }

    /// Restarts into `into`; the server's mode is what that restart left (unknown if it
    /// failed).
    async fn restart(&mut self, into: &ServerMode, opts: &str) -> Result<RestartTiming> {
        // What the last fast slot's rows were is not known across a restart (or a failed one).
        self.state.last_fast = None;
        let scenarios = self.out.observer.scenarios();
        scenarios.set_restarting(true);
        let restarted = self.server.restart(into, opts).await;
        scenarios.set_restarting(false);
        match &restarted {
            Ok(timing) => {
                *self.mode = into.clone();
                self.state.restarts.failures = 0;
                self.state.restarts.ok += 1;
                self.state.restarts.last_took = Some(timing.first_query);
            }
            Err(e) => {
                *self.mode = ServerMode::Unknown;
                self.establish_after(e).await?;
            }
        }
        restarted
    }

    /// After a restart that failed, what the server runs as is established before anything
    /// else: a server that does not answer (a command stopped past its timeout after it had
    /// stopped the server) is started again with its own options at once; one that answers is
    /// left for the next step (which restarts it with its own options before a fast slot).
    async fn establish_after(&mut self, failed: &ControllerError) -> Result<()> {
        if self.server.answers().await {
            return Ok(());
        }
        tracing::warn!(
            "the server does not answer after the restart that failed ({failed}): starting it \
             again with its own options"
        );
        let scenarios = self.out.observer.scenarios();
        scenarios.set_restarting(true);
        let back = self.server.restart(&ServerMode::Default, "").await;
        scenarios.set_restarting(false);
        match back {
            Ok(timing) => {
                *self.mode = ServerMode::Default;
                tracing::info!(
                    "the server is back with its own options: {}",
                    timing.describe()
                );
                Ok(())
            }
            // Nothing more to measure: the restore tries again, within its bound, and says
            // what it left if it cannot.
            Err(e) => Err(ControllerError::ServerDown {
                reason: format!("{failed}; starting it with its own options failed too: {e}"),
            }),
        }
    }

    /// A restart into a slow phase failed: the phase is left out (named in the report), the
    /// server's state is unknown (restarted with its own options before anything else runs),
    /// and the schedule goes on, unless this is the [`MAX_RESTART_FAILURES`]th in a row.
    fn restart_failed(
        &mut self,
        i: usize,
        (block, phase, switched_at_ms): (u64, u64, u64),
        reason: String,
    ) -> Result<std::result::Result<(), Stopped>> {
        let name = &self.s.scenarios[i];
        tracing::warn!(
            "{name} (slow pair {block}): the restart failed, so this phase is left out: {reason}"
        );
        self.out.tracker.failed(
            name,
            self.out.ids[i],
            phase,
            switched_at_ms,
            format!("the restart failed: {reason}"),
        );
        self.count_restart_failure(&reason)?;
        Ok(Ok(()))
    }

    /// One more restart failed; the [`MAX_RESTART_FAILURES`]th in a row stops the schedule.
    fn count_restart_failure(&mut self, reason: &str) -> Result<()> {
        self.state.restarts.failures += 1;
        self.state.restarts.last_failure = Some(reason.to_string());
        if self.state.restarts.failures >= MAX_RESTART_FAILURES {
            return Err(ControllerError::Restart {
                reason: format!(
                    "{MAX_RESTART_FAILURES} restarts in a row failed, so the schedule stops (the settings are restored as far as the server allows); the last: {reason}"
                ),
            });
        }
        Ok(())
    }

    async fn slow_phase(
        &mut self,
        i: usize,
        block: u64,
        phase: u64,
    ) -> Result<std::result::Result<(), Stopped>> {
        let name = self.s.scenarios[i].clone();
        let scenario = self.s.catalog.get(&name)?.clone();
        // A duet's two restarts start together.
        if let Err(stopped) = self.meet(2 * phase, Duration::ZERO).await {
            return Ok(Err(stopped));
        }
        self.server.ensure_lead().await?;
        let switched_at_ms = now_ms();
        self.unmeasured();
        let zero = Duration::ZERO;
        self.publish_slow(i, (block, phase), "switching", (zero, zero))
            .await?;
        let consumers = self.server.consumers();
        let opts = startup::options(&scenario, &consumers)?.join(" ");
        let into = match &scenario.settings {
            Settings::PsOff => ServerMode::Off,
            Settings::Startup(_) => ServerMode::Startup(name.clone()),
            _ => ServerMode::Default,
        };
        let t0 = Instant::now();
        let timing = match self.restart(&into, &opts).await {
            Ok(timing) => timing,
            Err(ControllerError::Restart { reason }) => {
                let failed = self.restart_failed(i, (block, phase, switched_at_ms), reason);
                // The partner goes on with the next phase's meeting, not this one's.
                if let Err(stopped) = self.meet(2 * phase + 1, Duration::ZERO).await {
                    return Ok(Err(stopped));
                }
                return failed;
            }
            Err(e) => return Err(e),
        };
        let verified = match &scenario.settings {
            Settings::PsOff => self.server.performance_schema() == Some(false),
            Settings::Startup(twin) => {
                let mismatches = self.server.verify(twin).await?;
                if let Some(first) = mismatches.first() {
                    tracing::warn!(
                        "{name}: the server started with {opts} does not hold {}'s rows ({} rows \
                         differ, e.g. {first}); this phase is not counted",
                        twin.name,
                        mismatches.len()
                    );
                }
                mismatches.is_empty()
            }
            _ => {
                let switched = self.server.switch(&scenario, None).await?;
                self.record_claims(&switched.claims)?;
                true
            }
        };
        let side = self
            .s
            .duet
            .as_ref()
            .map_or(String::new(), |d| format!("duet side {}: ", d.side.label()));
        tracing::info!(
            "{side}restarted the server into {name} (slow pair {block}, performance_schema={}): {}",
            if scenario.wants_ps() { "ON" } else { "OFF" },
            timing.describe()
        );
        // In a duet both windows open together once both servers are back, after the longer
        // of the two sides' settle times.
        let settle = match self.meet(2 * phase + 1, self.tuning.restart_settle).await {
            Ok(settle) => settle,
            Err(stopped) => return Ok(Err(stopped)),
        };
        let t1 = Instant::now();
        self.publish_state(self.out.ids[i], SlotState::Settling, t1);
        let measure = self.s.slow_phase.saturating_sub(settle);
        self.out.tracker.slot_started(&SlotStart {
            scenario: &name,
            id: self.out.ids[i],
            phase,
            switched_at_ms,
            in_effect: t1,
            switch: Some((t1 - t0, 0)),
            settle,
            slot: None,
            restarted: true,
            verified,
        });
        self.publish_slow(i, (block, phase), "settling", (settle, measure))
            .await?;
        let (done, after) = self.settle_and_measure(i, t1, settle, measure).await;
        self.unmeasured();
        let ms = |d: Duration| d.as_millis() as u64;
        self.out.tracker.restart(RestartRecord {
            stop_ms: timing.stop.map(ms),
            start_ms: timing.start.map(ms),
            command_ms: ms(timing.command),
            first_query_ms: ms(timing.first_query),
            settle_ms: ms(settle),
            bin_ms: ms(RATE_BIN),
            after,
        });
        self.out.tracker.slot_ended();
        Ok(done)
    }

    /// Meets the duet's partner at `step` (see [`super::duet::DuetSide::meet`]); at once with
    /// `value` outside a duet. A partner that ended ends this side's run too (as done, not stopped).
    async fn meet(&mut self, step: u64, value: Duration) -> std::result::Result<Duration, Stopped> {
        let s = self.s;
        let Some(duet) = &s.duet else {
            return Ok(value);
        };
        let met = tokio::select! {
            met = duet.meet(step, value) => met,
            () = stopped(self.stop) => return Err(Stopped),
        };
        met.map_err(|PartnerGone| {
            tracing::info!(
                "the duet's side {} ends: its partner's run is over",
                duet.side.label()
            );
            self.state.duet_over = true;
            Stopped
        })
    }

    /// Waits out a slow phase's settle time, then measures, sampling the statement rate every
    /// [`RATE_BIN`] from `t1` (the first query after the restart) to the window's end: the
    /// restart profile that chooses the settle time.
    async fn settle_and_measure(
        &mut self,
        i: usize,
        t1: Instant,
        settle: Duration,
        measure: Duration,
    ) -> (std::result::Result<(), Stopped>, Vec<u64>) {
        let id = self.out.ids[i];
        let (from, end) = (t1 + settle, t1 + settle + measure);
        let mut bins = Vec::new();
        let mut last = self.out.observer.statements_finished(id);
        let mut next_bin = t1 + RATE_BIN;
        let mut measuring = false;
        loop {
            let wake = if measuring {
                next_bin.min(end)
            } else {
                next_bin.min(from)
            };
            if let Err(stopped) = self.sleep_until(wake).await {
                return (Err(stopped), bins);
            }
            let now = Instant::now();
            if now >= next_bin {
                let count = self.out.observer.statements_finished(id);
                bins.push(count.saturating_sub(last));
                last = count;
                next_bin += RATE_BIN;
            }
            if !measuring && now >= from {
                measuring = true;
                self.publish_state(id, SlotState::Measuring, t1);
                self.out.tracker.measuring();
            }
            if now >= end {
                return (Ok(()), bins);
            }
        }
    }
}

/// Resolves once a stop is requested (at once if it was already).
async fn stopped(stop: &mut watch::Receiver<bool>) {
    loop {
        if *stop.borrow_and_update() {
            return;
        }
        if stop.changed().await.is_err() {
            // The sender is gone: nobody can ask for a stop any more.
            std::future::pending::<()>().await;
        }
    }
}

#[cfg(test)]
#[path = "lead_tests.rs"]
mod tests;
