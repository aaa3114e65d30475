use super::*;
use crate::controller::model::setup_tables::tests::{c, i};
use crate::controller::model::setup_tables::InstrumentRow;

fn found() -> SetupState {
    SetupState {
        consumers: vec![
            c("events_waits_history", false),
            c("statements_digest", true),
        ],
        instruments: vec![
            i("wait/io/file/sql/binlog", true, Some(true)),
            i("statement/sql/select", true, Some(true)),
        ],
    }
}

/// Everything off, as pfson_conoff_insoff leaves it.
fn all_off() -> SetupState {
    SetupState {
        consumers: vec![
            c("events_waits_history", false),
            c("statements_digest", false),
        ],
        instruments: vec![
            i("wait/io/file/sql/binlog", false, Some(false)),
            i("statement/sql/select", false, Some(false)),
        ],
    }
}

fn instrument<'a>(state: &'a SetupState, name: &str) -> &'a InstrumentRow {
    state.instruments.iter().find(|r| r.name == name).unwrap()
}

#[test]
fn a_row_holding_neither_what_was_found_nor_what_was_written_is_claimed_once() {
    let mut ledger = Ledger::new(found(), Vec::new());
    ledger.switched(&all_off());
    assert!(ledger.observe(&all_off(), Origin::Runtime, 1).is_empty());
    // The DBA: binlog ENABLED=YES TIMED=NO, events_waits_history=YES.
    let mut live = all_off();
    live.instruments[0] = i("wait/io/file/sql/binlog", true, Some(false));
    live.consumers[0].enabled = true;
    // A row back as found is psprobe's (the restore would write the same).
    live.consumers[1].enabled = true;
    let claims = ledger.observe(&live, Origin::Runtime, 7);
    let text: Vec<String> = claims.iter().map(ToString::to_string).collect();
    assert_eq!(
        text,
        [
            "setup_consumers 'events_waits_history' is now ENABLED=YES (psprobe had ENABLED=NO)",
            "setup_instruments 'wait/io/file/sql/binlog' is now ENABLED=YES TIMED=NO (psprobe \
             had ENABLED=NO TIMED=NO)",
        ]
    );
    assert!(claims
        .iter()
        .all(|c| c.seen_at_ms == 7 && c.origin == Origin::Runtime));
    // Seen again: nothing new. Changed again: the claim follows, and says so.
    assert!(ledger.observe(&live, Origin::Runtime, 8).is_empty());
    live.consumers[0].enabled = false;
    let again = ledger.observe(&live, Origin::Runtime, 9);
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].value(), "ENABLED=NO");
    assert_eq!(ledger.claims().len(), 2);
}

#[test]
fn an_unconfirmed_switch_leaves_each_row_either_way() {
    let mut ledger = Ledger::new(found(), Vec::new());
    let on = found();
    ledger.switched(&on);
    ledger.switching(&all_off());
    // Half the rows switched when the batch stopped: nobody else's.
    let mut half = on.clone();
    half.consumers[1].enabled = false;
    half.instruments[1] = i("statement/sql/select", false, Some(false));
    assert!(ledger.observe(&half, Origin::Runtime, 1).is_empty());
    assert_eq!(ledger.differing_from_found(), None, "not known which");
    ledger.switched(&all_off());
    assert_eq!(ledger.differing_from_found(), Some(5));
}

#[test]
fn rows_appearing_with_a_plugin_are_nobodys() {
    let mut ledger = Ledger::new(found(), Vec::new());
    let mut live = found();
    live.instruments
        .push(i("wait/io/file/plugin/new", true, Some(true)));
    assert!(ledger.observe(&live, Origin::Runtime, 1).is_empty());
}

#[test]
fn plans_and_restores_leave_claimed_rows_as_they_are() {
    let mut ledger = Ledger::new(found(), Vec::new());
    ledger.switched(&all_off());
    let mut live = all_off();
    live.instruments[0] = i("wait/io/file/sql/binlog", true, Some(false));
    assert_eq!(ledger.observe(&live, Origin::Runtime, 1).len(), 1);
    let plan = Plan {
        statements: vec![
            format!("update {CONSUMERS} set enabled = 'YES'"),
            format!("update {INSTRUMENTS} set enabled = 'YES', timed = 'YES'"),
        ],
        expected: found(),
        warnings: Vec::new(),
    };
    let plan = ledger.exclude(plan, &live);
    assert_eq!(
        plan.statements[0],
        format!("update {CONSUMERS} set enabled = 'YES'"),
        "no consumer is claimed"
    );
    assert_eq!(
        plan.statements[1],
        format!(
            "update {INSTRUMENTS} set enabled = 'YES', timed = 'YES' where name not in \
             ('wait/io/file/sql/binlog')"
        )
    );
    assert_eq!(
        instrument(&plan.expected, "wait/io/file/sql/binlog"),
        &i("wait/io/file/sql/binlog", true, Some(false))
    );
    let target = ledger.restore_target(&live);
    assert_eq!(
        instrument(&target, "wait/io/file/sql/binlog"),
        &i("wait/io/file/sql/binlog", true, Some(false)),
        "never put back"
    );
    assert_eq!(
        instrument(&target, "statement/sql/select"),
        &i("statement/sql/select", true, Some(true)),
        "the rest as found"
    );
}

#[test]
fn a_restart_by_someone_else_is_the_new_found_and_its_changes_are_claimed() {
    let mut ledger = Ledger::new(found(), Vec::new());
    ledger.switched(&all_off());
    // Restarted with --performance-schema-consumer-events-waits-history=ON.
    let mut live = found();
    live.consumers[0].enabled = true;
    let claims = ledger.rebase(&live, 3);
    assert_eq!(claims.len(), 1);
    assert_eq!(claims[0].origin, Origin::Restart);
    assert_eq!(claims[0].psprobe_left, "ENABLED=NO before the restart");
    assert_eq!(ledger.found(), &live);
    assert_eq!(ledger.restore_target(&live), live);
}

#[test]
fn conditions_are_added_without_changing_what_the_statement_selects() {
    let plain = format!("update {CONSUMERS} set enabled = 'NO'");
    assert_eq!(
        add_condition(&plain, "x = 1"),
        format!("{plain} where x = 1")
    );
    let listed =
        format!("update {CONSUMERS} set enabled = 'NO' where name in ('a') or name in ('b')");
    assert_eq!(
        add_condition(&listed, "x = 1"),
        format!(
            "update {CONSUMERS} set enabled = 'NO' where (name in ('a') or name in ('b')) and x = 1"
        )
    );
    assert_eq!(
        exclude_names(&plain, &["it's"]),
        format!("{plain} where name not in ('it''s')")
    );
}
