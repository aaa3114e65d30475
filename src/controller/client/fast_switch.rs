//! Switching scenarios several times a second, in one round trip each.
//!
//! The first switch into a scenario is the full one: read every row, plan, apply, read every
//! row back and compare; then a checksum of the setup tables the scenario sets, as the server
//! computes it, is remembered. The statements of a runtime scenario set every row of the
//! tables they touch (`enabled = 'YES'`, `enabled = if(name like ..., 'YES', 'NO')`), so after
//! them the state of those tables is known whatever it was before. Later switches into the
//! scenario send, in one batch: the checksum (which checks that the *previous* scenario's rows
//! held through its whole slot, not just at its start), the scenario's statements, and the
//! leader's published row. A checksum that differs marks the previous slot unverified (its
//! segment is then left out of the analysis) and the next switch into that scenario goes the
//! full way again.

use std::collections::HashMap;

use super::server::Controller;
use crate::controller::error::Result;
use crate::controller::model::scenario::{Scenario, Settings};
use crate::controller::model::setup_tables::{CONSUMERS, INSTRUMENTS};
use crate::controller::model::snapshot::Snapshot;

/// One row: `count:sum of CRC32(name=enabled[/timed])` for each setup table.
fn checksum_sql() -> String {
    format!(
        "SELECT (SELECT CONCAT(COUNT(*), ':', COALESCE(SUM(CRC32(CONCAT(NAME, '=', ENABLED))), 0)) \
         FROM {CONSUMERS}), (SELECT CONCAT(COUNT(*), ':', COALESCE(SUM(CRC32(CONCAT(NAME, '=', \
         ENABLED, '/', IFNULL(TIMED, '-')))), 0)) FROM {INSTRUMENTS})"
    )
}

/// The checksums of the tables a scenario sets (`None`: a table it leaves alone).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Sums {
    consumers: Option<String>,
    instruments: Option<String>,
}

impl Sums {
    fn held(&self, now: &(String, String)) -> bool {
        self.consumers.as_ref().is_none_or(|c| *c == now.0)
            && self.instruments.as_ref().is_none_or(|i| *i == now.1)
    }
}

struct Known {
    /// Statements that set every row of the tables the scenario touches (runtime scenarios
    /// only; others always switch the full way).
    statements: Option<Vec<String>>,
    sums: Sums,
}

/// What one switch did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Switched {
    /// Statements sent (checksum, apply, publish).
    pub statements: u64,
    /// Every row was read back and compared.
    pub full: bool,
    /// Whether the previous scenario's rows were still in place at this switch (`None`: not
    /// checked, no previous scenario).
    pub previous_held: Option<bool>,
}

#[derive(Default)]
pub struct Switcher {
    known: HashMap<String, Known>,
    /// The scenario in effect since the last switch.
    current: Option<String>,
}

fn determined(scenario: &Scenario) -> (bool, bool) {
    match &scenario.settings {
        Settings::Runtime {
            consumers,
            instruments,
        } => (consumers.is_some(), instruments.is_some()),
        _ => (true, true),
    }
}

impl Switcher {
    /// Puts the server in `scenario` (`original`: the snapshot) and checks the previous one
    /// held; `publish` (a statement) rides in the same round trip.
    pub async fn switch(
        &mut self,
        ctl: &mut Controller,
        scenario: &Scenario,
        snapshot: &Snapshot,
        publish: Option<&str>,
    ) -> Result<Switched> {
        let previous = self
            .current
            .as_ref()
            .and_then(|name| self.known.get(name))
            .map(|k| k.sums.clone());
        let fast = self
            .known
            .get(&scenario.name)
            .and_then(|k| k.statements.clone());
        if let Some(statements) = fast {
            let mut batch: Vec<String> = Vec::new();
            if previous.is_some() {
                batch.push(checksum_sql());
            }
            batch.extend(statements.iter().cloned());
            batch.extend(publish.map(str::to_string));
            let sent = batch.len() as u64;
            let sql = batch.join(";\n");
            let previous_held = match &previous {
                Some(sums) => {
                    let row: Option<(Option<String>, Option<String>)> =
                        ctl.batch_first_row(&sql, "switch scenario").await?;
                    let now = row.map(|(c, i)| (c.unwrap_or_default(), i.unwrap_or_default()));
                    Some(now.is_some_and(|now| sums.held(&now)))
                }
                None => {
                    ctl.batch_first_row::<(Option<String>,)>(&sql, "switch scenario")
                        .await?;
                    None
                }
            };
            self.after_mismatch(previous_held);
            self.current = Some(scenario.name.clone());
            return Ok(Switched {
                statements: sent,
                full: false,
                previous_held,
            });
        }
        let previous_held = match &previous {
            Some(sums) => Some(sums.held(&checksum(ctl).await?)),
            None => None,
        };
        self.after_mismatch(previous_held);
        let report = ctl
            .apply_or_restore_then(scenario, snapshot, publish)
            .await?;
        let now = checksum(ctl).await?;
        let (c, i) = determined(scenario);
        let statements = matches!(scenario.settings, Settings::Runtime { .. })
            .then(|| report.statements.clone());
        self.known.insert(
            scenario.name.clone(),
            Known {
                statements,
                sums: Sums {
                    consumers: c.then(|| now.0.clone()),
                    instruments: i.then(|| now.1.clone()),
                },
            },
        );
        self.current = Some(scenario.name.clone());
        Ok(Switched {
            statements: report.statements.len() as u64 + 4 + u64::from(publish.is_some()),
            full: true,
            previous_held,
        })
    }

    /// A scenario's rows did not hold: switch the full way into everything again.
    fn after_mismatch(&mut self, held: Option<bool>) {
        if held == Some(false) {
            tracing::warn!(
                "performance_schema settings of scenario {} changed during its slot (by another \
                 session?); its segment is left out, and every scenario is verified row by row \
                 again",
                self.current.as_deref().unwrap_or("?")
            );
            self.known.clear();
        }
    }

    /// Whether the rows of the scenario in effect still hold (the end of a segment or run).
    pub async fn confirm(&mut self, ctl: &mut Controller) -> Result<Option<bool>> {
        let Some(sums) = self
            .current
            .as_ref()
            .and_then(|name| self.known.get(name))
            .map(|k| k.sums.clone())
        else {
            return Ok(None);
        };
        let held = sums.held(&checksum(ctl).await?);
        self.after_mismatch(Some(held));
        Ok(Some(held))
    }

    /// Forget what was learned (after a restart the server may hold other rows).
    pub fn forget(&mut self) {
        self.known.clear();
        self.current = None;
    }
}

async fn checksum(ctl: &mut Controller) -> Result<(String, String)> {
    let (c, i): (Option<String>, Option<String>) = ctl
        .first(&checksum_sql(), "checksum the setup tables")
        .await?;
    Ok((c.unwrap_or_default(), i.unwrap_or_default()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_tables_a_scenario_sets_are_compared() {
        let sums = Sums {
            consumers: None,
            instruments: Some("995:123".into()),
        };
        assert!(sums.held(&("15:1".into(), "995:123".into())));
        assert!(sums.held(&("15:2".into(), "995:123".into())));
        assert!(!sums.held(&("15:1".into(), "995:124".into())));
    }
}
