//! Leaving the server as found at the end of a lead: restart it with its own options if a
//! slow phase left performance_schema OFF or startup options in effect, write the snapshot
//! back, publish the end state, retrying while the server is unreachable, and only while this
//! psprobe holds the lock.
//!
//! Must not: decide whether to restore (the roles machine does) or restore without the lock.

use std::time::Duration;

use super::lead::{ServerMode, MAX_RESTART_FAILURES};
use super::runner::lost_lead;
use super::settings::ControllerSettings;
use crate::controller::client::leadership::Leadership;
use crate::controller::client::restart::restart_and_wait;
use crate::controller::client::server::Controller;
use crate::controller::error::{ControllerError, Result};
use crate::controller::model::phase_row::PhaseRow;
use crate::controller::model::snapshot::Snapshot;
use crate::stats::Scenarios;

/// Restores only while holding the lock: a leader whose lock connection died (it was stopped
/// or cut off, and a follower ended its connections) takes the lock anew if it is free, and
/// leaves the restore to whoever holds it otherwise (`LostLead`).
async fn keep_or_take_lead(s: &ControllerSettings, lead: &mut Leadership) -> Result<()> {
    if lead.holds_lock().await.unwrap_or(false) {
        return Ok(());
    }
    let mut fresh = Leadership::connect(&s.dsn).await?;
    if fresh.try_acquire().await? {
        std::mem::replace(lead, fresh).release().await;
        return Ok(());
    }
    fresh.release().await;
    Err(lost_lead(&s.dsn))
}

/// Restores the snapshot (restarting with the server's own options first if a slow phase left
/// performance_schema OFF or startup options in effect), and retries while the server is
/// unreachable, for up to the restart timeout.
pub(crate) async fn leave_as_found(
    s: &ControllerSettings,
    ctl: &mut Controller,
    lead: &mut Leadership,
    end_state: &str,
    mode: &ServerMode,
    scenarios: &Scenarios,
) -> Result<()> {
    let Some(snapshot) = Snapshot::load_if_exists(&s.state_file)? else {
        return Ok(());
    };
    let deadline = tokio::time::Instant::now() + s.restart_timeout.max(Duration::from_secs(30));
    let mut restart_needed = *mode != ServerMode::Default;
    let mut hook_failures = 0u32;
    let mut out_of_tries = false;
    loop {
        let attempt = async {
            let mut fresh = Controller::connect(&s.dsn).await?;
            keep_or_take_lead(s, lead).await?;
            let ps_off = fresh.info().performance_schema == Some(false);
            if ps_off || restart_needed {
                if let Some(command) = &s.restart_cmd {
                    scenarios.set_restarting(true);
                    let restarted =
                        restart_and_wait(command, true, "", s.restart_timeout, &s.dsn).await;
                    scenarios.set_restarting(false);
                    match restarted {
                        Ok((back, timing)) => {
                            restart_needed = false;
                            tracing::info!(
                                "restarted the server with its own options to restore it: {}",
                                timing.describe()
                            );
                            fresh = back;
                        }
                        Err(e) => {
                            hook_failures += 1;
                            give_up_restarting(hook_failures, ps_off, &e).inspect_err(|_| {
                                out_of_tries = hook_failures >= MAX_RESTART_FAILURES
                            })?;
                            // The hook keeps failing on a server that runs with
                            // performance_schema ON: every setting it has at runtime is
                            // written back below; only a restart clears startup options.
                            restart_needed = false;
                            fresh = Controller::connect(&s.dsn).await?;
                        }
                    }
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
                let done = PhaseRow {
                    scenario: "none".into(),
                    state: end_state.into(),
                    leader: s.identity.clone(),
                    ..PhaseRow::default()
                };
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
            Err(lost @ ControllerError::LostLead { .. }) => return Err(lost),
            Err(e) if tokio::time::Instant::now() < deadline && !out_of_tries => {
                tracing::warn!("cannot restore performance_schema settings yet ({e}); retrying");
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
            Err(e) => return Err(e),
        }
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
