//! The scheduled run: the roles (a state machine without I/O), the timeline of slots
//! (pure), the leader's and follower's loops, the phase tracker, and the runner that carries
//! the roles' actions out.
//!
//! Must not: hold SQL of its own (it goes through `client`) or define scenarios (`model`).

pub mod follow;
pub mod lead;
pub(crate) mod lead_server;
pub mod phase_tracker;
pub(crate) mod role;
pub mod runner;
pub mod timeline;
