//! The `through_proxy` test binary: short suites that each start their own mariadbd (or a fake
//! upstream) and psprobe, and assert on what psprobe does with real clients and drivers, TLS,
//! compression, the admin interface, abuse of its endpoints, failures and secrets: behaviour,
//! not speed. One module per suite (the `//!` comment of each says what it checks). Run one
//! suite with `cargo test --test through_proxy <module>::`, e.g.
//! `cargo test --release --locked --test through_proxy endpoint_abuse::`.
//!
//! They share one binary to be linked once instead of once each (every test binary links the
//! whole psprobe library, seconds per link on a 2-core CI machine), and one process, so their
//! servers copy one template datadir per flavor (`mariadb-install-db` or `mysqld
//! --initialize-insecure` runs once per flavor, see tests/common/datadir.rs and
//! tests/common/server.rs).
//!
//! In company here, so do not add:
//! * a test that is load- or timing-sensitive (throughput, overhead or latency figures, CPU,
//!   deadlines tighter than "it did not hang"): the suites here run two at a time, next to
//!   each other's servers and clients. Those stay their own binaries (load_exhaustion,
//!   transparency_volume, sysbench_counts, bench_smoke, network_faults, the controller's);
//! * a test that changes the process (environment variables, rlimits, signal handlers, the
//!   working directory), a `#[global_allocator]`, or listens on a fixed port.
//!
//! Servers a suite shares among its own tests live in that module's statics (a
//! `common::server::PerFlavor`: one server per flavor, as in client_matrix, tls_through_proxy,
//! cli_through_proxy): each suite keeps its own. Suites that run on every server instantiate
//! their tests per flavor with `per_flavor!` (test names `SUITE::mysql_9_7::TEST`).

#[path = "../common/mod.rs"]
mod common;

mod admin_bounds;
mod admin_clients;
mod admin_interface;
mod auth_through_proxy;
mod bulk_counts_admin_vs_report;
mod cli_through_proxy;
mod client_matrix;
mod compression_through_proxy;
mod digest_corpus_vs_server;
mod digest_vs_server;
mod endpoint_abuse;
mod failure_modes;
mod mysql_async_through_proxy;
mod relay_half_close;
mod relay_log_floods;
mod relay_slow_readers;
mod secrets_privacy;
mod signals;
mod tls_through_proxy;
