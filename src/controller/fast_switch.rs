//! Switching scenarios many times a second. The first switch into a runtime scenario is the
//! full one (read every row, plan, apply, read every row back and compare); it also records a
//! checksum of both setup tables as the server computes it. Later switches into the same
//! scenario send its statements and compare one checksum row, a few milliseconds in all; a
//! mismatch falls back to the full path, so a scenario is never labelled without its rows being
//! confirmed.

use std::collections::HashMap;

use super::error::Result;
use super::scenario::{Scenario, Settings};
use super::server::Controller;
use super::setup_tables::{CONSUMERS, INSTRUMENTS};
use super::snapshot::Snapshot;

/// One row: `count:sum of CRC32(name=enabled[/timed])` for each setup table.
fn checksum_sql() -> String {
    format!(
        "SELECT (SELECT CONCAT(COUNT(*), ':', COALESCE(SUM(CRC32(CONCAT(NAME, '=', ENABLED))), 0)) \
         FROM {CONSUMERS}), (SELECT CONCAT(COUNT(*), ':', COALESCE(SUM(CRC32(CONCAT(NAME, '=', \
         ENABLED, '/', IFNULL(TIMED, '-')))), 0)) FROM {INSTRUMENTS})"
    )
}

struct Known {
    statements: Vec<String>,
    checksum: (String, String),
}

/// What one switch did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Switched {
    /// Statements sent (apply and verify).
    pub statements: u64,
    /// Every row was read back and compared (first switch, or the checksum differed).
    pub full: bool,
}

#[derive(Default)]
pub struct Switcher {
    known: HashMap<String, Known>,
}

impl Switcher {
    /// Puts the server in `scenario` (`original`: the snapshot) and confirms it.
    pub async fn switch(
        &mut self,
        ctl: &mut Controller,
        scenario: &Scenario,
        snapshot: &Snapshot,
    ) -> Result<Switched> {
        if let Some(known) = self.known.get(&scenario.name) {
            for sql in &known.statements {
                ctl.exec(sql, "switch scenario").await?;
            }
            let now = checksum(ctl).await?;
            let statements = known.statements.len() as u64 + 1;
            if now == known.checksum {
                return Ok(Switched {
                    statements,
                    full: false,
                });
            }
            tracing::debug!(
                "scenario {}: checksum {now:?} differs from {:?}; verifying every row",
                scenario.name,
                known.checksum
            );
        }
        let report = ctl.apply_or_restore(scenario, snapshot).await?;
        let sum = checksum(ctl).await?;
        // Only runtime scenarios' statements are independent of the rows before them.
        if matches!(scenario.settings, Settings::Runtime { .. }) {
            self.known.insert(
                scenario.name.clone(),
                Known {
                    statements: report.statements.clone(),
                    checksum: sum,
                },
            );
        }
        Ok(Switched {
            statements: report.statements.len() as u64 + 3,
            full: true,
        })
    }

    /// Forget what was learned (after a restart the server may hold other rows).
    pub fn forget(&mut self) {
        self.known.clear();
    }
}

async fn checksum(ctl: &mut Controller) -> Result<(String, String)> {
    let (c, i): (Option<String>, Option<String>) =
        ctl.first(&checksum_sql(), "checksum the setup tables").await?;
    Ok((c.unwrap_or_default(), i.unwrap_or_default()))
}
