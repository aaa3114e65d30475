//! The scheduled controller inside `psprobe proxy`: leads (switches scenarios, publishes the
//! slot, writes the phase log; see [`super::lead`]) or follows another psprobe's lead
//! ([`super::follow`]), and always leaves the server's performance_schema settings as it found
//! them.

use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tokio::sync::watch;

use crate::observe::ControllerHandle;
use crate::stats::since_switch::BIN_MS;
use crate::stats::NO_SCENARIO;

use super::follow::Follower;
use super::lead::{Leader, ServerMode};
use super::lead_server::LiveServer;
use super::phase_tracker::PhaseTracker;
use super::restore::leave_as_found;
use super::role::{Action, Event, Finish, FollowEnd, LeadEnd, Rejoin, RestoreEnd, Roles};
use super::settings::{initial_settle, ControllerSettings};
use super::timeline::Timeline;
use crate::controller::client::dsn::ControllerDsn;
use crate::controller::client::fast_switch::Switcher;
use crate::controller::client::heartbeat::{Heartbeat, STALE_AFTER};
use crate::controller::client::leadership::Leadership;
use crate::controller::client::left_behind::{self, Hint, Mode, Outcome, Rights};
use crate::controller::client::server::Controller;
use crate::controller::error::{ControllerError, Result};
use crate::controller::model::phase_row::PhaseRow;
use crate::controller::model::snapshot::Snapshot;
use crate::controller::model::stale::LastApplied;
use crate::phase_log::{
    histogram_layout, traffic_between, AttributionRecord, GroupRecord, PhaseLog, RunRecord,
    PHASE_LOG_VERSION,
};

pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Connections made and checks passed before the proxy starts serving: a wrong DSN, missing
/// privileges or performance_schema OFF fail startup with one clear error.
pub struct Started {
    ctl: Controller,
    lead: Leadership,
}

pub async fn start(settings: &mut ControllerSettings) -> Result<Started> {
    for name in &settings.scenarios {
        let scenario = settings.catalog.get(name)?;
        if scenario.requires_restart() && settings.restart_cmd.is_none() {
            return Err(ControllerError::NeedsRestart { name: name.clone() });
        }
    }
    let mut ctl = Controller::connect(&settings.dsn).await?;
    ctl.require_ps()?;
    if settings.attribution.is_some() {
        // The design is fitted to the groups this server has rows of.
        let rows = ctl.read_state().await?;
        for note in super::attribution::fit(settings, &rows)? {
            tracing::info!("{note}");
        }
        if let Some(plan) = &settings.attribution {
            tracing::info!(
                "attribution: {} groups in a {} design of {} runs ({} slots a replicate with \
                 the base pairs)",
                plan.groups.len(),
                plan.resolution
                    .map_or("full factorial".to_string(), |r| format!("resolution {r}")),
                plan.runs,
                plan.units.iter().map(Vec::len).sum::<usize>()
            );
        }
    }
    let mut lead = Leadership::connect(&settings.dsn).await?;
    // A snapshot left by a run that did not finish is resolved before anything else. The dead
    // run's connection may not be gone from the server yet: wait a little for its lock.
    // (A killed process's connection is gone within milliseconds; a live leader sharing this
    // state directory keeps the lock, and then this psprobe follows.)
    if let Some(snapshot) = Snapshot::load_if_exists(&settings.state_file)? {
        snapshot.check_server(&ctl.info().identity, &settings.state_file)?;
        let deadline = tokio::time::Instant::now() + Duration::from_secs(3);
        while !lead.try_acquire().await? && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    } else {
        lead.try_acquire().await?;
    }
    if lead.leader {
        resolve_left_behind(settings, &mut ctl).await?;
    }
    Ok(Started { ctl, lead })
}

/// Writes back a snapshot a dead run left (on the server or in the state file) if the live
/// rows are provably what that run last applied; refuses (changing nothing) otherwise.
async fn resolve_left_behind(s: &ControllerSettings, ctl: &mut Controller) -> Result<()> {
    let hint = Hint {
        restore_command: format!("psprobe ps restore --state-file {}", s.state_file.display()),
        trust_unrecorded: false,
    };
    let outcome = left_behind::resolve(
        ctl,
        &s.state_file,
        &s.catalog,
        Mode::Proved,
        Rights::Required,
        &hint,
    )
    .await
    .inspect_err(left_behind::log_refusal)?;
    if let Outcome::Restored {
        origin,
        snapshot,
        proved,
        report,
    } = outcome
    {
        let last = match proved {
            Some(LastApplied::Scenario(name)) => format!("scenario {name}"),
            _ => "no change".into(),
        };
        tracing::warn!(
            "the snapshot {origin} (taken {}) holds settings of a run that did not finish; \
             restoring them: the server still holds what that run last applied ({last}); {} \
             row(s) written back",
            snapshot.taken_at,
            report.rows_changed
        );
    }
    Ok(())
}

/// Runs until the schedule is done or `stop` turns true; restores the server either way. The
/// phase log ends with what this probe relayed meanwhile (its traffic record), however the run
/// ended.
pub async fn run(
    settings: ControllerSettings,
    started: Started,
    observer: ControllerHandle,
    stop: watch::Receiver<bool>,
) -> Result<()> {
    let mut log = PhaseLog::open(&settings.phase_log)?;
    let (from_ms, from) = (now_ms(), observer.digests().snapshot());
    let result = run_schedule(&settings, started, &observer, stop, &mut log).await;
    let traffic = traffic_between(&from, &observer.digests().snapshot(), from_ms, now_ms());
    let written = log.append(&traffic).map_err(ControllerError::from);
    match (result, written) {
        (Err(e), Err(lost)) => {
            tracing::warn!("{lost}");
            Err(e)
        }
        (result, written) => result.and(written),
    }
}

/// Carries out the [`Roles`] machine's actions (lead, restore, rejoin, follow) until it
/// finishes: the machine decides what comes next from how each action ended.
async fn run_schedule(
    settings: &ControllerSettings,
    started: Started,
    observer: &ControllerHandle,
    stop: watch::Receiver<bool>,
    log: &mut PhaseLog,
) -> Result<()> {
    let _active = ScheduleActive::set(observer);
    let mut runner = Runner::new(settings, started, observer, stop, log)?;
    let mut roles = Roles::default();
    let mut action = roles.start();
    loop {
        let event = match action {
            Action::TryLead => Event::LockTaken(runner.lead.try_acquire().await?),
            Action::Lead(start_at) => runner.lead(start_at).await?,
            Action::Restore(end_state) => runner.restore(end_state.as_str()).await,
            Action::Rejoin(why) => runner.rejoin(why).await,
            Action::Reclaim => runner.reclaim().await?,
            Action::Follow => runner.follow().await?,
            Action::Finish(how) => return runner.finish(how).await,
        };
        action = roles.next(event);
    }
}

/// What the runner carries from one action to the next.
struct Runner<'a> {
    s: &'a ControllerSettings,
    observer: &'a ControllerHandle,
    stop: watch::Receiver<bool>,
    log: &'a mut PhaseLog,
    ctl: Controller,
    lead: Leadership,
    /// The scheduled scenarios' ids, in `s.scenarios`' order.
    ids: Vec<crate::stats::ScenarioId>,
    tracker: PhaseTracker,
    /// What the last lead ended with (returned when the runner finishes).
    led: Result<bool>,
    /// What the last restore ended with.
    restored: Result<()>,
    /// What the server was left running with (a slow phase may leave it OFF).
    mode: ServerMode,
    /// The leader's beat lives from its lead to the end of its restore.
    heartbeat: Option<Heartbeat>,
    follow_error: Option<ControllerError>,
}

impl<'a> Runner<'a> {
    fn new(
        s: &'a ControllerSettings,
        started: Started,
        observer: &'a ControllerHandle,
        stop: watch::Receiver<bool>,
        log: &'a mut PhaseLog,
    ) -> Result<Self> {
        let mut ids = Vec::new();
        for name in &s.scenarios {
            ids.push(
                observer
                    .scenarios()
                    .intern(name)
                    .map_err(|e| ControllerError::Config {
                        path: PathBuf::from("--scenarios"),
                        reason: e.to_string(),
                    })?,
            );
        }
        let tracker = PhaseTracker::new(observer.clone(), s.on_phase.clone(), s.mysqld_pid.clone());
        Ok(Runner {
            s,
            observer,
            stop,
            log,
            ctl: started.ctl,
            lead: started.lead,
            ids,
            tracker,
            led: Ok(true),
            restored: Ok(()),
            mode: ServerMode::Default,
            heartbeat: None,
            follow_error: None,
        })
    }

    async fn lead(&mut self, start_at: (u64, u64)) -> Result<Event> {
        let (s, observer) = (self.s, self.observer);
        observer.set_leading(true);
        let beat = Heartbeat::start(
            &s.dsn,
            &s.identity,
            vec![self.lead.connection_id(), self.ctl.connection_id()],
        )
        .await;
        write_run_record(self.log, s, "leader")?;
        self.mode = ServerMode::Default;
        self.restored = Ok(());
        self.led = lead_schedule(
            start_at,
            s,
            Leading {
                ctl: &mut self.ctl,
                lead: &mut self.lead,
                ids: &self.ids,
                observer,
                tracker: &mut self.tracker,
                log: &mut *self.log,
                stop: &mut self.stop,
                mode: &mut self.mode,
                heartbeat: &beat,
            },
        )
        .await;
        self.heartbeat = Some(beat);
        observer.scenarios().set_current(NO_SCENARIO);
        observer.set_leading(false);
        Ok(Event::LeadEnded(match &self.led {
            Ok(true) => LeadEnd::Completed,
            Ok(false) => LeadEnd::Stopped,
            Err(ControllerError::StaleSnapshot { .. }) => LeadEnd::StaleSnapshot,
            Err(ControllerError::LostLead { .. }) => LeadEnd::LostLead,
            Err(_) => LeadEnd::Failed,
        }))
    }

    async fn restore(&mut self, end_state: &str) -> Event {
        // The restore may restart the server (a slow phase left it OFF): planned, like the
        // slow phases' restarts.
        if let Some(beat) = &self.heartbeat {
            beat.planned_absence(true);
        }
        self.restored = leave_as_found(
            self.s,
            &mut self.ctl,
            &mut self.lead,
            end_state,
            &self.mode,
            self.observer.scenarios(),
        )
        .await;
        self.heartbeat = None;
        Event::RestoreEnded(match &self.restored {
            Ok(()) => RestoreEnd::Restored,
            Err(ControllerError::LostLead { .. }) => RestoreEnd::LostLead,
            Err(_) => {
                self.observer.restore_failed();
                RestoreEnd::Failed
            }
        })
    }

    async fn rejoin(&mut self, why: Rejoin) -> Event {
        self.heartbeat = None;
        if why == Rejoin::LostLead {
            // Possibly taken over: change nothing until the server answers again, then lead
            // again if the lock is free (restoring what this run left, as any new leader
            // does), or follow the psprobe that holds it.
            tracing::warn!("{}", lost_message(&self.led, &self.restored, &self.s.dsn));
            self.observer.lead_lost();
            self.tracker.abandon();
        }
        Event::Rejoined(rejoin(self.s, &mut self.stop, &mut self.lead, &mut self.ctl).await)
    }

    async fn reclaim(&mut self) -> Result<Event> {
        if self.lead.try_acquire().await? {
            // Nobody took over: go on after the last slot this run published.
            let last = self.lead.read().await?;
            Ok(Event::Reclaimed(Some(resume_after(self.s, last.as_ref()))))
        } else {
            // The leader that holds the lock resolved the server's copy of this run's
            // snapshot when it took over: the state file is not this psprobe's to restore any
            // more.
            Snapshot::remove(&self.s.state_file)?;
            Ok(Event::Reclaimed(None))
        }
    }

    async fn follow(&mut self) -> Result<Event> {
        write_run_record(self.log, self.s, "follower")?;
        let followed = follow(
            &mut self.lead,
            self.observer,
            &mut self.tracker,
            self.log,
            &mut self.stop,
            self.s,
        )
        .await;
        Ok(Event::FollowEnded(match followed {
            Ok(Some(at)) => FollowEnd::LeaderGone(at),
            Ok(None) => FollowEnd::Ended,
            Err(e @ (ControllerError::Connection { .. } | ControllerError::Unreachable { .. })) => {
                // Cut off from the server: stop labelling (nothing is known of the slots now)
                // and follow again once it answers.
                tracing::warn!("following: {e}; rejoining when the server answers");
                self.tracker.abandon();
                self.observer.scenarios().set_current(NO_SCENARIO);
                FollowEnd::Cut
            }
            Err(e) => {
                self.follow_error = Some(e);
                FollowEnd::Failed
            }
        }))
    }

    async fn finish(mut self, how: Finish) -> Result<()> {
        drop(self.heartbeat.take());
        match how {
            Finish::Led => {
                self.lead.release().await;
                self.ctl.disconnect().await;
                self.led.map(|_| ()).and(self.restored)
            }
            Finish::Followed => {
                self.lead.release().await;
                self.ctl.disconnect().await;
                Ok(())
            }
            Finish::FollowFailed => match self.follow_error {
                Some(e) => Err(e),
                None => Ok(()),
            },
            Finish::LostLead => Err(lost_lead(&self.s.dsn)),
            Finish::StoppedRejoining => Ok(()),
        }
    }
}

/// The warning of a leader that lost the lead: the error that said so.
fn lost_message(led: &Result<bool>, restored: &Result<()>, dsn: &ControllerDsn) -> String {
    match (led, restored) {
        (Err(e @ ControllerError::LostLead { .. }), _)
        | (_, Err(e @ ControllerError::LostLead { .. })) => e.to_string(),
        _ => lost_lead(dsn).to_string(),
    }
}

/// Follows the leader until this psprobe takes over (`Some`: the (fast block, phase) to go
/// on from) or the schedule ends or stops (`None`: the caller releases the lock).
async fn follow(
    lead: &mut Leadership,
    observer: &ControllerHandle,
    tracker: &mut PhaseTracker,
    log: &mut PhaseLog,
    stop: &mut watch::Receiver<bool>,
    settings: &ControllerSettings,
) -> Result<Option<(u64, u64)>> {
    let followed = Follower {
        lead,
        observer,
        tracker,
        log,
        stop,
        kill_refused: false,
    }
    .run()
    .await?;
    let Some(last) = followed else {
        observer.scenarios().set_current(NO_SCENARIO);
        return Ok(None);
    };
    tracing::info!("the leading psprobe is gone; taking over the schedule");
    Ok(Some(resume_after(settings, last.as_ref())))
}

/// Holds psprobe_controller_schedule_active at 1 for as long as `run` goes on, however it ends.
struct ScheduleActive<'a>(&'a ControllerHandle);

impl<'a> ScheduleActive<'a> {
    fn set(observer: &'a ControllerHandle) -> Self {
        observer.set_schedule_active(true);
        ScheduleActive(observer)
    }
}

impl Drop for ScheduleActive<'_> {
    fn drop(&mut self) {
        self.0.set_schedule_active(false);
    }
}

/// The (fast block, phase) a new leader goes on from: the segment after the last one it saw.
fn resume_after(s: &ControllerSettings, last: Option<&PhaseRow>) -> (u64, u64) {
    let Some(row) = last else {
        return (0, 0);
    };
    let per_segment = s.timeline().blocks_per_segment();
    let block = if row.schedule == "slow" {
        0
    } else {
        (row.block + 1) * per_segment
    };
    (block, row.phase + 1)
}

fn write_run_record(log: &mut PhaseLog, s: &ControllerSettings, role: &str) -> Result<()> {
    let (first, factor) = histogram_layout();
    let slow: Vec<String> = s
        .slow_scenarios()
        .into_iter()
        .map(|i| s.scenarios[i].clone())
        .collect();
    let record = RunRecord {
        version: PHASE_LOG_VERSION,
        kind: "run".into(),
        started_at_ms: now_ms(),
        upstream: s.upstream.clone(),
        role: role.into(),
        scenarios: s.scenarios.clone(),
        phase_ms: s.phase.as_millis() as u64,
        settle_ms: s
            .settle
            .unwrap_or_else(|| initial_settle(s.phase))
            .as_millis() as u64,
        restart_settle_ms: s.restart_settle.as_millis() as u64,
        blocks: s.blocks,
        seed: s.seed,
        histogram_first_bound_ns: first,
        histogram_factor: factor,
        segment_ms: Some(s.segment.as_millis() as u64),
        settle_auto: s.settle.is_none(),
        slow_phase_ms: (!slow.is_empty()).then_some(s.slow_phase.as_millis() as u64),
        slow_blocks: if slow.is_empty() { None } else { s.slow_blocks },
        slow_scenarios: slow,
        duration_ms: s.duration.map(|d| d.as_millis() as u64),
        target_halfwidth_pct: s.target_halfwidth,
        bin_ms: Some(BIN_MS),
        attribution: s.attribution.as_ref().map(|a| AttributionRecord {
            groups: a
                .groups
                .iter()
                .map(|g| GroupRecord {
                    name: g.name.clone(),
                    description: g.description.clone(),
                    consumers: g.consumers.clone(),
                    instruments: g.instruments.clone(),
                })
                .collect(),
            runs: a.runs as u64,
            resolution: a.resolution,
            consumers: a.consumers.clone(),
            budget: a.budget,
            need: a.need.clone(),
            confirm_ms: a.confirm.map(|d| d.as_millis() as u64),
        }),
    };
    Ok(log.append(&record)?)
}

/// The leader's borrowed state.
struct Leading<'a> {
    ctl: &'a mut Controller,
    lead: &'a mut Leadership,
    ids: &'a [crate::stats::ScenarioId],
    observer: &'a ControllerHandle,
    tracker: &'a mut PhaseTracker,
    log: &'a mut PhaseLog,
    stop: &'a mut watch::Receiver<bool>,
    mode: &'a mut ServerMode,
    heartbeat: &'a Heartbeat,
}

async fn lead_schedule(
    (first_block, first_phase): (u64, u64),
    s: &ControllerSettings,
    l: Leading<'_>,
) -> Result<bool> {
    // A leader that took over first resolves what the dead one left (one that led from the
    // start did so in `start`); then the live rows are the settings to come back to.
    resolve_left_behind(s, l.ctl).await?;
    let snapshot = l.ctl.snapshot().await?.for_run(&s.identity, now_ms());
    snapshot.save(&s.state_file)?;
    l.lead.save_snapshot(&snapshot).await?;
    // Followers (and operators) see a leader starting before its first change.
    l.lead
        .publish(&PhaseRow {
            scenario: "none".into(),
            block: first_block,
            phase: first_phase,
            state: "switching".into(),
            leader: s.identity.clone(),
            ..PhaseRow::default()
        })
        .await?;
    let timeline = Timeline::new(s.timeline(), first_block, first_phase);
    let mut leader = Leader {
        s,
        server: LiveServer {
            s,
            ctl: l.ctl,
            lead: l.lead,
            heartbeat: l.heartbeat,
            switcher: Switcher::default(),
            snapshot,
        },
        ids: l.ids,
        observer: l.observer,
        tracker: l.tracker,
        log: l.log,
        stop: l.stop,
        mode: l.mode,
        settle: s.settle.unwrap_or_else(|| initial_settle(s.phase)),
        fast_records: Vec::new(),
        precise: false,
        last_fast: None,
        switch_estimate: Duration::from_millis(5),
        started: Instant::now(),
        warned_long_carryover: false,
        warned_switch_load: false,
        next_phase: first_phase,
        restart_settle: s.restart_settle,
        slow_records: Vec::new(),
        restart_failures: 0,
        restarts_ok: 0,
        last_restart_failure: None,
        slow_precise: false,
    };
    if !leader.run(timeline).await? {
        return Ok(false);
    }
    let Some((confirm, note)) = super::confirm::plan(s, &leader.fast_records) else {
        return Ok(true);
    };
    tracing::info!("{note}");
    // The same connections, beat, tracker and log; the confirmation's two scenarios, in
    // segments numbered on from the design's.
    let next_segment = leader.fast_records.iter().map(|r| r.block + 1).max();
    let next_phase = leader.next_phase;
    let Leader {
        server,
        observer,
        tracker,
        log,
        stop,
        mode,
        settle,
        ..
    } = leader;
    let LiveServer {
        ctl,
        lead,
        heartbeat,
        switcher,
        snapshot,
        ..
    } = server;
    let mut ids = Vec::new();
    for name in &confirm.scenarios {
        ids.push(
            observer
                .scenarios()
                .intern(name)
                .map_err(|e| ControllerError::Config {
                    path: PathBuf::from("--confirm"),
                    reason: e.to_string(),
                })?,
        );
    }
    let timeline = confirm.timeline();
    let first_block = next_segment.unwrap_or(0) * timeline.blocks_per_segment();
    let mut second = Leader {
        s: &confirm,
        server: LiveServer {
            s: &confirm,
            ctl,
            lead,
            heartbeat,
            switcher,
            snapshot,
        },
        ids: &ids,
        observer,
        tracker,
        log,
        stop,
        mode,
        settle,
        fast_records: Vec::new(),
        precise: false,
        last_fast: None,
        switch_estimate: Duration::from_millis(5),
        started: Instant::now(),
        warned_long_carryover: false,
        warned_switch_load: false,
        next_phase,
        restart_settle: confirm.restart_settle,
        slow_records: Vec::new(),
        restart_failures: 0,
        restarts_ok: 0,
        last_restart_failure: None,
        slow_precise: false,
    };
    second
        .run(Timeline::new(timeline, first_block, next_phase))
        .await
}

/// Connects anew in place of `lead` and `ctl` (the old connections may have been ended by the
/// leader that took over), trying every second while the server does not answer; false if
/// stopped meanwhile.
async fn rejoin(
    s: &ControllerSettings,
    stop: &mut watch::Receiver<bool>,
    lead: &mut Leadership,
    ctl: &mut Controller,
) -> bool {
    let mut warned = false;
    loop {
        if *stop.borrow() {
            return false;
        }
        let connected = async {
            let lead = Leadership::connect(&s.dsn).await?;
            let ctl = Controller::connect(&s.dsn).await?;
            Ok::<_, ControllerError>((lead, ctl))
        };
        match connected.await {
            Ok((new_lead, new_ctl)) => {
                std::mem::replace(lead, new_lead).release().await;
                std::mem::replace(ctl, new_ctl).disconnect().await;
                return true;
            }
            Err(e) if !warned => {
                warned = true;
                tracing::warn!("cannot reach the server to rejoin the schedule yet ({e}); retrying every second");
            }
            Err(_) => {}
        }
        tokio::select! {
            () = tokio::time::sleep(Duration::from_secs(1)) => {}
            _ = stop.changed() => {}
        }
    }
}

/// The error of a leader that may have been taken over.
pub fn lost_lead(dsn: &ControllerDsn) -> ControllerError {
    ControllerError::LostLead {
        target: dsn.redacted(),
        stale_after: STALE_AFTER,
    }
}
