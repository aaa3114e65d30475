//! Instrument groups: the named capabilities a DBA turns on (statement events and digests,
//! stages, waits on synchronization objects, ...). Each is the instruments it enables and
//! times plus the consumers that collect them; the global and thread instrumentation
//! consumers are on whenever any group is. An attribution run measures every group's cost
//! together (see [`super::design`]); a recommendation is a set of groups.
//!
//! Built-in groups use the names MariaDB 10.11/11.8 and MySQL 8 share. Users add their own in
//! the config file:
//!
//! ```toml
//! [[group]]
//! name = "innodb_mutexes"
//! description = "InnoDB's mutex waits"
//! consumers = ["events_waits_current"]
//! instruments = ["wait/synch/mutex/innodb/%"]
//! ```
//!
//! Must not: talk to a server (which groups a server lacks is decided from rows read by the
//! caller).

use std::path::Path;

use serde::Deserialize;

use super::pattern::Selection;
use super::scenario::{always_enabled, InstrumentRule, Scenario, Settings, Source};
use super::setup_tables::SetupState;
use crate::controller::error::{ControllerError, Result};
use crate::phase_log::group_names::{advice_name, point_name, valid_group_name};

/// Consumers on whenever any group is: without them no instrument collects anything.
pub(crate) const ALWAYS_WITH_A_GROUP: [&str; 2] =
    ["global_instrumentation", "thread_instrumentation"];

/// One group: what it turns on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Group {
    pub name: String,
    pub description: String,
    pub source: Source,
    /// Consumer names or patterns (besides [`ALWAYS_WITH_A_GROUP`]).
    pub consumers: Vec<String>,
    /// Instrument names or patterns, enabled and timed (memory instruments cannot be timed;
    /// the plan keeps what the server shows).
    pub instruments: Vec<String>,
}

impl Group {
    /// How many of a server's rows the group turns on: (consumers, instruments).
    pub fn rows_on(&self, server: &SetupState) -> (usize, usize) {
        let consumers = selection(&self.consumers);
        let instruments = selection(&self.instruments);
        (
            server
                .consumers
                .iter()
                .filter(|c| consumers.matches(&c.name))
                .count(),
            server
                .instruments
                .iter()
                .filter(|i| instruments.matches(&i.name))
                .count(),
        )
    }
}

impl Group {
    /// What the server lacks of the group, if it lacks it: "instruments" (none of those it
    /// names) or "consumers" (none of those it names, when it names any). MariaDB has statement
    /// instruments but not MySQL's CPU consumer: `statement_cpu` there would measure the
    /// statements alone under another name.
    pub fn missing_kind(&self, server: &SetupState) -> Option<&'static str> {
        let (consumers, instruments) = self.rows_on(server);
        if !self.instruments.is_empty() && instruments == 0 {
            Some("instruments")
        } else if !self.consumers.is_empty() && consumers == 0 {
            Some("consumers")
        } else {
            None
        }
    }

    /// Of the server's instruments the group turns on, those that no UPDATE switches off (the
    /// built-in memory/performance_schema/% ones): the group is never quite off where they are.
    pub fn rows_always_on(&self, server: &SetupState) -> usize {
        let instruments = selection(&self.instruments);
        server
            .instruments
            .iter()
            .filter(|i| instruments.matches(&i.name) && always_enabled(&i.name))
            .count()
    }
}

/// A server's rows that no group turns on (besides the consumers every group has).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Uncovered {
    pub consumers: Vec<String>,
    pub instruments: Vec<String>,
}

fn selection(patterns: &[String]) -> Selection {
    Selection::parse(patterns).expect("group patterns are checked when the group is made")
}

const WAITS: [&str; 3] = [
    "events_waits_current",
    "events_waits_history",
    "events_waits_history_long",
];

/// The groups psprobe knows, in the order reports list them.
#[derive(Clone, Debug)]
pub struct Groups {
    groups: Vec<Group>,
}

impl Groups {
    /// The built-in groups.
    pub fn builtin() -> Self {
        let group =
            |name: &str, description: &str, consumers: &[&str], instruments: &[&str]| Group {
                name: name.into(),
                description: description.into(),
                source: Source::Builtin,
                consumers: consumers.iter().map(|s| s.to_string()).collect(),
                instruments: instruments.iter().map(|s| s.to_string()).collect(),
            };
        Groups {
            groups: vec![
                group(
                    "statements",
                    "statement events and digests (events_statements_current, \
                     events_statements_summary_by_digest)",
                    &["events_statements_current", "statements_digest"],
                    &["statement/%"],
                ),
                group(
                    "statement_history",
                    "statement history (events_statements_history and _history_long)",
                    &[
                        "events_statements_history",
                        "events_statements_history_long",
                    ],
                    &["statement/%"],
                ),
                group(
                    "stages",
                    "stage events (events_stages_*)",
                    &[
                        "events_stages_current",
                        "events_stages_history",
                        "events_stages_history_long",
                    ],
                    &["stage/%"],
                ),
                group(
                    "sync_waits",
                    "waits on synchronization objects: mutexes, rwlocks, conditions",
                    &WAITS,
                    &["wait/synch/%"],
                ),
                group(
                    "io_waits",
                    "file and socket I/O waits",
                    &WAITS,
                    &["wait/io/file/%", "wait/io/socket/%"],
                ),
                group(
                    "table_io",
                    "table I/O and table lock waits",
                    &WAITS,
                    &["wait/io/table/%", "wait/lock/table/%"],
                ),
                group(
                    "metadata_locks",
                    "metadata locks (metadata_locks table, MDL waits)",
                    &WAITS,
                    &["wait/lock/metadata/%"],
                ),
                group(
                    "memory",
                    "memory instrumentation (memory_summary_* tables)",
                    &[],
                    &["memory/%"],
                ),
                group(
                    "transactions",
                    "transaction events (events_transactions_*)",
                    &[
                        "events_transactions_current",
                        "events_transactions_history",
                        "events_transactions_history_long",
                    ],
                    &["transaction"],
                ),
                group(
                    "idle",
                    "sessions waiting for their next statement (the idle instrument's \
                     events_waits_*)",
                    &WAITS,
                    &["idle"],
                ),
                // MySQL 8.0+ only: a server without these rows leaves the groups out.
                group(
                    "errors",
                    "errors and warnings raised (events_errors_summary_* tables; MySQL)",
                    &[],
                    &["error"],
                ),
                group(
                    "statement_cpu",
                    "statement CPU time (the events_statements_cpu consumer: CPU_TIME in the \
                     statement tables; MySQL)",
                    &["events_statements_cpu"],
                    &["statement/%"],
                ),
            ],
        }
    }

    /// Adds the `[[group]]` tables of a config file's text (`path` names it in errors).
    pub fn add_toml(&mut self, text: &str, path: &Path) -> Result<()> {
        let file: GroupFile = super::file::parse_toml(text, path)?;
        for entry in file.group {
            let group = entry.into_group(path)?;
            if self.find(&group.name).is_some() {
                return Err(ControllerError::Config {
                    path: path.into(),
                    reason: format!(
                        "group '{}' is already defined; pick another name",
                        group.name
                    ),
                });
            }
            self.groups.push(group);
        }
        Ok(())
    }

    pub fn iter(&self) -> impl Iterator<Item = &Group> {
        self.groups.iter()
    }

    pub fn find(&self, name: &str) -> Option<&Group> {
        self.groups.iter().find(|g| g.name == name)
    }

    /// The rows of `server` none of these groups turns on: what an attribution leaves off and
    /// does not measure (MySQL 9.7's `idle` and `error` instruments and its
    /// `events_statements_cpu` consumer, for the built-in groups).
    pub fn uncovered(&self, server: &SetupState) -> Uncovered {
        let consumers: Vec<String> = self
            .groups
            .iter()
            .flat_map(|g| g.consumers.clone())
            .collect();
        let instruments: Vec<String> = self
            .groups
            .iter()
            .flat_map(|g| g.instruments.clone())
            .collect();
        let (consumers, instruments) = (selection(&consumers), selection(&instruments));
        Uncovered {
            consumers: server
                .consumers
                .iter()
                .map(|c| c.name.clone())
                .filter(|n| !consumers.matches(n) && !ALWAYS_WITH_A_GROUP.contains(&n.as_str()))
                .collect(),
            instruments: server
                .instruments
                .iter()
                .map(|i| i.name.clone())
                .filter(|n| !instruments.matches(n))
                .collect(),
        }
    }

    /// The built-in groups' names (the default of `--attribute`).
    pub fn builtin_names(&self) -> Vec<String> {
        self.groups
            .iter()
            .filter(|g| g.source == Source::Builtin)
            .map(|g| g.name.clone())
            .collect()
    }

    /// The groups called `names`, in that order: an unknown name lists the valid ones, a name
    /// given twice or an empty list is refused.
    pub fn select(&self, names: &[String]) -> Result<Vec<Group>> {
        if names.is_empty() {
            return Err(ControllerError::Groups {
                reason: "no group named: give one or more (psprobe ps groups lists them)".into(),
            });
        }
        let mut out: Vec<Group> = Vec::new();
        for name in names {
            let Some(group) = self.find(name) else {
                let valid: Vec<&str> = self.groups.iter().map(|g| g.name.as_str()).collect();
                return Err(ControllerError::Groups {
                    reason: format!(
                        "unknown group '{name}' (groups: {}; define your own as [[group]] in \
                         --config)",
                        valid.join(", ")
                    ),
                });
            };
            if out.iter().any(|g| g.name == *name) {
                return Err(ControllerError::Groups {
                    reason: format!("group '{name}' is listed twice"),
                });
            }
            out.push(group.clone());
        }
        Ok(out)
    }
}

/// The runtime settings of `on` (a set of groups): their consumers with global and thread
/// instrumentation, their instruments enabled and timed, every other row off. With no group
/// on: global and thread instrumentation only.
pub(crate) fn settings_of(on: &[&Group]) -> Settings {
    let consumers: Vec<String> = ALWAYS_WITH_A_GROUP
        .iter()
        .map(|s| s.to_string())
        .chain(on.iter().flat_map(|g| g.consumers.iter().cloned()))
        .fold(Vec::new(), dedup_push);
    let instruments: Vec<String> = on
        .iter()
        .flat_map(|g| g.instruments.iter().cloned())
        .fold(Vec::new(), dedup_push);
    let instruments = selection(&instruments);
    Settings::Runtime {
        consumers: Some(selection(&consumers)),
        instruments: Some(InstrumentRule {
            enable: instruments.clone(),
            timed: instruments,
        }),
    }
}

fn dedup_push(mut list: Vec<String>, item: String) -> Vec<String> {
    if !list.contains(&item) {
        list.push(item);
    }
    list
}

/// The design point turning on `on` (named by [`point_name`], groups in the order given).
pub(crate) fn point_scenario(on: &[&Group]) -> Scenario {
    let names: Vec<&str> = on.iter().map(|g| g.name.as_str()).collect();
    Scenario {
        name: point_name(&names),
        description: if names.is_empty() {
            "global and thread instrumentation only (no group on)".into()
        } else {
            format!("groups {} on, every other one off", names.join(", "))
        },
        source: Source::Builtin,
        settings: settings_of(on),
    }
}

/// The recommended configuration `on`, as the scenario that confirms it. No group at all is
/// nothing instrumented (global and thread instrumentation only come with a group).
pub(crate) fn advice_scenario(on: &[&Group]) -> Scenario {
    let names: Vec<&str> = on.iter().map(|g| g.name.as_str()).collect();
    let settings = if on.is_empty() {
        Settings::Runtime {
            consumers: Some(Selection::none()),
            instruments: Some(InstrumentRule {
                enable: Selection::none(),
                timed: Selection::none(),
            }),
        }
    } else {
        settings_of(on)
    };
    Scenario {
        name: advice_name(&names),
        description: format!("recommended configuration: {}", names.join(", ")),
        source: Source::Builtin,
        settings,
    }
}

#[derive(Debug, Default, Deserialize)]
struct GroupFile {
    #[serde(default)]
    group: Vec<GroupToml>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct GroupToml {
    name: String,
    description: Option<String>,
    #[serde(default)]
    consumers: Vec<String>,
    #[serde(default)]
    instruments: Vec<String>,
}

impl GroupToml {
    fn into_group(self, path: &Path) -> Result<Group> {
        let err = |reason: String| ControllerError::Config {
            path: path.into(),
            reason: format!("group '{}': {reason}", self.name),
        };
        if !valid_group_name(&self.name) {
            return Err(err(
                "names may use only letters, digits, '_', '-' and '.', and not 'base' or 'none'"
                    .into(),
            ));
        }
        if self.consumers.is_empty() && self.instruments.is_empty() {
            return Err(err(
                "it turns nothing on: give consumers = [...] and/or instruments = [...]".into(),
            ));
        }
        Selection::parse(&self.consumers).map_err(|e| err(format!("consumers: {e}")))?;
        Selection::parse(&self.instruments).map_err(|e| err(format!("instruments: {e}")))?;
        let description = self
            .description
            .clone()
            .unwrap_or_else(|| format!("user group from {}", path.display()));
        Ok(Group {
            name: self.name,
            description,
            source: Source::File(path.into()),
            consumers: self.consumers,
            instruments: self.instruments,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::model::setup_tables::tests::{c, i};

    fn server() -> SetupState {
        SetupState {
            consumers: vec![
                c("global_instrumentation", true),
                c("thread_instrumentation", true),
                c("events_statements_current", false),
                c("statements_digest", true),
                c("events_waits_current", false),
            ],
            instruments: vec![
                i("statement/sql/select", true, Some(true)),
                i("wait/synch/mutex/sql/LOCK_open", false, Some(false)),
                i("wait/io/file/innodb/innodb_data_file", false, Some(false)),
                i("memory/sql/THD", false, None),
                i("idle", true, Some(true)),
            ],
        }
    }

    #[test]
    fn builtin_groups_cover_the_classes_a_dba_asks_about() {
        let g = Groups::builtin();
        assert_eq!(
            g.builtin_names(),
            [
                "statements",
                "statement_history",
                "stages",
                "sync_waits",
                "io_waits",
                "table_io",
                "metadata_locks",
                "memory",
                "transactions",
                "idle",
                "errors",
                "statement_cpu"
            ]
        );
        let s = server();
        assert_eq!(g.find("statements").unwrap().rows_on(&s), (2, 1));
        assert_eq!(g.find("sync_waits").unwrap().rows_on(&s), (1, 1));
        assert_eq!(g.find("transactions").unwrap().rows_on(&s), (0, 0));
        assert_eq!(g.find("idle").unwrap().rows_on(&s), (1, 1));
        // MySQL's: this server (MariaDB's shape) has no row of them.
        assert_eq!(g.find("errors").unwrap().rows_on(&s), (0, 0));
        assert_eq!(g.find("statement_cpu").unwrap().rows_on(&s), (0, 1));
        // A group is missing when either kind it names is absent.
        let missing = |name: &str| g.find(name).unwrap().missing_kind(&s);
        assert_eq!(missing("statement_cpu"), Some("consumers"));
        assert_eq!(missing("errors"), Some("instruments"));
        assert_eq!(missing("transactions"), Some("instruments"));
        assert_eq!(missing("memory"), None, "no consumer named");
        assert_eq!(missing("statements"), None);
    }

    #[test]
    fn rows_no_group_covers_and_rows_always_on_are_named() {
        let mut s = server();
        s.consumers.push(c("events_statements_cpu", false));
        s.consumers.push(c("events_brand_new", false));
        s.instruments.push(i("error", true, None));
        s.instruments.push(i("brand_new/class", true, None));
        s.instruments
            .push(i("memory/performance_schema/mutex_instances", true, None));
        let g = Groups::builtin();
        let none = g.uncovered(&s);
        // MySQL 9.7's idle, error and CPU rows have groups; a class a later server adds does not.
        assert_eq!(none.consumers, ["events_brand_new"]);
        assert_eq!(none.instruments, ["brand_new/class"]);
        let memory = g.find("memory").unwrap();
        assert_eq!(memory.rows_on(&s), (0, 2));
        assert_eq!(memory.rows_always_on(&s), 1);
        assert_eq!(g.find("statements").unwrap().rows_always_on(&s), 0);
    }

    #[test]
    fn a_point_turns_on_its_groups_and_nothing_else() {
        let groups = Groups::builtin();
        let sel = groups
            .select(&["statements".into(), "memory".into()])
            .unwrap();
        let on: Vec<&Group> = sel.iter().collect();
        let scenario = point_scenario(&on);
        assert_eq!(scenario.name, "g:statements+memory");
        let plan = scenario.plan(&server()).unwrap();
        let after = &plan.expected;
        let consumer = |n: &str| {
            after
                .consumers
                .iter()
                .find(|c| c.name == n)
                .unwrap()
                .enabled
        };
        assert!(consumer("global_instrumentation") && consumer("thread_instrumentation"));
        assert!(consumer("events_statements_current") && consumer("statements_digest"));
        assert!(!consumer("events_waits_current"));
        let instrument = |n: &str| after.instruments.iter().find(|i| i.name == n).unwrap();
        assert!(instrument("statement/sql/select").enabled);
        assert!(instrument("memory/sql/THD").enabled);
        assert_eq!(
            instrument("memory/sql/THD").timed,
            None,
            "memory is never timed"
        );
        assert!(!instrument("idle").enabled, "in no group: off");
        assert!(!instrument("wait/synch/mutex/sql/LOCK_open").enabled);

        let base = point_scenario(&[]);
        assert_eq!(base.name, "g:base");
        let plan = base.plan(&server()).unwrap();
        assert!(plan.expected.instruments.iter().all(|i| !i.enabled));
        assert_eq!(
            plan.expected.consumers.iter().filter(|c| c.enabled).count(),
            2
        );
        assert_eq!(advice_scenario(&on).name, "advice:statements+memory");
        let nothing = advice_scenario(&[]).plan(&server()).unwrap();
        assert!(nothing.expected.consumers.iter().all(|c| !c.enabled));
        assert!(nothing.expected.instruments.iter().all(|i| !i.enabled));
    }

    #[test]
    fn bad_selections_are_one_clear_line() {
        let g = Groups::builtin();
        let e = g.select(&[]).unwrap_err().to_string();
        assert!(e.contains("no group named"), "{e}");
        let e = g.select(&["stagez".into()]).unwrap_err().to_string();
        assert!(
            e.contains("unknown group 'stagez'") && e.contains("stages"),
            "{e}"
        );
        let e = g
            .select(&["stages".into(), "stages".into()])
            .unwrap_err()
            .to_string();
        assert!(e.contains("listed twice"), "{e}");
    }

    #[test]
    fn config_groups_are_checked() {
        let path = Path::new("ps.toml");
        let mut g = Groups::builtin();
        g.add_toml(
            "[[group]]\nname = \"csv_engine\"\ninstruments = [\"wait/synch/mutex/csv/%\"]\n\
             [[scenario]]\nname = \"x\"\nconsumers = { enable = [\"%\"] }\n",
            path,
        )
        .unwrap();
        assert!(g.find("csv_engine").is_some());
        assert!(!g.builtin_names().contains(&"csv_engine".to_string()));
        for (text, says) in [
            ("[[group]]\nname = \"e\"\n", "turns nothing on"),
            (
                "[[group]]\nname = \"base\"\ninstruments = [\"x\"]\n",
                "not 'base'",
            ),
            (
                "[[group]]\nname = \"a+b\"\ninstruments = [\"x\"]\n",
                "only letters",
            ),
            (
                "[[group]]\nname = \"stages\"\ninstruments = [\"x\"]\n",
                "already defined",
            ),
            (
                "[[group]]\nname = \"x\"\ninstrument = [\"x\"]\n",
                "unknown field",
            ),
        ] {
            let e = Groups::builtin()
                .add_toml(text, path)
                .unwrap_err()
                .to_string();
            assert!(e.contains(says), "{text}: {e}");
        }
    }
}
