//! The bounds on one admin query and on logins: what the engine enforces, the server and the
//! config set, and `SHOW VARIABLES` reports.
//!
//! Must not: enforce anything itself (engine.rs and login_limit.rs do).

use std::time::Duration;

use super::login_limit::LoginLimits;

/// Bounds on one admin query (and on logins).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Longest statement accepted, bytes.
    pub max_query_bytes: usize,
    /// A query running longer is interrupted.
    pub timeout: Duration,
    /// Most rows a result may have; more is an error (add a LIMIT), never a silent cut.
    pub max_rows: usize,
    /// Most bytes of values a result may have.
    pub max_result_bytes: usize,
    /// How fast a peer may try passwords (the connection's, not the query's, limit).
    pub login: LoginLimits,
}

/// Default [`Limits::max_query_bytes`]: 1 MiB.
pub(crate) const MAX_QUERY_BYTES: usize = 1 << 20;

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_query_bytes: MAX_QUERY_BYTES,
            timeout: Duration::from_secs(10),
            max_rows: 100_000,
            max_result_bytes: 64 << 20,
            login: LoginLimits::default(),
        }
    }
}
