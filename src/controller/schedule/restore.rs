//! Leaving the server as found at the end of a lead: restart it with its own options if a
//! slow phase left performance_schema OFF or startup options in effect, write the snapshot
//! back, publish the end state, retrying while the server is unreachable, and only while this
//! psprobe holds the lock.
//!
//! Must not: decide whether to restore (the roles machine does) or restore without the lock.

use std::time::Duration;

use super::lead::ServerMode;
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
    loop {
        let attempt = async {
            let mut fresh = Controller::connect(&s.dsn).await?;
            keep_or_take_lead(s, lead).await?;
            if fresh.info().performance_schema == Some(false) || restart_needed {
                if let Some(command) = &s.restart_cmd {
                    scenarios.set_restarting(true);
                    let restarted =
                        restart_and_wait(command, true, "", s.restart_timeout, &s.dsn).await;
                    scenarios.set_restarting(false);
                    let (back, timing) = restarted?;
                    restart_needed = false;
                    tracing::info!(
                        "restarted the server with its own options to restore it: {}",
                        timing.describe()
                    );
                    fresh = back;
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
            Err(e) if tokio::time::Instant::now() < deadline => {
                tracing::warn!("cannot restore performance_schema settings yet ({e}); retrying");
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
            Err(e) => return Err(e),
        }
    }
}
