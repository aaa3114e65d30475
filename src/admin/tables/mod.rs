//! What the admin interface serves: the tables (names, typed columns, what each column means),
//! the [`AdminData`] provider that fills them, and [`ObserverData`], the provider over psprobe's
//! live statistics. By job:
//!
//! - `value.rs`: [`Value`], [`Row`], a column's name, [`ColumnKind`] and doc;
//! - `schema.rs`: [`Table`] and each table's columns;
//! - `rows.rs`: one mapping function per table from a record to a row ([`overhead_row`],
//!   [`status_row`], ...), next to the records the analysis hands in ([`OverheadRow`],
//!   [`AttributionRow`]);
//! - `provider.rs`: [`AdminData`] and [`ObserverData`].
//!
//! Must not: run SQL or speak the protocol (`engine`, `dialect` and `server` do, over these
//! tables), or change what psprobe measures; the tables are read from snapshots.

mod provider;
mod rows;
mod schema;
mod value;

pub use provider::{AdminData, ObserverData};
#[cfg(test)]
pub(crate) use rows::scenario_row;
pub(crate) use rows::AttributionRow;
pub use rows::{overhead_row, status_row, OverheadRow};
pub use schema::Table;
pub(crate) use value::{ColumnKind, FLOAT_DECIMALS};
pub use value::{Row, Value};
