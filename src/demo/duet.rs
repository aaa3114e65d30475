//! `psprobe duet`: a duet run on two throwaway servers. The second is a copy of the first's
//! prepared data; each has its own psprobe proxy (in this process) and its own sysbench; the
//! two leaders restart their servers at the same moments into the two scenarios of each slow
//! pair, measure the same seconds, and swap the roles at the next phase
//! (`controller::schedule::duet`). The report sets the duet's estimate beside what the same
//! phases say as sequential restart pairs on each server (`duet_report`).
//!
//! Must not: touch any server but the two it started, or leave processes behind.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context};
use clap::Args;

use super::{server_choice, sysbench, throwaway};
use super::{Plan, ScheduledRun};
use crate::controller::model::catalog::Catalog;

const WORKLOADS: [&str; 3] = ["oltp_read_only", "oltp_read_write", "oltp_write_only"];

#[derive(Debug, Args)]
pub(crate) struct DuetArgs {
    /// The scenarios, the reference first: every phase of each is entered by a restart, on
    /// both servers at once [default: pfson_conoff_insoff,pfsoff, whether performance_schema
    /// ON with nothing instrumented costs anything against OFF].
    #[arg(long, value_delimiter = ',')]
    pub scenarios: Vec<String>,
    /// The server to start twice, as `psprobe demo --server` takes it.
    #[arg(long, value_name = "NAME|PATH", default_value = "mariadb")]
    pub server: String,
    /// sysbench workload on each side.
    #[arg(long, default_value = "oltp_read_only")]
    pub workload: String,
    /// sysbench threads on each side (each server gets this many clients).
    #[arg(long, value_name = "N", default_value_t = 4)]
    pub threads: u32,
    /// Longest the pairs may run.
    #[arg(long, value_name = "DURATION", default_value = "10m", value_parser = crate::duration::duration_arg)]
    pub duration: Duration,
    /// Stop once every comparison's interval is within this many points (throughput and
    /// mean latency) [default: run the whole --duration].
    #[arg(long, value_name = "POINTS")]
    pub target_halfwidth: Option<f64>,
    /// One phase: the settle time after the restart (from the restart profile) and the
    /// measured window.
    #[arg(long, value_name = "DURATION", default_value = "5s", value_parser = crate::duration::duration_arg)]
    pub slow_phase: Duration,
    /// TOML file with `[[scenario]]` tables: scenarios of your own (an A/A twin of the
    /// reference, to check that the duet's interval holds 0 when nothing differs).
    #[arg(long, short = 'c', value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Where each side runs: `auto` (the CPUs this process may use, split in two halves: side
    /// a's server, sysbench and psprobe proxy on the first, side b's on the second), `A/B` (two
    /// CPU lists as `taskset -c` takes them, e.g. `0/1`), or `off` (both sides share every
    /// CPU). Sharing lets each phase's CPU split between the sides vary, which the duet cannot
    /// cancel (docs/measurement.md: 5x the noise here).
    #[arg(long, value_name = "auto|off|CPUS/CPUS", default_value = "auto")]
    pub pin: String,
    /// Seed of the pairs' order [default: fixed].
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// Only write the report again, from the phase logs a duet with the same -o left (e.g.
    /// after an upgrade of the analysis); starts nothing.
    #[arg(long)]
    pub report_only: bool,
    /// Markdown report [default: ./psprobe-duet.md]; both sides' phase logs (STEM.a.phases.jsonl,
    /// STEM.b.phases.jsonl), the report's JSON and sysbench's output go beside it.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
}

pub(crate) fn run(args: &DuetArgs) -> anyhow::Result<()> {
    super::interrupt::install();
    crate::runtime::init_logging_from_env(Some(
        "warn,psprobe::proxy=error,psprobe::controller::schedule::lead=info,psprobe::controller::schedule::tuning=info",
    ));
    let workload: &'static str = WORKLOADS
        .iter()
        .find(|w| **w == args.workload)
        .copied()
        .with_context(|| {
            format!(
                "unknown workload {}; use {}",
                args.workload,
                WORKLOADS.join(", ")
            )
        })?;
    if args.threads == 0 {
        bail!("--threads must be at least 1");
    }
    let scenarios = if args.scenarios.is_empty() {
        vec!["pfson_conoff_insoff".to_string(), "pfsoff".to_string()]
    } else {
        args.scenarios.clone()
    };
    let mut catalog = Catalog::builtin();
    if let Some(path) = &args.config {
        let config = crate::controller::model::file::PsConfig::load(path)?;
        catalog.add_toml(&config.text, &config.path)?;
    }
    for (i, name) in scenarios.iter().enumerate() {
        catalog.resolve(name)?;
        if scenarios[..i].contains(name) {
            bail!("scenario {name} is listed twice in --scenarios; for an A/A duet define a twin under another name in --config");
        }
    }
    if scenarios.len() < 2 {
        bail!("--scenarios needs the reference and at least one scenario to compare with it");
    }
    pins(&args.pin)?;
    if args.slow_phase < Duration::from_secs(2) {
        bail!("--slow-phase must be at least 2s (the settle after a restart is at least 1s)");
    }
    let output = args
        .output
        .clone()
        .unwrap_or_else(|| PathBuf::from("psprobe-duet.md"));
    let stem = output.with_extension("");
    let files = super::duet_run::DuetFiles::beside(&stem);
    if args.report_only {
        let placement = std::fs::read_to_string(&files.placement).unwrap_or_default();
        let report = crate::report::duet::write(&files.logs, placement.trim(), &output)?;
        println!("{report}");
        return Ok(());
    }
    let choice = server_choice::ServerChoice::resolve(&args.server)?;
    println!(
        "duet: starting two throwaway {} servers with the same data: {}",
        choice.name(),
        choice.version
    );
    let a = throwaway::Throwaway::start(&choice)?;
    let tables = sysbench::Tables {
        count: 4,
        size: 10_000,
    };
    sysbench::prepare(&a.addr(), &tables)?;
    let b = a.twin(&choice)?;
    for (label, server) in [("a", &a), ("b", &b)] {
        println!(
            "duet: side {label} on {} (data in {})",
            server.addr(),
            server.dir().display()
        );
    }
    let pins = pins(&args.pin)?;
    let placement = match &pins {
        Some([pa, pb]) => {
            a.pin(&choice, pa)?;
            b.pin(&choice, pb)?;
            format!(
                "Server a, its sysbench and its psprobe proxy ran on CPUs {pa}, server b's on {pb}."
            )
        }
        None => "Both sides shared every CPU (not pinned).".to_string(),
    };
    println!("duet: {placement}");
    std::fs::write(&files.placement, &placement)
        .with_context(|| format!("cannot write {}", files.placement.display()))?;
    let plan = Plan::duet(
        args.duration,
        args.slow_phase,
        args.target_halfwidth,
        args.seed,
    );
    let run = ScheduledRun {
        workload,
        threads: args.threads,
        catalog,
        scenarios: scenarios.clone(),
        attribution: None,
        phase_log: files.logs[0].clone(),
        sysbench_out: files.sysbench[0].clone(),
    };
    super::duet_run::run_duet([&a, &b], &tables, &plan, &run, &files, pins, "duet")?;
    drop((a, b));
    let report = crate::report::duet::write(&files.logs, &placement, &output)?;
    println!("\n{report}");
    println!(
        "duet: report {}; phase logs {} and {}",
        output.display(),
        files.logs[0].display(),
        files.logs[1].display()
    );
    Ok(())
}

/// The two sides' CPU lists `--pin` asks for (`None`: shared).
pub(super) fn pins(pin: &str) -> anyhow::Result<Option<[String; 2]>> {
    crate::cpus::pins("--pin", pin)
}
