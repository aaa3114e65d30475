//! Switching scenarios several times a second, in one round trip each, without ever writing
//! over a row someone else changed.
//!
//! The first switch into a scenario is the full one: read every row, hand it to the
//! [`Ledger`] (a row holding neither what psprobe found nor what it wrote is someone else's:
//! claimed, and left out of this and every later switch), plan, record the intent, write only
//! the cells that differ, each only if it still holds what was read, read every row back and
//! compare (a row someone changed between the read and the write keeps their value and is
//! claimed too); then a checksum of the setup tables, as the server computes it, is
//! remembered.
//!
//! Later switches between runtime scenarios already entered are one batch that goes on only
//! if the *previous* scenario's rows held through its slot: the checksum is computed into a
//! session variable first, and every statement after it (the intent, the scenario's UPDATEs,
//! the leader's phase row) is conditional on it; the UPDATEs change each cell only if it
//! still holds the previous scenario's value ([`transition_sql`]). Rows that did not hold are
//! therefore never overwritten: the switch then goes the full way (so the change is seen,
//! claimed and kept), and the previous slot is marked unverified (its segment is left out of
//! the analysis).

use std::collections::HashMap;

use super::leadership::Leadership;
use super::server::{ApplyReport, Controller};
use crate::controller::error::Result;
use crate::controller::model::ownership::{add_condition, keep_claimed, Claim, Ledger, Origin};
use crate::controller::model::phase_row::{PhaseRow, SwitchIntent};
use crate::controller::model::scenario::{Plan, Scenario, Settings};
use crate::controller::model::setup_tables::{
    compare, write_back_statements, SetupState, CONSUMERS, INSTRUMENTS,
};
use crate::controller::model::transition::transition_sql;

/// The session variable a fast batch's statements are conditional on.
const HELD: &str = "@psprobe_held = 1";

/// `count:sum of CRC32(name=enabled)` of setup_consumers.
fn consumers_sum() -> String {
    format!(
        "(SELECT CONCAT(COUNT(*), ':', COALESCE(SUM(CRC32(CONCAT(NAME, '=', ENABLED))), 0)) \
         FROM {CONSUMERS})"
    )
}

/// `count:sum of CRC32(name=enabled/timed)` of setup_instruments.
fn instruments_sum() -> String {
    format!(
        "(SELECT CONCAT(COUNT(*), ':', COALESCE(SUM(CRC32(CONCAT(NAME, '=', ENABLED, '/', \
         IFNULL(TIMED, '-')))), 0)) FROM {INSTRUMENTS})"
    )
}

/// One row: both checksums.
fn checksum_sql() -> String {
    format!("SELECT {}, {}", consumers_sum(), instruments_sum())
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

    /// `SET @psprobe_held = ...`: 1 if the server still holds these sums.
    fn check_sql(&self) -> String {
        use crate::controller::model::pattern::quote;
        let mut parts = Vec::new();
        if let Some(c) = &self.consumers {
            parts.push(format!("{} = {}", consumers_sum(), quote(c)));
        }
        if let Some(i) = &self.instruments {
            parts.push(format!("{} = {}", instruments_sum(), quote(i)));
        }
        let condition = if parts.is_empty() {
            "1".to_string()
        } else {
            format!("({})", parts.join(" AND "))
        };
        format!("SET @psprobe_held = {condition}")
    }
}

struct Known {
    /// The scenario as applied (its selections make the next transition's SQL).
    scenario: Scenario,
    /// The rows the scenario leaves (for the ledger).
    expected: SetupState,
    sums: Sums,
}

/// What one switch did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Switched {
    /// Statements sent (checksum, intent, apply, publish).
    pub statements: u64,
    /// Every row was read back and compared.
    pub full: bool,
    /// Whether the previous scenario's rows were still in place at this switch (`None`: not
    /// checked, no previous scenario).
    pub previous_held: Option<bool>,
    /// Rows found someone else's at this switch (kept; left out from now on).
    pub claims: Vec<Claim>,
}

pub(crate) struct Switcher {
    known: HashMap<String, Known>,
    /// The scenario in effect since the last switch.
    current: Option<String>,
    ledger: Ledger,
}

impl Switcher {
    /// A switcher over a server found as `ledger` says.
    pub(crate) fn new(ledger: Ledger) -> Self {
        Switcher {
            known: HashMap::new(),
            current: None,
            ledger,
        }
    }

    pub(crate) fn ledger(&self) -> &Ledger {
        &self.ledger
    }

    pub(crate) fn ledger_mut(&mut self) -> &mut Ledger {
        &mut self.ledger
    }

    /// The scenario in effect (`None`: the settings as found, or not known).
    pub(crate) fn current(&self) -> Option<&str> {
        self.current.as_deref()
    }

    /// Puts the server in `scenario` (`original`: the settings found, someone else's rows
    /// kept) and checks the previous one held; the leader's phase row `publish` rides in the
    /// same round trip, after the intent and the statements.
    pub(crate) async fn switch(
        &mut self,
        ctl: &mut Controller,
        scenario: &Scenario,
        publish: Option<&PhaseRow>,
    ) -> Result<Switched> {
        let previous = self.current.as_ref().and_then(|name| self.known.get(name));
        let fast = match (previous, self.known.get(&scenario.name)) {
            (Some(prev), Some(next)) if scenario.determines() == (true, true) => {
                transition_sql(&prev.scenario, scenario, self.ledger.claims())
                    .map(|statements| (prev.sums.clone(), statements, next.expected.clone()))
            }
            _ => None,
        };
        let previous_sums = previous.map(|p| p.sums.clone());
        if let Some((sums, statements, expected)) = fast {
            let intent = publish.map(|row| self.intent(row, &scenario.name));
            let mut batch = vec![sums.check_sql(), "SELECT @psprobe_held".to_string()];
            batch.extend(intent.map(|i| Leadership::intent_sql(&i, Some(HELD))));
            batch.extend(statements.iter().map(|s| add_condition(s, HELD)));
            batch.extend(publish.map(|row| Leadership::publish_sql(row, Some(HELD))));
            let sent = batch.len() as u64;
            self.ledger.switching(&expected);
            let row: Option<(Option<i64>,)> = ctl
                .batch_first_row_any(&batch.join(";\n"), "switch scenario")
                .await?;
            if row.and_then(|(h,)| h) == Some(1) {
                self.ledger.switched(&expected);
                self.current = Some(scenario.name.clone());
                return Ok(Switched {
                    statements: sent,
                    full: false,
                    previous_held: Some(true),
                    claims: Vec::new(),
                });
            }
            // Nothing of the batch was applied: look at every row before writing any.
            self.after_mismatch();
            let mut full = self.full(ctl, scenario, publish).await?;
            full.statements += sent;
            full.previous_held = Some(false);
            return Ok(full);
        }
        let previous_held = match &previous_sums {
            Some(sums) => Some(sums.held(&checksum(ctl).await?)),
            None => None,
        };
        if previous_held == Some(false) {
            self.after_mismatch();
        }
        let mut full = self.full(ctl, scenario, publish).await?;
        full.statements += u64::from(previous_sums.is_some());
        full.previous_held = previous_held;
        Ok(full)
    }

    /// The intent of a switch from the scenario in effect to `to`, for the leader of `row`.
    fn intent(&self, row: &PhaseRow, to: &str) -> SwitchIntent {
        SwitchIntent {
            leader: row.leader.clone(),
            from: self.current.clone().unwrap_or_else(|| "none".into()),
            to: to.to_string(),
            phase: row.phase,
        }
    }

    /// Reads every row, claims what is someone else's, applies `scenario` without those rows,
    /// reads back and remembers the checksum.
    async fn full(
        &mut self,
        ctl: &mut Controller,
        scenario: &Scenario,
        publish: Option<&PhaseRow>,
    ) -> Result<Switched> {
        let live = ctl.read_state().await?;
        let mut claims = self
            .ledger
            .observe(&live, Origin::Runtime, crate::clock::now_ms());
        let plan = match scenario.settings {
            Settings::Original => {
                Scenario::original_from(&self.ledger.restore_target(&live)).plan(&live)?
            }
            _ => self.ledger.exclude(scenario.plan(&live)?, &live),
        };
        let intent = publish.map(|row| self.intent(row, &scenario.name));
        let before = intent.map(|i| Leadership::intent_sql(&i, None));
        let after = publish.map(|row| Leadership::publish_sql(row, None));
        let (report, expected, late) = self
            .apply_guarded(
                ctl,
                &scenario.name,
                plan,
                &live,
                (before.as_deref(), after.as_deref()),
            )
            .await?;
        claims.extend(late);
        if !claims.is_empty() {
            // What was learned of the other scenarios assumed those rows were psprobe's.
            self.known.clear();
        }
        let now = checksum(ctl).await?;
        let (c, i) = scenario.determines();
        self.known.insert(
            scenario.name.clone(),
            Known {
                scenario: scenario.clone(),
                expected,
                sums: Sums {
                    consumers: c.then(|| now.0.clone()),
                    instruments: i.then(|| now.1.clone()),
                },
            },
        );
        self.current = Some(scenario.name.clone());
        Ok(Switched {
            statements: sent_statements(&report, before.is_some(), after.is_some()),
            full: true,
            previous_held: None,
            claims,
        })
    }

    /// Writes `plan` over `live` cell by cell (each only if it still holds what was read),
    /// reads back, and claims the rows someone else changed in between (they kept their
    /// value). Returns what was done, the rows the server now holds as psprobe's, and those
    /// claims; [`ControllerError::Verify`] if a row is neither.
    async fn apply_guarded(
        &mut self,
        ctl: &mut Controller,
        name: &str,
        mut plan: Plan,
        live: &SetupState,
        (before, after): (Option<&str>, Option<&str>),
    ) -> Result<(ApplyReport, SetupState, Vec<Claim>)> {
        plan.statements = write_back_statements(&plan.expected, live);
        self.ledger.switching(&plan.expected);
        let (report, read_back) = ctl.run_plan(name, &plan, before, after).await?;
        let mut late = Vec::new();
        if !compare(&plan.expected, &read_back).is_empty() {
            self.ledger.switched(&plan.expected);
            late = self
                .ledger
                .observe(&read_back, Origin::Runtime, crate::clock::now_ms());
            plan.expected = keep_claimed(&plan.expected, self.ledger.claims(), &read_back);
            ctl.verified(name, &plan, &read_back)?;
        }
        self.ledger.switched(&plan.expected);
        Ok((report, plan.expected, late))
    }

    /// A scenario's rows did not hold: every scenario is checked row by row again.
    fn after_mismatch(&mut self) {
        tracing::debug!(
            "performance_schema settings of scenario {} changed during its slot; its segment is \
             left out, and every scenario is checked row by row again",
            self.current.as_deref().unwrap_or("?")
        );
        self.known.clear();
    }

    /// Whether the rows of the scenario in effect still hold (the end of a segment or run).
    pub(crate) async fn confirm(&mut self, ctl: &mut Controller) -> Result<Option<bool>> {
        let Some(sums) = self
            .current
            .as_ref()
            .and_then(|name| self.known.get(name))
            .map(|k| k.sums.clone())
        else {
            return Ok(None);
        };
        let held = sums.held(&checksum(ctl).await?);
        if !held {
            self.after_mismatch();
        }
        Ok(Some(held))
    }

    /// Puts back what psprobe found, every row someone else set kept as it is: the end of a
    /// run. Returns what it did and the rows claimed at this last look.
    pub(crate) async fn restore(
        &mut self,
        ctl: &mut Controller,
    ) -> Result<(ApplyReport, Vec<Claim>)> {
        let live = ctl.read_state().await?;
        let mut claims = self
            .ledger
            .observe(&live, Origin::Runtime, crate::clock::now_ms());
        let target = self.ledger.restore_target(&live);
        let plan = Scenario::original_from(&target).plan(&live)?;
        let (report, _, late) = self
            .apply_guarded(ctl, "original", plan, &live, (None, None))
            .await?;
        claims.extend(late);
        self.known.clear();
        self.current = None;
        Ok((report, claims))
    }

    /// Forget what was learned of the rows (after a restart the server may hold other rows).
    pub(crate) fn forget(&mut self) {
        self.known.clear();
        self.current = None;
    }
}

fn sent_statements(report: &ApplyReport, intent: bool, publish: bool) -> u64 {
    // The scenario's, a read before and after, the checksum, and what rode along.
    report.statements.len() as u64 + 3 + u64::from(intent) + u64::from(publish)
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
        let check = sums.check_sql();
        assert!(
            check.starts_with("SET @psprobe_held = ((SELECT CONCAT"),
            "{check}"
        );
        assert!(check.ends_with("= '995:123')"), "{check}");
        assert!(!check.contains(CONSUMERS), "{check}");
        let none = Sums {
            consumers: None,
            instruments: None,
        };
        assert_eq!(none.check_sql(), "SET @psprobe_held = 1");
    }

    #[test]
    fn a_fast_batch_changes_nothing_unless_the_previous_rows_held() {
        let update = format!("update {CONSUMERS} set enabled = 'NO'");
        assert_eq!(
            add_condition(&update, HELD),
            format!("{update} where @psprobe_held = 1")
        );
        let row = PhaseRow {
            scenario: "a".into(),
            leader: "h:1".into(),
            ..PhaseRow::default()
        };
        let publish = Leadership::publish_sql(&row, Some(HELD));
        assert!(
            publish.ends_with("FROM DUAL WHERE @psprobe_held = 1"),
            "{publish}"
        );
        assert!(
            publish.starts_with("REPLACE INTO psprobe.phase"),
            "{publish}"
        );
    }
}
