//! The performance_schema model: scenarios and their catalog, instrument groups, setup-table
//! rows, patterns, snapshots, server versions, the proof of what was last applied.
//!
//! Must not: do I/O of any kind: talk to a server (that is `client`) or read and write files
//! (`local`); or know about schedules.

pub(crate) mod catalog;
pub(crate) mod file;
pub(crate) mod groups;
pub(crate) mod ownership;
pub(crate) mod pattern;
pub(crate) mod phase_row;
pub(crate) mod scenario;
pub(crate) mod setup_tables;
pub(crate) mod snapshot;
pub(crate) mod stale;
pub(crate) mod startup;
pub(crate) mod transition;
pub(crate) mod version;
