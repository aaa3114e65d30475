//! `psprobe`: thin entry point; everything lives in the library.
//! Must not: hold logic of its own (nothing here is tested except through the binary).

use std::process::ExitCode;

use clap::CommandFactory;

use psprobe::cli::{Cli, Command, Invocation};

fn main() -> ExitCode {
    let cli = match psprobe::cli::parse() {
        Invocation::Run(cli) => cli,
        Invocation::PackageAssets(args) => {
            return finish(psprobe::package_assets::run(Cli::command(), &args).map(drop));
        }
    };
    let result = match cli.command {
        Command::Proxy(args) => psprobe::app::run_proxy(&args),
        Command::Ps(args) => psprobe::controller::cli::run(&args),
        Command::Report(args) => {
            psprobe::cli::end_quietly_on_closed_stdout();
            psprobe::report::run(&args)
        }
        Command::Demo(args) => psprobe::demo::run(&args),
        Command::Experiment(args) => psprobe::demo::experiment::run(&args),
        Command::Duet(args) => psprobe::demo::duet::run(&args),
        Command::Digest(args) => {
            psprobe::cli::end_quietly_on_closed_stdout();
            psprobe::digest_cli::run(&args)
        }
    };
    finish(result)
}

fn finish(result: Result<(), impl Into<anyhow::Error>>) -> ExitCode {
    let result: anyhow::Result<()> = result.map_err(Into::into);
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // One line: what failed, with its causes.
            eprintln!("psprobe: error: {e:#}");
            ExitCode::from(psprobe::cli::exit_status(&e))
        }
    }
}
