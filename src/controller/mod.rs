//! The performance_schema controller: scenarios, applying and verifying them on a live server,
//! snapshot and restore of the setup tables.
//!
//! ```text
//! catalog (scenarios) ──plan(rows now)──► statements + expected rows ──► server.rs applies,
//!                                                                        reads back, compares
//! snapshot (rows + server identity) ◄──► state file (JSON, atomic)
//! ```
//!
//! The scheduled run: `runner.rs` carries out what `role.rs` (a state machine with no I/O,
//! unit-tested on every path between leading, following, restoring and rejoining) decides
//! next; `lead.rs` runs the slots of a `timeline.rs` (pure) as leader, `follow.rs` follows.
//!
//! Async API for the scheduler: [`Controller::connect`], [`Controller::apply`],
//! [`Controller::verify`], [`Controller::snapshot`], [`Controller::restore`].
//!
//! Must not: touch the relay's hot path (it publishes the scenario in effect through `stats`,
//! read with one atomic load), or leave a server changed: every path out restores or says how.

pub mod catalog;
pub mod cli;
pub mod dsn;
pub mod error;
pub mod fast_switch;
pub mod file;
pub mod follow;
pub mod heartbeat;
pub mod lead;
pub mod leadership;
pub mod left_behind;
pub mod paths;
pub mod pattern;
pub mod phase_tracker;
pub mod restart;
mod role;
pub mod runner;
pub mod scenario;
pub mod schedule_args;
pub mod server;
pub mod server_cpu;
pub mod setup_tables;
pub mod show;
pub mod snapshot;
pub mod stale;
pub mod startup;
pub mod statement;
pub mod timeline;
pub mod version;

pub use catalog::Catalog;
pub use dsn::{ControllerDsn, DSN_ENV};
pub use error::ControllerError;
pub use runner::ControllerSettings;
pub use scenario::{InstrumentRule, Plan, Scenario, Settings, Source};
pub use server::{ApplyReport, Controller, ServerInfo};
pub use setup_tables::{ConsumerRow, InstrumentRow, Mismatch, SetupState};
pub use snapshot::{ServerIdentity, Snapshot};
pub use version::{Flavor, Series, ServerVersion};
