//! The MySQL client layer: the controller's connections (apply, verify, snapshot, restore,
//! the one-round-trip fast switch, resolving what a dead run left), the leadership lock and
//! heartbeat, statements with timeouts, the restart hook, the server's CPU time.
//!
//! Must not: decide what to apply when (that is `schedule`).

pub(crate) mod dsn;
pub(crate) mod fast_switch;
pub(crate) mod heartbeat;
pub(crate) mod leadership;
pub(crate) mod left_behind;
pub(crate) mod restart;
pub(crate) mod server;
pub(crate) mod server_cpu;
pub(crate) mod statement;

/// The advisory lock whose holder leads: leadership.rs takes it, heartbeat.rs proves its
/// holder alive, left_behind.rs asks whether a dead run still holds it.
pub(crate) const LOCK_NAME: &str = "psprobe_controller";
