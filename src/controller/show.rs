//! Text for `psprobe ps scenarios`, `psprobe ps groups` and `psprobe ps show`. Pure functions over data, so the layout
//! is unit-tested without a server.

use std::fmt::Write;
use std::path::Path;

use super::client::server::ServerInfo;
use super::model::catalog::Catalog;
use super::model::groups::{point_scenario, Groups, ALWAYS_WITH_A_GROUP};
use super::model::scenario::{Settings, Source};
use super::model::setup_tables::{yes_no, SetupState};
use super::model::snapshot::Snapshot;

/// The scenario list: name, whether it needs a restart, description; with `sql`, the statements.
pub(crate) fn scenarios(catalog: &Catalog, sql: bool) -> String {
    let width = catalog.names().map(str::len).max().unwrap_or(4).max(4);
    let mut out = format!("{:<width$}  RESTART  DESCRIPTION\n", "NAME");
    for s in catalog.iter() {
        let restart = if s.requires_restart() { "yes" } else { "no" };
        let _ = writeln!(out, "{:<width$}  {restart:<7}  {}", s.name, s.description);
        if !sql {
            continue;
        }
        let lines = match (&s.settings, s.sql()) {
            (_, Some(statements)) => statements.iter().map(|q| format!("{q};")).collect(),
            (Settings::PsOff, _) => vec!["-- restart mysqld with performance_schema=OFF".into()],
            (Settings::Startup(twin), _) => {
                vec![format!(
                    "-- restart mysqld with the options that set {}",
                    twin.name
                )]
            }
            _ => vec!["-- writes back the rows of the saved snapshot".into()],
        };
        for line in lines {
            let _ = writeln!(out, "    {line}");
        }
    }
    out
}

/// The instrument groups: name, what each turns on, description; with `sql`, the statements
/// that turn that group alone on; with `server`, how many of the server's rows each turns on
/// (a group with none is left out of an attribution there).
pub(crate) fn groups(groups: &Groups, sql: bool, server: Option<&SetupState>) -> String {
    let width = groups
        .iter()
        .map(|g| g.name.len())
        .max()
        .unwrap_or(4)
        .max(5);
    let mut out = format!(
        "{:<width$}  SOURCE   DESCRIPTION
",
        "GROUP"
    );
    for g in groups.iter() {
        let source = match g.source {
            Source::File(_) => "config",
            _ => "builtin",
        };
        let _ = writeln!(out, "{:<width$}  {source:<7}  {}", g.name, g.description);
        let _ = writeln!(
            out,
            "    instruments (enabled and timed): {}",
            if g.instruments.is_empty() {
                "-".to_string()
            } else {
                g.instruments.join(", ")
            }
        );
        let _ = writeln!(
            out,
            "    consumers: {}{}",
            g.consumers.join(", "),
            if g.consumers.is_empty() {
                ALWAYS_WITH_A_GROUP.join(", ")
            } else {
                format!(" (and {})", ALWAYS_WITH_A_GROUP.join(", "))
            }
        );
        if let Some(state) = server {
            let (consumers, instruments) = g.rows_on(state);
            let fixed = match g.rows_always_on(state) {
                0 => String::new(),
                n => format!(
                    " ({n} of them built in and always on, memory/performance_schema/%: \
                     switching the group leaves them on)"
                ),
            };
            let _ = writeln!(
                out,
                "    on this server: {instruments} instrument(s){fixed}, {consumers} consumer(s){}",
                if g.missing_kind(state).is_some() {
                    ": not this server's; an attribution leaves it out"
                } else {
                    ""
                }
            );
        }
        if sql {
            for q in point_scenario(&[g]).sql().unwrap_or_default() {
                let _ = writeln!(out, "    {q};");
            }
        }
    }
    if let Some(state) = server {
        let none = groups.uncovered(state);
        let list = |names: &[String]| {
            if names.is_empty() {
                "-".to_string()
            } else {
                names.join(", ")
            }
        };
        let _ = writeln!(
            out,
            "in no group on this server (an attribution leaves them off): {} instrument(s): {}; \
             {} consumer(s): {}",
            none.instruments.len(),
            list(&none.instruments),
            none.consumers.len(),
            list(&none.consumers)
        );
    }
    out
}

/// What `ps show` prints about a server.
pub(crate) struct ShowInput<'a> {
    pub target: &'a str,
    pub info: &'a ServerInfo,
    /// `None` when performance_schema is off.
    pub state: Option<&'a SetupState>,
    pub catalog: &'a Catalog,
    pub state_file: &'a Path,
    pub snapshot: Option<&'a Snapshot>,
}

pub(crate) fn server(input: &ShowInput<'_>) -> String {
    let mut out = String::new();
    let info = input.info;
    let _ = writeln!(out, "server:             {}", input.target);
    let _ = writeln!(
        out,
        "version:            {} [{}]",
        info.version,
        info.version.series()
    );
    let Some(state) = input.state else {
        let why = match info.performance_schema {
            None => "this server was built without it",
            Some(_) => "set performance_schema=ON under [mysqld] in my.cnf and restart to use runtime scenarios",
        };
        let _ = writeln!(out, "performance_schema: OFF ({why})");
        let _ = writeln!(out, "matches scenario:   pfsoff");
        return out;
    };
    let _ = writeln!(out, "performance_schema: ON");

    let enabled = state.consumers.iter().filter(|r| r.enabled).count();
    let _ = writeln!(
        out,
        "\nconsumers ({}, {enabled} enabled):",
        state.consumers.len()
    );
    let width = state
        .consumers
        .iter()
        .map(|r| r.name.len())
        .max()
        .unwrap_or(0);
    for r in &state.consumers {
        let _ = writeln!(out, "  {:<width$}  {}", r.name, yes_no(r.enabled));
    }

    let _ = writeln!(
        out,
        "\ninstruments ({}, {} enabled, {} timed), by class:",
        state.instruments.len(),
        state.instruments.iter().filter(|r| r.enabled).count(),
        state
            .instruments
            .iter()
            .filter(|r| r.timed == Some(true))
            .count()
    );
    let _ = writeln!(
        out,
        "  {:<12}  {:>5}  {:>7}  {:>5}",
        "CLASS", "TOTAL", "ENABLED", "TIMED"
    );
    for (class, total, on, timed) in classes(state) {
        let _ = writeln!(out, "  {class:<12}  {total:>5}  {on:>7}  {timed:>5}");
    }

    let mut matching: Vec<&str> = input
        .catalog
        .iter()
        .filter(|s| s.settings != Settings::Original && s.matches(state))
        .map(|s| s.name.as_str())
        .collect();
    if let Some(snap) = input.snapshot {
        if super::model::scenario::Scenario::original_from(&snap.state).matches(state) {
            matching.insert(0, "original");
        }
    }
    let _ = writeln!(
        out,
        "\nmatches scenario:   {}",
        if matching.is_empty() {
            "none of the known scenarios".to_string()
        } else {
            matching.join(", ")
        }
    );
    let _ = match input.snapshot {
        Some(s) => writeln!(
            out,
            "snapshot:           {} (taken {}; `psprobe ps restore` puts it back)",
            input.state_file.display(),
            s.taken_at
        ),
        None => writeln!(
            out,
            "snapshot:           none at {}",
            input.state_file.display()
        ),
    };
    out
}

/// Per top-level class (the part of the name before the first '/'), in order of appearance:
/// (class, rows, enabled, timed).
fn classes(state: &SetupState) -> Vec<(String, usize, usize, usize)> {
    let mut out: Vec<(String, usize, usize, usize)> = Vec::new();
    for r in &state.instruments {
        let class = r.name.split('/').next().unwrap_or("");
        let i = match out.iter().position(|c| c.0 == class) {
            Some(i) => i,
            None => {
                out.push((class.to_string(), 0, 0, 0));
                out.len() - 1
            }
        };
        out[i].1 += 1;
        out[i].2 += usize::from(r.enabled);
        out[i].3 += usize::from(r.timed == Some(true));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::model::setup_tables::tests::{c, i};
    use crate::controller::model::snapshot::ServerIdentity;
    use crate::controller::model::version::ServerVersion;

    fn info(ps: Option<bool>) -> ServerInfo {
        ServerInfo {
            version: ServerVersion::parse("10.11.19-MariaDB-0+deb12u1", "Debian 12"),
            identity: ServerIdentity {
                address: "127.0.0.1:3306".into(),
                hostname: "h".into(),
                port: 3306,
                server_uuid: None,
                version: "10.11.19-MariaDB-0+deb12u1".into(),
                started_at_unix: None,
            },
            performance_schema: ps,
            account: "'u'@'%'".into(),
        }
    }

    #[test]
    fn scenario_list_marks_restarts_and_shows_sql() {
        let text = scenarios(&Catalog::builtin(), true);
        assert!(text.starts_with("NAME "), "{text}");
        let pfsoff = text.lines().find(|l| l.starts_with("pfsoff ")).unwrap();
        assert!(pfsoff.contains(" yes "), "{pfsoff}");
        assert!(text.contains("    update performance_schema.setup_instruments set enabled = if(name like 'statement/%', 'YES', 'NO'), timed = enabled;"), "{text}");
        assert_eq!(scenarios(&Catalog::builtin(), false).lines().count(), 8);
    }

    #[test]
    fn groups_on_a_server_name_rows_always_on_and_rows_in_no_group() {
        let state = SetupState {
            consumers: vec![
                c("global_instrumentation", true),
                c("events_statements_cpu", false),
                c("events_brand_new", false),
            ],
            instruments: vec![
                i("memory/performance_schema/d", true, None),
                i("memory/sql/THD", true, None),
                i("error", true, None),
                i("brand_new/class", true, None),
            ],
        };
        let text = groups(&Groups::builtin(), false, Some(&state));
        let memory = text
            .lines()
            .skip_while(|l| !l.starts_with("memory "))
            .find(|l| l.contains("on this server:"))
            .unwrap();
        assert!(
            memory.contains("2 instrument(s) (1 of them built in and always on"),
            "{memory}"
        );
        assert!(
            text.ends_with(
                "in no group on this server (an attribution leaves them off): 1 instrument(s): \
                 brand_new/class; 1 consumer(s): events_brand_new\n"
            ),
            "{text}"
        );
        assert!(!groups(&Groups::builtin(), false, None).contains("in no group"));
    }

    #[test]
    fn show_summarises_classes_and_names_the_matching_scenario() {
        let state = SetupState {
            consumers: vec![
                c("events_waits_current", true),
                c("statements_digest", true),
            ],
            instruments: vec![
                i("wait/a", true, Some(true)),
                i("statement/b", true, Some(true)),
                i("wait/c", true, Some(true)),
                i("memory/performance_schema/d", true, Some(false)),
            ],
        };
        let cat = Catalog::builtin();
        let info = info(Some(true));
        let input = ShowInput {
            target: "u@127.0.0.1:3306",
            info: &info,
            state: Some(&state),
            catalog: &cat,
            state_file: Path::new("/s.json"),
            snapshot: None,
        };
        let text = server(&input);
        assert!(
            text.contains(
                "MariaDB 10.11.19 (10.11.19-MariaDB-0+deb12u1, Debian 12) [MariaDB 10.x]"
            ),
            "{text}"
        );
        assert!(text.contains("consumers (2, 2 enabled):"), "{text}");
        assert!(
            text.contains("instruments (4, 4 enabled, 3 timed), by class:"),
            "{text}"
        );
        assert!(
            text.contains("  wait              2        2      2\n"),
            "{text}"
        );
        assert!(
            text.contains("  memory            1        1      0\n"),
            "{text}"
        );
        assert!(
            text.contains("matches scenario:   pfson_conon_inson\n"),
            "{text}"
        );
        assert!(
            text.contains("snapshot:           none at /s.json"),
            "{text}"
        );

        let off = info_off_text(&cat);
        assert!(
            off.contains("performance_schema: OFF (set performance_schema=ON"),
            "{off}"
        );
        assert!(off.contains("matches scenario:   pfsoff"), "{off}");
    }

    fn info_off_text(cat: &Catalog) -> String {
        let info = info(Some(false));
        server(&ShowInput {
            target: "u@h:1",
            info: &info,
            state: None,
            catalog: cat,
            state_file: Path::new("/s.json"),
            snapshot: None,
        })
    }
}
