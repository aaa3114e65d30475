//! What writing back a snapshot left behind (by a run that did not finish, or by `ps apply`)
//! may change: only psprobe's own rows. Every row is judged as the ledger judges it during a
//! run ([`super::ownership`]): a row holding what psprobe found or what it last applied (both
//! sides of a switch it may not have finished) is psprobe's and is written back; any other
//! value is someone else's and stays. A server restart psprobe did not make leaves nothing of
//! psprobe's (its setup tables hold the server's own settings), so the snapshot is dropped; a
//! restart psprobe made into `pfsoff` or startup options is undone first. psprobe refuses, one
//! line, only when it cannot tell what it last applied. No I/O here; `left_behind.rs` reads
//! the rows and acts on the verdict.

use std::fmt;

use super::catalog::Catalog;
use super::ownership::{keep_claimed, Claim, Ledger, Origin};
use super::scenario::{Scenario, Settings};
use super::setup_tables::{compare, SetupState};
use super::snapshot::{RestartIntent, ServerIdentity, Snapshot, OWN_OPTIONS};
use crate::controller::model::phase_row::{PhaseRow, SwitchIntent};

/// What psprobe last did to the server on top of the snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum LastApplied {
    /// Nothing yet (the run had not switched): the live rows must be the snapshot's.
    Nothing,
    /// This scenario, as the run published it or `ps apply` recorded it.
    Scenario(String),
    /// A switch from one scenario to the other was sent and never confirmed: each row may
    /// hold either.
    Switching { from: String, to: String },
    /// No record: a snapshot of an older psprobe, or the phase row is another run's.
    Unknown,
}

impl fmt::Display for LastApplied {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LastApplied::Nothing => write!(f, "no change"),
            LastApplied::Scenario(s) => write!(f, "scenario {s}"),
            LastApplied::Switching { from, to } => {
                write!(f, "a switch from {from} to {to} it did not finish")
            }
            LastApplied::Unknown => write!(f, "nothing it recorded"),
        }
    }
}

/// What the snapshot's run (or `ps apply`) last applied, from the snapshot, the phase row and
/// the switch intent the run wrote before its last switch.
pub(crate) fn last_applied(
    snapshot: &Snapshot,
    phase: Option<&PhaseRow>,
    intent: Option<&SwitchIntent>,
) -> LastApplied {
    if let Some(name) = &snapshot.applied {
        return LastApplied::Scenario(name.clone());
    }
    let Some(leader) = &snapshot.leader else {
        return LastApplied::Unknown;
    };
    let row = phase.filter(|r| r.leader == *leader);
    // The intent comes before a switch's statements, the phase row after them: an intent
    // newer than the row (or for another scenario in the same phase) was never confirmed.
    let pending = intent.filter(|i| {
        i.leader == *leader
            && row.is_none_or(|r| r.phase < i.phase || (r.phase == i.phase && r.scenario != i.to))
    });
    if let Some(i) = pending {
        return LastApplied::Switching {
            from: i.from.clone(),
            to: i.to.clone(),
        };
    }
    match row {
        Some(row) if row.scenario == "none" => LastApplied::Nothing,
        Some(row) => LastApplied::Scenario(row.scenario.clone()),
        None => LastApplied::Unknown,
    }
}

/// Why a snapshot cannot be written back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Why {
    /// psprobe cannot tell what it last applied.
    NoRecord { detail: String },
}

impl fmt::Display for Why {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Why::NoRecord { detail } => {
                write!(f, "psprobe cannot tell what it last applied ({detail})")
            }
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Write `target` back: psprobe's rows as found, everyone else's as they are. `rows`:
    /// cells that differ now (0: nothing to write); `claims`: rows found someone else's now.
    Restore {
        target: SetupState,
        rows: usize,
        claims: Vec<Claim>,
    },
    /// The server restarted, not by psprobe, after psprobe last saw it (at `then`; now it
    /// started at `now`, Unix seconds): nothing of psprobe's is left on it.
    Restarted { then: u64, now: u64 },
    /// psprobe's own restart left the server running as `mode` (`pfsoff`, `NAME@startup`):
    /// restart it with its own options first, then judge again.
    RestartFirst { mode: String },
    /// Cannot be decided: changes nothing.
    Refuse { why: Why, differ: usize },
}

/// The rows `last` leaves on a server whose rows were `base` (`None`: not known here).
pub(crate) fn rows_after(catalog: &Catalog, last: &str, base: &SetupState) -> Option<SetupState> {
    let scenario = lookup(catalog, last)?;
    if scenario.settings == Settings::Original {
        return Some(base.clone());
    }
    scenario
        .rows_like()?
        .plan(base)
        .ok()
        .map(|plan| plan.expected)
}

fn lookup(catalog: &Catalog, name: &str) -> Option<Scenario> {
    if name == "none" || name == "original" {
        let mut original = Scenario::original_from(&SetupState::default());
        original.settings = Settings::Original;
        return Some(original);
    }
    catalog
        .lookup(name)
        .or_else(|| catalog.lookup(super::startup::twin_name(name)?))
        .map(|s| s.into_owned())
}

/// Every state psprobe may have left, given what it last applied: the scenario's rows (both
/// sides of an unfinished switch). A scenario that leaves a table alone leaves it as the one
/// before it did: then every scheduled scenario's rows count. `None`: a scenario this psprobe
/// cannot plan.
pub(crate) fn possibly_written(
    catalog: &Catalog,
    snapshot: &Snapshot,
    last: &LastApplied,
) -> Option<Vec<SetupState>> {
    let base = &snapshot.state;
    let names: Vec<&str> = match last {
        LastApplied::Nothing => return Some(Vec::new()),
        LastApplied::Scenario(name) => vec![name.as_str()],
        LastApplied::Switching { from, to } => vec![from.as_str(), to.as_str()],
        LastApplied::Unknown => return None,
    };
    let mut out = Vec::new();
    let mut partial = false;
    for name in names {
        let scenario = lookup(catalog, name)?;
        let (c, i) = scenario
            .rows_like()
            .map_or((true, true), Scenario::determines);
        partial |= !(c && i);
        out.push(rows_after(catalog, name, base)?);
    }
    if partial {
        for name in &snapshot.scenarios {
            if let Some(rows) = rows_after(catalog, name, base) {
                out.push(rows);
            }
        }
    }
    Some(out)
}

/// Whether `server` started in the window of a restart psprobe began (`intent`): from when the
/// command started to its timeout, with slack for whole-second uptimes.
fn restarted_by(intent: &RestartIntent, server: &ServerIdentity) -> Option<bool> {
    const SLACK_S: u64 = 2;
    let started = server.started_at_unix?;
    Some(
        started + SLACK_S >= intent.since_unix
            && started <= intent.since_unix + intent.timeout_s + SLACK_S,
    )
}

/// Whether `snapshot` may be written back over `live` on `server` (`live`: `None` when
/// performance_schema is OFF), given what psprobe `last` applied.
pub(crate) fn judge(
    snapshot: &Snapshot,
    last: &LastApplied,
    live: Option<&SetupState>,
    server: &ServerIdentity,
    catalog: &Catalog,
    now_ms: u64,
) -> Verdict {
    let restarted = Verdict::Restarted {
        then: snapshot.known_start().unwrap_or(0),
        now: server.started_at_unix.unwrap_or(0),
    };
    let mut mode = snapshot.mode.clone();
    let mut all_psprobes = false;
    match snapshot
        .restart
        .as_ref()
        .map(|r| (r, restarted_by(r, server)))
    {
        // psprobe's own restart happened: the server runs as that restart asked.
        Some((intent, Some(true))) => {
            mode = (intent.into != OWN_OPTIONS).then(|| intent.into.clone());
            // Its setup tables hold the server's defaults because psprobe restarted it: all
            // of that is psprobe's to undo.
            all_psprobes = true;
        }
        // Started after the restart's window: someone else restarted it since.
        Some((_, Some(false))) if snapshot.restarted_since(server) => return restarted,
        // A run that left the server as pfsoff or with startup options, restarted since (its
        // own options, by hand): that finishes psprobe's restart, whose effects are psprobe's
        // to undo. Back with performance_schema OFF: someone's choice, nothing to restore.
        None if snapshot.restarted_since(server) && mode.is_some() => {
            if live.is_none() {
                return restarted;
            }
            mode = None;
            all_psprobes = true;
        }
        // Restarted by someone else, psprobe had nothing of its own in effect but its rows.
        None if snapshot.restarted_since(server) => return restarted,
        // The restart never happened (or the start time is unknown): as before it.
        _ => {}
    }
    if let Some(mode) = mode {
        return Verdict::RestartFirst { mode };
    }
    let Some(live) = live else {
        // OFF without a restart of psprobe's: the DBA's choice (PS cannot go OFF at runtime).
        return restarted;
    };
    if all_psprobes {
        let target = keep_claimed(&snapshot.state, &snapshot.claims, live);
        let rows = compare(&target, live).len();
        return Verdict::Restore {
            target,
            rows,
            claims: Vec::new(),
        };
    }
    let Some(written) = possibly_written(catalog, snapshot, last) else {
        let differ = compare(&snapshot.state, live).len();
        if differ == 0 {
            return Verdict::Restore {
                target: snapshot.state.clone(),
                rows: 0,
                claims: Vec::new(),
            };
        }
        let detail = match last {
            LastApplied::Unknown => "its record on the server, psprobe.phase, is not that run's \
                                     or is gone"
                .to_string(),
            other => format!(
                "its last change, {other}, names a scenario this psprobe does not know; pass \
                 the same --config as that run"
            ),
        };
        return Verdict::Refuse {
            why: Why::NoRecord { detail },
            differ,
        };
    };
    let mut ledger = Ledger::with_written(snapshot.state.clone(), written, snapshot.claims.clone());
    let claims = ledger.observe(live, Origin::WhileStopped, now_ms);
    let target = ledger.restore_target(live);
    let rows = compare(&target, live).len();
    Verdict::Restore {
        target,
        rows,
        claims,
    }
}

#[cfg(test)]
#[path = "stale_tests.rs"]
mod tests;
