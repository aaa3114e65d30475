//! psprobe: a transparent MySQL wire-protocol proxy that times every command, so the cost of
//! performance_schema settings can be measured on live traffic.
//!
//! Data flows one way: bytes -> [`protocol`] -> [`session`] events -> [`metrics`].
//! [`proxy`] is the tokio shell around the sans-I/O core.
//!
//! Must not: run anything at load; the runtime, logging and signals belong to the binary's
//! entry points (`cli`, `app`, `runtime`).

/// The sans-I/O core (its own crate, `psprobe-core`), under the paths the rest of psprobe uses.
pub use psprobe_core::{digest, protocol, session};

pub mod admin;
pub mod analysis;
pub mod app;
pub mod cli;
pub mod config;
pub mod connections;
pub mod controller;
pub mod demo;
pub mod digest_cli;
pub mod duration;
/// Fuzz targets shared by `fuzz/` (cargo-fuzz) and `tests/fuzz_corpus.rs`; not an API.
#[doc(hidden)]
pub mod fuzzing;
pub mod live;
pub mod log_limit;
pub mod metrics;
pub mod phase_log;
pub mod private_fs;
pub mod proxy;
pub mod record;
pub mod report;
pub mod runtime;
pub mod secrets;
pub mod stats;
pub mod timestamp;
pub mod tls;
