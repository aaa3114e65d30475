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
    Snapshot::new(server(1000), state(false, true), 1000).for_run("h:1", 5)
}

fn row(leader: &str, scenario: &str, phase: u64) -> PhaseRow {
    PhaseRow {
        scenario: scenario.into(),
        leader: leader.into(),
        state: "settling".into(),
        phase,
        ..PhaseRow::default()
    }
}

fn intent(from: &str, to: &str, phase: u64) -> SwitchIntent {
    SwitchIntent {
        leader: "h:1".into(),
        from: from.into(),
        to: to.into(),
        phase,
    }
}

/// What pfson_conoff_insoff leaves: every consumer and instrument off.
fn conoff() -> SetupState {
    let mut s = state(false, false);
    s.consumers.iter_mut().for_each(|r| r.enabled = false);
    s.instruments[0] = i("statement/sql/select", false, Some(false));
    s
}

const OFF: &str = "pfson_conoff_insoff";
const ON: &str = "pfson_conon_inson";

fn judged(s: &Snapshot, last: &LastApplied, live: &SetupState, started: u64) -> Verdict {
    judge(
        s,
        last,
        Some(live),
        &server(started),
        &Catalog::builtin(),
        42,
    )
}

#[test]
fn the_last_applied_scenario_comes_from_that_runs_row_and_intent() {
    let s = snapshot();
    let off = LastApplied::Scenario(OFF.into());
    assert_eq!(last_applied(&s, Some(&row("h:1", OFF, 3)), None), off);
    assert_eq!(
        last_applied(&s, Some(&row("h:1", "none", 0)), None),
        LastApplied::Nothing
    );
    assert_eq!(
        last_applied(&s, Some(&row("h:2", "x", 1)), None),
        LastApplied::Unknown
    );
    assert_eq!(last_applied(&s, None, None), LastApplied::Unknown);
    // The switch of phase 4 was recorded, its row never written: either way.
    let pending = LastApplied::Switching {
        from: OFF.into(),
        to: ON.into(),
    };
    let published = row("h:1", OFF, 3);
    assert_eq!(
        last_applied(&s, Some(&published), Some(&intent(OFF, ON, 4))),
        pending
    );
    // The first switch of a lead: its "none" row has the same phase as the intent.
    let first = row("h:1", "none", 4);
    assert_eq!(
        last_applied(&s, Some(&first), Some(&intent("none", OFF, 4))),
        LastApplied::Switching {
            from: "none".into(),
            to: OFF.into()
        }
    );
    // The row came after the statements: done.
    assert_eq!(
        last_applied(&s, Some(&row("h:1", ON, 4)), Some(&intent(OFF, ON, 4))),
        LastApplied::Scenario(ON.into())
    );
    // Another leader's intent says nothing about this run.
    let mut theirs = intent(OFF, ON, 9);
    theirs.leader = "h:2".into();
    assert_eq!(last_applied(&s, Some(&published), Some(&theirs)), off);
    let mut applied = Snapshot::new(server(1000), state(false, true), 1000);
    applied.applied = Some("x".into());
    assert_eq!(
        last_applied(&applied, None, None),
        LastApplied::Scenario("x".into())
    );
}

#[test]
fn psprobes_rows_are_written_back_and_a_dbas_are_kept() {
    let s = snapshot();
    let last = LastApplied::Scenario(OFF.into());
    let v = judged(&s, &last, &conoff(), 1000);
    let Verdict::Restore {
        target,
        rows,
        claims,
    } = v
    else {
        panic!("{v:?}")
    };
    assert_eq!(target, s.state);
    assert!(rows > 0 && claims.is_empty());

    // A DBA turned events_stages_current on while no psprobe ran.
    let mut dba = conoff();
    dba.consumers[0].enabled = true;
    let Verdict::Restore { target, claims, .. } = judged(&s, &last, &dba, 1000) else {
        panic!("refused over a DBA's change")
    };
    assert_eq!(claims.len(), 1);
    assert_eq!(
        claims[0].to_string(),
        "setup_consumers 'events_stages_current' is now ENABLED=YES (psprobe had ENABLED=NO)"
    );
    assert_eq!(claims[0].origin, Origin::WhileStopped);
    assert!(target.consumers[0].enabled, "kept");
    assert!(target.consumers[1].enabled, "the rest as found");
}

#[test]
fn a_kill_in_the_middle_of_a_switch_is_restored_without_force() {
    let s = snapshot();
    let last = LastApplied::Switching {
        from: ON.into(),
        to: OFF.into(),
    };
    // Consumers already off, instruments still on.
    let mut half = conoff();
    half.instruments[0] = i("statement/sql/select", true, Some(true));
    let v = judged(&s, &last, &half, 1000);
    assert!(
        matches!(&v, Verdict::Restore { claims, rows, .. } if claims.is_empty() && *rows > 0),
        "{v:?}"
    );
    // Without the intent the same rows would not have been known as psprobe's.
    let v = judged(&s, &LastApplied::Scenario(ON.into()), &half, 1000);
    assert!(
        matches!(&v, Verdict::Restore { claims, .. } if !claims.is_empty()),
        "{v:?}"
    );
}

#[test]
fn a_restart_psprobe_did_not_make_leaves_nothing_of_psprobes() {
    let s = snapshot();
    let v = judged(
        &s,
        &LastApplied::Scenario(OFF.into()),
        &state(true, true),
        1600,
    );
    assert_eq!(
        v,
        Verdict::Restarted {
            then: 1000,
            now: 1600
        }
    );
    // Within the slack of a whole-second uptime: the same start.
    let v = judged(&s, &LastApplied::Nothing, &s.state.clone(), 1002);
    assert!(matches!(v, Verdict::Restore { rows: 0, .. }), "{v:?}");
    // performance_schema OFF without a restart of psprobe's: the DBA's choice.
    let v = judge(
        &s,
        &LastApplied::Nothing,
        None,
        &server(1600),
        &Catalog::builtin(),
        0,
    );
    assert!(matches!(v, Verdict::Restarted { .. }), "{v:?}");
}

#[test]
fn psprobes_own_restarts_are_undone() {
    // Killed while its restart into pfsoff ran: the server came up in that window.
    let mut s = snapshot();
    s.restart = Some(RestartIntent {
        into: "pfsoff".into(),
        since_unix: 1500,
        timeout_s: 120,
    });
    let v = judge(
        &s,
        &LastApplied::Nothing,
        None,
        &server(1501),
        &Catalog::builtin(),
        0,
    );
    assert_eq!(
        v,
        Verdict::RestartFirst {
            mode: "pfsoff".into()
        }
    );
    // ... and started long after the window: someone else's restart.
    let v = judged(&s, &LastApplied::Nothing, &state(true, true), 4000);
    assert!(matches!(v, Verdict::Restarted { .. }), "{v:?}");
    // A restart with the server's own options (back from pfsoff): every row is psprobe's to
    // put back, the defaults the restart brought included.
    s.restart.as_mut().unwrap().into = OWN_OPTIONS.into();
    let defaults = state(true, true);
    let v = judged(&s, &LastApplied::Nothing, &defaults, 1510);
    assert!(
        matches!(&v, Verdict::Restore { target, rows: 1, claims } if *target == s.state && claims.is_empty()),
        "{v:?}"
    );
    // Killed during a slow phase it had restarted into: restart it back first; once that is
    // done by hand (a later start, performance_schema ON), the rest is psprobe's.
    let mut s = snapshot();
    s.mode = Some("pfsoff".into());
    s.known_start_unix = Some(1500);
    let v = judge(
        &s,
        &LastApplied::Nothing,
        None,
        &server(1500),
        &Catalog::builtin(),
        0,
    );
    assert_eq!(
        v,
        Verdict::RestartFirst {
            mode: "pfsoff".into()
        }
    );
    let v = judged(&s, &LastApplied::Nothing, &defaults, 2000);
    assert!(matches!(v, Verdict::Restore { rows: 1, .. }), "{v:?}");
}

#[test]
fn only_an_unknown_record_refuses_and_only_when_something_differs() {
    let s = snapshot();
    let v = judged(&s, &LastApplied::Unknown, &s.state.clone(), 1000);
    assert!(matches!(v, Verdict::Restore { rows: 0, .. }), "{v:?}");
    let v = judged(&s, &LastApplied::Unknown, &conoff(), 1000);
    assert!(
        matches!(&v, Verdict::Refuse { differ, .. } if *differ > 0),
        "{v:?}"
    );
    let v = judged(&s, &LastApplied::Scenario("mine".into()), &conoff(), 1000);
    let Verdict::Refuse { why, .. } = v else {
        panic!("{v:?}")
    };
    assert!(why.to_string().contains("pass the same --config"), "{why}");
}

#[test]
fn startup_scenarios_leave_their_twins_rows_and_original_the_snapshot() {
    let catalog = Catalog::builtin();
    let base = state(false, true);
    let twin = rows_after(&catalog, ON, &base).unwrap();
    assert_eq!(
        rows_after(&catalog, "pfson_conon_inson@startup", &base),
        Some(twin)
    );
    assert_eq!(rows_after(&catalog, "original", &base), Some(base.clone()));
    assert_eq!(rows_after(&catalog, "none", &base), Some(base.clone()));
    assert_eq!(rows_after(&catalog, "pfsoff", &base), None);
    assert_eq!(rows_after(&catalog, "nosuch", &base), None);
}
