//! Whether a snapshot left behind (by a run that did not finish, or by `ps apply`) is still the
//! truth, i.e. whether writing it back undoes only psprobe's own changes.
//!
//! psprobe writes a left-behind snapshot back by itself only when it can prove that: the same
//! server, not restarted since psprobe last saw it, and every row as the scenario psprobe last
//! applied sets it (the scenario its run last published in `psprobe.phase`, or the one `ps apply`
//! recorded). Anything else means someone changed the settings since (a DBA, a restart, another
//! tool): writing the snapshot would silently undo that, so psprobe changes nothing and asks.
//! No I/O here; `left_behind.rs` reads the rows and acts on the verdict.

use std::fmt;

use super::catalog::Catalog;
use super::scenario::Settings;
use super::setup_tables::{compare, Mismatch, SetupState};
use super::snapshot::{ServerIdentity, Snapshot};
use crate::controller::model::phase_row::PhaseRow;

/// What psprobe last did to the server on top of the snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LastApplied {
    /// Nothing yet (the run had not switched): the live rows must be the snapshot's.
    Nothing,
    /// This scenario, as the run published it or `ps apply` recorded it.
    Scenario(String),
    /// No record: a snapshot of an older psprobe, or the phase row is another run's.
    Unknown,
}

/// What the snapshot's run (or `ps apply`) last applied, from the snapshot and the phase row.
pub fn last_applied(snapshot: &Snapshot, phase: Option<&PhaseRow>) -> LastApplied {
    if let Some(name) = &snapshot.applied {
        return LastApplied::Scenario(name.clone());
    }
    match (&snapshot.leader, phase) {
        (Some(leader), Some(row)) if row.leader == *leader => match row.scenario.as_str() {
            "none" => LastApplied::Nothing,
            name => LastApplied::Scenario(name.to_string()),
        },
        _ => LastApplied::Unknown,
    }
}

/// One setting that differs from what psprobe left or from the snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Changed {
    /// `setup_consumers 'events_stages_current' ENABLED`.
    pub setting: String,
    /// What psprobe's last change left there (`None`: unknown).
    pub left: Option<String>,
    pub snapshot: String,
    pub live: String,
}

impl fmt::Display for Changed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: snapshot {}, live {}",
            self.setting, self.snapshot, self.live
        )?;
        if let Some(left) = &self.left {
            write!(f, " (psprobe left {left})")?;
        }
        Ok(())
    }
}

/// Why a snapshot cannot be proved to be the truth.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Why {
    /// Settings changed after psprobe last applied `scenario` (`None`: after the snapshot,
    /// before any change).
    ChangedSince { scenario: Option<String> },
    /// The server started again (at `now`, Unix seconds) after psprobe last saw it start
    /// (`then`): its setup tables hold its configured defaults, psprobe's changes went with the
    /// restart.
    Restarted { then: u64, now: u64 },
    /// psprobe cannot tell what it last applied.
    NoRecord { detail: String },
}

impl fmt::Display for Why {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Why::ChangedSince { scenario: Some(s) } => write!(
                f,
                "the settings changed after psprobe last applied scenario {s}"
            ),
            Why::ChangedSince { scenario: None } => {
                write!(f, "the settings changed after the snapshot was taken")
            }
            Why::Restarted { then, now } => write!(
                f,
                "the server restarted ({}s after the start psprobe knew of), so its setup tables \
                 hold its configured defaults and psprobe's changes are gone",
                now.saturating_sub(*then)
            ),
            Why::NoRecord { detail } => {
                write!(f, "psprobe cannot tell what it last applied ({detail})")
            }
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stale {
    pub why: Why,
    /// The settings that tell: changed since psprobe's last change, or (restart, no record)
    /// where the live rows differ from the snapshot.
    pub changed: Vec<Changed>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Writing the snapshot back undoes only psprobe's own changes (`rows` cells differ; 0:
    /// the live rows are the snapshot's already).
    Restore {
        rows: usize,
    },
    Refuse(Stale),
}

/// The rows `last` leaves on a server whose rows were `base` (`None`: not known here).
pub fn rows_after(catalog: &Catalog, last: &str, base: &SetupState) -> Option<SetupState> {
    let scenario = catalog.lookup(last).or_else(|| {
        let twin = super::startup::twin_name(last)?;
        catalog.lookup(twin)
    })?;
    if scenario.settings == Settings::Original {
        return Some(base.clone());
    }
    scenario
        .rows_like()?
        .plan(base)
        .ok()
        .map(|plan| plan.expected)
}

fn changed(found: &[Mismatch], snapshot: &SetupState, left: bool) -> Vec<Changed> {
    found
        .iter()
        .map(|m| Changed {
            setting: m.setting(),
            left: left.then(|| m.expected.clone()),
            snapshot: snapshot.cell(m.table, &m.name, m.column),
            live: m.found.clone(),
        })
        .collect()
}

/// Whether `snapshot` may be written back over `live` on `server`, given what psprobe `last`
/// applied.
pub fn judge(
    snapshot: &Snapshot,
    last: &LastApplied,
    live: &SetupState,
    server: &ServerIdentity,
    catalog: &Catalog,
) -> Verdict {
    let to_write = compare(&snapshot.state, live);
    if to_write.is_empty() {
        return Verdict::Restore { rows: 0 };
    }
    let refuse = |why: Why| {
        Verdict::Refuse(Stale {
            why,
            changed: changed(&to_write, &snapshot.state, false),
        })
    };
    if snapshot.restarted_since(server) {
        return refuse(Why::Restarted {
            then: snapshot.known_start().unwrap_or(0),
            now: server.started_at_unix.unwrap_or(0),
        });
    }
    let (expected, scenario) = match last {
        LastApplied::Nothing => (snapshot.state.clone(), None),
        LastApplied::Scenario(name) => match rows_after(catalog, name, &snapshot.state) {
            Some(rows) => (rows, Some(name.clone())),
            None => {
                return refuse(Why::NoRecord {
                    detail: format!(
                        "its last scenario '{name}' is not one this psprobe knows or sets at \
                         runtime; pass the same --config as that run"
                    ),
                })
            }
        },
        LastApplied::Unknown => {
            return refuse(Why::NoRecord {
                detail: "the phase row on the server is not that run's".into(),
            })
        }
    };
    let since = compare(&expected, live);
    if since.is_empty() {
        return Verdict::Restore {
            rows: to_write.len(),
        };
    }
    Verdict::Refuse(Stale {
        why: Why::ChangedSince { scenario },
        changed: changed(&since, &snapshot.state, true),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::model::setup_tables::tests::{c, i};

    fn server(started: u64) -> ServerIdentity {
        ServerIdentity {
            address: "db:3306".into(),
            hostname: "db1".into(),
            port: 3306,
            server_uuid: None,
            version: "11.8".into(),
            started_at_unix: Some(started),
        }
    }

    /// Consumers as MariaDB ships them (the seed scenarios name these).
    fn state(stages_current: bool, statements_current: bool) -> SetupState {
        SetupState {
            consumers: vec![
                c("events_stages_current", stages_current),
                c("events_statements_current", statements_current),
                c("global_instrumentation", true),
                c("thread_instrumentation", true),
                c("statements_digest", true),
            ],
            instruments: vec![i("statement/sql/select", true, Some(true))],
        }
    }

    fn snapshot() -> Snapshot {
        Snapshot::new(server(1000), state(false, true)).for_run("h:1", 5)
    }

    fn row(leader: &str, scenario: &str) -> PhaseRow {
        PhaseRow {
            scenario: scenario.into(),
            leader: leader.into(),
            state: "settling".into(),
            ..PhaseRow::default()
        }
    }

    #[test]
    fn the_last_applied_scenario_comes_from_that_runs_row_only() {
        let s = snapshot();
        let off = LastApplied::Scenario("pfson_conoff_insoff".into());
        assert_eq!(
            last_applied(&s, Some(&row("h:1", "pfson_conoff_insoff"))),
            off
        );
        assert_eq!(
            last_applied(&s, Some(&row("h:1", "none"))),
            LastApplied::Nothing
        );
        assert_eq!(
            last_applied(&s, Some(&row("h:2", "x"))),
            LastApplied::Unknown
        );
        assert_eq!(last_applied(&s, None), LastApplied::Unknown);
        let mut applied = Snapshot::new(server(1000), state(false, true));
        applied.applied = Some("x".into());
        assert_eq!(
            last_applied(&applied, None),
            LastApplied::Scenario("x".into())
        );
    }

    #[test]
    fn restores_only_over_what_psprobe_left() {
        let catalog = Catalog::builtin();
        let s = snapshot();
        let last = LastApplied::Scenario("pfson_conoff_insoff".into());
        // conoff: every consumer NO.
        let mut left = state(false, false);
        left.consumers.iter_mut().for_each(|r| r.enabled = false);
        left.instruments[0] = i("statement/sql/select", false, Some(false));
        let v = judge(&s, &last, &left, &server(1000), &catalog);
        assert!(matches!(v, Verdict::Restore { rows } if rows > 0), "{v:?}");

        // A DBA turned events_stages_current on after the crash.
        let mut dba = left.clone();
        dba.consumers[0].enabled = true;
        let Verdict::Refuse(stale) = judge(&s, &last, &dba, &server(1000), &catalog) else {
            panic!("restored over a manual change");
        };
        assert_eq!(
            stale.why,
            Why::ChangedSince {
                scenario: Some("pfson_conoff_insoff".into())
            }
        );
        assert_eq!(
            stale.changed.iter().map(ToString::to_string).collect::<Vec<_>>(),
            ["setup_consumers 'events_stages_current' ENABLED: snapshot NO, live YES (psprobe left NO)"]
        );
    }

    #[test]
    fn nothing_to_write_is_always_fine_and_a_restart_or_no_record_refuses() {
        let catalog = Catalog::builtin();
        let s = snapshot();
        let same = s.state.clone();
        for last in [LastApplied::Unknown, LastApplied::Nothing] {
            let v = judge(&s, &last, &same, &server(9000), &catalog);
            assert_eq!(v, Verdict::Restore { rows: 0 });
        }
        let other = state(true, true);
        let v = judge(&s, &LastApplied::Nothing, &other, &server(1001), &catalog);
        let Verdict::Refuse(stale) = v else {
            panic!("{v:?}")
        };
        assert_eq!(stale.why, Why::ChangedSince { scenario: None });
        let v = judge(&s, &LastApplied::Nothing, &other, &server(1600), &catalog);
        let Verdict::Refuse(stale) = v else {
            panic!("{v:?}")
        };
        assert_eq!(
            stale.why,
            Why::Restarted {
                then: 1000,
                now: 1600
            }
        );
        assert_eq!(stale.changed[0].left, None);
        // The run's own restart (a slow phase) moved the start it knows of.
        let mut own = s.clone();
        own.known_start_unix = Some(1600);
        let v = judge(&own, &LastApplied::Nothing, &other, &server(1600), &catalog);
        let Verdict::Refuse(stale) = v else {
            panic!("{v:?}")
        };
        assert_eq!(stale.why, Why::ChangedSince { scenario: None });
        for last in [LastApplied::Unknown, LastApplied::Scenario("mine".into())] {
            let v = judge(&s, &last, &other, &server(1000), &catalog);
            assert!(
                matches!(
                    v,
                    Verdict::Refuse(Stale {
                        why: Why::NoRecord { .. },
                        ..
                    })
                ),
                "{v:?}"
            );
        }
    }

    #[test]
    fn startup_scenarios_leave_their_twins_rows_and_original_the_snapshot() {
        let catalog = Catalog::builtin();
        let base = state(false, true);
        let twin = rows_after(&catalog, "pfson_conon_inson", &base).unwrap();
        assert_eq!(
            rows_after(&catalog, "pfson_conon_inson@startup", &base),
            Some(twin)
        );
        assert_eq!(rows_after(&catalog, "original", &base), Some(base.clone()));
        assert_eq!(rows_after(&catalog, "pfsoff", &base), None);
        assert_eq!(rows_after(&catalog, "nosuch", &base), None);
    }
}
