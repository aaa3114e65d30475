//! The leader's side of a schedule: runs the steps of the [`Timeline`] against the server.
//!
//! A fast slot: switch (apply + verify, the slot's first few ms, not measured), settle (binned
//! by time since the switch, not measured), measure, and a short guard before the next switch
//! (not measured: a statement started there would be slowed by the switch). A slow phase:
//! restart into the scenario (pfsoff, `NAME@startup`, or the runtime reference with its rows
//! applied after the restart), settle for `--restart-settle`, measure. Every phase of a slow
//! block is entered through a restart, so the cold start after it is the same for both sides.
//!
//! After each segment the settle time is re-chosen from the carryover profile (unless
//! `--settle` was given), and the run stops early once the fast estimates are precise enough
//! (`--target-halfwidth`).

use std::time::{Duration, Instant};

use tokio::sync::watch;

use crate::analysis::restart_profile::restart_profile;
use crate::analysis::switch_load::switch_load;
use crate::analysis::{analyze_run, carryover, Options};
use crate::observe::ControllerHandle;
use crate::stats::since_switch::BIN_MS;
use crate::stats::{ScenarioId, SlotState};

use super::lead_server::LeadServer;
use super::phase_tracker::{PhaseTracker, SlotStart};
use super::runner::now_ms;
use super::settings::ControllerSettings;
use super::timeline::{Progress, Step, Timeline};
use crate::controller::client::heartbeat::FENCE_AFTER;
use crate::controller::client::restart::RestartTiming;
use crate::controller::error::{ControllerError, Result};
use crate::controller::model::phase_row::PhaseRow;
use crate::controller::model::scenario::Settings;
use crate::controller::model::startup;
use crate::phase_log::group_names::{point_name, NONE_POINT};
use crate::phase_log::{PhaseLog, PhaseRecord, RestartRecord, FAST, SLOW};

/// Not measured before each switch: statements started there would be slowed by it.
pub const GUARD: Duration = Duration::from_millis(20);
/// Segments of every fast scenario before the carryover profile picks the settle time.
const PROFILE_AFTER_SEGMENTS: usize = 4;
/// Segments of every fast scenario before the target half-width may stop the run.
const PRECISE_AFTER_SEGMENTS: usize = 6;
/// The statement rate after a restart is sampled in bins this wide (the restart profile).
pub const RATE_BIN: Duration = Duration::from_millis(250);
/// Restarts that may fail in a row before the schedule stops.
pub const MAX_RESTART_FAILURES: u32 = 3;
/// Slow phases with a rate profile before it chooses the restart settle time.
const RESTART_PROFILE_AFTER: usize = 4;

/// What the last restart left the server running with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerMode {
    /// performance_schema ON, the server's own options (the state runtime scenarios need).
    Default,
    Off,
    /// Started with the options of this startup scenario.
    Startup(String),
    /// A restart failed: what runs now is not known (the next fast slot or the restore
    /// restarts it with its own options).
    Unknown,
}

/// The leader's slot loop: what it decides (which slot, how long, what counts) is here; what it
/// asks of the server goes through `server`.
pub(crate) struct Leader<'a, S: LeadServer> {
    pub s: &'a ControllerSettings,
    pub server: S,
    pub ids: &'a [ScenarioId],
    pub observer: &'a ControllerHandle,
    pub tracker: &'a mut PhaseTracker,
    pub log: &'a mut PhaseLog,
    pub stop: &'a mut watch::Receiver<bool>,
    pub mode: &'a mut ServerMode,
    pub settle: Duration,
    /// This run's fast records (settle choice, stopping rule).
    pub fast_records: Vec<PhaseRecord>,
    pub precise: bool,
    /// The scenario (index) of the last fast slot, whose rows the next switch checks.
    pub last_fast: Option<usize>,
    /// Recent switch time, to announce a slot's measured window before switching.
    pub switch_estimate: Duration,
    pub started: Instant,
    pub warned_long_carryover: bool,
    /// Switching was said to take too much of the slots (once a run).
    pub warned_switch_load: bool,
    /// The phase number the next slot takes (a confirmation goes on from there).
    pub next_phase: u64,
    /// Settle time after a restart: `--restart-settle`, or chosen from the restart profile.
    pub restart_settle: Duration,
    /// This run's slow records (the restart profile).
    pub slow_records: Vec<PhaseRecord>,
    /// Restarts that failed in a row.
    pub restart_failures: u32,
    /// Restarts that succeeded this run, and why the last one failed: a run none of whose
    /// restarts worked ends in an error, not "finished".
    pub restarts_ok: u32,
    pub last_restart_failure: Option<String>,
    /// Every restart comparison is within the target half-width.
    pub slow_precise: bool,
}

/// A stop was requested (the step did not complete).
struct Stopped;

impl<S: LeadServer> Leader<'_, S> {
    /// Runs the timeline to its end (true) or until stopped (false).
    pub(crate) async fn run(&mut self, mut timeline: Timeline) -> Result<bool> {
        loop {
            let progress = Progress {
                elapsed: self.started.elapsed(),
                precise: self.precise,
                slow_precise: self.slow_precise,
            };
            let step = timeline.next(progress);
            if let Step::Fast { phase, .. } | Step::Slow { phase, .. } = step {
                self.next_phase = phase + 1;
            }
            let outcome = match step {
                Step::Fast {
                    scenario,
                    segment,
                    phase,
                    ..
                } => {
                    if self.tracker.segment() != Some((FAST, segment)) {
                        self.tracker.begin_segment(FAST, segment);
                    }
                    self.fast_slot(scenario, segment, phase).await?
                }
                Step::Slow {
                    scenario,
                    block,
                    phase,
                } => {
                    if self.tracker.segment() != Some((SLOW, block)) {
                        self.tracker.begin_segment(SLOW, block);
                    }
                    self.slow_phase(scenario, block, phase).await?
                }
                Step::EndSegment => {
                    if self.tracker.segment().is_some_and(|(s, _)| s == FAST) {
                        self.end_fast_segment().await?;
                    } else {
                        self.end_segment()?;
                    }
                    Ok(())
                }
                Step::Done => return self.done(),
            };
            if outcome.is_err() {
                // Keep what the segment measured so far; the slot in progress counts for nothing.
                self.tracker.abandon_slot();
                self.end_segment()?;
                return Ok(false);
            }
        }
    }

    /// The timeline ended: an error if every restart it asked for failed (nothing slow was
    /// measured, and the hook needs fixing), finished otherwise.
    fn done(&self) -> Result<bool> {
        match &self.last_restart_failure {
            Some(last) if self.restarts_ok == 0 => Err(ControllerError::Restart {
                reason: format!(
                    "every restart of this run failed ({} in a row), so nothing slow was \
                     measured; the last: {last}",
                    self.restart_failures
                ),
            }),
            _ => Ok(true),
        }
    }

    fn end_segment(&mut self) -> Result<()> {
        let records = self.tracker.finish_segment(self.log)?;
        self.record_segment(records);
        Ok(())
    }

    /// Checks the rows of the scenario in effect held, then writes the segment.
    async fn end_fast_segment(&mut self) -> Result<()> {
        if let Some(i) = self.last_fast {
            if self.server.confirm().await? == Some(false) {
                self.tracker.unverify(self.ids[i]);
            }
        }
        self.end_segment()
    }

    fn record_segment(&mut self, records: Vec<PhaseRecord>) {
        for r in &records {
            self.observer
                .phase_written(&r.scenario, r.slots.unwrap_or(1), r.verified);
        }
        if records.first().is_some_and(|r| r.schedule() == FAST) {
            self.fast_records.extend(records);
            self.retune();
        } else {
            self.slow_records.extend(records);
            self.retune_restart_settle();
            self.check_slow_precision();
        }
    }

    /// With `--target-halfwidth`, whether every restart comparison's throughput and latency
    /// intervals are within it yet (a run without a set number of slow blocks then ends).
    fn check_slow_precision(&mut self) {
        let Some(target) = self.s.target_halfwidth else {
            return;
        };
        let options = Options {
            headline_only: true,
            ..Options::default()
        };
        let widest = analyze_run(&self.slow_records, None, &options)
            .ok()
            .and_then(|a| a.slow_halfwidth());
        self.slow_precise = widest.is_some_and(|w| w <= target);
        if self.slow_precise {
            tracing::info!(
                "every restart comparison is within +-{target} points (widest +-{:.2}); ending the slow blocks",
                widest.unwrap_or(0.0)
            );
        }
    }

    /// Re-chooses the settle time after a restart from the restart profile (unless
    /// `--restart-settle` was given): from when the statement rate is back to steady.
    fn retune_restart_settle(&mut self) {
        if !self.s.restart_settle_auto {
            return;
        }
        let Some(p) = restart_profile(&self.slow_records) else {
            return;
        };
        if p.phases < RESTART_PROFILE_AFTER {
            return;
        }
        let most = self.s.slow_phase.saturating_sub(Duration::from_secs(2));
        let settle = Duration::from_millis(p.suggested_settle_ms)
            .min(most)
            .max(Duration::from_secs(1));
        if settle != self.restart_settle {
            tracing::info!(
                "settle time after a restart {:.1}s -> {:.1}s from the restart profile ({} restarts: the statement rate is steady {})",
                self.restart_settle.as_secs_f64(),
                settle.as_secs_f64(),
                p.phases,
                p.steady_after_ms.map_or("only at the end".to_string(), |ms| format!(
                    "{:.1}s after the first query",
                    ms as f64 / 1000.0
                ))
            );
            self.restart_settle = settle;
        }
    }

    /// Re-chooses the settle time from the carryover profile and re-checks the stopping rule.
    fn retune(&mut self) {
        let fast = self.timeline_fast_count();
        let segments = self.fast_records.len() / fast.max(1);
        if self.s.settle.is_none() && segments >= PROFILE_AFTER_SEGMENTS {
            if let Some(p) = self.carryover() {
                let most = (self.s.phase / 2).max(Duration::from_millis(BIN_MS));
                let settle = Duration::from_millis(p.suggested_settle_ms).min(most);
                if settle != self.settle {
                    tracing::info!(
                        "settle time {}ms -> {}ms from the carryover profile ({} segments)",
                        self.settle.as_millis(),
                        settle.as_millis(),
                        segments
                    );
                    self.settle = settle;
                }
                if p.reaches_steady && !self.warned_long_carryover {
                    self.warned_long_carryover = true;
                    tracing::warn!(
                        "the effect of a switch lasts past half a slot ({} ms): lengthen --phase",
                        p.carryover_ms.unwrap_or(0)
                    );
                }
            }
        }
        if segments >= PROFILE_AFTER_SEGMENTS && !self.warned_switch_load {
            if let Some(w) = switch_load(&self.fast_records).and_then(|l| l.warning()) {
                self.warned_switch_load = true;
                tracing::warn!("{w}");
            }
        }
        if let Some(target) = self.s.target_halfwidth {
            if segments >= PRECISE_AFTER_SEGMENTS {
                let options = Options {
                    headline_only: true,
                    ..Options::default()
                };
                let widest = analyze_run(&self.fast_records, None, &options)
                    .ok()
                    .and_then(|a| a.fast_halfwidth());
                self.precise = widest.is_some_and(|w| w <= target);
                if self.precise {
                    tracing::info!(
                        "every fast estimate is within +-{target} points (widest +-{:.2}); stopping the fast schedule",
                        widest.unwrap_or(0.0)
                    );
                }
            }
        }
    }

    /// The carryover profile of this run's fast records: against the first scenario, or for an
    /// attribution, its largest switch (nothing instrumented to every group on).
    fn carryover(&self) -> Option<carryover::CarryoverProfile> {
        let Some(plan) = &self.s.attribution else {
            let baseline = &self.fast_records.first()?.scenario;
            return carryover::profile(&self.fast_records, baseline, BIN_MS);
        };
        let names: Vec<&str> = plan.groups.iter().map(|g| g.name.as_str()).collect();
        let all_on = point_name(&names);
        let pair: Vec<PhaseRecord> = self
            .fast_records
            .iter()
            .filter(|r| r.scenario == NONE_POINT || r.scenario == all_on)
            .cloned()
            .collect();
        carryover::profile(&pair, NONE_POINT, BIN_MS)
    }

    fn timeline_fast_count(&self) -> usize {
        self.s.fast_scenarios().len()
    }

    fn publish_state(&self, id: ScenarioId, state: SlotState, in_effect: Instant) {
        self.observer.scenarios().publish_slot(id, state, in_effect);
    }

    /// Marks what starts from now on as not measured (a switch or restart is coming).
    fn unmeasured(&self) {
        self.observer.scenarios().stop_measuring();
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
        if late >= FENCE_AFTER && self.tracker.segment().is_some() {
            self.unmeasured();
            self.tracker.abandon();
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
        let settle = self.settle;
        let announced = self
            .s
            .phase
            .saturating_sub(GUARD + settle + self.switch_estimate);
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
            if let Some(prev) = self.last_fast {
                self.tracker.unverify(self.ids[prev]);
            }
        }
        self.last_fast = Some(i);
        let t1 = Instant::now();
        self.switch_estimate = (self.switch_estimate * 3 + (t1 - t0)) / 4;
        self.publish_state(self.ids[i], SlotState::Settling, t1);
        self.tracker.slot_started(&SlotStart {
            scenario: name,
            id: self.ids[i],
            phase,
            switched_at_ms,
            in_effect: t1,
            switch: Some((t1 - t0, switched.statements)),
            settle,
            restarted: false,
            verified: true,
        });
        let end = t0 + self.s.phase.saturating_sub(GUARD);
        let from = t1 + settle;
        if from < end {
            if let Err(stopped) = self.sleep_until(from).await {
                return Ok(Err(stopped));
            }
            self.publish_state(self.ids[i], SlotState::Measuring, t1);
            self.tracker.measuring();
            if let Err(stopped) = self.sleep_until(end).await {
                return Ok(Err(stopped));
            }
        } else {
            tracing::debug!("slot {phase}: the switch took the whole slot; nothing measured");
        }
        self.unmeasured();
        self.tracker.slot_ended();
        Ok(self.sleep_until(t0 + self.s.phase).await)
    }

    /// After a slow block: restart with the server's own options (unmeasured), settle.
    async fn back_to_default(&mut self) -> Result<std::result::Result<(), Stopped>> {
        self.server.ensure_lead().await?;
        self.unmeasured();
        let timing = loop {
            match self.restart(true, "").await {
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
        self.restart_failures = 0;
        self.restarts_ok += 1;
        tracing::info!(
            "restarted the server with its own options for the runtime scenarios: {}",
            timing.describe()
        );
        *self.mode = ServerMode::Default;
        Ok(self.sleep_until(Instant::now() + self.restart_settle).await)
    }

    async fn restart(&mut self, ps: bool, opts: &str) -> Result<RestartTiming> {
        // What the last fast slot's rows were is not known across a restart (or a failed one).
        self.last_fast = None;
        self.observer.scenarios().set_restarting(true);
        let restarted = self.server.restart(ps, opts).await;
        self.observer.scenarios().set_restarting(false);
        restarted
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
        self.tracker.failed(
            name,
            self.ids[i],
            phase,
            switched_at_ms,
            format!("the restart failed: {reason}"),
        );
        *self.mode = ServerMode::Unknown;
        self.count_restart_failure(&reason)?;
        Ok(Ok(()))
    }

    /// One more restart failed; the [`MAX_RESTART_FAILURES`]th in a row stops the schedule.
    fn count_restart_failure(&mut self, reason: &str) -> Result<()> {
        self.restart_failures += 1;
        self.last_restart_failure = Some(reason.to_string());
        if self.restart_failures >= MAX_RESTART_FAILURES {
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
        self.server.ensure_lead().await?;
        let switched_at_ms = now_ms();
        self.unmeasured();
        let zero = Duration::ZERO;
        self.publish_slow(i, (block, phase), "switching", (zero, zero))
            .await?;
        let consumers = self.server.consumers();
        let opts = startup::options(&scenario, &consumers)?.join(" ");
        let t0 = Instant::now();
        let timing = match self.restart(scenario.wants_ps(), &opts).await {
            Ok(timing) => timing,
            Err(ControllerError::Restart { reason }) => {
                return self.restart_failed(i, (block, phase, switched_at_ms), reason);
            }
            Err(e) => return Err(e),
        };
        self.restart_failures = 0;
        self.restarts_ok += 1;
        let verified = match &scenario.settings {
            Settings::PsOff => {
                *self.mode = ServerMode::Off;
                self.server.performance_schema() == Some(false)
            }
            Settings::Startup(twin) => {
                *self.mode = ServerMode::Startup(name.clone());
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
                *self.mode = ServerMode::Default;
                self.server.switch(&scenario, None).await?;
                true
            }
        };
        tracing::info!(
            "restarted the server into {name} (slow pair {block}, performance_schema={}): {}",
            if scenario.wants_ps() { "ON" } else { "OFF" },
            timing.describe()
        );
        let t1 = Instant::now();
        self.publish_state(self.ids[i], SlotState::Settling, t1);
        let settle = self.restart_settle;
        let measure = self.s.slow_phase.saturating_sub(settle);
        self.tracker.slot_started(&SlotStart {
            scenario: &name,
            id: self.ids[i],
            phase,
            switched_at_ms,
            in_effect: t1,
            switch: Some((t1 - t0, 0)),
            settle,
            restarted: true,
            verified,
        });
        self.publish_slow(i, (block, phase), "settling", (settle, measure))
            .await?;
        let (done, after) = self.settle_and_measure(i, t1, settle, measure).await;
        self.unmeasured();
        let ms = |d: Duration| d.as_millis() as u64;
        self.tracker.restart(RestartRecord {
            stop_ms: timing.stop.map(ms),
            start_ms: timing.start.map(ms),
            command_ms: ms(timing.command),
            first_query_ms: ms(timing.first_query),
            settle_ms: ms(settle),
            bin_ms: ms(RATE_BIN),
            after,
        });
        self.tracker.slot_ended();
        Ok(done)
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
        let id = self.ids[i];
        let (from, end) = (t1 + settle, t1 + settle + measure);
        let mut bins = Vec::new();
        let mut last = self.observer.statements_finished(id);
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
                let count = self.observer.statements_finished(id);
                bins.push(count.saturating_sub(last));
                last = count;
                next_bin += RATE_BIN;
            }
            if !measuring && now >= from {
                measuring = true;
                self.publish_state(id, SlotState::Measuring, t1);
                self.tracker.measuring();
            }
            if now >= end {
                return (Ok(()), bins);
            }
        }
    }
}

#[cfg(test)]
#[path = "lead_tests.rs"]
mod tests;
