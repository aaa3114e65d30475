//! The performance_schema controller, in three jobs:
//!
//! - `model/`: what a scenario is and what the setup tables hold (catalog, scenarios, rows,
//!   patterns, snapshots, versions, the proof of what was last applied); no I/O.
//! - `client/`: the MySQL client layer (apply, verify, snapshot, restore, the fast switch,
//!   what a dead run left, the leadership lock and heartbeat, statement timeouts, the restart
//!   hook).
//! - `schedule/`: the scheduled run: `role.rs` (a state machine without I/O, unit-tested on
//!   every path between leading, following, restoring and rejoining) decides what comes next,
//!   `runner.rs` carries it out, `lead.rs` runs the slots of a `timeline.rs` (pure) as leader,
//!   `follow.rs` follows.
//!
//! Beside them: `psprobe ps` (`cli`, `show`), the schedule's flags (`schedule_args`), paths and
//! errors.
//!
//! ```text
//! catalog (scenarios) ──plan(rows now)──► statements + expected rows ──► server.rs applies,
//!                                                                        reads back, compares
//! snapshot (rows + server identity) ◄──► state file (JSON, atomic)
//! ```
//!
//! Must not: touch the relay's hot path (it publishes the scenario in effect through `stats`,
//! read with one atomic load), or leave a server changed: every path out restores or says how.

mod client;
mod model;
mod schedule;

// Each module under its old path (`controller::server`, ...): callers name what they use, not
// which job's folder it sits in.
pub use client::dsn;
pub use client::fast_switch;
pub use client::heartbeat;
pub use client::leadership;
pub use client::left_behind;
pub use client::restart;
pub use client::server;
pub use client::server_cpu;
pub use client::statement;
pub use model::catalog;
pub use model::file;
pub use model::pattern;
pub use model::scenario;
pub use model::setup_tables;
pub use model::snapshot;
pub use model::stale;
pub use model::startup;
pub use model::version;
pub use schedule::follow;
pub use schedule::lead;
pub use schedule::phase_tracker;
pub use schedule::runner;
pub use schedule::timeline;

pub mod cli;
pub mod error;
pub mod paths;
pub mod schedule_args;
pub mod show;

pub use catalog::Catalog;
pub use dsn::{ControllerDsn, DSN_ENV};
pub use error::ControllerError;
pub use runner::ControllerSettings;
pub use scenario::{InstrumentRule, Plan, Scenario, Settings, Source};
pub use server::{ApplyReport, Controller, ServerInfo};
pub use setup_tables::{ConsumerRow, InstrumentRow, Mismatch, SetupState};
pub use snapshot::{ServerIdentity, Snapshot};
pub use version::{Flavor, Series, ServerVersion};
