//! The two setup tables as data: rows, comparison of rows against an expectation, and the batched
//! UPDATEs that write a given set of values back. No I/O here; `server.rs` runs the SQL.

use std::collections::{BTreeMap, HashMap};
use std::fmt;

use serde::{Deserialize, Serialize};

use super::pattern::quote;

/// Most names in one `WHERE NAME IN (...)`.
pub(crate) const MAX_NAMES_PER_UPDATE: usize = 500;

pub(crate) const CONSUMERS: &str = "performance_schema.setup_consumers";
pub(crate) const INSTRUMENTS: &str = "performance_schema.setup_instruments";

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConsumerRow {
    pub name: String,
    #[serde(with = "yes_no")]
    pub enabled: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct InstrumentRow {
    pub name: String,
    #[serde(with = "yes_no")]
    pub enabled: bool,
    /// NULL for instruments that cannot be timed (MySQL 8.0+ memory instruments).
    #[serde(with = "yes_no_null")]
    pub timed: Option<bool>,
}

/// Every row of setup_consumers and setup_instruments, in the server's order.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SetupState {
    pub consumers: Vec<ConsumerRow>,
    pub instruments: Vec<InstrumentRow>,
}

impl SetupState {
    pub fn rows(&self) -> usize {
        self.consumers.len() + self.instruments.len()
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Column {
    Enabled,
    Timed,
    /// The row itself: present in one state, absent from the other.
    Row,
}

/// One cell that differs between what was expected and what the server holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mismatch {
    pub table: &'static str,
    pub name: String,
    pub column: Column,
    pub expected: String,
    pub found: String,
}

impl Mismatch {
    /// `setup_consumers 'name' ENABLED` (or `... row 'name'`): the setting, without values.
    pub fn setting(&self) -> String {
        let table = self.table.trim_start_matches("performance_schema.");
        match self.column {
            Column::Row => format!("{table} row '{}'", self.name),
            Column::Enabled => format!("{table} '{}' ENABLED", self.name),
            Column::Timed => format!("{table} '{}' TIMED", self.name),
        }
    }
}

impl SetupState {
    /// The value `state` holds for the cell a mismatch names (`missing` if it has no such row).
    pub fn cell(&self, table: &str, name: &str, column: Column) -> String {
        if table == CONSUMERS {
            let row = self.consumers.iter().find(|r| r.name == name);
            return match (row, column) {
                (None, _) => "missing".into(),
                (Some(_), Column::Row) => "present".into(),
                (Some(r), _) => yes_no(r.enabled).into(),
            };
        }
        let row = self.instruments.iter().find(|r| r.name == name);
        match (row, column) {
            (None, _) => "missing".into(),
            (Some(_), Column::Row) => "present".into(),
            (Some(r), Column::Enabled) => yes_no(r.enabled).into(),
            (Some(r), Column::Timed) => yes_no_null(r.timed).into(),
        }
    }
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let table = self.table.trim_start_matches("performance_schema.");
        match self.column {
            Column::Row => write!(
                f,
                "{table} row '{}': expected {}, found {}",
                self.name, self.expected, self.found
            ),
            col => write!(
                f,
                "{table} '{}' {}: expected {}, found {}",
                self.name,
                if col == Column::Enabled {
                    "ENABLED"
                } else {
                    "TIMED"
                },
                self.expected,
                self.found
            ),
        }
    }
}

pub(crate) fn yes_no(v: bool) -> &'static str {
    if v {
        "YES"
    } else {
        "NO"
    }
}

pub(crate) fn yes_no_null(v: Option<bool>) -> &'static str {
    v.map_or("NULL", yes_no)
}

/// Every cell of `expected` that `actual` does not hold. Rows only in `actual` are not checked
/// (a scenario says nothing about rows that did not exist when it was planned).
pub(crate) fn compare(expected: &SetupState, actual: &SetupState) -> Vec<Mismatch> {
    let mut out = Vec::new();
    let consumers: HashMap<&str, &ConsumerRow> = actual
        .consumers
        .iter()
        .map(|r| (r.name.as_str(), r))
        .collect();
    for want in &expected.consumers {
        let mut push = |column, expected: &str, found: &str| {
            out.push(Mismatch {
                table: CONSUMERS,
                name: want.name.clone(),
                column,
                expected: expected.into(),
                found: found.into(),
            })
        };
        match consumers.get(want.name.as_str()) {
            None => push(Column::Row, "present", "missing"),
            Some(got) if got.enabled != want.enabled => {
                push(Column::Enabled, yes_no(want.enabled), yes_no(got.enabled))
            }
            Some(_) => {}
        }
    }
    let instruments: HashMap<&str, &InstrumentRow> = actual
        .instruments
        .iter()
        .map(|r| (r.name.as_str(), r))
        .collect();
    for want in &expected.instruments {
        let mut push = |column, expected: &str, found: &str| {
            out.push(Mismatch {
                table: INSTRUMENTS,
                name: want.name.clone(),
                column,
                expected: expected.into(),
                found: found.into(),
            })
        };
        let Some(got) = instruments.get(want.name.as_str()) else {
            push(Column::Row, "present", "missing");
            continue;
        };
        if got.enabled != want.enabled {
            push(Column::Enabled, yes_no(want.enabled), yes_no(got.enabled));
        }
        if got.timed != want.timed {
            push(
                Column::Timed,
                yes_no_null(want.timed),
                yes_no_null(got.timed),
            );
        }
    }
    out
}

/// The UPDATEs that turn `current` into `target`, touching only rows whose values differ:
/// rows grouped by their values now and in the target, at most [`MAX_NAMES_PER_UPDATE`] names
/// per statement. Every cell is written only if it still holds its value in `current`
/// (`enabled = if(enabled = 'NO', 'YES', enabled)`): a row someone else changed after
/// `current` was read keeps their value, and the read-back after shows it. Rows of `target`
/// missing from `current` are skipped (the caller warns about them); a TIMED that cannot be
/// timed (NULL) is left alone.
pub(crate) fn write_back_statements(target: &SetupState, current: &SetupState) -> Vec<String> {
    let mut statements = Vec::new();

    let now: HashMap<&str, bool> = current
        .consumers
        .iter()
        .map(|r| (r.name.as_str(), r.enabled))
        .collect();
    let mut groups: BTreeMap<(bool, bool), Vec<&str>> = BTreeMap::new();
    for row in &target.consumers {
        if let Some(&was) = now.get(row.name.as_str()).filter(|&&e| e != row.enabled) {
            groups
                .entry((was, row.enabled))
                .or_default()
                .push(&row.name);
        }
    }
    for ((was, enabled), names) in groups {
        let set = format!("enabled = {}", guarded_cell("enabled", Some(was), enabled));
        push_batched(&mut statements, CONSUMERS, &set, &names);
    }

    let now: HashMap<&str, (bool, Option<bool>)> = current
        .instruments
        .iter()
        .map(|r| (r.name.as_str(), (r.enabled, r.timed)))
        .collect();
    type Cells = (bool, Option<bool>);
    let mut groups: BTreeMap<(Cells, Cells), Vec<&str>> = BTreeMap::new();
    for row in &target.instruments {
        let Some(&(enabled, timed)) = now.get(row.name.as_str()) else {
            continue;
        };
        let timed_differs = row.timed.is_some() && timed.is_some() && timed != row.timed;
        if enabled != row.enabled || timed_differs {
            let want = (row.enabled, if timed_differs { row.timed } else { None });
            let was = (enabled, if timed_differs { timed } else { None });
            groups.entry((was, want)).or_default().push(&row.name);
        }
    }
    for (((was_e, was_t), (want_e, want_t)), names) in groups {
        let mut set = Vec::new();
        if was_e != want_e {
            set.push(format!(
                "enabled = {}",
                guarded_cell("enabled", Some(was_e), want_e)
            ));
        }
        if let (Some(was), Some(want)) = (was_t, want_t) {
            set.push(format!(
                "timed = {}",
                guarded_cell("timed", Some(was), want)
            ));
        }
        push_batched(&mut statements, INSTRUMENTS, &set.join(", "), &names);
    }
    statements
}

/// `if(COLUMN = 'WAS', 'WANT', COLUMN)`: the cell becomes `want` only if it still holds
/// `was` (`None`: whatever it holds).
pub(crate) fn guarded_cell(column: &str, was: Option<bool>, want: bool) -> String {
    match was {
        Some(was) => format!(
            "if({column} = '{}', '{}', {column})",
            yes_no(was),
            yes_no(want)
        ),
        None => format!("'{}'", yes_no(want)),
    }
}

fn push_batched(out: &mut Vec<String>, table: &str, set: &str, names: &[&str]) {
    for chunk in names.chunks(MAX_NAMES_PER_UPDATE) {
        let list: Vec<String> = chunk.iter().map(|n| quote(n)).collect();
        out.push(format!(
            "update {table} set {set} where name in ({})",
            list.join(",")
        ));
    }
}

mod yes_no {
    use serde::{de::Error, Deserialize, Deserializer, Serializer};

    pub(in crate::controller) fn serialize<S: Serializer>(
        v: &bool,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        s.serialize_str(super::yes_no(*v))
    }

    pub(in crate::controller) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<bool, D::Error> {
        match String::deserialize(d)?.as_str() {
            "YES" => Ok(true),
            "NO" => Ok(false),
            other => Err(D::Error::custom(format!(
                "expected \"YES\" or \"NO\", found {other:?}"
            ))),
        }
    }
}

mod yes_no_null {
    use serde::{de::Error, Deserialize, Deserializer, Serializer};

    pub(in crate::controller) fn serialize<S: Serializer>(
        v: &Option<bool>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        match v {
            Some(b) => s.serialize_str(super::yes_no(*b)),
            None => s.serialize_none(),
        }
    }

    pub(in crate::controller) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<bool>, D::Error> {
        match Option::<String>::deserialize(d)?.as_deref() {
            None => Ok(None),
            Some("YES") => Ok(Some(true)),
            Some("NO") => Ok(Some(false)),
            Some(other) => Err(D::Error::custom(format!(
                "expected \"YES\", \"NO\" or null, found {other:?}"
            ))),
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn c(name: &str, enabled: bool) -> ConsumerRow {
        ConsumerRow {
            name: name.into(),
            enabled,
        }
    }

    pub(crate) fn i(name: &str, enabled: bool, timed: Option<bool>) -> InstrumentRow {
        InstrumentRow {
            name: name.into(),
            enabled,
            timed,
        }
    }

    #[test]
    fn compare_reports_each_differing_cell() {
        let expected = SetupState {
            consumers: vec![c("a", true), c("gone", false)],
            instruments: vec![i("x", true, Some(true)), i("m", true, None)],
        };
        let actual = SetupState {
            consumers: vec![c("a", false), c("extra", true)],
            instruments: vec![i("x", true, Some(false)), i("m", true, None)],
        };
        let m = compare(&expected, &actual);
        let text: Vec<String> = m.iter().map(|m| m.to_string()).collect();
        assert_eq!(
            text,
            [
                "setup_consumers 'a' ENABLED: expected YES, found NO",
                "setup_consumers row 'gone': expected present, found missing",
                "setup_instruments 'x' TIMED: expected YES, found NO",
            ]
        );
        assert!(compare(&actual, &actual).is_empty());
    }

    #[test]
    fn write_back_groups_changed_rows_in_batches() {
        let current = SetupState {
            consumers: vec![c("a", false), c("b", true), c("c", true)],
            instruments: (0..1203)
                .map(|n| i(&format!("wait/{n}"), false, Some(false)))
                .chain([i("memory/x", false, None)])
                .collect(),
        };
        let mut target = current.clone();
        target.consumers[0].enabled = true; // a -> YES
        target.consumers[2].enabled = false; // c -> NO
        target.consumers.push(c("not-on-server", true));
        for row in target.instruments.iter_mut() {
            row.enabled = true;
            if row.timed.is_some() {
                row.timed = Some(true);
            }
        }
        target.instruments[0].timed = Some(false); // one in its own group
        let s = write_back_statements(&target, &current);
        assert_eq!(
            s[0],
            format!(
                "update {CONSUMERS} set enabled = if(enabled = 'NO', 'YES', enabled) where name in ('a')"
            )
        );
        assert_eq!(
            s[1],
            format!(
                "update {CONSUMERS} set enabled = if(enabled = 'YES', 'NO', enabled) where name in ('c')"
            )
        );
        assert_eq!(
            s[2],
            format!(
                "update {INSTRUMENTS} set enabled = if(enabled = 'NO', 'YES', enabled) where name \
                 in ('wait/0','memory/x')"
            ),
            "wait/0 keeps TIMED=NO: only ENABLED is written"
        );
        // 1202 rows NO/NO -> YES/YES: 500 + 500 + 202.
        assert_eq!(s.len(), 6, "{s:#?}");
        let counts: Vec<usize> = s[3..].iter().map(|q| q.matches(",'").count() + 1).collect();
        assert_eq!(counts, [500, 500, 202]);
        assert!(s[3..].iter().all(|q| q.contains(
            "enabled = if(enabled = 'NO', 'YES', enabled), timed = if(timed = 'NO', 'YES', timed)"
        )));
        assert!(write_back_statements(&current, &current).is_empty());
    }

    #[test]
    fn rows_serialize_as_yes_no() {
        let row = i("memory/x", true, None);
        let json = serde_json::to_string(&row).unwrap();
        assert_eq!(json, r#"{"name":"memory/x","enabled":"YES","timed":null}"#);
        assert_eq!(serde_json::from_str::<InstrumentRow>(&json).unwrap(), row);
        assert!(serde_json::from_str::<ConsumerRow>(r#"{"name":"a","enabled":"yes"}"#).is_err());
    }
}
