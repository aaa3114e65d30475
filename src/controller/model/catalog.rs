//! The scenarios psprobe knows: `original`, the six of the reference study (built from the same
//! selections a user writes in TOML), and the user's own from `[[scenario]]` tables.

use std::borrow::Cow;
use std::path::Path;

use serde::Deserialize;

use super::groups::{advice_scenario, point_scenario, Group, Groups};
use crate::phase_log::group_names::{advice_groups, point_groups, BASE_CHECK};

use super::pattern::Selection;
use super::scenario::{InstrumentRule, Scenario, Settings, Source};
use crate::controller::error::{ControllerError, Result};

/// The consumers the study's `pfson_conon_ins_sqlon` (DAS performance insight) turns on.
pub(crate) const SQLON_CONSUMERS: [&str; 5] = [
    "global_instrumentation",
    "thread_instrumentation",
    "events_statements_current",
    "events_statements_history",
    "statements_digest",
];

#[derive(Clone, Debug)]
pub struct Catalog {
    scenarios: Vec<Scenario>,
    /// The instrument groups (built-in and `[[group]]`): an attribution's design points,
    /// base check and advice are scenarios made of them, found by name like the others.
    groups: Groups,
}

impl Catalog {
    /// `original` and the six scenarios of the reference study.
    pub fn builtin() -> Self {
        let seed = |name: &str, description: &str, settings| Scenario {
            name: name.into(),
            description: description.into(),
            source: Source::Seed,
            settings,
        };
        let runtime =
            |consumers: Selection, enable: Selection, timed: Selection| Settings::Runtime {
                consumers: Some(consumers),
                instruments: Some(InstrumentRule { enable, timed }),
            };
        let (all, none) = (Selection::all, Selection::none);
        let sqlon_consumers = Selection::parse(&SQLON_CONSUMERS).expect("static names");
        let statements = || Selection::parse(&["statement/%"]).expect("static pattern");
        let scenarios = vec![
            Scenario {
                name: "original".into(),
                description: "the settings psprobe found before its first change (its snapshot)"
                    .into(),
                source: Source::Builtin,
                settings: Settings::Original,
            },
            seed(
                "pfsoff",
                "performance_schema=OFF at server start (needs a restart)",
                Settings::PsOff,
            ),
            seed(
                "pfson_conoff_insoff",
                "PS on; every consumer off; every instrument off and untimed",
                runtime(none(), none(), none()),
            ),
            seed(
                "pfson_conon_insoff",
                "PS on; every consumer on; every instrument off and untimed",
                runtime(all(), none(), none()),
            ),
            seed(
                "pfson_conon_ins_sqlon",
                "PS on; global/thread instrumentation, statements current/history and digest \
                 consumers on; statement/% instruments on and timed (DAS performance insight)",
                runtime(sqlon_consumers, statements(), statements()),
            ),
            seed(
                "pfson_conoff_inson",
                "PS on; every consumer off; every instrument on and timed",
                runtime(none(), all(), all()),
            ),
            seed(
                "pfson_conon_inson",
                "PS on; every consumer on; every instrument on and timed",
                runtime(all(), all(), all()),
            ),
        ];
        Catalog {
            scenarios,
            groups: Groups::builtin(),
        }
    }

    /// The instrument groups known (built-in, then the config file's).
    pub fn groups(&self) -> &Groups {
        &self.groups
    }

    /// The scenario called `name`: a catalog entry, or one made of instrument groups (an
    /// attribution's design point `g:...`, its `base_check`, a recommendation `advice:...`), so
    /// a run's last published scenario is known to `ps restore` and the next leader.
    pub fn lookup(&self, name: &str) -> Option<Cow<'_, Scenario>> {
        if let Some(s) = self.find(name) {
            return Some(Cow::Borrowed(s));
        }
        let of = |names: Vec<&str>| -> Option<Vec<&Group>> {
            names.iter().map(|n| self.groups.find(n)).collect()
        };
        if name == BASE_CHECK {
            let mut s = point_scenario(&[]);
            s.name = name.to_string();
            return Some(Cow::Owned(s));
        }
        if let Some(on) = point_groups(name).and_then(of) {
            return Some(Cow::Owned(point_scenario(&on)));
        }
        advice_groups(name)
            .and_then(of)
            .map(|on| Cow::Owned(advice_scenario(&on)))
    }

    /// Add the `[[scenario]]` and `[[group]]` tables of a TOML document read from `path`.
    pub fn add_toml(&mut self, text: &str, path: &Path) -> Result<()> {
        self.groups.add_toml(text, path)?;
        let file: ScenarioFile = super::file::parse_toml(text, path)?;
        for entry in file.scenario {
            let scenario = entry.into_scenario(path)?;
            if self.find(&scenario.name).is_some() {
                return Err(ControllerError::Config {
                    path: path.into(),
                    reason: format!(
                        "scenario '{}' is already defined; pick another name",
                        scenario.name
                    ),
                });
            }
            self.scenarios.push(scenario);
        }
        Ok(())
    }

    /// Adds a scenario psprobe made (an attribution's design point, a recommendation to
    /// confirm), replacing one of the same name.
    pub fn add_generated(&mut self, scenario: Scenario) {
        self.scenarios.retain(|s| s.name != scenario.name);
        self.scenarios.push(scenario);
    }

    pub fn find(&self, name: &str) -> Option<&Scenario> {
        self.scenarios.iter().find(|s| s.name == name)
    }

    /// The scenario called `name`, or an error listing every valid name.
    pub fn get(&self, name: &str) -> Result<&Scenario> {
        self.find(name)
            .ok_or_else(|| ControllerError::UnknownScenario {
                name: name.into(),
                valid: self.names().map(str::to_string).collect(),
            })
    }

    /// Like [`Catalog::get`], and `NAME@startup` (the startup variant of runtime scenario
    /// `NAME`, see [`super::startup`]) is added on first use.
    pub fn resolve(&mut self, name: &str) -> Result<&Scenario> {
        if self.find(name).is_none() {
            if let Some(twin) = super::startup::twin_name(name) {
                let variant = super::startup::startup_of(self.get(twin)?)?;
                self.scenarios.push(variant);
            }
        }
        self.get(name)
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.scenarios.iter().map(|s| s.name.as_str())
    }

    /// The six scenarios of the reference study, in the study's order.
    pub fn seed_names() -> Vec<String> {
        Self::builtin()
            .scenarios
            .into_iter()
            .filter(|s| s.source == Source::Seed)
            .map(|s| s.name)
            .collect()
    }

    pub fn iter(&self) -> impl Iterator<Item = &Scenario> {
        self.scenarios.iter()
    }
}

#[derive(Debug, Default, Deserialize)]
struct ScenarioFile {
    #[serde(default)]
    scenario: Vec<ScenarioToml>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScenarioToml {
    name: String,
    description: Option<String>,
    consumers: Option<ConsumersToml>,
    instruments: Option<InstrumentsToml>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ConsumersToml {
    enable: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct InstrumentsToml {
    enable: Vec<String>,
    /// Defaults to `enable`.
    timed: Option<Vec<String>>,
}

impl ScenarioToml {
    fn into_scenario(self, path: &Path) -> Result<Scenario> {
        let err = |reason: String| ControllerError::Config {
            path: path.into(),
            reason: format!("scenario '{}': {reason}", self.name),
        };
        let name_ok = !self.name.is_empty()
            && self
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c));
        if !name_ok {
            return Err(err(
                "names may use only letters, digits, '_', '-' and '.'".into()
            ));
        }
        if self.consumers.is_none() && self.instruments.is_none() {
            return Err(err(
                "it sets nothing: give consumers = { enable = [...] } and/or instruments = { enable = [...] }".into(),
            ));
        }
        let consumers = match &self.consumers {
            None => None,
            Some(c) => {
                Some(Selection::parse(&c.enable).map_err(|e| err(format!("consumers: {e}")))?)
            }
        };
        let instruments = match &self.instruments {
            None => None,
            Some(i) => {
                let enable = Selection::parse(&i.enable)
                    .map_err(|e| err(format!("instruments.enable: {e}")))?;
                let timed = match &i.timed {
                    None => enable.clone(),
                    Some(t) => {
                        Selection::parse(t).map_err(|e| err(format!("instruments.timed: {e}")))?
                    }
                };
                Some(InstrumentRule { enable, timed })
            }
        };
        let description = self
            .description
            .clone()
            .unwrap_or_else(|| format!("user scenario from {}", path.display()));
        Ok(Scenario {
            name: self.name,
            description,
            source: Source::File(path.into()),
            settings: Settings::Runtime {
                consumers,
                instruments,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::model::setup_tables::tests::{c, i};
    use crate::controller::model::setup_tables::SetupState;

    /// The study's SQL, verbatim (the seed uses `Enabled`, odd spacing and trailing `;`).
    const SEED_CONOFF: &str = "update performance_schema.setup_consumers set Enabled = 'NO' ;";
    const SEED_CONON: &str = "update performance_schema.setup_consumers set Enabled = 'YES' ;";
    const SEED_INSOFF: &str =
        "update performance_schema.setup_instruments set Enabled = 'NO' ,timed = 'NO';";
    const SEED_INSON: &str =
        "update performance_schema.setup_instruments set Enabled = 'YES' ,timed = 'YES';";
    const SEED_SQLON_CON: &str = "update performance_schema.setup_consumers set enabled = if(name in ('global_instrumentation','thread_instrumentation','events_statements_current','events_statements_history','statements_digest'),'YES', 'NO');";
    const SEED_SQLON_INS: &str = "update performance_schema.setup_instruments set enabled = if(name like 'statement/%', 'YES', 'NO'), timed = enabled;";

    /// Same statement up to case, whitespace and a trailing semicolon.
    fn norm(sql: &str) -> String {
        sql.chars()
            .filter(|c| !c.is_whitespace())
            .collect::<String>()
            .trim_end_matches(';')
            .to_ascii_lowercase()
    }

    fn sql_of(name: &str) -> Vec<String> {
        Catalog::builtin().get(name).unwrap().sql().unwrap()
    }

    #[test]
    fn seed_names_are_the_six_of_the_study_in_order() {
        assert_eq!(
            Catalog::seed_names(),
            [
                "pfsoff",
                "pfson_conoff_insoff",
                "pfson_conon_insoff",
                "pfson_conon_ins_sqlon",
                "pfson_conoff_inson",
                "pfson_conon_inson",
            ]
        );
    }

    #[test]
    fn seed_scenarios_produce_the_studys_sql() {
        let cases = [
            ("pfson_conoff_insoff", [SEED_CONOFF, SEED_INSOFF]),
            ("pfson_conon_insoff", [SEED_CONON, SEED_INSOFF]),
            ("pfson_conon_ins_sqlon", [SEED_SQLON_CON, SEED_SQLON_INS]),
            ("pfson_conoff_inson", [SEED_CONOFF, SEED_INSON]),
            ("pfson_conon_inson", [SEED_CONON, SEED_INSON]),
        ];
        for (name, seed) in cases {
            let ours: Vec<String> = sql_of(name).iter().map(|s| norm(s)).collect();
            let theirs: Vec<String> = seed.iter().map(|s| norm(s)).collect();
            assert_eq!(ours, theirs, "{name}");
        }
    }

    #[test]
    fn catalog_lists_original_and_the_seed_six() {
        let cat = Catalog::builtin();
        let names: Vec<&str> = cat.names().collect();
        assert_eq!(
            names,
            [
                "original",
                "pfsoff",
                "pfson_conoff_insoff",
                "pfson_conon_insoff",
                "pfson_conon_ins_sqlon",
                "pfson_conoff_inson",
                "pfson_conon_inson"
            ]
        );
        assert!(cat.get("pfsoff").unwrap().requires_restart());
        assert_eq!(cat.iter().filter(|s| s.requires_restart()).count(), 1);
        let e = cat.get("nope").unwrap_err().to_string();
        assert!(e.contains("unknown scenario 'nope'"), "{e}");
        for n in names {
            assert!(e.contains(n), "{e}");
        }
    }

    #[test]
    fn seed_expectations_on_a_small_server() {
        let server = SetupState {
            consumers: vec![
                c("events_statements_current", false),
                c("events_waits_current", true),
                c("statements_digest", true),
            ],
            instruments: vec![
                i("statement/sql/select", false, Some(false)),
                i("wait/io/table/sql/handler", true, Some(true)),
                i("memory/performance_schema/threads", true, Some(false)),
            ],
        };
        let cat = Catalog::builtin();
        let plan = cat
            .get("pfson_conon_ins_sqlon")
            .unwrap()
            .plan(&server)
            .unwrap();
        assert_eq!(
            plan.expected.consumers,
            [
                c("events_statements_current", true),
                c("events_waits_current", false),
                c("statements_digest", true)
            ]
        );
        assert_eq!(
            plan.expected.instruments,
            [
                i("statement/sql/select", true, Some(true)),
                i("wait/io/table/sql/handler", false, Some(false)),
                i("memory/performance_schema/threads", true, Some(false)),
            ]
        );
        // Three of the five listed consumers are absent: warned, not failed.
        assert_eq!(plan.warnings.len(), 3, "{:?}", plan.warnings);
        assert!(plan
            .warnings
            .iter()
            .any(|w| w.contains("'thread_instrumentation'")));
        let inson = cat.get("pfson_conon_inson").unwrap().plan(&server).unwrap();
        assert!(inson.expected.consumers.iter().all(|r| r.enabled));
        assert!(inson.expected.instruments[..2]
            .iter()
            .all(|r| r.enabled && r.timed == Some(true)));
        assert!(inson.warnings.is_empty());
        assert!(cat
            .get("pfson_conon_inson")
            .unwrap()
            .matches(&inson.expected));
        assert!(!cat
            .get("pfson_conoff_inson")
            .unwrap()
            .matches(&inson.expected));
    }

    #[test]
    fn toml_scenarios() {
        let mut cat = Catalog::builtin();
        let text = r#"
            [controller]
            dsn = "ignored here"

            [[scenario]]
            name = "waits_only"
            description = "just waits"
            consumers = { enable = ["events_waits_%", "global_instrumentation"] }
            instruments = { enable = ["wait/%"], timed = ["wait/io/%"] }

            [[scenario]]
            name = "statements.timed"
            instruments = { enable = ["statement/%"] }
        "#;
        cat.add_toml(text, Path::new("my.toml")).unwrap();
        let w = cat.get("waits_only").unwrap();
        assert_eq!(w.description, "just waits");
        assert_eq!(w.source, Source::File("my.toml".into()));
        let sql = w.sql().unwrap();
        assert_eq!(sql[0], "update performance_schema.setup_consumers set enabled = if(name in ('global_instrumentation') or name like 'events_waits_%', 'YES', 'NO')");
        assert_eq!(sql[1], "update performance_schema.setup_instruments set enabled = if(name like 'wait/%', 'YES', 'NO'), timed = if(name like 'wait/io/%', 'YES', 'NO')");
        let s = cat.get("statements.timed").unwrap();
        let Settings::Runtime {
            consumers,
            instruments,
        } = &s.settings
        else {
            panic!()
        };
        assert!(consumers.is_none(), "consumers left alone");
        let rule = instruments.as_ref().unwrap();
        assert_eq!(rule.timed, rule.enable, "timed defaults to enable");
        assert_eq!(s.sql().unwrap().len(), 1);
    }

    #[test]
    fn bad_toml_scenarios_are_clear_errors() {
        let cases = [
            (
                "[[scenario]]\nname = \"pfsoff\"\nconsumers = { enable = [] }",
                "already defined",
            ),
            ("[[scenario]]\nname = \"x\"", "sets nothing"),
            (
                "[[scenario]]\nname = \"a b\"\nconsumers = { enable = [] }",
                "names may use only",
            ),
            (
                "[[scenario]]\nname = \"x\"\nconsumers = { enable = [\"\"] }",
                "empty pattern",
            ),
            (
                "[[scenario]]\nname = \"x\"\nconsumers = { enabled = [] }",
                "unknown field",
            ),
            (
                "[[scenario]]\nname = \"x\"\ninstruments = { timed = [] }",
                "missing field",
            ),
            ("[[scenario]\nname = \"x\"", "line 1"),
        ];
        for (text, want) in cases {
            let e = Catalog::builtin()
                .add_toml(text, Path::new("s.toml"))
                .unwrap_err()
                .to_string();
            assert!(e.contains(want) && e.contains("s.toml"), "{text:?}: {e}");
        }
    }
}
