//! The scheduled run: its flags and validated settings, the roles (a state machine without
//! I/O), the timeline of slots (pure), the leader's and follower's loops (each asking the
//! server through a trait its tests script), the phase tracker, and the runner that carries
//! the roles' actions out.
//!
//! Must not: hold SQL of its own (it goes through `client`) or define scenarios (`model`).

pub(crate) mod args;
pub(crate) mod as_found;
pub(crate) mod attribution;
pub(crate) mod confirm;
pub(crate) mod duet;
pub(crate) mod follow;
pub(crate) mod follow_server;
pub(crate) mod lead;
pub(crate) mod lead_server;
pub(crate) mod mode;
pub(crate) mod phase_tracker;
pub(crate) mod restore;
pub(crate) mod role;
pub(crate) mod runner;
pub(crate) mod settings;
pub(crate) mod timeline;
pub(crate) mod tuning;
