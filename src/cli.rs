//! The command line's root: the subcommands and what each runs. Only `main` (and a fuzz target) uses it; every
//! subcommand's flags live with the module that owns them.
//!
//! Must not: be used by library modules (tests/checks/module_graph.rs checks that nothing but the
//! command-line fuzz target imports it).

use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand};

use crate::config::ProxyArgs;
use crate::package_assets::PackageAssetsArgs;

/// `psprobe --version`: the crate's version and the commit it was built from (build.rs).
pub(crate) const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("PSPROBE_GIT_COMMIT"),
    ")"
);

#[derive(Debug, Parser)]
#[command(
    name = "psprobe",
    version = VERSION,
    about = "Transparent MySQL/MariaDB proxy that times every command, to measure what performance_schema costs your workload.",
    long_about = "psprobe sits between your clients and mysqld. It forwards every byte unchanged, \
parses the protocol on the way through, times each command from the client's side and exports \
Prometheus metrics.\n\nPoint clients (sysbench, your application) at the --listen address instead of mysqld."
)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Run the proxy: listen for clients, forward to the upstream server, serve /metrics.
    Proxy(Box<ProxyArgs>),
    /// Inspect and change performance_schema settings (scenarios) on a server.
    Ps(crate::controller::cli::PsArgs),
    /// Report the overhead of each scenario from a phase log (markdown, CSV, JSON, HTML).
    Report(crate::report::ReportArgs),
    /// The whole study on a throwaway mariadbd under sysbench: the five runtime scenarios,
    /// pfsoff (not with --quick), what each instrument group costs; HTML report.
    Demo(crate::demo::DemoArgs),
    /// The seed study automated: every workload x concurrency, scenarios cycled, one table
    /// per workload.
    Experiment(crate::study::ExperimentArgs),
    /// Scenarios entered by restart, measured as a duet: two throwaway servers with the same
    /// data, loaded at once, restarted together into the two scenarios of each pair, the
    /// roles swapped every phase (the host's noise hits both and cancels).
    Duet(crate::demo::duet::DuetArgs),
    /// Print the fingerprint and digest id of statements (--query, stdin or files), computed
    /// as the proxy computes them.
    Digest(crate::digest_cli::DigestArgs),
}

/// The hidden command scripts/package.sh runs to write the man pages and completions.
pub(crate) const PACKAGE_ASSETS: &str = "package-assets";

/// What the command line asks for: one of [`Cli`]'s commands, or the hidden `package-assets`.
#[derive(Debug)]
pub(crate) enum Invocation {
    Run(Box<Cli>),
    PackageAssets(PackageAssetsArgs),
}

/// Parses the process's arguments (clap's usage errors, --help and --version exit here).
/// The exit status of a command that failed with `e`: 3 when a stop left settings of
/// psprobe's on the server (the line before says which, and how to finish), 2 otherwise.
pub(crate) fn exit_status(e: &anyhow::Error) -> u8 {
    use crate::controller::error::{ControllerError, EXIT_NOT_RESTORED};
    match e.downcast_ref::<ControllerError>() {
        Some(c) if c.leaves_server_changed() => EXIT_NOT_RESTORED,
        _ => 2,
    }
}

/// `package-assets` is added to [`Cli`] only for this parse: what it writes is made from
/// `Cli::command()`, which then does not list it (clap_complete would offer even a hidden
/// command to users).
pub(crate) fn parse() -> Invocation {
    let hidden = PackageAssetsArgs::augment_args(
        clap::Command::new(PACKAGE_ASSETS)
            .about("Write the man pages and shell completions (scripts/package.sh)")
            .hide(true),
    );
    let matches = Cli::command().subcommand(hidden).get_matches();
    match matches.subcommand() {
        Some((PACKAGE_ASSETS, args)) => Invocation::PackageAssets(
            PackageAssetsArgs::from_arg_matches(args).unwrap_or_else(|e| e.exit()),
        ),
        _ => Invocation::Run(Box::new(
            Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit()),
        )),
    }
}

/// For the commands whose output goes to a pipe (`report`, `digest`): a reader that closes it
/// early (`| head`) ends psprobe quietly, as it ends `cat`, instead of a panic on the failed
/// write (Rust ignores SIGPIPE, so `print!` would panic with EPIPE). Not for the proxy, whose
/// writes to closed sockets must fail as errors, not end the process.
pub(crate) fn end_quietly_on_closed_stdout() {
    // SAFETY: restoring a signal's default disposition touches no memory of this process.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// The binary's one entry point: parses the command line, runs the command, and turns its
/// result into the exit status (a failure is one line on stderr: what failed, with its causes).
pub fn main() -> std::process::ExitCode {
    let cli = match parse() {
        Invocation::Run(cli) => cli,
        Invocation::PackageAssets(args) => {
            return finish(crate::package_assets::run(Cli::command(), &args).map(drop));
        }
    };
    let result = match cli.command {
        Command::Proxy(args) => crate::app::run_proxy(&args),
        Command::Ps(args) => crate::controller::cli::run(&args),
        Command::Report(args) => {
            end_quietly_on_closed_stdout();
            crate::report::run(&args)
        }
        Command::Demo(args) => crate::demo::run(&args),
        Command::Experiment(args) => crate::study::run(&args),
        Command::Duet(args) => crate::demo::duet::run(&args),
        Command::Digest(args) => {
            end_quietly_on_closed_stdout();
            crate::digest_cli::run(&args)
        }
    };
    finish(result)
}

fn finish(result: Result<(), impl Into<anyhow::Error>>) -> std::process::ExitCode {
    let result: anyhow::Result<()> = result.map_err(Into::into);
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("psprobe: error: {e:#}");
            std::process::ExitCode::from(exit_status(&e))
        }
    }
}
