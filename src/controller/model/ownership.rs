//! Who owns each row of the setup tables while psprobe works on a server: psprobe owns what it
//! found (the snapshot) and what it wrote since; a row that holds anything else was changed by
//! someone else (a DBA at runtime, or a restart with new options) and is theirs from then on:
//! kept as they left it, left out of every later switch, named in the log, the phase log, the
//! report and the admin interface, and never put back by a restore.
//!
//! What psprobe "wrote" is a set: one state after a switch the server confirmed, two while a
//! switch may be half done (a crash, a timeout or an error in the middle of its batch leaves
//! each row either way), always with the found state beside them.
//!
//! Must not: do I/O. The switcher and the restore (`client/`) read the rows and run the plans
//! made here.

use std::collections::{BTreeMap, HashMap};
use std::fmt;

use serde::{Deserialize, Serialize};

use super::pattern::quote;
use super::scenario::Plan;
use super::setup_tables::{yes_no, yes_no_null, ConsumerRow, SetupState, CONSUMERS, INSTRUMENTS};

/// Which setup table a row is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Table {
    Consumers,
    Instruments,
}

impl Table {
    /// `performance_schema.setup_consumers`.
    pub fn sql_name(self) -> &'static str {
        match self {
            Table::Consumers => CONSUMERS,
            Table::Instruments => INSTRUMENTS,
        }
    }

    /// `setup_consumers`.
    pub fn short(self) -> &'static str {
        self.sql_name().trim_start_matches("performance_schema.")
    }
}

/// One row's values (a consumer has no TIMED).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cells {
    pub enabled: bool,
    pub timed: Option<bool>,
}

impl Cells {
    /// `ENABLED=YES` or `ENABLED=YES TIMED=NO`.
    pub fn describe(self, table: Table) -> String {
        match table {
            Table::Consumers => format!("ENABLED={}", yes_no(self.enabled)),
            Table::Instruments => format!(
                "ENABLED={} TIMED={}",
                yes_no(self.enabled),
                yes_no_null(self.timed)
            ),
        }
    }
}

/// How psprobe came to see a row it did not write.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    /// Changed at runtime while psprobe ran.
    Runtime,
    /// The server restarted (not by psprobe) and came back with it.
    Restart,
    /// Changed while no psprobe ran (found by the next start or `ps restore`).
    WhileStopped,
}

impl Origin {
    pub fn describe(self) -> &'static str {
        match self {
            Origin::Runtime => "changed at runtime during the run",
            Origin::Restart => "changed by a server restart psprobe did not make",
            Origin::WhileStopped => "changed while psprobe was stopped",
        }
    }
}

/// A row someone else set: theirs from now on.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claim {
    pub table: Table,
    pub name: String,
    /// The row as they left it.
    pub enabled: bool,
    pub timed: Option<bool>,
    /// What psprobe had written there (`ENABLED=NO TIMED=NO`), or found there.
    pub psprobe_left: String,
    /// When psprobe first saw it (Unix milliseconds).
    pub seen_at_ms: u64,
    pub origin: Origin,
}

impl Claim {
    pub fn cells(&self) -> Cells {
        Cells {
            enabled: self.enabled,
            timed: self.timed,
        }
    }

    /// `setup_instruments 'wait/io/file/sql/binlog'`.
    pub fn setting(&self) -> String {
        format!("{} '{}'", self.table.short(), self.name)
    }

    /// `ENABLED=YES TIMED=NO`.
    pub fn value(&self) -> String {
        self.cells().describe(self.table)
    }
}

impl fmt::Display for Claim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} is now {} (psprobe had {})",
            self.setting(),
            self.value(),
            self.psprobe_left
        )
    }
}

/// Every row of `state` by (table, name).
pub(crate) fn rows(state: &SetupState) -> HashMap<(Table, &str), Cells> {
    let consumers = state.consumers.iter().map(|r| {
        let cells = Cells {
            enabled: r.enabled,
            timed: None,
        };
        ((Table::Consumers, r.name.as_str()), cells)
    });
    let instruments = state.instruments.iter().map(|r| {
        let cells = Cells {
            enabled: r.enabled,
            timed: r.timed,
        };
        ((Table::Instruments, r.name.as_str()), cells)
    });
    consumers.chain(instruments).collect()
}

/// Most states a ledger keeps as "possibly written": switches that were never confirmed pile up
/// only while the server does not answer, and any of them may have reached it.
const MAX_WRITTEN: usize = 8;

/// What psprobe found and wrote on one server, and the rows that are someone else's.
#[derive(Clone, Debug)]
pub(crate) struct Ledger {
    /// The settings found before the first change (the snapshot's).
    found: SetupState,
    /// What psprobe's last switch left: one state, or several while a switch is unconfirmed.
    written: Vec<SetupState>,
    claims: Vec<Claim>,
}

impl Ledger {
    /// A ledger of a run that found `found` and has written nothing since; `claims` are rows
    /// known to be someone else's already (a snapshot's).
    pub(crate) fn new(found: SetupState, claims: Vec<Claim>) -> Self {
        Ledger {
            found,
            written: Vec::new(),
            claims,
        }
    }

    /// A ledger that may have written any of `written` (a run resolved after it stopped).
    pub(crate) fn with_written(
        found: SetupState,
        written: Vec<SetupState>,
        claims: Vec<Claim>,
    ) -> Self {
        Ledger {
            found,
            written,
            claims,
        }
    }

    #[cfg(test)]
    pub(crate) fn found(&self) -> &SetupState {
        &self.found
    }

    pub(crate) fn claims(&self) -> &[Claim] {
        &self.claims
    }

    /// A switch to `to` is about to be sent: until it is confirmed each row may hold either.
    pub(crate) fn switching(&mut self, to: &SetupState) {
        if !self.written.contains(to) {
            if self.written.len() >= MAX_WRITTEN {
                self.written.remove(0);
            }
            self.written.push(to.clone());
        }
    }

    /// The server holds `to` now (read back, or proved by its checksum).
    pub(crate) fn switched(&mut self, to: &SetupState) {
        self.written = vec![to.clone()];
    }

    /// Compares `live` with what psprobe found and wrote: a row that holds neither is a new
    /// claim (or a claimed row changed again); those are returned and kept. Rows psprobe never
    /// saw (an instrument that appeared with a plugin) are nobody's business here.
    pub(crate) fn observe(&mut self, live: &SetupState, origin: Origin, now_ms: u64) -> Vec<Claim> {
        let found = rows(&self.found);
        let written: Vec<HashMap<(Table, &str), Cells>> = self.written.iter().map(rows).collect();
        let mut claimed: HashMap<(Table, String), usize> = HashMap::new();
        for (i, c) in self.claims.iter().enumerate() {
            claimed.insert((c.table, c.name.clone()), i);
        }
        let mut fresh = Vec::new();
        let mut changed = Vec::new();
        for (key, cells) in rows(live) {
            if let Some(&i) = claimed.get(&(key.0, key.1.to_string())) {
                if self.claims[i].cells() != cells {
                    changed.push((i, cells));
                }
                continue;
            }
            let Some(&was) = found.get(&key) else {
                continue;
            };
            if was == cells || written.iter().any(|w| w.get(&key) == Some(&cells)) {
                continue;
            }
            let left = written
                .last()
                .and_then(|w| w.get(&key))
                .copied()
                .unwrap_or(was);
            fresh.push(Claim {
                table: key.0,
                name: key.1.to_string(),
                enabled: cells.enabled,
                timed: cells.timed,
                psprobe_left: left.describe(key.0),
                seen_at_ms: now_ms,
                origin,
            });
        }
        let mut out = Vec::new();
        for (i, cells) in changed {
            let claim = &mut self.claims[i];
            claim.psprobe_left = claim.value();
            claim.enabled = cells.enabled;
            claim.timed = cells.timed;
            claim.seen_at_ms = now_ms;
            out.push(claim.clone());
        }
        fresh.sort_by(|a, b| (a.table, &a.name).cmp(&(b.table, &b.name)));
        self.claims.extend(fresh.iter().cloned());
        out.extend(fresh);
        out
    }

    /// The server restarted without psprobe: what it came back with is the new "found", and
    /// every row it brought back other than psprobe found it is the restart's (claimed, so
    /// later switches leave it as the DBA started it). Returns those claims.
    pub(crate) fn rebase(&mut self, live: &SetupState, now_ms: u64) -> Vec<Claim> {
        let before = rows(&self.found);
        let mut fresh = Vec::new();
        for (key, cells) in rows(live) {
            let Some(&was) = before.get(&key) else {
                continue;
            };
            if was == cells {
                continue;
            }
            fresh.push(Claim {
                table: key.0,
                name: key.1.to_string(),
                enabled: cells.enabled,
                timed: cells.timed,
                psprobe_left: format!("{} before the restart", was.describe(key.0)),
                seen_at_ms: now_ms,
                origin: Origin::Restart,
            });
        }
        fresh.sort_by(|a, b| (a.table, &a.name).cmp(&(b.table, &b.name)));
        // Rows claimed before the restart: the restart set them anew; what it set is theirs.
        self.claims
            .retain(|c| !fresh.iter().any(|f| f.table == c.table && f.name == c.name));
        self.claims.extend(fresh.iter().cloned());
        self.found = live.clone();
        self.written.clear();
        fresh
    }

    /// How many cells psprobe's last switch left other than found (`None`: a switch was
    /// never confirmed, so it is not known which of its states the server holds).
    pub(crate) fn differing_from_found(&self) -> Option<usize> {
        match self.written.as_slice() {
            [] => Some(0),
            [one] => Some(super::setup_tables::compare(&self.found, one).len()),
            _ => None,
        }
    }

    /// `plan` with every claimed row left out: its statements do not touch them, and it
    /// expects them as `live` holds them.
    pub(crate) fn exclude(&self, plan: Plan, live: &SetupState) -> Plan {
        exclude(plan, &self.claims, live)
    }

    /// What a restore writes: the found settings, but the claimed rows as `live` holds them.
    pub(crate) fn restore_target(&self, live: &SetupState) -> SetupState {
        keep_claimed(&self.found, &self.claims, live)
    }
}

/// `target` with each claimed row as `live` holds it (rows `live` lacks stay as they are).
pub(crate) fn keep_claimed(target: &SetupState, claims: &[Claim], live: &SetupState) -> SetupState {
    let now = rows(live);
    let mut out = target.clone();
    let claimed =
        |table: Table, name: &str| claims.iter().any(|c| c.table == table && c.name == name);
    for row in &mut out.consumers {
        if claimed(Table::Consumers, &row.name) {
            if let Some(cells) = now.get(&(Table::Consumers, row.name.as_str())) {
                *row = ConsumerRow {
                    name: row.name.clone(),
                    enabled: cells.enabled,
                };
            }
        }
    }
    for row in &mut out.instruments {
        if claimed(Table::Instruments, &row.name) {
            if let Some(cells) = now.get(&(Table::Instruments, row.name.as_str())) {
                row.enabled = cells.enabled;
                row.timed = cells.timed;
            }
        }
    }
    out
}

/// `plan` with the claimed rows left out (see [`Ledger::exclude`]).
pub(crate) fn exclude(mut plan: Plan, claims: &[Claim], live: &SetupState) -> Plan {
    if claims.is_empty() {
        return plan;
    }
    let mut names: BTreeMap<Table, Vec<&str>> = BTreeMap::new();
    for c in claims {
        names.entry(c.table).or_default().push(&c.name);
    }
    plan.statements = plan
        .statements
        .iter()
        .map(|s| {
            let table = if s.contains(CONSUMERS) {
                Table::Consumers
            } else {
                Table::Instruments
            };
            match names.get(&table) {
                Some(list) => exclude_names(s, list),
                None => s.clone(),
            }
        })
        .collect();
    plan.expected = keep_claimed(&plan.expected, claims, live);
    plan
}

/// Adds `name not in (...)` to one of psprobe's own UPDATEs (`update T set ...` with or
/// without a `where`).
pub(crate) fn exclude_names(statement: &str, names: &[&str]) -> String {
    let list: Vec<String> = names.iter().map(|n| quote(n)).collect();
    add_condition(statement, &format!("name not in ({})", list.join(",")))
}

/// Adds `condition` to one of psprobe's own UPDATEs, as its `where` or `and` it.
pub(crate) fn add_condition(statement: &str, condition: &str) -> String {
    match statement.to_ascii_lowercase().find(" where ") {
        // The existing condition in parentheses: an `or` in it must not swallow ours.
        Some(at) => {
            let (head, tail) = statement.split_at(at);
            let existing = &tail[" where ".len()..];
            format!("{head} where ({existing}) and {condition}")
        }
        None => format!("{statement} where {condition}"),
    }
}

#[cfg(test)]
#[path = "ownership_tests.rs"]
mod tests;
