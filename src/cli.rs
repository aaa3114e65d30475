//! The command line's root: the subcommands and what each runs. Only `main` (and a fuzz target) uses it; every
//! subcommand's flags live with the module that owns them.
//!
//! Must not: be used by library modules (tests/checks/module_graph.rs checks that nothing but the
//! command-line fuzz target imports it).

use clap::{Parser, Subcommand};

use crate::config::ProxyArgs;

#[derive(Debug, Parser)]
#[command(
    name = "psprobe",
    version,
    about = "Transparent MySQL/MariaDB proxy that times every command, to measure what performance_schema costs your workload.",
    long_about = "psprobe sits between your clients and mysqld. It forwards every byte unchanged, \
parses the protocol on the way through, times each command from the client's side and exports \
Prometheus metrics.\n\nPoint clients (sysbench, your application) at the --listen address instead of mysqld."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the proxy: listen for clients, forward to the upstream server, serve /metrics.
    Proxy(Box<ProxyArgs>),
    /// Inspect and change performance_schema settings (scenarios) on a server.
    Ps(crate::controller::cli::PsArgs),
    /// Report the overhead of each scenario from a phase log (markdown, CSV, JSON, HTML).
    Report(crate::report::ReportArgs),
    /// The whole study on a throwaway mariadbd: six scenarios under sysbench, HTML report.
    Demo(crate::demo::DemoArgs),
    /// The seed study automated: every workload x concurrency, scenarios cycled, one table
    /// per workload.
    Experiment(crate::demo::experiment::ExperimentArgs),
    /// Print the fingerprint and digest id of statements (--query, stdin or files), computed
    /// as the proxy computes them.
    Digest(crate::digest_cli::DigestArgs),
}
