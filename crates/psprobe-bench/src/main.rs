//! `psprobe-bench`: the steps of `scripts/bench.sh` that are more than starting processes, one
//! subcommand each (they were Python scripts; the files they write keep their formats, so
//! earlier runs and the README's figures stay comparable). The shell script starts HAProxy and
//! psprobe; this binary starts the throwaway mariadbd (the harness's), measures, records and
//! reports.
//!
//! Owns: the command line and the one-line error a user sees. Each subcommand lives in its own
//! module; sysbench's output is read only through `psprobe_harness::sysbench`.

mod bare_relay;
mod endpoint_abuse;
mod jsonl;
mod machine;
mod mariadb;
mod memory;
mod metrics;
mod mysql;
mod procfs;
mod profile_report;
mod pyfmt;
mod record;
mod report;
mod run_one;
mod stats;
mod tls_report;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// The end-to-end benchmark's runner and reports (called by scripts/bench.sh,
/// scripts/bench_admin.sh and fuzz/record_compressed.sh; each subcommand also runs alone).
#[derive(Parser)]
#[command(name = "psprobe-bench", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Describe this machine (CPUs, model, RAM, kernel, load average) as JSON on stdout
    /// (bench.sh writes it to machine.json); the one-line summary also goes to stderr.
    Machine,
    /// Run one sysbench measurement and append one JSON line of its numbers to --results:
    /// queries/s, p99 from the latency histogram, the proxy's CPU per query and peak RSS,
    /// mariadbd's and sysbench's CPU, and how busy the machine was meanwhile.
    RunOne(run_one::Args),
    /// Aggregate results.jsonl of a throughput run: print the markdown tables (ratios per
    /// round, median (min..max) over rounds) and write results.csv and summary.json.
    Report(report::Args),
    /// The memory checks: `idle` holds N logged-in connections through a proxy and reads its
    /// RSS, `stream` pulls 1 GiB of 17 MiB rows through it, `report` prints the table.
    Memory(memory::Args),
    /// The table of `bench.sh --tls`: TLS terminated on both legs against passthrough, direct
    /// TLS and plain clients; writes summary.json.
    TlsReport(tls_report::Args),
    /// The tables of `bench.sh --profile`: syscalls per query (strace -c), top symbols (perf),
    /// instructions per query and top functions (callgrind).
    ProfileReport(profile_report::Args),
    /// A TCP tee that records MySQL traffic (the .bin files of the session benchmark and the
    /// fuzz seeds): the busiest connection's chunks, written on SIGTERM or SIGINT.
    RecordTraffic(record::Args),
    /// Abuse psprobe's admin port and metrics endpoint (password guessing, a 10 MB admin
    /// query, a metrics request that never completes) and print what happened.
    EndpointAbuse(endpoint_abuse::Args),
    /// Start a throwaway mariadbd (performance_schema OFF) in --dir with the benchmark's
    /// account and database, and print `PORT PID`; it keeps running until the caller stops it.
    Mariadb(mariadb::Args),
    /// Print a TCP port that is free on 127.0.0.1 now.
    FreePort,
    /// A bare io_uring TCP relay (no parsing, no metrics): the lower bound of what relaying
    /// costs on this machine, as a benchmark target (`bench.sh --bare-relay`). Prints
    /// `bare-relay listening 127.0.0.1:PORT threads=N` and serves until killed.
    BareRelay(bare_relay::Args),
    /// Read sysbench's output on stdin and print its queries per second (bench_admin.sh's
    /// windows).
    SysbenchQps,
}

impl Command {
    /// The name a user typed, for the error line.
    fn name(&self) -> &'static str {
        match self {
            Command::Machine => "machine",
            Command::RunOne(_) => "run-one",
            Command::Report(_) => "report",
            Command::Memory(_) => "memory",
            Command::TlsReport(_) => "tls-report",
            Command::ProfileReport(_) => "profile-report",
            Command::RecordTraffic(_) => "record-traffic",
            Command::EndpointAbuse(_) => "endpoint-abuse",
            Command::Mariadb(_) => "mariadb",
            Command::FreePort => "free-port",
            Command::BareRelay(_) => "bare-relay",
            Command::SysbenchQps => "sysbench-qps",
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let name = cli.command.name();
    let result = match cli.command {
        Command::Machine => machine::run(),
        Command::RunOne(args) => run_one::run(&args),
        Command::Report(args) => report::run(&args),
        Command::Memory(args) => memory::run(&args),
        Command::TlsReport(args) => tls_report::run(&args),
        Command::ProfileReport(args) => profile_report::run(&args),
        Command::RecordTraffic(args) => record::run(&args),
        Command::EndpointAbuse(args) => endpoint_abuse::run(&args),
        Command::Mariadb(args) => mariadb::run(&args),
        Command::FreePort => psprobe_harness::ports::free_port()
            .map(|port| println!("{port}"))
            .map_err(|e| anyhow::anyhow!("no free port on 127.0.0.1: {e}")),
        Command::SysbenchQps => sysbench_qps(),
        Command::BareRelay(args) => bare_relay::run(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // `{:#}`: the whole chain on one line ("what failed: why").
            eprintln!("psprobe-bench {name}: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// `sysbench-qps`: the "queries: N (Q per sec.)" figure of sysbench's report on stdin, with
/// sysbench's 2 decimals.
fn sysbench_qps() -> anyhow::Result<()> {
    use anyhow::Context;
    let mut text = String::new();
    std::io::Read::read_to_string(&mut std::io::stdin(), &mut text).context("reading stdin")?;
    let qps = psprobe_harness::sysbench::parse_summary(&text)
        .qps
        .context("no \"queries: N (Q per sec.)\" line on stdin (did sysbench run to the end?)")?;
    println!("{qps:.2}");
    Ok(())
}
