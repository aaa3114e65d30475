//! Leaving the server as found at the end of a lead, within a bound: restart it with its own
//! options if a slow phase left performance_schema OFF or startup options in effect, write back
//! what psprobe found (every row someone else set kept as it is), publish the end state; retry
//! while the server does not answer, only while this psprobe holds the lock, and until the
//! deadline. A server restarted meanwhile by someone else holds its own settings: nothing of
//! psprobe's is left to restore. Past the deadline the error names what is left on the server
//! and the command that finishes the job.
//!
//! Must not: decide whether to restore (the roles machine does) or restore without the lock.

use std::time::Duration;

use tokio::time::Instant;

use super::as_found::AsFound;
use super::lead_server::lost_to;
use super::mode::{ServerMode, MAX_RESTART_FAILURES};
use super::settings::ControllerSettings;
use crate::controller::client::leadership::{Leadership, LockHolder};
use crate::controller::client::restart::restart_and_wait;
use crate::controller::client::server::Controller;
use crate::controller::error::{ControllerError, NotRestored, Result};
use crate::controller::model::phase_row::PhaseRow;
use crate::controller::model::snapshot::{RestartIntent, Snapshot, OWN_OPTIONS};
use crate::stats::Scenarios;

/// A warning while the restore waits for the server, at most this often.
const WARN_EVERY: Duration = Duration::from_secs(10);

/// What the restore works with.
pub(crate) struct Restore<'a> {
    pub(crate) s: &'a ControllerSettings,
    pub(crate) ctl: &'a mut Controller,
    pub(crate) lead: &'a mut Leadership,
    pub(crate) found: &'a mut AsFound,
    pub(crate) mode: &'a ServerMode,
    pub(crate) scenarios: &'a Scenarios,
    /// Connection ids this psprobe has held the lock on (the server may still keep one open).
    pub(crate) mine: &'a [u32],
}

/// How the restore ended well.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Restored {
    /// Every row psprobe owns is as found.
    AsFound,
    /// The server restarted meanwhile, not by psprobe: it holds its own settings.
    RestartedByOthers,
}

impl Restore<'_> {
    /// Restores, retrying for up to `budget`; publishes `end_state` once done.
    pub(crate) async fn run(&mut self, end_state: &str, budget: Duration) -> Result<Restored> {
        let deadline = Instant::now() + budget;
        if !self.found.state_file().exists() {
            return Ok(Restored::AsFound);
        }
        let mut restart_needed = *self.mode != ServerMode::Default;
        let mut hook_failures = 0u32;
        let mut warned: Option<Instant> = None;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let attempt =
                tokio::time::timeout(left, self.attempt(&mut restart_needed, &mut hook_failures))
                    .await;
            let error = match attempt {
                Ok(Ok(restored)) => {
                    self.finish(end_state).await?;
                    return Ok(restored);
                }
                Ok(Err(lost @ ControllerError::LostLead { .. })) => return Err(lost),
                Ok(Err(e)) if hook_failures >= MAX_RESTART_FAILURES => {
                    return Err(self.not_restored(&e.to_string(), budget));
                }
                Ok(Err(e)) => e.to_string(),
                Err(_) => "no answer in time".to_string(),
            };
            if Instant::now() + Duration::from_secs(1) >= deadline {
                return Err(self.not_restored(&error, budget));
            }
            if warned.is_none_or(|at| at.elapsed() >= WARN_EVERY) {
                warned = Some(Instant::now());
                tracing::warn!(
                    "cannot restore performance_schema settings yet ({error}); retrying for up \
                     to {:.0?} more",
                    deadline.saturating_duration_since(Instant::now())
                );
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    }

    /// One try: connect, keep the lead, see whether the server restarted, restart it with its
    /// own options if needed, write back.
    async fn attempt(&mut self, restart_needed: &mut bool, failures: &mut u32) -> Result<Restored> {
        let s = self.s;
        let mut fresh = Controller::connect(&s.dsn).await?;
        self.keep_or_take_lead().await?;
        let identity = fresh.info().identity.clone();
        if self.found.snapshot.restarted_since(&identity) {
            tracing::warn!(
                "the server restarted (not by psprobe) since psprobe last saw it: it holds its \
                 own settings now, so there is nothing of psprobe's to restore"
            );
            *self.ctl = fresh;
            return Ok(Restored::RestartedByOthers);
        }
        let ps_off = fresh.info().performance_schema == Some(false);
        if ps_off || *restart_needed {
            if let Some(command) = &s.restart_cmd {
                self.found.restarting(RestartIntent {
                    into: OWN_OPTIONS.to_string(),
                    since_unix: crate::clock::unix_now(),
                    timeout_s: s.restart_timeout.as_secs(),
                })?;
                self.scenarios.set_restarting(true);
                let restarted =
                    restart_and_wait(command, true, "", s.restart_timeout, &s.dsn).await;
                self.scenarios.set_restarting(false);
                match restarted {
                    Ok((back, timing)) => {
                        *restart_needed = false;
                        tracing::info!(
                            "restarted the server with its own options to restore it: {}",
                            timing.describe()
                        );
                        fresh = back;
                        let identity = fresh.info().identity.clone();
                        self.found
                            .restarted(&ServerMode::Default, &identity, self.lead)
                            .await
                            .ok();
                    }
                    Err(e) => {
                        *failures += 1;
                        give_up_restarting(*failures, ps_off, &e)?;
                        // The hook keeps failing on a server that runs with
                        // performance_schema ON: every setting it has at runtime is
                        // written back below; only a restart clears startup options.
                        *restart_needed = false;
                        fresh = Controller::connect(&s.dsn).await?;
                    }
                }
            }
        }
        let (report, claims) = self.found.switcher.restore(&mut fresh).await?;
        tracing::debug!(
            "restore: {} statement(s), {} row(s) changed",
            report.statements.len(),
            report.rows_changed
        );
        self.found.claimed(&claims, self.lead).await.ok();
        *self.ctl = fresh;
        Ok(Restored::AsFound)
    }

    /// The snapshot is resolved: removed from both places, the end state published.
    async fn finish(&mut self, end_state: &str) -> Result<()> {
        Snapshot::remove(self.found.state_file())?;
        let done = PhaseRow {
            scenario: "none".into(),
            state: end_state.into(),
            leader: self.s.identity.clone(),
            ..PhaseRow::default()
        };
        let published = async {
            self.lead.clear_snapshot().await?;
            self.lead.publish(&done).await
        };
        if published.await.is_err() {
            // The leadership connection did not survive (restart, network): use a new one.
            if let Ok(mut fresh) = Leadership::connect(&self.s.dsn).await {
                let _ = fresh.clear_snapshot().await;
                let _ = fresh.publish(&done).await;
                fresh.release().await;
            }
        }
        Ok(())
    }

    /// Restores only while holding the lock: a leader whose lock connection died (it was
    /// stopped or cut off, and a follower ended its connections) takes the lock anew if it is
    /// free or still held by a connection of its own (which it ends), and leaves the restore
    /// to another psprobe seen holding it (`LostLead`).
    async fn keep_or_take_lead(&mut self) -> Result<()> {
        if self.lead.holds_lock().await.unwrap_or(false) {
            return Ok(());
        }
        let mut fresh = Leadership::connect(&self.s.dsn).await?;
        if fresh.try_acquire().await? {
            std::mem::replace(self.lead, fresh).release().await;
            return Ok(());
        }
        match fresh.holder(self.mine).await? {
            LockHolder::Other { leader } => {
                fresh.release().await;
                Err(lost_to(self.s, leader))
            }
            LockHolder::Me | LockHolder::Nobody => {
                // A connection of this psprobe's from before (the server kept it): end it.
                let mine: Vec<u64> = self.mine.iter().map(|&id| u64::from(id)).collect();
                fresh.kill(&mine).await?;
                if fresh.try_acquire().await? {
                    std::mem::replace(self.lead, fresh).release().await;
                    return Ok(());
                }
                fresh.release().await;
                Err(ControllerError::Connection {
                    target: self.s.dsn.redacted(),
                    action: "take the leader lock back".into(),
                    reason: "it is still held".into(),
                })
            }
        }
    }

    /// The one line a restore that ran out of time ends with.
    fn not_restored(&self, reason: &str, within: Duration) -> ControllerError {
        let ledger = self.found.switcher.ledger();
        let left = match (self.mode, self.found.switcher.current()) {
            (ServerMode::Off, _) => "pfsoff (performance_schema=OFF, through a restart)".into(),
            (ServerMode::Startup(name), _) => format!("{name} (through a restart)"),
            (ServerMode::Unknown, _) => "a restart that failed".into(),
            (ServerMode::Default, Some(current)) => format!("scenario {current}"),
            (ServerMode::Default, None) => "no scenario".into(),
        };
        let differ = match ledger.differing_from_found() {
            Some(n) => n.to_string(),
            None => "an unknown number of".into(),
        };
        let config = self
            .s
            .config_path
            .as_ref()
            .map(|c| format!(" --config {}", c.display()))
            .unwrap_or_default();
        ControllerError::NotRestored(Box::new(NotRestored {
            target: self.s.dsn.redacted(),
            within,
            reason: reason.to_string(),
            left,
            differ,
            state_file: self.found.state_file().to_path_buf(),
            command: format!(
                "psprobe ps{config} restore --state-file {}",
                self.found.state_file().display()
            ),
        }))
    }
}

/// Whether a failing restart hook ends the restore's restarting: the
/// [`MAX_RESTART_FAILURES`]th failure in a row does. With performance_schema OFF nothing can
/// be restored at runtime, so that is an error; with it ON the runtime settings are restored
/// and the operator is told a restart by hand clears what startup options may remain.
/// Before that, the failure is returned so the restore retries.
fn give_up_restarting(failures: u32, ps_off: bool, e: &ControllerError) -> Result<()> {
    if failures < MAX_RESTART_FAILURES {
        return Err(ControllerError::Restart {
            reason: e.to_string(),
        });
    }
    if ps_off {
        return Err(ControllerError::Restart {
            reason: format!(
                "performance_schema is OFF and the restart hook failed {failures} times ({e}): \
                 restart the server with its own options by hand"
            ),
        });
    }
    tracing::warn!(
        "the restart hook failed {failures} times ({e}): restoring the runtime settings without \
         a restart; restart the server with its own options by hand if a scenario's startup \
         options may still be in effect"
    );
    Ok(())
}
