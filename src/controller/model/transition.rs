//! The statements of a fast switch from one runtime scenario to another, cell by cell: each
//! cell becomes the new scenario's value only if it still holds the old one's
//! (`enabled = if(enabled = OLD, NEW, enabled)`, OLD and NEW the two scenarios' selections as
//! SQL over the row's name). A row someone else changed since the last switch keeps their
//! value, however the batch interleaves with their statement, and the next checksum shows the
//! change. Cells an UPDATE cannot change (built-in memory instruments, a NULL TIMED) fail the
//! test and are left as they are, which is what they would do anyway.
//!
//! Must not: do I/O (the switcher sends these).

use super::ownership::{exclude_names, Claim, Table};
use super::scenario::{InstrumentRule, Scenario, Settings};
use super::setup_tables::{CONSUMERS, INSTRUMENTS};

/// `column = if(column = OLD, NEW, column)`.
fn guarded(column: &str, old: &str, new: &str) -> String {
    format!("{column} = if({column} = {old}, {new}, {column})")
}

/// The statements from `from` to `to`, claimed rows left out; `None` when either is not a
/// runtime scenario, or `to` sets a table `from` left alone (what it holds is not known here:
/// the full switch reads it).
pub(crate) fn transition_sql(
    from: &Scenario,
    to: &Scenario,
    claims: &[Claim],
) -> Option<Vec<String>> {
    let (
        Settings::Runtime {
            consumers: from_c,
            instruments: from_i,
        },
        Settings::Runtime {
            consumers: to_c,
            instruments: to_i,
        },
    ) = (&from.settings, &to.settings)
    else {
        return None;
    };
    let names = |table: Table| -> Vec<&str> {
        claims
            .iter()
            .filter(|c| c.table == table)
            .map(|c| c.name.as_str())
            .collect()
    };
    let keep = |statement: String, table: Table| {
        let claimed = names(table);
        if claimed.is_empty() {
            statement
        } else {
            exclude_names(&statement, &claimed)
        }
    };
    let mut out = Vec::new();
    if let Some(to_c) = to_c {
        let from_c = from_c.as_ref()?;
        let set = guarded("enabled", &from_c.sql_value(), &to_c.sql_value());
        out.push(keep(
            format!("update {CONSUMERS} set {set}"),
            Table::Consumers,
        ));
    }
    if let Some(to_i) = to_i {
        let from_i = from_i.as_ref()?;
        out.push(keep(instruments(from_i, to_i), Table::Instruments));
    }
    Some(out)
}

fn instruments(from: &InstrumentRule, to: &InstrumentRule) -> String {
    let enabled = guarded("enabled", &from.enable.sql_value(), &to.enable.sql_value());
    let timed = guarded("timed", &from.timed.sql_value(), &to.timed.sql_value());
    format!("update {INSTRUMENTS} set {enabled}, {timed}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::model::catalog::Catalog;
    use crate::controller::model::ownership::Origin;

    #[test]
    fn each_cell_changes_only_from_the_old_scenarios_value() {
        let catalog = Catalog::builtin();
        let off = catalog.get("pfson_conoff_insoff").unwrap();
        let on = catalog.get("pfson_conon_inson").unwrap();
        let sql = catalog.get("pfson_conon_ins_sqlon").unwrap();
        let s = transition_sql(off, on, &[]).unwrap();
        assert_eq!(
            s,
            [
                format!("update {CONSUMERS} set enabled = if(enabled = 'NO', 'YES', enabled)"),
                format!(
                    "update {INSTRUMENTS} set enabled = if(enabled = 'NO', 'YES', enabled), \
                     timed = if(timed = 'NO', 'YES', timed)"
                )
            ]
        );
        let s = transition_sql(off, sql, &[]).unwrap();
        assert!(
            s[1].starts_with(&format!(
                "update {INSTRUMENTS} set enabled = if(enabled = 'NO', if(name"
            )),
            "{}",
            s[1]
        );
        assert!(
            s[1].contains(", timed = if(timed = 'NO', if(name"),
            "{}",
            s[1]
        );
        let claim = Claim {
            table: Table::Instruments,
            name: "wait/io/file/sql/binlog".into(),
            enabled: true,
            timed: Some(false),
            psprobe_left: String::new(),
            seen_at_ms: 0,
            origin: Origin::Runtime,
        };
        let s = transition_sql(sql, off, &[claim]).unwrap();
        assert!(!s[0].contains("not in"), "{}", s[0]);
        assert!(
            s[1].ends_with(" where name not in ('wait/io/file/sql/binlog')"),
            "{}",
            s[1]
        );
        assert_eq!(
            transition_sql(off, &Scenario::original_from(&Default::default()), &[]),
            None
        );
    }
}
