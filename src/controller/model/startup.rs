//! Startup scenarios: `NAME@startup` is runtime scenario `NAME` set by server options at start
//! instead of UPDATEs at runtime. Many instruments (mutexes, rwlocks, conds created at startup)
//! are only instrumented when enabled before the objects exist, so flipping them at runtime can
//! understate what they cost; the restart hook runs the server with the options here (`{opts}`
//! in `--restart-cmd`) and the report compares the two.

use super::pattern::{NamePattern, Selection};
use super::scenario::{InstrumentRule, Scenario, Settings};
use crate::controller::error::{ControllerError, Result};

pub(crate) use crate::phase_log::{twin_name, SUFFIX};

/// The startup variant of a runtime scenario.
pub(crate) fn startup_of(twin: &Scenario) -> Result<Scenario> {
    let name = format!("{}{SUFFIX}", twin.name);
    if !matches!(twin.settings, Settings::Runtime { .. }) {
        return Err(ControllerError::StartupScenario {
            name,
            reason: format!("{} is not a runtime scenario", twin.name),
        });
    }
    let scenario = Scenario {
        name,
        description: format!("{} set by server options at startup", twin.name),
        source: twin.source.clone(),
        settings: Settings::Startup(Box::new(twin.clone())),
    };
    // Fails now, not at the first restart, if the selection has no option form.
    options(&scenario, &[])?;
    Ok(scenario)
}

fn option_name(consumer: &str) -> String {
    consumer.replace('_', "-").to_ascii_lowercase()
}

fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// The mysqld options (shell-quoted words) that start a server in `scenario`'s settings:
/// `--performance-schema-consumer-NAME=ON|OFF` for every consumer the server has
/// (`consumers`: the names of its setup_consumers rows), and `--performance-schema-instrument`
/// patterns (`'%=OFF'` first; more specific patterns win on the server whatever the order).
/// Empty for scenarios that are not startup scenarios.
pub(crate) fn options(scenario: &Scenario, consumers: &[String]) -> Result<Vec<String>> {
    let Settings::Startup(twin) = &scenario.settings else {
        return Ok(Vec::new());
    };
    let Settings::Runtime {
        consumers: consumer_sel,
        instruments,
    } = &twin.settings
    else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    if let Some(sel) = consumer_sel {
        for name in consumers {
            let value = if sel.matches(name) { "ON" } else { "OFF" };
            out.push(format!(
                "--performance-schema-consumer-{}={value}",
                option_name(name)
            ));
        }
    }
    if let Some(rule) = instruments {
        out.extend(instrument_options(rule).map_err(|reason| {
            ControllerError::StartupScenario {
                name: scenario.name.clone(),
                reason,
            }
        })?);
    }
    Ok(out)
}

fn instrument_options(rule: &InstrumentRule) -> std::result::Result<Vec<String>, String> {
    let value = if rule.timed == rule.enable {
        "ON"
    } else if rule.timed == Selection::none() {
        "COUNTED"
    } else {
        return Err(
            "its instruments are timed by another selection than the one that enables them; \
             startup options can only say ON (enabled and timed), COUNTED or OFF per pattern"
                .into(),
        );
    };
    let mut out = Vec::new();
    if rule.enable.is_everything() {
        out.push(format!(
            "--performance-schema-instrument={}",
            quote(&format!("%={value}"))
        ));
        return Ok(out);
    }
    out.push(format!(
        "--performance-schema-instrument={}",
        quote("%=OFF")
    ));
    for p in &rule.enable.patterns {
        if let NamePattern::Like(text) = p {
            if text.contains('_') {
                return Err(format!(
                    "pattern {text:?} uses '_', which the server's option patterns do not know"
                ));
            }
        }
        out.push(format!(
            "--performance-schema-instrument={}",
            quote(&format!("{}={value}", p.as_str()))
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::model::catalog::Catalog;

    fn consumers() -> Vec<String> {
        ["events_stages_current", "global_instrumentation"]
            .map(String::from)
            .to_vec()
    }

    fn opts(name: &str) -> Vec<String> {
        let mut catalog = Catalog::builtin();
        options(catalog.resolve(name).unwrap(), &consumers()).unwrap()
    }

    #[test]
    fn seed_scenarios_have_option_forms() {
        assert_eq!(
            opts("pfson_conon_inson@startup"),
            [
                "--performance-schema-consumer-events-stages-current=ON",
                "--performance-schema-consumer-global-instrumentation=ON",
                "--performance-schema-instrument='%=ON'",
            ]
        );
        assert_eq!(
            opts("pfson_conoff_insoff@startup"),
            [
                "--performance-schema-consumer-events-stages-current=OFF",
                "--performance-schema-consumer-global-instrumentation=OFF",
                "--performance-schema-instrument='%=OFF'",
            ]
        );
        let sqlon = opts("pfson_conon_ins_sqlon@startup");
        assert_eq!(
            sqlon[1..],
            [
                "--performance-schema-consumer-global-instrumentation=ON",
                "--performance-schema-instrument='%=OFF'",
                "--performance-schema-instrument='statement/%=ON'",
            ]
        );
        assert!(opts("pfson_conon_inson").is_empty(), "runtime: no options");
    }

    #[test]
    fn names_and_refusals() {
        assert_eq!(twin_name("a@startup"), Some("a"));
        assert_eq!(twin_name("@startup"), None);
        assert_eq!(twin_name("a"), None);
        let mut catalog = Catalog::builtin();
        let e = catalog.resolve("pfsoff@startup").unwrap_err().to_string();
        assert!(e.contains("not a runtime scenario"), "{e}");
        let mut twin = catalog.get("pfson_conon_inson").unwrap().clone();
        twin.settings = Settings::Runtime {
            consumers: None,
            instruments: Some(InstrumentRule {
                enable: Selection::all(),
                timed: Selection::parse(&["wait/%"]).unwrap(),
            }),
        };
        let e = startup_of(&twin).unwrap_err().to_string();
        assert!(e.contains("timed by another selection"), "{e}");
        let startup = catalog.resolve("pfson_conon_inson@startup").unwrap();
        assert!(startup.requires_restart());
        assert!(catalog.get("pfson_conon_inson@startup").is_ok(), "kept");
    }
}
