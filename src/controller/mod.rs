//! The performance_schema controller, in three rooms and a few files beside them:
//!
//! - `model/`: what a scenario is and what the setup tables hold (catalog, scenarios, rows,
//!   patterns, snapshots, versions, the proof of what was last applied); no I/O at all.
//! - `local/`: what the controller keeps on this host: the state file (the snapshot, written
//!   atomically) and the config file it reads.
//! - `client/`: the MySQL client layer (apply, verify, snapshot, restore, the fast switch,
//!   what a dead run left, the leadership lock and heartbeat, statement timeouts, the restart
//!   hook).
//! - `schedule/`: the scheduled run: its flags (`args`) and validated `settings`, `role.rs`
//!   (a state machine without I/O, unit-tested on every path between leading, following,
//!   restoring and rejoining) decides what comes next, `runner.rs` carries it out, `lead.rs`
//!   runs the slots of a `timeline.rs` (pure) as leader, `follow.rs` follows; each asks the
//!   server through a trait (`lead_server`, `follow_server`) that tests script.
//!
//! Beside them: `psprobe ps` (`cli`, `show`), paths and errors. Callers name the room an item
//! lives in (`controller::model::catalog::Catalog`): there are no flat re-exports, so a use
//! site shows which job it leans on.
//!
//! ```text
//! catalog (scenarios) ──plan(rows now)──► statements + expected rows ──► server.rs applies,
//!                                                                        reads back, compares
//! snapshot (rows + server identity) ◄──► state file (JSON, atomic)
//! ```
//!
//! Must not: touch the relay's hot path (it publishes the scenario in effect through `stats`,
//! read with one atomic load), or leave a server changed: every path out restores or says how.

pub(crate) mod client;
pub(crate) mod local;
pub(crate) mod model;
pub(crate) mod schedule;

pub(crate) mod cli;
pub(crate) mod error;
pub(crate) mod paths;
pub(crate) mod show;

/// Environment variable holding the controller DSN: read by client/dsn.rs, named by the
/// errors and the help of every room (here, so that none of them names another for it).
pub(crate) const DSN_ENV: &str = "PSPROBE_CONTROLLER_DSN";
