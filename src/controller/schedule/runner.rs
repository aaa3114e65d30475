//! The scheduled controller inside `psprobe proxy`: leads (switches scenarios, publishes the
//! slot, writes the phase log; see [`super::lead`]) or follows another psprobe's lead
//! ([`super::follow`]), and always leaves the server's performance_schema settings as it found
//! them, or says in one line what it left and how to finish.
//!
//! What the run found and owns ([`AsFound`]) lives here, across the roles: a lead that loses
//! its connection (the server stalls, restarts, or is cut off) waits for the server and goes on
//! with everything it knew; only another psprobe seen leading takes the run over.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use tokio::sync::watch;

use crate::clock::now_ms;
use crate::observe::ControllerHandle;
use crate::stats::since_switch::BIN_MS;
use crate::stats::NO_SCENARIO;

use super::as_found::{log_claims, record_claim, AsFound};
use super::follow::Follower;
use super::lead::{Leader, Out};
use super::lead_server::{lost_to, LiveServer};
use super::mode::ServerMode;
use super::phase_tracker::PhaseTracker;
use super::restore::{Restore, Restored};
use super::role::{Action, Event, Finish, FollowEnd, LeadEnd, Rejoin, RestoreEnd, Roles};
use super::settings::{initial_settle, ControllerSettings};
use super::timeline::Timeline;
use super::tuning::Tuning;
use crate::controller::client::heartbeat::Heartbeat;
use crate::controller::client::leadership::{Leadership, LockHolder};
use crate::controller::client::left_behind::{self, Hint, Mode, Outcome, Rights};
use crate::controller::client::restart::restart_and_wait;
use crate::controller::client::server::Controller;
use crate::controller::error::{ControllerError, Result};
use crate::controller::model::ownership::Claim;
use crate::controller::model::phase_row::PhaseRow;
use crate::controller::model::snapshot::Snapshot;
use crate::phase_log::{
    histogram_layout, traffic_between, AttributionRecord, GroupRecord, PhaseLog, RunRecord,
    PHASE_LOG_VERSION,
};

/// Connections made and checks passed before the proxy starts serving: a wrong DSN, missing
/// privileges, performance_schema OFF or a scenario that cannot apply fail startup with one
/// clear error, before anything is changed.
pub(crate) struct Started {
    ctl: Controller,
    lead: Leadership,
    /// Rows someone else set, found while resolving what a dead run left: kept, and left out
    /// of this run's switches too.
    inherited: Vec<Claim>,
}

pub(crate) async fn start(settings: &mut ControllerSettings) -> Result<Started> {
    for name in &settings.scenarios {
        let scenario = settings.catalog.get(name)?;
        if scenario.requires_restart() && settings.restart_cmd.is_none() {
            return Err(ControllerError::NeedsRestart { name: name.clone() });
        }
    }
    let mut ctl = Controller::connect(&settings.dsn).await?;
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
    let mut inherited = Vec::new();
    if lead.leader {
        inherited = resolve_left_behind(settings, &mut ctl).await?;
    }
    ctl.require_ps()?;
    let rows = ctl.read_state().await?;
    for name in &settings.scenarios {
        settings.catalog.get(name)?.check_patterns(&rows)?;
    }
    if settings.attribution.is_some() {
        // The design is fitted to the groups this server has rows of.
        for note in settings.fit_attribution(&rows)? {
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
    Ok(Started {
        ctl,
        lead,
        inherited,
    })
}

/// Resolves a snapshot a dead run left (on the server or in the state file): psprobe's rows
/// written back, someone else's kept (and returned), a restart of psprobe's into pfsoff or
/// startup options undone first (with `--restart-cmd`), a server restarted by someone else
/// left as it is; refuses, changing nothing, only when it cannot tell what that run applied.
async fn resolve_left_behind(s: &ControllerSettings, ctl: &mut Controller) -> Result<Vec<Claim>> {
    let hint = Hint {
        restore_command: restore_command(s),
        trust_unrecorded: false,
    };
    for _ in 0..2 {
        let outcome = left_behind::resolve(
            ctl,
            &s.state_file,
            &s.catalog,
            Mode::Proved,
            Rights::Required,
            &hint,
        )
        .await?;
        match outcome {
            Outcome::Nothing => return Ok(Vec::new()),
            Outcome::Restored {
                origin,
                snapshot,
                proved,
                report,
                claims,
            } => {
                let last = proved.map_or("no change".to_string(), |p| p.to_string());
                tracing::warn!(
                    "the snapshot {origin} (taken {}) holds settings of a run that did not \
                     finish; restored what it changed (it last applied {last}): {} row(s) \
                     written back{}",
                    snapshot.taken_at,
                    report.rows_changed,
                    if claims.is_empty() && snapshot.claims.is_empty() {
                        String::new()
                    } else {
                        format!(
                            ", {} setting(s) someone else set kept as they are",
                            claims.len() + snapshot.claims.len()
                        )
                    }
                );
                log_claims(&claims);
                let mut all = snapshot.claims;
                all.extend(claims);
                return Ok(all);
            }
            Outcome::Discarded {
                origin, snapshot, ..
            } => {
                tracing::warn!(
                    "the snapshot {origin} (taken {}) is of a run that did not finish, but the \
                     server restarted since, not by psprobe: it holds its own settings, so \
                     there is nothing of psprobe's to restore; the snapshot is removed",
                    snapshot.taken_at
                );
                return Ok(Vec::new());
            }
            Outcome::RestartFirst {
                origin,
                mode,
                snapshot,
            } => {
                let Some(command) = &s.restart_cmd else {
                    return Err(ControllerError::RestartFirst {
                        origin,
                        mode,
                        what: format!(
                            "pass --restart-cmd as that run had (psprobe then restarts it with \
                             its own options and restores), or restart the server with its own \
                             options by hand and run `{}`",
                            restore_command(s)
                        ),
                    });
                };
                tracing::warn!(
                    "the snapshot {origin} (taken {}) is of a run that left the server running \
                     as {mode}: restarting it with its own options first",
                    snapshot.taken_at
                );
                let (back, timing) =
                    restart_and_wait(command, true, "", s.restart_timeout, &s.dsn).await?;
                tracing::info!(
                    "restarted the server with its own options: {}",
                    timing.describe()
                );
                *ctl = back;
            }
        }
    }
    Err(ControllerError::Restart {
        reason: "the server still runs as the dead run left it after a restart with its own \
                 options"
            .into(),
    })
}

/// `psprobe ps [--config FILE] restore --state-file PATH`.
fn restore_command(s: &ControllerSettings) -> String {
    let config = s
        .config_path
        .as_ref()
        .map(|c| format!(" --config {}", c.display()))
        .unwrap_or_default();
    format!(
        "psprobe ps{config} restore --state-file {}",
        s.state_file.display()
    )
}

/// Runs until the schedule is done or `stop` turns true; restores the server either way. The
/// phase log ends with what this probe relayed meanwhile (its traffic record), however the run
/// ended.
pub(crate) async fn run(
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
            Action::TryLead => Event::LockTaken(runner.try_lead().await?),
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
    /// What this run found and owns on the server (`None` until it first leads, and again
    /// once another psprobe took the run over).
    found: Option<AsFound>,
    /// Rows someone else set, found before this run led (a dead run's).
    inherited: Vec<Claim>,
    /// Every connection id this psprobe held the lock on or beat for (the server may keep one
    /// open after this side gave up on it).
    mine: Vec<u32>,
    /// What the last lead ended with (returned when the runner finishes).
    led: Result<bool>,
    /// What the last restore ended with.
    restored: Result<()>,
    /// What the server was left running with (a slow phase may leave it OFF).
    mode: ServerMode,
    /// The leader's beat lives from its lead to the end of its restore.
    heartbeat: Option<Heartbeat>,
    follow_error: Option<ControllerError>,
    /// Where the last lead got to (a resumed lead goes on after it).
    next_phase: u64,
    /// When this psprobe's schedule began (the clock of --duration, across resumed leads).
    started: Instant,
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
        let mine = vec![started.lead.connection_id(), started.ctl.connection_id()];
        Ok(Runner {
            s,
            observer,
            stop,
            log,
            ctl: started.ctl,
            lead: started.lead,
            ids,
            tracker,
            found: None,
            inherited: started.inherited,
            mine,
            led: Ok(true),
            restored: Ok(()),
            mode: ServerMode::Default,
            heartbeat: None,
            follow_error: None,
            next_phase: 0,
            started: Instant::now(),
        })
    }

    fn remember_connections(&mut self) {
        for id in [self.lead.connection_id(), self.ctl.connection_id()] {
            if !self.mine.contains(&id) {
                self.mine.push(id);
            }
        }
    }

    async fn try_lead(&mut self) -> Result<bool> {
        let taken = self.lead.try_acquire().await?;
        self.remember_connections();
        Ok(taken)
    }

    /// The run's record: made at the first lead (after resolving what a dead leader left), or
    /// the one this run keeps, checked against a server that may have restarted meanwhile.
    /// `Err(end)`: the lead must end at once as `end`.
    async fn found(&mut self) -> Result<std::result::Result<(), LeadEnd>> {
        let s = self.s;
        let identity = self.ctl.info().identity.clone();
        let Some(found) = self.found.as_ref() else {
            // A leader that took over first resolves what the dead one left (one that led from
            // the start did so in `start`); then the live rows are the settings to come back to.
            let mut claims = std::mem::take(&mut self.inherited);
            claims.extend(resolve_left_behind(s, &mut self.ctl).await?);
            let mut snapshot = self.ctl.snapshot().await?.for_run(&s.identity, now_ms());
            snapshot.claims = claims;
            snapshot.scenarios = s.scenarios.clone();
            let found = AsFound::new(snapshot, s.state_file.clone());
            found.save(&mut self.lead).await?;
            self.found = Some(found);
            return Ok(Ok(()));
        };
        if !found.snapshot.restarted_since(&identity) {
            return Ok(Ok(()));
        }
        // Restarted while this run waited, not by psprobe.
        self.mine.clear();
        self.remember_connections();
        let Some(found) = self.found.as_mut() else {
            return Ok(Ok(()));
        };
        if self.ctl.info().performance_schema != Some(true) {
            tracing::error!(
                "the server was restarted (not by psprobe) with performance_schema OFF: there \
                 is nothing to measure and nothing of psprobe's left on it; the controller \
                 stops, the proxy serves on"
            );
            Snapshot::remove(found.state_file())?;
            self.lead.clear_snapshot().await.ok();
            self.found = None;
            return Ok(Err(LeadEnd::PsOffByOthers));
        }
        let live = self.ctl.read_state().await?;
        let claims = found.rebase(&live, &identity);
        tracing::warn!(
            "the server was restarted (not by psprobe) while this run waited for it: the \
             settings it came back with are the ones to leave; {} of them differ from before \
             the run and are the restart's (kept, never switched); the schedule goes on",
            claims.len()
        );
        log_claims(&claims);
        for claim in &claims {
            record_claim(claim, self.observer, self.log)?;
        }
        found.save(&mut self.lead).await?;
        Ok(Ok(()))
    }

    async fn lead(&mut self, start_at: (u64, u64)) -> Result<Event> {
        let (s, observer) = (self.s, self.observer);
        observer.set_leading(true);
        self.remember_connections();
        let beat = Heartbeat::start(
            &s.dsn,
            &s.identity,
            vec![self.lead.connection_id(), self.ctl.connection_id()],
        )
        .await;
        write_run_record(self.log, s, "leader")?;
        self.mode = ServerMode::Default;
        self.restored = Ok(());
        self.led = match self.found().await {
            Ok(Ok(())) => self.lead_schedule(start_at, &beat).await,
            Ok(Err(end)) => {
                // Said in its own line; nothing failed that the finish should report.
                self.led = Ok(false);
                self.heartbeat = Some(beat);
                observer.set_leading(false);
                return Ok(Event::LeadEnded(end));
            }
            Err(e) => Err(e),
        };
        self.heartbeat = Some(beat);
        observer.scenarios().set_current(NO_SCENARIO);
        observer.set_leading(false);
        Ok(Event::LeadEnded(match &self.led {
            Ok(true) => LeadEnd::Completed,
            Ok(false) => LeadEnd::Stopped,
            Err(ControllerError::StaleSnapshot { .. } | ControllerError::RestartFirst { .. }) => {
                LeadEnd::StaleSnapshot
            }
            Err(ControllerError::LostLead { .. }) => LeadEnd::LostLead,
            Err(
                ControllerError::Stalled { .. }
                | ControllerError::Connection { .. }
                | ControllerError::Unreachable { .. },
            ) => LeadEnd::Interrupted,
            Err(_) => LeadEnd::Failed,
        }))
    }

    async fn lead_schedule(
        &mut self,
        (first_block, first_phase): (u64, u64),
        beat: &Heartbeat,
    ) -> Result<bool> {
        let s = self.s;
        if let Some(duet) = &s.duet {
            if !duet.first_lead() {
                tracing::warn!(
                    "duet side {}: the run was interrupted and is not resumed (its phases would be out of step with the other side's); what was measured stands",
                    duet.side.label()
                );
                return Ok(true);
            }
        }
        // However this lead ends, a duet's partner stops waiting for this side.
        let _leave = super::duet::LeaveOnDrop(s.duet.as_ref());
        let Some(found) = self.found.as_mut() else {
            return Ok(false);
        };
        let first_phase = first_phase.max(self.next_phase);
        // Followers (and operators) see a leader starting before its first change.
        self.lead
            .publish(&PhaseRow {
                scenario: "none".into(),
                block: first_block,
                phase: first_phase,
                state: "switching".into(),
                leader: s.identity.clone(),
                ..PhaseRow::default()
            })
            .await?;
        let mut leader = Leader::new(
            s,
            LiveServer {
                s,
                ctl: &mut self.ctl,
                lead: &mut self.lead,
                heartbeat: beat,
                found,
            },
            Out {
                ids: &self.ids,
                observer: self.observer,
                tracker: &mut self.tracker,
                log: &mut *self.log,
            },
            &mut self.stop,
            &mut self.mode,
            (Tuning::new(s), first_phase),
        );
        leader.state.started = self.started;
        let timeline = Timeline::new(s.timeline(), first_block, first_phase);
        let completed = leader.run(timeline).await;
        self.next_phase = leader.state.next_phase;
        if !completed? {
            return Ok(false);
        }
        let Some((confirm, note)) = super::confirm::plan(s, &leader.measured.fast) else {
            return Ok(true);
        };
        tracing::info!("{note}");
        // The same connections, beat, tracker and log; the confirmation's two scenarios, in
        // segments numbered on from the design's.
        let next_segment = leader.measured.fast.iter().map(|r| r.block + 1).max();
        let next_phase = leader.state.next_phase;
        let settle = leader.tuning.settle;
        let Leader {
            server,
            out,
            stop,
            mode,
            ..
        } = leader;
        let mut ids = Vec::new();
        for name in &confirm.scenarios {
            ids.push(out.observer.scenarios().intern(name).map_err(|e| {
                ControllerError::Config {
                    path: PathBuf::from("--confirm"),
                    reason: e.to_string(),
                }
            })?);
        }
        let timeline = confirm.timeline();
        let first_block = next_segment.unwrap_or(0) * timeline.blocks_per_segment();
        let mut tuning = Tuning::new(&confirm);
        tuning.settle = settle;
        let mut second = Leader::new(
            &confirm,
            LiveServer {
                s: &confirm,
                ..server
            },
            Out { ids: &ids, ..out },
            stop,
            mode,
            (tuning, next_phase),
        );
        let done = second
            .run(Timeline::new(timeline, first_block, next_phase))
            .await;
        self.next_phase = second.state.next_phase;
        done
    }

    async fn restore(&mut self, end_state: &str) -> Event {
        let s = self.s;
        // The restore may restart the server (a slow phase left it OFF): planned, like the
        // slow phases' restarts.
        if let Some(beat) = &self.heartbeat {
            beat.planned_absence(true);
        }
        // Stopped by a signal: the stop's bound; at the end of a schedule: long enough for a
        // restart.
        let budget = if *self.stop.borrow() {
            s.stop_timeout
        } else {
            s.restart_timeout.max(Duration::from_secs(30))
        };
        let Some(found) = self.found.as_mut() else {
            self.heartbeat = None;
            return Event::RestoreEnded(RestoreEnd::Restored);
        };
        let restored = Restore {
            s,
            ctl: &mut self.ctl,
            lead: &mut self.lead,
            found,
            mode: &self.mode,
            scenarios: self.observer.scenarios(),
            mine: &self.mine,
        }
        .run(end_state, budget)
        .await;
        self.heartbeat = None;
        self.restored = restored.map(|how| match how {
            Restored::AsFound => tracing::info!("performance_schema settings restored"),
            Restored::RestartedByOthers => {
                tracing::info!("performance_schema settings left as the server's restart set them")
            }
        });
        Event::RestoreEnded(match &self.restored {
            Ok(()) => {
                self.found = None;
                RestoreEnd::Restored
            }
            Err(ControllerError::LostLead { .. }) => RestoreEnd::LostLead,
            Err(_) => {
                self.observer.restore_failed();
                RestoreEnd::Failed
            }
        })
    }

    async fn rejoin(&mut self, why: Rejoin) -> Event {
        self.heartbeat = None;
        match why {
            Rejoin::LostLead => {
                // Taken over: change nothing; follow the psprobe that leads, or lead again if
                // the lock is free by the time the server answers.
                tracing::warn!("{}", lost_message(&self.led, &self.restored));
                self.observer.lead_lost();
                self.tracker.abandon();
            }
            Rejoin::Interrupted => {
                tracing::warn!(
                    "{}; the segment in progress is left out, and the schedule goes on when the \
                     server answers",
                    self.led.as_ref().err().map_or_else(
                        || "the server stopped answering".to_string(),
                        ToString::to_string
                    )
                );
                self.tracker.abandon();
            }
            Rejoin::Cut => {}
        }
        let back = rejoin(self.s, &mut self.stop, &mut self.lead, &mut self.ctl).await;
        self.remember_connections();
        Event::Rejoined(back)
    }

    async fn reclaim(&mut self) -> Result<Event> {
        if self.lead.try_acquire().await? {
            // Nobody took over: go on after the last slot this run published.
            let last = self.lead.read().await?;
            return Ok(Event::Reclaimed(Some(resume_after(self.s, last.as_ref()))));
        }
        match self.lead.holder(&self.mine).await? {
            LockHolder::Other { leader } => {
                tracing::warn!("{}", lost_to(self.s, leader));
                self.observer.lead_lost();
                self.tracker.abandon();
                // The leader that holds the lock resolved the server's copy of this run's
                // snapshot when it took over: the state file is not this psprobe's to restore
                // any more.
                if self.s.state_file.exists() {
                    Snapshot::remove(&self.s.state_file)?;
                }
                self.found = None;
                Ok(Event::Reclaimed(None))
            }
            LockHolder::Me | LockHolder::Nobody => {
                // A connection of this psprobe's from before the interruption, still open on
                // the server: end it and take the lock on the new one.
                let mine: Vec<u64> = self
                    .mine
                    .iter()
                    .filter(|&&id| id != self.lead.connection_id())
                    .map(|&id| u64::from(id))
                    .collect();
                self.lead.kill(&mine).await?;
                if self.lead.try_acquire().await? {
                    let last = self.lead.read().await?;
                    return Ok(Event::Reclaimed(Some(resume_after(self.s, last.as_ref()))));
                }
                // Taken in between: whoever took it leads.
                Ok(Event::Reclaimed(None))
            }
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

    async fn finish(self, how: Finish) -> Result<()> {
        drop(self.heartbeat);
        match how {
            Finish::Led => {
                let_go(self.lead, self.ctl).await;
                // What the server was left with comes first: it is what a stop must say.
                match (self.led, self.restored) {
                    (_, Err(e @ ControllerError::NotRestored(_))) => Err(e),
                    (led, restored) => led.map(|_| ()).and(restored),
                }
            }
            Finish::Followed => {
                let_go(self.lead, self.ctl).await;
                Ok(())
            }
            Finish::FollowFailed => match self.follow_error {
                Some(e) => Err(e),
                None => Ok(()),
            },
            Finish::LostLead => match self.led {
                Err(e @ ControllerError::LostLead { .. }) => Err(e),
                _ => match self.restored {
                    Err(e @ ControllerError::LostLead { .. }) => Err(e),
                    _ => Ok(()),
                },
            },
            Finish::StoppedRejoining => Ok(()),
        }
    }
}

/// Releases the lock and closes the connections, politely if the server answers at once (a
/// stalled server must not hold up a stop: it ends the sessions when the sockets close).
async fn let_go(lead: Leadership, ctl: Controller) {
    const POLITE: Duration = Duration::from_secs(1);
    let _ = tokio::time::timeout(POLITE, lead.release()).await;
    let _ = tokio::time::timeout(POLITE, ctl.disconnect()).await;
}

/// The warning of a leader that lost the lead: the error that said so.
fn lost_message(led: &Result<bool>, restored: &Result<()>) -> String {
    match (led, restored) {
        (Err(e @ ControllerError::LostLead { .. }), _)
        | (_, Err(e @ ControllerError::LostLead { .. })) => e.to_string(),
        _ => "another psprobe leads the schedule now".to_string(),
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
        duet_side: s.duet.as_ref().map(|d| d.side.label().to_string()),
    };
    Ok(log.append(&record)?)
}

/// Connects anew in place of `lead` and `ctl` (the old connections may have been ended by the
/// leader that took over, or died with a stall), trying every second while the server does not
/// answer; false if stopped meanwhile.
async fn rejoin(
    s: &ControllerSettings,
    stop: &mut watch::Receiver<bool>,
    lead: &mut Leadership,
    ctl: &mut Controller,
) -> bool {
    /// A line while the server does not answer, at most this often.
    const WARN_EVERY: Duration = Duration::from_secs(30);
    let since = Instant::now();
    let mut warned: Option<Instant> = None;
    loop {
        if *stop.borrow() {
            return false;
        }
        let connected = async {
            let lead = Leadership::connect(&s.dsn).await?;
            let ctl = Controller::connect(&s.dsn).await?;
            Ok::<_, ControllerError>((lead, ctl))
        };
        let connected = tokio::select! {
            connected = connected => Some(connected),
            _ = stop.changed() => None,
        };
        match connected {
            None => return false,
            Some(Ok((new_lead, new_ctl))) => {
                std::mem::replace(lead, new_lead).release().await;
                std::mem::replace(ctl, new_ctl).disconnect().await;
                if warned.is_some() {
                    tracing::info!("the server answers again after {:.0?}", since.elapsed());
                }
                return true;
            }
            Some(Err(e)) if warned.is_none_or(|at| at.elapsed() >= WARN_EVERY) => {
                warned = Some(Instant::now());
                tracing::warn!(
                    "cannot reach the server to go on with the schedule ({e}); retrying every \
                     second, nothing is changed meanwhile"
                );
            }
            Some(Err(_)) => {}
        }
        tokio::select! {
            () = tokio::time::sleep(Duration::from_secs(1)) => {}
            _ = stop.changed() => {}
        }
    }
}
