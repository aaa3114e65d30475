//! Snapshots left behind: on the server (`psprobe.snapshot`, shared by every psprobe of that
//! server) or in the state file. Each is found, judged ([`crate::controller::model::stale`]), then written back,
//! refused or discarded, and once resolved removed from both places, so a later run can never
//! apply it again.

use std::path::Path;

use mysql_async::Row;

use super::server::{ApplyReport, Controller};
use super::LOCK_NAME;
use crate::controller::error::{ControllerError, Result};
use crate::controller::model::catalog::Catalog;
use crate::controller::model::ownership::Claim;
use crate::controller::model::phase_row::PhaseRow;
use crate::controller::model::phase_row::SwitchIntent;
use crate::controller::model::snapshot::Snapshot;
use crate::controller::model::stale::{judge, last_applied, LastApplied, Verdict};

/// "No such table" and "unknown database": psprobe's own tables are not there (yet).
const NO_SUCH_TABLE: u16 = 1146;
const BAD_DB: u16 = 1049;

/// How a snapshot left behind is resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Written back only if it is provably the truth (the controller; plain `ps restore`).
    Proved,
    /// The operator's say-so: written back whatever the live rows are (`ps restore --force`).
    Force,
    /// The operator's say-so: the live rows stay, the snapshot goes (`ps restore --discard`).
    Discard,
}

/// What [`resolve`] did.
#[derive(Debug)]
pub(crate) enum Outcome {
    /// Nothing was left behind.
    Nothing,
    Restored {
        snapshot: Snapshot,
        report: ApplyReport,
        origin: String,
        /// What the live rows were proved to be (`None`: forced, or an unrecorded snapshot).
        proved: Option<LastApplied>,
        /// Rows found someone else's now (changed while no psprobe ran): kept as they are.
        claims: Vec<Claim>,
    },
    Discarded {
        snapshot: Snapshot,
        origin: String,
        /// Why: the operator asked (`None`), or the server restarted since, not by psprobe
        /// (then, now: its start times in Unix seconds).
        restarted: Option<(u64, u64)>,
    },
    /// The run restarted the server into `mode` (`pfsoff`, `NAME@startup`) and never back:
    /// nothing was changed; restart it with its own options, then resolve again.
    RestartFirst {
        snapshot: Snapshot,
        origin: String,
        mode: String,
    },
}

/// How to tell the operator what to run: `psprobe ps ... restore ...`, to which `--discard` or
/// `--force` is appended.
pub(crate) struct Hint {
    pub restore_command: String,
    /// Snapshots without any record of what was applied (older psprobes) are written back
    /// (`ps restore`: the operator asked) or refused (the controller).
    pub trust_unrecorded: bool,
}

/// Where a snapshot was found.
struct Found {
    snapshot: Snapshot,
    on_server: bool,
    in_file: bool,
}

/// Whether the account must be able to read psprobe's tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Rights {
    /// A controller run: it writes snapshots there, so one it cannot read could be a dead
    /// run's, and missing it would lose that run's settings. Not being allowed to read is an
    /// error naming the grant.
    Required,
    /// `ps apply` / `ps restore`: an account without rights on psprobe.* was never a
    /// controller's, so nothing of its can be there.
    Optional,
}

fn absent(e: &ControllerError, rights: Rights) -> bool {
    match e {
        ControllerError::Sql { code, .. } => *code == NO_SUCH_TABLE || *code == BAD_DB,
        ControllerError::NoPrivilege { .. } => rights == Rights::Optional,
        _ => false,
    }
}

/// The snapshot kept on the server (`None`: none, psprobe's tables are missing, or, with
/// [`Rights::Optional`], this account may not read them).
pub(crate) async fn on_server(ctl: &mut Controller, rights: Rights) -> Result<Option<Snapshot>> {
    let sql = "SELECT body FROM psprobe.snapshot WHERE id = 1";
    let row: Option<Row> = match ctl
        .batch_first_row(sql, "read the snapshot on the server")
        .await
    {
        Ok(row) => row,
        Err(e) if absent(&e, rights) => return Ok(None),
        Err(e) => return Err(e),
    };
    let Some((body,)) = row.and_then(|r| mysql_async::from_row_opt::<(String,)>(r).ok()) else {
        return Ok(None);
    };
    match serde_json::from_str::<Snapshot>(&body) {
        Ok(s) => Ok(Some(s)),
        Err(e) => {
            tracing::warn!(
                "ignoring psprobe.snapshot on {}: not a snapshot this psprobe reads ({e})",
                ctl.target()
            );
            Ok(None)
        }
    }
}

/// The row the last leader published in `psprobe.phase`.
pub(crate) async fn phase_row(ctl: &mut Controller, rights: Rights) -> Result<Option<PhaseRow>> {
    let sql = "SELECT scenario, block, phase, state, leader FROM psprobe.phase WHERE id = 1";
    match ctl.batch_first_row::<Row>(sql, "read the phase row").await {
        Ok(row) => Ok(row.and_then(|r| {
            mysql_async::from_row_opt::<(String, u64, u64, String, String)>(r)
                .ok()
                .map(PhaseRow::from_columns)
        })),
        Err(e) if absent(&e, rights) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Takes the controller lock on `ctl`'s connection (held until it closes), so no controller
/// starts while the CLI changes settings. `Err(ControllerRunning)` if one holds it.
pub(crate) async fn hold_controller_lock(ctl: &mut Controller) -> Result<()> {
    let got: Option<Row> = ctl
        .batch_first_row(
            &format!("SELECT GET_LOCK('{LOCK_NAME}', 0)"),
            "take the controller lock",
        )
        .await?;
    let got = got.and_then(|r| mysql_async::from_row_opt::<(Option<i64>,)>(r).ok());
    if got.and_then(|(g,)| g) == Some(1) {
        return Ok(());
    }
    let holder: Option<Row> = ctl
        .batch_first_row(
            &format!("SELECT IS_USED_LOCK('{LOCK_NAME}')"),
            "find the running controller",
        )
        .await?;
    let connection = holder
        .and_then(|r| mysql_async::from_row_opt::<(Option<u64>,)>(r).ok())
        .and_then(|(c,)| c)
        .unwrap_or(0);
    Err(ControllerError::ControllerRunning {
        target: ctl.target().to_string(),
        connection,
    })
}

async fn find(ctl: &mut Controller, state_file: &Path, rights: Rights) -> Result<Option<Found>> {
    let identity = ctl.info().identity.clone();
    let mut server = on_server(ctl, rights).await?;
    if let Some(s) = server.as_ref().filter(|s| !s.server.same_server(&identity)) {
        // A copy (a replica, a restored backup): not this server's, and not ours to remove.
        tracing::warn!(
            "ignoring psprobe.snapshot on {}: it was taken on {}",
            ctl.target(),
            s.server.describe()
        );
        server = None;
    }
    let file = Snapshot::load_if_exists(state_file)?;
    if let Some(f) = &file {
        f.check_server(&identity, state_file)?;
    }
    let in_file = file.is_some();
    Ok(match (server, file) {
        (Some(snapshot), _) => Some(Found {
            snapshot,
            on_server: true,
            in_file,
        }),
        (None, Some(snapshot)) => Some(Found {
            snapshot,
            on_server: false,
            in_file,
        }),
        (None, None) => None,
    })
}

async fn remove(ctl: &mut Controller, found: &Found, state_file: &Path) -> Result<()> {
    if found.on_server {
        ctl.exec(
            "DELETE FROM psprobe.snapshot WHERE id = 1",
            "remove the snapshot on the server",
        )
        .await?;
    }
    if found.in_file {
        Snapshot::remove(state_file)?;
    }
    Ok(())
}

fn origin(found: &Found, state_file: &Path) -> String {
    match (found.on_server, found.in_file) {
        (true, true) => format!(
            "on the server (psprobe.snapshot) and in {}",
            state_file.display()
        ),
        (true, false) => "on the server (psprobe.snapshot)".into(),
        _ => format!("in {}", state_file.display()),
    }
}

/// The switch intent the last leader wrote before its last switch.
pub(crate) async fn switch_intent(
    ctl: &mut Controller,
    rights: Rights,
) -> Result<Option<SwitchIntent>> {
    let sql = "SELECT leader, from_scenario, to_scenario, phase FROM psprobe.switch_intent \
               WHERE id = 1";
    match ctl
        .batch_first_row::<Row>(sql, "read the switch intent")
        .await
    {
        Ok(row) => Ok(row.and_then(|r| {
            mysql_async::from_row_opt::<(String, String, String, u64)>(r)
                .ok()
                .map(|(leader, from, to, phase)| SwitchIntent {
                    leader,
                    from,
                    to,
                    phase,
                })
        })),
        Err(e) if absent(&e, rights) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Resolves whatever snapshot was left behind for this server: the server's (it wins: every
/// psprobe of the server shares it) or else the state file's. [`Mode::Proved`] writes back
/// psprobe's own rows only ([`crate::controller::model::stale`]): someone else's stay as they
/// are, a server restarted since by someone else drops the snapshot, a server psprobe left as
/// pfsoff or with startup options is [`Outcome::RestartFirst`]; it refuses with
/// [`ControllerError::StaleSnapshot`], changing nothing, only when it cannot tell what the run
/// last applied. Once written back or discarded the snapshot is removed from both places.
pub(crate) async fn resolve(
    ctl: &mut Controller,
    state_file: &Path,
    catalog: &Catalog,
    mode: Mode,
    rights: Rights,
    hint: &Hint,
) -> Result<Outcome> {
    let Some(found) = find(ctl, state_file, rights).await? else {
        return Ok(Outcome::Nothing);
    };
    let origin = origin(&found, state_file);
    if mode == Mode::Discard {
        remove(ctl, &found, state_file).await?;
        return Ok(Outcome::Discarded {
            snapshot: found.snapshot,
            origin,
            restarted: None,
        });
    }
    if mode == Mode::Force {
        ctl.require_ps()?;
        let report = ctl.restore(&found.snapshot).await?;
        remove(ctl, &found, state_file).await?;
        return Ok(Outcome::Restored {
            snapshot: found.snapshot,
            report,
            origin,
            proved: None,
            claims: Vec::new(),
        });
    }
    let phase = phase_row(ctl, rights).await?;
    let intent = switch_intent(ctl, rights).await?;
    let last = last_applied(&found.snapshot, phase.as_ref(), intent.as_ref());
    let unrecorded = found.snapshot.leader.is_none() && found.snapshot.applied.is_none();
    let live = match ctl.info().performance_schema {
        Some(true) => Some(ctl.read_state().await?),
        _ => None,
    };
    let verdict = judge(
        &found.snapshot,
        &last,
        live.as_ref(),
        &ctl.info().identity,
        catalog,
        crate::clock::now_ms(),
    );
    let (target, claims) = match verdict {
        Verdict::Restore { target, claims, .. } => (target, claims),
        Verdict::Restarted { then, now } => {
            remove(ctl, &found, state_file).await?;
            return Ok(Outcome::Discarded {
                snapshot: found.snapshot,
                origin,
                restarted: Some((then, now)),
            });
        }
        Verdict::RestartFirst { mode } => {
            return Ok(Outcome::RestartFirst {
                snapshot: found.snapshot,
                origin,
                mode,
            })
        }
        Verdict::Refuse { .. } if unrecorded && hint.trust_unrecorded => {
            (found.snapshot.state.clone(), Vec::new())
        }
        Verdict::Refuse { why, differ } => {
            return Err(ControllerError::StaleSnapshot {
                summary: format!("{origin} (taken {}): {why}", found.snapshot.taken_at),
                differ,
                discard: format!("{} --discard", hint.restore_command),
                force: format!("{} --force", hint.restore_command),
            })
        }
    };
    ctl.require_ps()?;
    let report = ctl.restore_rows(&found.snapshot, &target).await?;
    remove(ctl, &found, state_file).await?;
    Ok(Outcome::Restored {
        snapshot: found.snapshot,
        report,
        origin,
        proved: Some(last),
        claims,
    })
}
