//! psprobe: a transparent MySQL wire-protocol proxy that times every command, so the cost of
//! performance_schema settings can be measured on live traffic.
//!
//! Data flows one way: bytes -> `proxy` (crate-private: sockets, TLS, relay) -> [`observe`]
//! (the core's [`psprobe_core::session`] events, recorded) -> [`stats`] and [`metrics`]. The
//! sans-I/O core is its own crate and is named as one (`psprobe_core::...`), never re-exported
//! here under local module names (`tests/checks/module_graph.rs` checks).
//!
//! Must not: run anything at load; the runtime, logging and signals belong to the binary's
//! entry points (`cli`, `app`, `runtime`).

// Modules nothing outside the crate uses are `pub(crate)`, and so is every item in them that
// is not reachable from outside: `pub` says "used by the binary, the tests or the benches".
#![warn(unreachable_pub)]

pub mod admin;
pub(crate) mod analysis;
pub mod app;
/// Entry points for `benches/` that need the crate's private parts; not an API.
#[doc(hidden)]
pub mod benching;
pub mod cli;
pub(crate) mod clock;
pub(crate) mod config;
pub mod controller;
pub(crate) mod cpus;
pub mod demo;
pub mod digest_cli;
pub(crate) mod duration;
/// Fuzz targets shared by `fuzz/` (cargo-fuzz) and `tests/fuzz_corpus.rs`; not an API. Behind
/// the `fuzzing` feature, so that a normal build neither compiles nor links them
/// (tests/checks/module_graph.rs keeps it so).
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
pub(crate) mod live;
pub(crate) mod log_limit;
pub mod metrics;
pub mod observe;
pub mod package_assets;
pub mod phase_log;
pub(crate) mod private_fs;
pub(crate) mod progress;
pub(crate) mod proxy;
pub mod proxy_duet;
pub mod report;
pub(crate) mod runtime;
pub(crate) mod secrets;
pub(crate) mod setting;
pub(crate) mod signals;
pub mod stats;
pub(crate) mod timestamp;
pub(crate) mod tls;
