//! A scenario: a named setting of performance_schema. Runtime scenarios are two selections (which
//! consumers are YES; which instruments are ENABLED and which TIMED, every other row NO), from
//! which come both the SQL that applies them and, given the rows a server actually has, the exact
//! value every row must hold afterwards.

use std::collections::HashMap;
use std::path::PathBuf;

use super::pattern::{NamePattern, Selection};
use super::setup_tables::{
    compare, ConsumerRow, InstrumentRow, SetupState, CONSUMERS, INSTRUMENTS,
};
use crate::controller::error::{ControllerError, Result};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InstrumentRule {
    pub enable: Selection,
    pub timed: Selection,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Settings {
    /// performance_schema=OFF: a startup setting, so applying it needs a server restart.
    PsOff,
    /// Changed at runtime through the setup tables. `None` leaves that table as it is.
    Runtime {
        consumers: Option<Selection>,
        instruments: Option<InstrumentRule>,
    },
    /// Placeholder for "the settings found at start"; [`Scenario::original_from`] makes it concrete.
    Original,
    /// Explicit values per row (a snapshot).
    Exact(SetupState),
    /// A runtime scenario's settings given to the server as options at startup (needs a
    /// restart; see [`super::startup`]).
    Startup(Box<Scenario>),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// One of the six scenarios of the reference study.
    Seed,
    /// Built into psprobe (`original`).
    Builtin,
    /// Defined by the user in a TOML file.
    File(PathBuf),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Scenario {
    pub name: String,
    pub description: String,
    pub source: Source,
    pub settings: Settings,
}

/// What applying a scenario to a particular server means: the statements to run, the value every
/// row must hold afterwards, and names the scenario lists that this server lacks.
#[derive(Clone, Debug, Default)]
pub struct Plan {
    pub statements: Vec<String>,
    pub expected: SetupState,
    pub warnings: Vec<String>,
}

impl Scenario {
    pub fn requires_restart(&self) -> bool {
        matches!(self.settings, Settings::PsOff | Settings::Startup(_))
    }

    /// Whether performance_schema is ON in this scenario.
    pub fn wants_ps(&self) -> bool {
        self.settings != Settings::PsOff
    }

    /// The runtime scenario whose rows this one must produce (itself, or a startup
    /// scenario's twin); `None` for pfsoff.
    pub fn rows_like(&self) -> Option<&Scenario> {
        match &self.settings {
            Settings::PsOff => None,
            Settings::Startup(twin) => Some(twin),
            _ => Some(self),
        }
    }

    /// Whether applying it sets every row of (setup_consumers, setup_instruments), whatever
    /// they held before (a runtime scenario may leave a table alone).
    pub fn determines(&self) -> (bool, bool) {
        match &self.settings {
            Settings::Runtime {
                consumers,
                instruments,
            } => (consumers.is_some(), instruments.is_some()),
            _ => (true, true),
        }
    }

    /// The concrete `original`: the snapshot's rows, under this scenario's name.
    pub fn original_from(state: &SetupState) -> Scenario {
        Scenario {
            name: "original".into(),
            description: "the settings psprobe found before its first change".into(),
            source: Source::Builtin,
            settings: Settings::Exact(state.clone()),
        }
    }

    /// The statements of a runtime scenario, independent of the server (for the seed six: the
    /// study's own SQL). `None` for the others, whose SQL depends on the rows present.
    pub fn sql(&self) -> Option<Vec<String>> {
        let Settings::Runtime {
            consumers,
            instruments,
        } = &self.settings
        else {
            return None;
        };
        let mut out = Vec::new();
        if let Some(sel) = consumers {
            out.push(format!(
                "update {CONSUMERS} set enabled = {}",
                sel.sql_value()
            ));
        }
        if let Some(rule) = instruments {
            let enabled = rule.enable.sql_value();
            let constant = enabled.starts_with('\'');
            let timed = if rule.timed == rule.enable && !constant {
                "enabled".to_string() // evaluated after the new ENABLED, as in the study's SQL
            } else {
                rule.timed.sql_value()
            };
            out.push(format!(
                "update {INSTRUMENTS} set enabled = {enabled}, timed = {timed}"
            ));
        }
        Some(out)
    }

    /// Plan this scenario against the rows a server has now.
    pub fn plan(&self, before: &SetupState) -> Result<Plan> {
        match &self.settings {
            Settings::PsOff | Settings::Startup(_) => Err(ControllerError::NeedsRestart {
                name: self.name.clone(),
            }),
            Settings::Original => Err(ControllerError::OriginalNeedsSnapshot),
            Settings::Runtime {
                consumers,
                instruments,
            } => Ok(self.plan_runtime(before, consumers.as_ref(), instruments.as_ref())),
            Settings::Exact(target) => Ok(self.plan_exact(before, target)),
        }
    }

    /// Whether `state` is what this scenario produces (false for scenarios that need a restart).
    pub fn matches(&self, state: &SetupState) -> bool {
        self.plan(state)
            .map(|p| compare(&p.expected, state).is_empty())
            .unwrap_or(false)
    }

    fn plan_runtime(
        &self,
        before: &SetupState,
        consumers: Option<&Selection>,
        instruments: Option<&InstrumentRule>,
    ) -> Plan {
        let mut warnings = Vec::new();
        let consumer_names: Vec<&str> = before.consumers.iter().map(|r| r.name.as_str()).collect();
        let instrument_names: Vec<&str> =
            before.instruments.iter().map(|r| r.name.as_str()).collect();
        if let Some(sel) = consumers {
            self.warn_unmatched(sel, "consumer", &consumer_names, &mut warnings);
        }
        if let Some(rule) = instruments {
            self.warn_unmatched(&rule.enable, "instrument", &instrument_names, &mut warnings);
            if rule.timed != rule.enable {
                self.warn_unmatched(&rule.timed, "instrument", &instrument_names, &mut warnings);
            }
        }
        let expected = SetupState {
            consumers: before
                .consumers
                .iter()
                .map(|row| ConsumerRow {
                    name: row.name.clone(),
                    enabled: consumers.map_or(row.enabled, |s| s.matches(&row.name)),
                })
                .collect(),
            instruments: before
                .instruments
                .iter()
                .map(|row| match instruments {
                    None => row.clone(),
                    Some(rule) => fixed_cells_kept(
                        row,
                        InstrumentRow {
                            name: row.name.clone(),
                            enabled: rule.enable.matches(&row.name),
                            timed: Some(rule.timed.matches(&row.name)),
                        },
                    ),
                })
                .collect(),
        };
        Plan {
            statements: self.sql().unwrap_or_default(),
            expected,
            warnings,
        }
    }

    fn plan_exact(&self, before: &SetupState, target: &SetupState) -> Plan {
        let mut warnings = Vec::new();
        let want_c: HashMap<&str, bool> = target
            .consumers
            .iter()
            .map(|r| (r.name.as_str(), r.enabled))
            .collect();
        let want_i: HashMap<&str, &InstrumentRow> = target
            .instruments
            .iter()
            .map(|r| (r.name.as_str(), r))
            .collect();
        let has_c: Vec<&str> = before.consumers.iter().map(|r| r.name.as_str()).collect();
        let has_i: Vec<&str> = before.instruments.iter().map(|r| r.name.as_str()).collect();
        let absent = |names: Vec<&str>, have: &[&str]| -> Vec<String> {
            names
                .into_iter()
                .filter(|n| !have.contains(n))
                .map(str::to_string)
                .collect()
        };
        let missing_c = absent(want_c.keys().copied().collect(), &has_c);
        let missing_i = absent(want_i.keys().copied().collect(), &has_i);
        let unknown_c = before.consumers.len() - (want_c.len() - missing_c.len());
        let unknown_i = before.instruments.len() - (want_i.len() - missing_i.len());
        for (table, list) in [("consumer", &missing_c), ("instrument", &missing_i)] {
            if !list.is_empty() {
                warnings.push(format!(
                    "scenario {}: {} {table}(s) it lists do not exist on this server; skipped: {}",
                    self.name,
                    list.len(),
                    preview(list)
                ));
            }
        }
        if unknown_c + unknown_i > 0 {
            warnings.push(format!(
                "scenario {}: {unknown_c} consumer(s) and {unknown_i} instrument(s) on this server \
                 are not in it; left as they are",
                self.name
            ));
        }
        let expected = SetupState {
            consumers: before
                .consumers
                .iter()
                .map(|row| ConsumerRow {
                    name: row.name.clone(),
                    enabled: *want_c.get(row.name.as_str()).unwrap_or(&row.enabled),
                })
                .collect(),
            instruments: before
                .instruments
                .iter()
                .map(|row| match want_i.get(row.name.as_str()) {
                    None => row.clone(),
                    Some(want) => fixed_cells_kept(row, (*want).clone()),
                })
                .collect(),
        };
        Plan {
            statements: super::setup_tables::write_back_statements(target, before),
            expected,
            warnings,
        }
    }

    /// Refuses, before anything is switched, a scenario from a config file whose patterns
    /// select nothing on this server (a typo would silently run as "everything off") or
    /// every row without saying `%` (most likely not what was meant).
    pub fn check_patterns(&self, rows: &SetupState) -> Result<()> {
        if !matches!(self.source, Source::File(_)) {
            return Ok(());
        }
        let Some(Scenario {
            settings:
                Settings::Runtime {
                    consumers,
                    instruments,
                },
            ..
        }) = self.rows_like()
        else {
            return Ok(());
        };
        let consumer_names: Vec<&str> = rows.consumers.iter().map(|r| r.name.as_str()).collect();
        let instrument_names: Vec<&str> =
            rows.instruments.iter().map(|r| r.name.as_str()).collect();
        let mut selections = Vec::new();
        if let Some(sel) = consumers {
            selections.push((sel, "consumer", &consumer_names));
        }
        if let Some(rule) = instruments {
            selections.push((&rule.enable, "instrument", &instrument_names));
            selections.push((&rule.timed, "timed instrument", &instrument_names));
        }
        for (sel, kind, names) in selections {
            for p in &sel.patterns {
                if p.is_everything() {
                    continue;
                }
                let matched = names.iter().filter(|n| p.matches(n)).count();
                let problem = if matched == 0 {
                    "matches nothing on this server".to_string()
                } else if matched == names.len() && names.len() > 1 {
                    format!(
                        "matches every one of this server's {matched} {kind}s; write '%' if that \
                         is meant"
                    )
                } else {
                    continue;
                };
                return Err(ControllerError::Config {
                    path: match &self.source {
                        Source::File(path) => path.clone(),
                        _ => PathBuf::new(),
                    },
                    reason: format!(
                        "scenario {}: {kind} pattern '{}' {problem}; nothing was changed",
                        self.name,
                        p.as_str()
                    ),
                });
            }
        }
        Ok(())
    }

    fn warn_unmatched(&self, sel: &Selection, kind: &str, names: &[&str], out: &mut Vec<String>) {
        for p in &sel.patterns {
            if p.is_everything() || names.iter().any(|n| p.matches(n)) {
                continue;
            }
            out.push(match p {
                NamePattern::Exact(n) => format!(
                    "scenario {}: {kind} '{n}' does not exist on this server; skipped",
                    self.name
                ),
                NamePattern::Like(l) => format!(
                    "scenario {}: {kind} pattern '{l}' matches nothing on this server",
                    self.name
                ),
            });
        }
    }
}

/// Whether an UPDATE leaves instrument `name` enabled whatever it sets: the built-in
/// `memory/performance_schema/%` instruments (MySQL 5.7+, MariaDB 10.5+).
pub(crate) fn always_enabled(name: &str) -> bool {
    name.to_ascii_lowercase()
        .starts_with("memory/performance_schema/")
}

/// The cells an UPDATE cannot change keep their value from before:
/// - `memory/performance_schema/%` instruments are built in and always enabled (MySQL 5.7+,
///   MariaDB 10.5+);
/// - memory instruments cannot be timed: MySQL 5.7 and MariaDB show TIMED = NO and ignore
///   updates, MySQL 8.0+ shows NULL. Any NULL TIMED stays NULL.
fn fixed_cells_kept(before: &InstrumentRow, mut want: InstrumentRow) -> InstrumentRow {
    let lower = before.name.to_ascii_lowercase();
    if always_enabled(&before.name) {
        want.enabled = before.enabled;
    }
    if before.timed.is_none() || lower.starts_with("memory/") {
        want.timed = before.timed;
    }
    want
}

fn preview(names: &[String]) -> String {
    const SHOWN: usize = 5;
    let mut s = names
        .iter()
        .take(SHOWN)
        .map(|n| format!("'{n}'"))
        .collect::<Vec<_>>()
        .join(", ");
    if names.len() > SHOWN {
        s.push_str(&format!(", and {} more", names.len() - SHOWN));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::model::setup_tables::tests::{c, i};

    fn runtime(consumers: &[&str], enable: &[&str], timed: &[&str]) -> Scenario {
        Scenario {
            name: "t".into(),
            description: String::new(),
            source: Source::Builtin,
            settings: Settings::Runtime {
                consumers: Some(Selection::parse(consumers).unwrap()),
                instruments: Some(InstrumentRule {
                    enable: Selection::parse(enable).unwrap(),
                    timed: Selection::parse(timed).unwrap(),
                }),
            },
        }
    }

    fn server() -> SetupState {
        SetupState {
            consumers: vec![
                c("events_statements_current", false),
                c("global_instrumentation", true),
            ],
            instruments: vec![
                i("statement/sql/select", false, Some(false)),
                i("wait/io/file/sql/FRM", true, Some(true)),
                i("memory/performance_schema/threads", true, Some(false)),
                i("memory/sql/THD::main_mem_root", false, Some(false)),
                i("memory/mysys/KEY_CACHE", true, None),
            ],
        }
    }

    #[test]
    fn expectation_follows_selections_and_keeps_fixed_cells() {
        let s = runtime(
            &["events_statements_%", "no_such_consumer"],
            &["statement/%", "memory/%"],
            &["%"],
        );
        let plan = s.plan(&server()).unwrap();
        assert_eq!(
            plan.expected.consumers,
            [
                c("events_statements_current", true),
                c("global_instrumentation", false)
            ]
        );
        assert_eq!(
            plan.expected.instruments,
            [
                i("statement/sql/select", true, Some(true)),
                i("wait/io/file/sql/FRM", false, Some(true)),
                i("memory/performance_schema/threads", true, Some(false)),
                i("memory/sql/THD::main_mem_root", true, Some(false)),
                i("memory/mysys/KEY_CACHE", true, None),
            ]
        );
        assert_eq!(
            plan.warnings,
            ["scenario t: consumer 'no_such_consumer' does not exist on this server; skipped"]
        );
        // Disabling everything still leaves the built-in memory instruments on.
        let off = runtime(&[], &[], &[]).plan(&server()).unwrap();
        assert!(off.expected.instruments[2].enabled);
        assert!(!off.expected.instruments[4].enabled);
        assert_eq!(off.expected.instruments[4].timed, None);
    }

    #[test]
    fn untouched_tables_keep_their_values() {
        let s = Scenario {
            settings: Settings::Runtime {
                consumers: None,
                instruments: None,
            },
            ..runtime(&[], &[], &[])
        };
        let plan = s.plan(&server()).unwrap();
        assert_eq!(plan.expected, server());
        assert!(plan.statements.is_empty());
        assert!(s.matches(&server()));
    }

    #[test]
    fn sql_uses_timed_equals_enabled_only_for_equal_non_constant_rules() {
        let sql = runtime(&["a"], &["x/%"], &["x/%"]).sql().unwrap();
        assert_eq!(sql[1], format!("update {INSTRUMENTS} set enabled = if(name like 'x/%', 'YES', 'NO'), timed = enabled"));
        let sql = runtime(&["a"], &["x/%"], &["y/%"]).sql().unwrap();
        assert!(
            sql[1].ends_with("timed = if(name like 'y/%', 'YES', 'NO')"),
            "{}",
            sql[1]
        );
        let sql = runtime(&["%"], &["%"], &[]).sql().unwrap();
        assert_eq!(sql[0], format!("update {CONSUMERS} set enabled = 'YES'"));
        assert_eq!(
            sql[1],
            format!("update {INSTRUMENTS} set enabled = 'YES', timed = 'NO'")
        );
    }

    #[test]
    fn exact_plans_write_back_only_differences_and_warn_about_strangers() {
        let mut target = server();
        target.consumers[0].enabled = true;
        target.instruments[0] = i("statement/sql/select", true, Some(true));
        target
            .instruments
            .retain(|r| r.name != "memory/mysys/KEY_CACHE");
        target
            .instruments
            .push(i("from/another/version", true, Some(true)));
        let plan = Scenario::original_from(&target).plan(&server()).unwrap();
        assert_eq!(plan.statements.len(), 2, "{:?}", plan.statements);
        assert!(plan.statements[1].contains("where name in ('statement/sql/select')"));
        assert_eq!(
            plan.expected.consumers[0],
            c("events_statements_current", true)
        );
        assert_eq!(
            plan.expected.instruments[4],
            i("memory/mysys/KEY_CACHE", true, None)
        );
        assert_eq!(plan.warnings.len(), 2, "{:?}", plan.warnings);
        assert!(plan.warnings[0].contains("'from/another/version'"));
        assert!(plan.warnings[1].contains("0 consumer(s) and 1 instrument(s)"));
        assert!(Scenario::original_from(&server()).matches(&server()));
    }

    #[test]
    fn restart_and_placeholder_scenarios_cannot_be_planned() {
        let mut s = runtime(&[], &[], &[]);
        s.settings = Settings::PsOff;
        assert!(s.requires_restart());
        assert!(matches!(
            s.plan(&server()),
            Err(ControllerError::NeedsRestart { .. })
        ));
        assert!(!s.matches(&server()));
        s.settings = Settings::Original;
        assert!(matches!(
            s.plan(&server()),
            Err(ControllerError::OriginalNeedsSnapshot)
        ));
    }
}

#[cfg(test)]
mod pattern_checks {
    use super::*;
    use crate::controller::model::catalog::Catalog;
    use crate::controller::model::setup_tables::tests::{c, i};

    #[test]
    fn a_file_pattern_that_selects_nothing_or_every_row_is_refused() {
        let rows = SetupState {
            consumers: vec![c("a", true), c("b", false)],
            instruments: vec![
                i("wait/io/file/x", true, Some(true)),
                i("wait/y", false, Some(false)),
            ],
        };
        for (pattern, said) in [
            ("wait/io/filez/%", "matches nothing"),
            ("%/%", "matches every one of this server's 2 instruments"),
        ] {
            let mut catalog = Catalog::builtin();
            let toml = format!(
                "[[scenario]]\nname = \"t\"\nconsumers = {{ enable = [\"%\"] }}\ninstruments = {{ enable = [\"{pattern}\"] }}\n"
            );
            catalog
                .add_toml(&toml, std::path::Path::new("ps.toml"))
                .unwrap();
            let e = catalog.get("t").unwrap().check_patterns(&rows).unwrap_err();
            assert!(e.to_string().contains(said), "{e}");
        }
        let catalog = Catalog::builtin();
        for s in catalog.iter() {
            assert!(
                s.check_patterns(&rows).is_ok(),
                "built-in {} is never refused",
                s.name
            );
        }
    }
}
