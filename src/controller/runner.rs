//! The scheduled controller inside `psprobe proxy`: leads (switches scenarios in randomized
//! blocks, publishes the phase, writes the phase log) or follows another psprobe's lead, and
//! always leaves the server's performance_schema settings as it found them.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::sync::watch;

use crate::stats::{Observer, ScenarioId, NO_SCENARIO};

use super::catalog::Catalog;
use super::dsn::ControllerDsn;
use super::error::{ControllerError, Result};
use super::leadership::{Leadership, PhaseRow};
use super::phase_log::{histogram_layout, PhaseLog, RunRecord, PHASE_LOG_VERSION};
use super::phase_tracker::PhaseTracker;
use super::restart::{restart_server, wait_ready};
use super::schedule::block_order;
use super::server::Controller;
use super::snapshot::Snapshot;

/// How often a follower reads the leader's phase and tries the lock.
const FOLLOW_POLL: Duration = Duration::from_millis(250);

/// Everything the controller runs with, validated by the config layer.
pub struct ControllerSettings {
    pub dsn: ControllerDsn,
    pub catalog: Catalog,
    pub scenarios: Vec<String>,
    /// Whole phase: settle + measured window.
    pub phase: Duration,
    pub settle: Duration,
    pub restart_settle: Duration,
    pub blocks: Option<u64>,
    pub seed: u64,
    pub state_file: PathBuf,
    pub phase_log: PathBuf,
    pub restart_cmd: Option<String>,
    pub restart_timeout: Duration,
    pub upstream: String,
    /// Name this psprobe gives itself in `psprobe.phase.leader`.
    pub identity: String,
    /// Called with each phase record once it is written (live estimates, admin interface).
    pub on_phase: Option<PhaseHook>,
    /// mysqld's pid on this host, to record its CPU time per phase.
    pub mysqld_pid: Option<super::server_cpu::PidSource>,
}

pub type PhaseHook = Arc<dyn Fn(&super::phase_log::PhaseRecord) + Send + Sync>;

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

pub async fn start(settings: &ControllerSettings) -> Result<Started> {
    for name in &settings.scenarios {
        let scenario = settings.catalog.get(name)?;
        if scenario.requires_restart() && settings.restart_cmd.is_none() {
            return Err(ControllerError::NeedsRestart { name: name.clone() });
        }
    }
    let mut ctl = Controller::connect(&settings.dsn).await?;
    ctl.require_ps()?;
    let mut lead = Leadership::connect(&settings.dsn).await?;
    // A state file left by a crashed run is restored before anything else. The dead run's
    // connection may not be gone from the server yet: wait a little for its lock.
    if let Some(snapshot) = Snapshot::load_if_exists(&settings.state_file)? {
        snapshot.check_server(&ctl.info().identity, &settings.state_file)?;
        // (A killed process's connection is gone within milliseconds; a live leader sharing
        // this state directory keeps the lock, and then this psprobe follows.)
        let deadline = tokio::time::Instant::now() + Duration::from_secs(3);
        while !lead.try_acquire().await? && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        if lead.leader {
            tracing::warn!(
                "{} holds settings of a run that did not finish; restoring them first",
                settings.state_file.display()
            );
            ctl.restore(&snapshot).await?;
            lead.clear_snapshot().await?;
            Snapshot::remove(&settings.state_file)?;
        }
    }
    Ok(Started { ctl, lead })
}

/// Runs until the schedule is done or `stop` turns true; restores the server either way.
pub async fn run(
    settings: ControllerSettings,
    started: Started,
    observer: Arc<Observer>,
    mut stop: watch::Receiver<bool>,
) -> Result<()> {
    let Started { mut ctl, mut lead } = started;
    let mut ids = Vec::new();
    for name in &settings.scenarios {
        ids.push(
            observer
                .scenarios
                .intern(name)
                .map_err(|e| ControllerError::Config {
                    path: PathBuf::from("--scenarios"),
                    reason: e.to_string(),
                })?,
        );
    }
    let mut log = PhaseLog::open(&settings.phase_log).map_err(|e| ControllerError::Config {
        path: settings.phase_log.clone(),
        reason: e.to_string(),
    })?;
    let mut tracker = PhaseTracker::new(
        Arc::clone(&observer),
        settings.on_phase.clone(),
        settings.mysqld_pid.clone(),
    );
    // (block, phase) to start from: after a takeover, the ones after the last seen.
    let mut start_at = (0u64, 0u64);
    loop {
        if lead.try_acquire().await? {
            observer.metrics.controller_leader.set(1);
            write_run_record(&mut log, &settings, "leader")?;
            let result = lead_schedule(
                start_at,
                &settings,
                &mut ctl,
                &mut lead,
                &ids,
                &observer,
                &mut tracker,
                &mut log,
                &mut stop,
            )
            .await;
            observer.scenarios.set_current(NO_SCENARIO);
            observer.metrics.controller_leader.set(0);
            // "done" tells followers the schedule is complete (nothing to take over); "idle"
            // (stopped early) lets one of them take over and run its own schedule.
            let end_state = if matches!(result, Ok(true)) {
                "done"
            } else {
                "idle"
            };
            let restored = leave_as_found(&settings, &mut ctl, &mut lead, end_state).await;
            lead.release().await;
            ctl.disconnect().await;
            return result.map(|_| ()).and(restored);
        }
        write_run_record(&mut log, &settings, "follower")?;
        let Some(resume) = follow(&mut lead, &observer, &mut tracker, &mut log, &mut stop).await?
        else {
            observer.scenarios.set_current(NO_SCENARIO);
            lead.release().await;
            ctl.disconnect().await;
            return Ok(());
        };
        tracing::info!("the leading psprobe is gone; taking over the schedule");
        start_at = resume;
    }
}

fn write_run_record(log: &mut PhaseLog, s: &ControllerSettings, role: &str) -> Result<()> {
    let (first, factor) = histogram_layout();
    let record = RunRecord {
        version: PHASE_LOG_VERSION,
        kind: "run".into(),
        started_at_ms: now_ms(),
        upstream: s.upstream.clone(),
        role: role.into(),
        scenarios: s.scenarios.clone(),
        phase_ms: s.phase.as_millis() as u64,
        settle_ms: s.settle.as_millis() as u64,
        restart_settle_ms: s.restart_settle.as_millis() as u64,
        blocks: s.blocks,
        seed: s.seed,
        histogram_first_bound_ns: first,
        histogram_factor: factor,
    };
    log.append(&record).map_err(|e| ControllerError::Config {
        path: log.path().to_path_buf(),
        reason: e.to_string(),
    })
}

/// Sleeps for `d` unless `stop` turns true first (returns false then).
async fn wait(d: Duration, stop: &mut watch::Receiver<bool>) -> bool {
    if *stop.borrow() {
        return false;
    }
    tokio::select! {
        () = tokio::time::sleep(d) => true,
        changed = stop.changed() => changed.is_ok() && !*stop.borrow(),
    }
}

#[allow(clippy::too_many_arguments)]
async fn lead_schedule(
    (first_block, first_phase): (u64, u64),
    s: &ControllerSettings,
    ctl: &mut Controller,
    lead: &mut Leadership,
    ids: &[ScenarioId],
    observer: &Observer,
    tracker: &mut PhaseTracker,
    log: &mut PhaseLog,
    stop: &mut watch::Receiver<bool>,
) -> Result<bool> {
    // The settings to come back to: a dead leader's snapshot kept on the server wins, since
    // the server may still carry that leader's last scenario.
    let snapshot = match lead.load_snapshot().await? {
        Some(snapshot) => {
            tracing::warn!("restoring the settings a previous leader left behind");
            ctl.restore(&snapshot).await?;
            snapshot.save(&s.state_file)?;
            snapshot
        }
        None => ctl.ensure_snapshot(&s.state_file).await?.snapshot,
    };
    lead.save_snapshot(&snapshot).await?;

    let mut ps_on = true;
    let mut phase_no = first_phase;
    let mut block = first_block;
    while s.blocks.is_none_or(|n| block < n) {
        for i in block_order(s.scenarios.len(), block, s.seed) {
            let name = &s.scenarios[i];
            let scenario = s.catalog.get(name)?;
            let switched_at = now_ms();
            lead.publish(&row(name, block, phase_no, "switching", &s.identity))
                .await?;
            let wants_ps = !scenario.requires_restart();
            let restarted = wants_ps != ps_on;
            if restarted {
                let command = s
                    .restart_cmd
                    .as_deref()
                    .ok_or_else(|| ControllerError::NeedsRestart { name: name.clone() })?;
                restart_server(command, wants_ps, s.restart_timeout).await?;
                *ctl = wait_ready(&s.dsn, wants_ps, s.restart_timeout).await?;
                *lead = Leadership::connect(&s.dsn).await?;
                if !lead.try_acquire().await? {
                    return Err(ControllerError::Connection {
                        target: s.dsn.redacted(),
                        action: "keep the leader lock across the restart".into(),
                        reason: "another psprobe took it".into(),
                    });
                }
                ps_on = wants_ps;
            }
            let verified = if wants_ps {
                ctl.apply_or_restore(scenario, &snapshot).await?;
                true
            } else {
                ctl.info().performance_schema == Some(false)
            };
            if !verified {
                return Err(ControllerError::Connection {
                    target: s.dsn.redacted(),
                    action: format!("verify scenario {name}"),
                    reason: "performance_schema is not OFF after the restart".into(),
                });
            }
            observer.scenarios.set_current(ids[i]);
            tracker.switched(name, ids[i], block, phase_no, switched_at, restarted);
            let settle = if restarted {
                s.restart_settle
            } else {
                s.settle
            };
            if !wait(settle, stop).await {
                return Ok(false);
            }
            lead.publish(&row(name, block, phase_no, "measuring", &s.identity))
                .await?;
            tracker.measuring();
            let measured = wait(s.phase.saturating_sub(settle), stop).await;
            if measured {
                tracker.finish(log, true)?;
                observer.metrics.phases(name).inc();
            } else {
                tracker.abandon();
                return Ok(false);
            }
            phase_no += 1;
        }
        block += 1;
    }
    Ok(true)
}

fn row(scenario: &str, block: u64, phase: u64, state: &str, leader: &str) -> PhaseRow {
    PhaseRow {
        scenario: scenario.to_string(),
        block,
        phase,
        state: state.to_string(),
        leader: leader.to_string(),
    }
}

/// Restores the snapshot (restarting with performance_schema ON first if a phase turned it
/// OFF), and retries while the server is unreachable, for up to the restart timeout.
async fn leave_as_found(
    s: &ControllerSettings,
    ctl: &mut Controller,
    lead: &mut Leadership,
    end_state: &str,
) -> Result<()> {
    let Some(snapshot) = Snapshot::load_if_exists(&s.state_file)? else {
        return Ok(());
    };
    let deadline = tokio::time::Instant::now() + s.restart_timeout.max(Duration::from_secs(30));
    loop {
        let attempt = async {
            let mut fresh = Controller::connect(&s.dsn).await?;
            if fresh.info().performance_schema == Some(false) {
                if let Some(command) = &s.restart_cmd {
                    restart_server(command, true, s.restart_timeout).await?;
                    fresh = wait_ready(&s.dsn, true, s.restart_timeout).await?;
                }
            }
            fresh.restore(&snapshot).await?;
            Ok::<Controller, ControllerError>(fresh)
        }
        .await;
        match attempt {
            Ok(fresh) => {
                *ctl = fresh;
                Snapshot::remove(&s.state_file)?;
                let done = row("none", 0, 0, end_state, &s.identity);
                let published = async {
                    lead.clear_snapshot().await?;
                    lead.publish(&done).await
                };
                if published.await.is_err() {
                    // The leadership connection did not survive (restart, network): use a new one.
                    if let Ok(mut fresh) = Leadership::connect(&s.dsn).await {
                        let _ = fresh.clear_snapshot().await;
                        let _ = fresh.publish(&done).await;
                        fresh.release().await;
                    }
                }
                tracing::info!("performance_schema settings restored");
                return Ok(());
            }
            Err(e) if tokio::time::Instant::now() < deadline => {
                tracing::warn!("cannot restore performance_schema settings yet ({e}); retrying");
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
            Err(e) => return Err(e),
        }
    }
}

/// Labels commands with the leader's phase until this psprobe takes the lead (then returns the
/// block and phase to go on from) or stops (`None`).
async fn follow(
    lead: &mut Leadership,
    observer: &Observer,
    tracker: &mut PhaseTracker,
    log: &mut PhaseLog,
    stop: &mut watch::Receiver<bool>,
) -> Result<Option<(u64, u64)>> {
    let mut last: Option<PhaseRow> = None;
    loop {
        if !wait(FOLLOW_POLL, stop).await {
            tracker.abandon();
            return Ok(None);
        }
        if lead.try_acquire().await? {
            tracker.abandon();
            // Go on with a fresh block after the last one the old leader started.
            let resume = last.as_ref().map_or((0, 0), |l| (l.block + 1, l.phase + 1));
            return Ok(Some(resume));
        }
        let Some(current) = lead.read().await? else {
            continue;
        };
        if last.as_ref() == Some(&current) {
            continue;
        }
        let phase_changed = last.as_ref().is_none_or(|l| {
            (l.block, l.phase, &l.scenario) != (current.block, current.phase, &current.scenario)
        });
        if phase_changed {
            tracker.finish(log, true)?;
        }
        match current.state.as_str() {
            // The leader completed its schedule while we followed: nothing to take over. (A
            // "done" already there when we started is an earlier run's.)
            "done" if last.is_some() => {
                observer.scenarios.set_current(NO_SCENARIO);
                return Ok(None);
            }
            "idle" | "done" => observer.scenarios.set_current(NO_SCENARIO),
            _ => {
                let id = observer
                    .scenarios
                    .intern(&current.scenario)
                    .unwrap_or(NO_SCENARIO);
                observer.scenarios.set_current(id);
                if phase_changed {
                    tracker.switched(
                        &current.scenario,
                        id,
                        current.block,
                        current.phase,
                        now_ms(),
                        false,
                    );
                }
                if current.state == "measuring" {
                    tracker.measuring();
                }
            }
        }
        last = Some(current);
    }
}
