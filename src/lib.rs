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

// The public face is `main` (the binary's one entry point), `white_box` (benches and white-box
// tests) and `fuzzing` (behind its feature). Every other module is `pub(crate)`, so the
// compiler's dead-code check sees into all of them, and `unreachable_pub` keeps `pub` for what
// those three reach.
#![warn(unreachable_pub)]

pub(crate) mod admin;
pub(crate) mod analysis;
pub(crate) mod app;
pub(crate) mod cli;
pub(crate) mod clock;
pub(crate) mod config;
pub(crate) mod controller;
pub(crate) mod cpus;
pub(crate) mod demo;
pub(crate) mod digest_cli;
pub(crate) mod duration;
/// Fuzz targets shared by `fuzz/` (cargo-fuzz) and `tests/fuzz_corpus.rs`; not an API. Behind
/// the `fuzzing` feature, so that a normal build neither compiles nor links them
/// (tests/checks/module_graph.rs keeps it so).
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
pub(crate) mod live;
pub(crate) mod log_limit;
pub(crate) mod metrics;
pub(crate) mod observe;
pub(crate) mod package_assets;
pub(crate) mod phase_log;
pub(crate) mod private_fs;
pub(crate) mod progress;
pub(crate) mod proxy;
pub(crate) mod proxy_duet;
pub(crate) mod report;
pub(crate) mod runtime;
pub(crate) mod secrets;
pub(crate) mod setting;
pub(crate) mod signals;
pub(crate) mod stats;
pub(crate) mod study;
pub(crate) mod timestamp;
pub(crate) mod tls;
/// What `benches/` and the white-box tests in `tests/` reach inside the crate for; not an API.
#[doc(hidden)]
pub mod white_box;

pub use cli::main;
