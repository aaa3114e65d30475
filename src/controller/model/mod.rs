//! The performance_schema model: scenarios and their catalog, setup-table rows, patterns,
//! snapshots, server versions, the proof of what was last applied.
//!
//! Must not: talk to a server (that is `client`) or know about schedules.

pub mod catalog;
pub mod file;
pub mod pattern;
pub mod scenario;
pub mod setup_tables;
pub mod snapshot;
pub mod stale;
pub mod startup;
pub mod version;
