//! `psprobe`: thin entry point; everything lives in the library.
//! Must not: hold logic of its own (nothing here is tested except through the binary).

use std::process::ExitCode;

use clap::Parser;

use psprobe::cli::{Cli, Command};

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Proxy(args) => psprobe::app::run_proxy(&args),
        Command::Ps(args) => psprobe::controller::cli::run(&args),
        Command::Report(args) => psprobe::report::run(&args),
        Command::Demo(args) => psprobe::demo::run(&args),
        Command::Experiment(args) => psprobe::demo::experiment::run(&args),
        Command::Digest(args) => psprobe::digest_cli::run(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // One line: what failed, with its causes.
            eprintln!("psprobe: error: {e:#}");
            ExitCode::from(2)
        }
    }
}
