//! The scheduled run: its flags and validated settings, the roles (a state machine without
//! I/O), the timeline of slots (pure), the leader's and follower's loops (each asking the
//! server through a trait its tests script), the phase tracker, and the runner that carries
//! the roles' actions out.
//!
//! Must not: hold SQL of its own (it goes through `client`) or define scenarios (`model`).

pub mod args;
pub(crate) mod as_found;
pub mod attribution;
pub(crate) mod confirm;
pub mod duet;
pub mod follow;
pub(crate) mod follow_server;
pub mod lead;
pub(crate) mod lead_server;
pub(crate) mod mode;
pub mod phase_tracker;
pub(crate) mod restore;
pub(crate) mod role;
pub mod runner;
pub mod settings;
pub mod timeline;
pub(crate) mod tuning;
