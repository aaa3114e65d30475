//! What a row of an admin table is made of: [`Value`] (with the conversions the row mappers
//! use), [`Row`], and a [`Column`]'s name, [`ColumnKind`] and doc.
//!
//! Must not: name a table or a source of data; the tables' columns are in `schema.rs`, the rows
//! in `rows.rs`.

/// How a column is stored (SQLite) and typed towards MySQL clients.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnKind {
    /// 64-bit integer (MySQL BIGINT).
    Int,
    /// Double, shown with [`FLOAT_DECIMALS`] decimals (MySQL DOUBLE).
    Float,
    /// Text (MySQL VARCHAR), compared case-insensitively like MySQL's default collation.
    Text,
    /// Any of the above per row (a `status` value).
    Any,
}

/// Decimals shown for values of [`ColumnKind::Float`] columns.
pub(crate) const FLOAT_DECIMALS: usize = 3;

/// One column: name, type, and what it holds (shown by `SHOW FULL COLUMNS`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Column {
    pub name: &'static str,
    pub kind: ColumnKind,
    pub doc: &'static str,
}

/// A value of a row, before it goes into the engine.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Int(i64),
    UInt(u64),
    Float(f64),
    Text(String),
}

impl From<&str> for Value {
    fn from(s: &str) -> Self {
        Value::Text(s.to_string())
    }
}

impl From<String> for Value {
    fn from(s: String) -> Self {
        Value::Text(s)
    }
}

impl From<u64> for Value {
    fn from(v: u64) -> Self {
        Value::UInt(v)
    }
}

impl From<i64> for Value {
    fn from(v: i64) -> Self {
        Value::Int(v)
    }
}

impl From<bool> for Value {
    fn from(v: bool) -> Self {
        Value::Int(i64::from(v))
    }
}

impl From<Option<f64>> for Value {
    fn from(v: Option<f64>) -> Self {
        v.map_or(Value::Null, Value::Float)
    }
}

impl From<f64> for Value {
    fn from(v: f64) -> Self {
        Value::Float(v)
    }
}

impl From<Option<String>> for Value {
    fn from(v: Option<String>) -> Self {
        v.map_or(Value::Null, Value::Text)
    }
}

impl From<Option<&str>> for Value {
    fn from(v: Option<&str>) -> Self {
        v.map_or(Value::Null, Value::from)
    }
}

pub type Row = Vec<Value>;
