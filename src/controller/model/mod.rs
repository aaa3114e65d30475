//! The performance_schema model: scenarios and their catalog, instrument groups, setup-table
//! rows, patterns, snapshots, server versions, the proof of what was last applied.
//!
//! Must not: do I/O of any kind: talk to a server (that is `client`) or read and write files
//! (`local`); or know about schedules.

pub mod catalog;
pub mod file;
pub mod groups;
pub mod ownership;
pub mod pattern;
pub mod phase_row;
pub mod scenario;
pub mod setup_tables;
pub mod snapshot;
pub mod stale;
pub mod startup;
pub mod transition;
pub mod version;
