//! The `checks` test binary: the repository's files and configuration checked against the real
//! tools and a real psprobe, one module per suite (the `//!` comment of each says what it
//! checks). Run one suite with `cargo test --test checks <module>::`, e.g.
//! `cargo test --release --locked --test checks fingerprint_vs_pt::`.
//!
//! They share one binary to be linked once instead of once each (every test binary links the
//! whole psprobe library, seconds per link on a 2-core CI machine), and one process, so the
//! mariadbd servers some of them start copy one template datadir (`mariadb-install-db` runs
//! once, see tests/common/datadir.rs).
//!
//! In company here, so do not add:
//! * a test that is load- or timing-sensitive (figures, throughput, CPU, tight deadlines): its
//!   neighbours run at the same time, and grafana_dashboard drives a 12 s sysbench load;
//! * a test that changes the process (environment variables, rlimits, signal handlers, the
//!   working directory) or counts its allocations process-wide (tests/fuzz_corpus.rs stays its
//!   own binary for that);
//! * a second `#[global_allocator]`: fingerprint_vs_pt installs the binary's (System, counting
//!   each thread's allocations for its no-allocation check).

#[path = "../common/mod.rs"]
mod common;

mod closed_stdout;
mod container_image;
mod debian_package;
mod digest_cli;
mod docker_files;
mod docs_links;
mod fingerprint_vs_pt;
mod grafana_dashboard;
mod kubernetes_manifests;
mod module_graph;
mod prometheus_rules;
