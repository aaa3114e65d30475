//! What this run found on the server and owns there: its snapshot (the settings found, the rows
//! someone else claimed since, a restart under way and what the last one left running) and the
//! switcher that writes scenarios (with its ledger of what psprobe wrote). It outlives a lost
//! connection or a lost and regained lead, so a run that resumes keeps everything it knew.
//!
//! Every change is saved at once, to the state file first and then to the server
//! (`psprobe.snapshot`), so a kill at any instant leaves a record the next start (or a
//! follower taking over) resolves without `--force`.
//!
//! Must not: decide when to switch or restore (the leader and the restore do), or run SQL of
//! its own (`client` does).

use std::path::PathBuf;

use crate::controller::client::fast_switch::Switcher;
use crate::controller::client::leadership::Leadership;
use crate::controller::error::Result;
use crate::controller::model::ownership::{Claim, Ledger, Origin};
use crate::controller::model::setup_tables::SetupState;
use crate::controller::model::snapshot::{RestartIntent, ServerIdentity, Snapshot};
use crate::observe::ControllerHandle;
use crate::phase_log::{ClaimRecord, PhaseLog};

use super::mode::ServerMode;

/// Claims logged one line each before the rest are summed up in one.
const CLAIMS_LOGGED: usize = 20;

pub(crate) struct AsFound {
    pub(crate) snapshot: Snapshot,
    pub(crate) switcher: Switcher,
    state_file: PathBuf,
}

impl AsFound {
    /// A run that found `snapshot` (saved by the caller before its first change).
    pub(crate) fn new(snapshot: Snapshot, state_file: PathBuf) -> Self {
        let ledger = Ledger::new(snapshot.state.clone(), snapshot.claims.clone());
        AsFound {
            snapshot,
            switcher: Switcher::new(ledger),
            state_file,
        }
    }

    pub(crate) fn state_file(&self) -> &std::path::Path {
        &self.state_file
    }

    /// Saves the snapshot: the state file (atomic, durable), then the server's copy. The
    /// server's may fail (it is down, the grant is gone): the file is what this host restores
    /// from, and the caller decides whether the server's copy matters now.
    pub(crate) async fn save(&self, lead: &mut Leadership) -> Result<()> {
        self.snapshot.save(&self.state_file)?;
        lead.save_snapshot(&self.snapshot).await
    }

    /// Rows someone else set, seen by a switch or a restore: kept in the snapshot (and saved),
    /// each logged once.
    pub(crate) async fn claimed(&mut self, claims: &[Claim], lead: &mut Leadership) -> Result<()> {
        if claims.is_empty() {
            return Ok(());
        }
        log_claims(claims);
        self.snapshot.claims = self.switcher.ledger().claims().to_vec();
        self.save(lead).await
    }

    /// A restart of psprobe's is about to run (`into`: what it restarts into): recorded first.
    pub(crate) fn restarting(&mut self, intent: RestartIntent) -> Result<()> {
        self.snapshot.restart = Some(intent);
        self.snapshot.save(&self.state_file)
    }

    /// psprobe's restart is through: the server runs as `mode`, started at `identity`'s start
    /// (a later recovery must not take that start for someone else's restart).
    pub(crate) async fn restarted(
        &mut self,
        mode: &ServerMode,
        identity: &ServerIdentity,
        lead: &mut Leadership,
    ) -> Result<()> {
        self.snapshot.restart = None;
        self.snapshot.mode = mode.recorded();
        self.snapshot.known_start_unix = identity.started_at_unix;
        self.switcher.forget();
        self.save(lead).await
    }

    /// The server restarted without psprobe and came back with `live`: that is the state to
    /// leave from now on; every row it brought back other than psprobe found it is the
    /// restart's (claimed). Returns those claims; the caller saves.
    pub(crate) fn rebase(&mut self, live: &SetupState, identity: &ServerIdentity) -> Vec<Claim> {
        let claims = self
            .switcher
            .ledger_mut()
            .rebase(live, crate::clock::now_ms());
        self.switcher.forget();
        self.snapshot.state = live.clone();
        self.snapshot.claims = self.switcher.ledger().claims().to_vec();
        self.snapshot.known_start_unix = identity.started_at_unix;
        self.snapshot.restart = None;
        self.snapshot.mode = None;
        claims
    }
}

/// A claim as the phase log records it.
fn claim_record(claim: &Claim) -> ClaimRecord {
    ClaimRecord::new(
        claim.seen_at_ms,
        claim.setting(),
        claim.value(),
        claim.psprobe_left.clone(),
        origin_name(claim),
    )
}

/// A claim kept where it is read: the phase log (for the report) and the admin's
/// `setting_changes` table with its counter.
pub(crate) fn record_claim(
    claim: &Claim,
    observer: &ControllerHandle,
    log: &mut PhaseLog,
) -> Result<()> {
    observer.setting_claimed(
        claim.setting(),
        claim.value(),
        claim.psprobe_left.clone(),
        origin_name(claim),
        claim.seen_at_ms,
    );
    log.append(&claim_record(claim))?;
    Ok(())
}

fn origin_name(claim: &Claim) -> &'static str {
    match claim.origin {
        Origin::Runtime => "runtime",
        Origin::Restart => "restart",
        Origin::WhileStopped => "while_stopped",
    }
}

/// One line per claim (the first [`CLAIMS_LOGGED`]), then one for the rest.
pub(crate) fn log_claims(claims: &[Claim]) {
    for claim in claims.iter().take(CLAIMS_LOGGED) {
        tracing::warn!(
            "{claim}: {} by someone else; psprobe keeps it as it is, leaves it out of every \
             later switch and will not put it back",
            claim.origin.describe()
        );
    }
    if claims.len() > CLAIMS_LOGGED {
        tracing::warn!(
            "and {} more settings changed by someone else, kept likewise (all of them are in the \
             phase log and the report)",
            claims.len() - CLAIMS_LOGGED
        );
    }
}
