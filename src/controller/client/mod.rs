//! The MySQL client layer: the controller's connections (apply, verify, snapshot, restore,
//! the one-round-trip fast switch, resolving what a dead run left), the leadership lock and
//! heartbeat, statements with timeouts, the restart hook, the server's CPU time.
//!
//! Must not: decide what to apply when (that is `schedule`).

pub mod dsn;
pub mod fast_switch;
pub mod heartbeat;
pub mod leadership;
pub mod left_behind;
pub mod restart;
pub mod server;
pub mod server_cpu;
pub mod statement;
