//! `psprobe experiment`: the seed study, automated. For each workload and each concurrency,
//! sysbench runs through psprobe while the controller cycles the scenarios; the result is one
//! table per workload shaped like the seed study's tables (rows: concurrency; columns:
//! scenarios; QPS, then the change against the baseline with its interval), the study's
//! picture as HTML (html.rs), and, with `--compare`, a published table beside it
//! (compare.rs). Its runs use the demo's throwaway servers, sysbench and schedules
//! (`crate::demo`); the demo knows nothing of the study.
//!
//! Must not: touch any server but the throwaway one it started, or leave processes behind.

mod budget;
mod cells;
mod compare;
mod direct_check;
mod duet_column;
mod html;
mod published;
mod state;
mod tables;
mod threads_list;

use std::path::PathBuf;

use anyhow::{bail, Context};
use clap::Args;

use crate::controller::model::catalog::Catalog;
use crate::demo::run_schedule;
use crate::demo::sysbench;
use crate::demo::throwaway;
use crate::demo::Plan;
use crate::demo::ScheduledRun;
use crate::phase_log::read_phases;
use crate::report::doc::{self, code, text, Block};
use crate::report::report_of;
use budget::{cell_duration, human, Slow};
use published::Published;
use state::{DirectLine, Study, StudyPlan};

/// `--duration` and `--slow-phase` when not given (their help text says the same).
const DEFAULT_DURATION: std::time::Duration = std::time::Duration::from_secs(60);
const DEFAULT_SLOW_PHASE: std::time::Duration = std::time::Duration::from_secs(12);
const WORKLOADS: [&str; 3] = ["oltp_read_only", "oltp_read_write", "oltp_write_only"];
/// The study's title: the markdown's first line, the page's heading.
const TITLE: &str = "performance_schema overhead by workload and concurrency";

#[derive(Debug, Args)]
pub(crate) struct ExperimentArgs {
    /// sysbench workloads, comma-separated.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "oltp_read_only,oltp_read_write,oltp_write_only"
    )]
    pub workloads: Vec<String>,
    /// Concurrencies (sysbench --threads), comma-separated; `A,B,...,Z` goes on as A,B
    /// began (multiplying, else adding) up to Z: the seed study's eleven levels are
    /// 1,2,4,...,1024.
    #[arg(long, value_name = "LIST", default_value = "1,8")]
    pub threads: String,
    /// The server to start, as `psprobe demo --server` takes it: `mariadb`, `mysql`, a Debian
    /// tree with usr/sbin/mysqld or usr/sbin/mariadbd (chroot), or a server program's path.
    #[arg(long, value_name = "NAME|PATH", default_value = "mariadb")]
    pub server: String,
    /// Scenarios to compare [default: the six of the seed study].
    #[arg(long, value_delimiter = ',')]
    pub scenarios: Vec<String>,
    /// Slot of a runtime-switched scenario [default: psprobe proxy's].
    #[arg(long, value_name = "DURATION", value_parser = crate::duration::duration_arg)]
    pub phase: Option<std::time::Duration>,
    /// Settle time after a switch [default: from the carryover profile].
    #[arg(long, value_name = "DURATION", value_parser = crate::duration::duration_arg)]
    pub settle: Option<std::time::Duration>,
    /// Length of each run (one workload at one concurrency) [default: 60s].
    #[arg(long, value_name = "DURATION", value_parser = crate::duration::duration_arg)]
    pub duration: Option<std::time::Duration>,
    /// Total time for the whole study instead of --duration: less a minute for the server
    /// and its tables and 15 s of start and stop per run, shared evenly by the runs (each
    /// workload at each concurrency), each holding its slow blocks; refused when too short.
    #[arg(long, value_name = "DURATION", value_parser = crate::duration::duration_arg, conflicts_with = "duration")]
    pub budget: Option<std::time::Duration>,
    /// Phase of a scenario entered by restart (pfsoff), restart settle included
    /// [default: 12s].
    #[arg(long, value_name = "DURATION", value_parser = crate::duration::duration_arg)]
    pub slow_phase: Option<std::time::Duration>,
    /// Slow blocks per run (pfsoff and its reference, each entered by restart).
    #[arg(long, default_value_t = 3)]
    pub slow_blocks: u64,
    /// TOML file with `[[scenario]]` tables: scenarios of your own (e.g. an A/A twin).
    #[arg(long, short = 'c', value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// pfsoff's column from duet runs: in each run, after the runtime scenarios, pfsoff
    /// against its reference on the study's server and a copy of its data at once, each
    /// pinned to half the CPUs with half the run's clients (at least one), until +-3 points;
    /// half of each run's time (at least a minute) goes to it (docs/measurement.md, "Duet
    /// runs"). Each run's duet report is written beside the study (STEM-WORKLOAD-THREADS.duet.md).
    #[arg(long)]
    pub duet: bool,
    /// After each run with pfsoff: this many repetitions of a direct sequential A/B on the
    /// same server, without psprobe (restart with performance_schema OFF, sysbench for a slow
    /// phase; restart ON with the reference's settings, sysbench; in random order), to set
    /// beside psprobe's slow estimate.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub direct_check: u32,
    /// Seed of the schedule's order [default: fixed, so runs are reproducible].
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// Go on with the study at --output that was cut short (killed, a crash, a reboot): its
    /// finished runs are kept, the server it left running is stopped, and it goes on at the
    /// first unfinished run. Give the same options as when it started.
    #[arg(long)]
    pub resume: bool,
    /// A published table to set beside the study (repeatable): CSV with the columns
    /// workload, threads (or concurrency), scenario, and qps or change_percent (against the
    /// table's own baseline, empty for it). Per workload the report adds its values re-based
    /// onto psprobe's baselines, the differences, and Kendall's tau of the scenarios' order per
    /// concurrency; the chart shows them as hollow points. With --resume of a finished study,
    /// only the reports are written again.
    #[arg(long, value_name = "FILE.csv")]
    pub compare: Vec<PathBuf>,
    /// Markdown report [default: ./psprobe-experiment.md]; phase logs and sysbench output go
    /// beside it.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
}

pub(crate) fn run(args: &ExperimentArgs) -> anyhow::Result<()> {
    crate::demo::interrupt::install();
    for w in &args.workloads {
        if !WORKLOADS.contains(&w.as_str()) {
            bail!("unknown workload {w}; use {}", WORKLOADS.join(", "));
        }
    }
    let levels = threads_list::parse_threads(&args.threads, client_limit())?;
    let scenarios: Vec<String> = if args.scenarios.is_empty() {
        Catalog::seed_names()
    } else {
        args.scenarios.clone()
    };
    if scenarios.len() < 2 {
        bail!("--scenarios needs at least two scenarios to compare");
    }
    let mut catalog = Catalog::builtin();
    if let Some(path) = &args.config {
        let config = crate::controller::model::file::PsConfig::load(path)?;
        catalog.add_toml(&config.text, &config.path)?;
    }
    for name in &scenarios {
        catalog.resolve(name)?;
    }
    let published = if args.compare.is_empty() {
        None
    } else {
        let mut names = catalog.clone();
        Some(Published::load(&args.compare, &WORKLOADS, |s| {
            names.resolve(s).is_ok()
        })?)
    };
    let (phase, settle) = (args.phase, args.settle);
    if let (Some(phase), Some(settle)) = (phase, settle) {
        if settle >= phase {
            bail!("--settle must be shorter than --phase");
        }
    }
    let slow_phase = args.slow_phase.unwrap_or(DEFAULT_SLOW_PHASE);
    let runs = args.workloads.len() * levels.len();
    let pfsoff = scenarios.iter().any(|s| s == "pfsoff");
    let duet_reference = match (args.duet, pfsoff) {
        (false, _) => None,
        (true, false) => bail!("--duet measures pfsoff's column: add pfsoff to --scenarios"),
        (true, true) => Some(
            crate::controller::schedule::args::default_slow_reference(&catalog, &scenarios)
                .context("pfsoff needs a runtime scenario in --scenarios to be compared with")?,
        ),
    };
    let duration = match args.budget {
        Some(budget) => {
            let slow = match duet_reference {
                // The duet's least, as pairs of two phases.
                Some(_) => {
                    let phase = crate::demo::duet_on_copy::PHASE;
                    Some(Slow {
                        blocks: duet_column::MIN_DUET.as_secs() / (2 * phase.as_secs()).max(1),
                        phase,
                        duet: true,
                    })
                }
                None => pfsoff.then_some(Slow {
                    blocks: args.slow_blocks.max(1),
                    phase: slow_phase,
                    duet: false,
                }),
            };
            let each = cell_duration(budget, runs, slow)?;
            println!(
                "experiment: --budget {} over {runs} runs: {} of schedule each",
                human(budget),
                human(each)
            );
            each
        }
        None => args.duration.unwrap_or(DEFAULT_DURATION),
    };
    // With --duet a run is its runtime scenarios switched fast, then pfsoff's duet.
    let (duration, duet_time) = match duet_reference {
        Some(_) => {
            let duet = duet_column::duet_time(duration);
            (
                duration.saturating_sub(duet).max(budget::MIN_FAST),
                Some(duet),
            )
        }
        None => (duration, None),
    };
    let fast_scenarios: Vec<String> = match duet_reference {
        Some(_) => scenarios
            .iter()
            .filter(|s| *s != "pfsoff")
            .cloned()
            .collect(),
        None => scenarios.clone(),
    };
    let restart_settle = (slow_phase / 4).max(std::time::Duration::from_secs(1));
    let plan = Plan {
        phase,
        settle,
        duration,
        restart_settle,
        slow_phase,
        slow_blocks: Some(args.slow_blocks.max(1)),
        seed: args.seed,
        target_halfwidth: None,
    };
    let output = args
        .output
        .clone()
        .unwrap_or_else(|| PathBuf::from("psprobe-experiment.md"));
    if output.extension().is_some_and(|e| e == "html") {
        bail!(
            "-o {} would be overwritten by the study's HTML page (written beside the markdown as STEM.html): give the markdown report's name, e.g. study.md",
            output.display()
        );
    }
    let stem = output.with_extension("");
    // Before anything starts: a server that cannot serve is one line now, not after setup.
    let choice = crate::demo::server_choice::ServerChoice::resolve(&args.server)?;
    let study_plan = StudyPlan {
        workloads: args.workloads.clone(),
        threads: levels.clone(),
        scenarios: scenarios.clone(),
        duration_ms: millis(plan.duration),
        phase_ms: plan.phase.map(millis),
        settle_ms: plan.settle.map(millis),
        slow_phase_ms: millis(plan.slow_phase),
        slow_blocks: args.slow_blocks.max(1),
        seed: args.seed,
        direct_check: args.direct_check,
        server: args.server.clone(),
        duet: args.duet,
    };
    let mut study = Study::begin(&stem, study_plan, args.resume)?;
    let finished = args
        .workloads
        .iter()
        .flat_map(|w| levels.iter().map(move |&t| (w, t)))
        .filter(|(w, t)| study.finished(w, *t))
        .count();
    let per_run =
        plan.duration + duet_time.unwrap_or_default() + crate::demo::stage_costs::CELL_OVERHEAD;
    println!(
        "experiment: {runs} runs{}, about {}",
        if finished > 0 {
            format!(" ({finished} finished before, kept)")
        } else {
            String::new()
        },
        human(per_run * u32::try_from(runs - finished).unwrap_or(u32::MAX))
    );
    let tables = sysbench::Tables {
        count: 4,
        size: 10_000,
    };
    // Started for the first run there is to do (none when every run finished before).
    let mut server: Option<throwaway::Throwaway> = None;

    let mut blocks = Vec::new();
    let pfsoff_how = match duet_time {
        Some(duet) => format!(
            "pfsoff against its reference in a duet (this server and a copy of its data at once, each on half the CPUs with half the clients, every phase entered by restart, the roles swapped every phase), up to {}s per run or until +-{} points (each run's duet report beside the study: STEM-WORKLOAD-THREADS.duet.md); pfsoff's QPS is one duet server's, with half the clients on half the CPUs",
            duet.as_secs(),
            duet_column::TARGET_POINTS
        ),
        None => format!(
            "pfsoff against its reference, both entered by restart, in {} slow blocks of {}s phases",
            args.slow_blocks.max(1),
            plan.slow_phase.as_secs()
        ),
    };
    blocks.push(intro(&pfsoff_how, plan.duration));
    let mut run_no = 0;
    let mut to_do = runs - finished;
    let mut cells = study.done.clone();
    let mut charts = Vec::new();
    for workload in &args.workloads {
        let workload: &'static str = WORKLOADS
            .iter()
            .find(|w| **w == workload.as_str())
            .copied()
            .context("workload")?;
        let mut rows = Vec::new();
        let mut duets = Vec::new();
        for &threads in &levels {
            run_no += 1;
            let phase_log = PathBuf::from(format!(
                "{}-{workload}-{threads}.phases.jsonl",
                stem.display()
            ));
            if study.finished(workload, threads) {
                println!(
                    "experiment: run {run_no}/{runs}: {workload}, {threads} threads: finished before, kept"
                );
                let phases = read_phases(&phase_log)
                    .with_context(|| format!("cannot read {}", phase_log.display()))?;
                let sysbench_qps = study
                    .done
                    .iter()
                    .find(|c| c.workload == workload && c.threads == threads)
                    .map_or(0.0, |c| c.sysbench_qps);
                rows.push((threads, report_of(&phases, None)?, sysbench_qps));
                if let Some(reference) = &duet_reference {
                    let (files, _) = duet_column::files(&stem, workload, threads);
                    duets.push((threads, duet_column::cell_of(&files, reference)?));
                }
                continue;
            }
            // The runs left, this one included, each its schedule and its start and stop.
            println!(
                "experiment: run {run_no}/{runs}: {workload}, {threads} threads; the study ends in about {}",
                human(per_run * u32::try_from(to_do).unwrap_or(u32::MAX))
            );
            to_do = to_do.saturating_sub(1);
            if server.is_none() {
                server = Some(start_server(&mut study, &choice, &levels, &tables)?);
            }
            let server = server.as_ref().context("the study's server")?;
            let sysbench_out = PathBuf::from(format!(
                "{}-{workload}-{threads}.sysbench.txt",
                stem.display()
            ));
            let run = ScheduledRun {
                workload,
                threads,
                catalog: catalog.clone(),
                scenarios: fast_scenarios.clone(),
                attribution: None,
                phase_log: phase_log.clone(),
                sysbench_out: sysbench_out.clone(),
            };
            run_schedule(server, &tables, &plan, &run, "experiment")?;
            let phases = read_phases(&phase_log)
                .with_context(|| format!("cannot read {}", phase_log.display()))?;
            let report = report_of(&phases, None)?;
            let duet = match (&duet_reference, duet_time) {
                (Some(reference), Some(duration)) => {
                    let (files, report) = duet_column::files(&stem, workload, threads);
                    crate::demo::duet_on_copy::DuetOnCopy {
                        server,
                        choice: &choice,
                        tables: &tables,
                        catalog: &catalog,
                        reference,
                        workload,
                        threads,
                        duration,
                        target: duet_column::TARGET_POINTS,
                        seed: args.seed,
                        who: "experiment-duet",
                    }
                    .run(&files, &report, |dir| study.twin(dir))?;
                    let cell = duet_column::cell_of(&files, reference)?;
                    println!(
                        "experiment: {workload}, {threads} threads: {reference} vs pfsoff in a duet: {} ({} pairs)",
                        cell.change.text(),
                        cell.pairs
                    );
                    Some(cell)
                }
                _ => None,
            };
            if args.direct_check > 0 && pfsoff {
                let psprobe = match &duet {
                    Some(cell) => format!("psprobe (duet) {}", cell.change.text()),
                    None => direct_check::slow_estimate(&catalog, &scenarios, &report),
                };
                let line = direct_check::direct_check(
                    server,
                    &tables,
                    workload,
                    threads,
                    &plan,
                    &catalog,
                    &scenarios,
                    &psprobe,
                    args.direct_check,
                )?;
                println!("experiment: {line}");
                study.add_direct(DirectLine {
                    workload: workload.to_string(),
                    threads,
                    line,
                })?;
            }
            let sysbench_qps =
                sysbench_mean_qps(&std::fs::read_to_string(&sysbench_out).unwrap_or_default());
            let mut these = cells::rows_of(workload, threads, &report, &scenarios, sysbench_qps);
            if let Some(cell) = &duet {
                cell.patch(&mut these, workload, threads, sysbench_qps);
                duets.push((threads, cell.clone()));
            }
            cells.extend(these);
            cells::write(&stem, &cells)?;
            rows.push((threads, report, sysbench_qps));
        }
        blocks.extend(tables::workload_table(workload, &scenarios, &rows, &duets));
        let mine: Vec<&cells::CellRow> = cells.iter().filter(|c| c.workload == workload).collect();
        if let Some(published) = &published {
            let (columns, compared) =
                compare::compare_workload(published, workload, &mine, &scenarios);
            blocks.extend(compare::section(workload, published, &columns, &compared));
        }
        charts.push(html::workload_chart(
            workload,
            &mine,
            &scenarios,
            published.as_ref(),
        ));
    }
    // The study's own server is stopped before the report says it is done.
    drop(server);
    study.server(None)?;
    blocks.extend(tables::direct_section(study.direct()));
    let doc = markdown(&blocks);
    std::fs::write(&output, &doc).with_context(|| format!("cannot write {}", output.display()))?;
    let html = cells::beside(&stem, "html");
    cells::replace_file(&html, &html::page(TITLE, &blocks, &charts))?;
    println!("\n{doc}");
    println!(
        "report: {}, {} (every cell: {}, {})",
        output.display(),
        html.display(),
        cells::beside(&stem, "cells.csv").display(),
        cells::beside(&stem, "cells.json").display()
    );
    Ok(())
}

/// What the tables hold and how the study measured it: the document's first paragraph.
fn intro(pfsoff_how: &str, duration: std::time::Duration) -> Block {
    Block::Paragraph(vec![
        text("Each cell is the mean QPS psprobe measured in that scenario's slots; the row below it the change against the baseline with its 95% interval ("),
        code("*"),
        text(format!(
            " = significant): runtime scenarios against the least instrumented one, switched every slot; {pfsoff_how}. sysbench's own QPS for the whole run is in the last column. {}s of runtime scenarios per run.",
            duration.as_secs()
        )),
    ])
}

/// The markdown report: the title, then the document.
fn markdown(blocks: &[Block]) -> String {
    format!("# {TITLE}\n\n{}", doc::markdown(blocks))
}

/// The most client threads a run may have: what the study's server takes, less room for the
/// controller's and the report's own connections, and what this process's file descriptors
/// carry through the proxy (two per client).
fn client_limit() -> u32 {
    let server = throwaway::MAX_CONNECTIONS - 16;
    crate::proxy::limits::raise_fd_limit();
    crate::proxy::limits::default_max_connections().map_or(server, |proxy| {
        server.min(u32::try_from(proxy).unwrap_or(u32::MAX))
    })
}

fn millis(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// Starts the study's throwaway server (recorded in the study, so that a `--resume` after a
/// crash stops it), checks it takes the highest level's clients, and prepares the tables.
fn start_server(
    study: &mut Study,
    choice: &crate::demo::server_choice::ServerChoice,
    levels: &[u32],
    tables: &sysbench::Tables,
) -> anyhow::Result<throwaway::Throwaway> {
    println!(
        "experiment: starting a throwaway {} server: {}",
        choice.name(),
        choice.version
    );
    let server = throwaway::Throwaway::start(choice)?;
    println!(
        "experiment: {} on {} (data in {})",
        server.name(),
        server.addr(),
        server.dir().display()
    );
    study.server(Some(server.dir()))?;
    check_server_takes(&server, levels)?;
    sysbench::prepare(&server.addr(), tables)?;
    Ok(server)
}

/// The server may take fewer connections than it was asked to (mariadbd lowers
/// max_connections to what its file descriptors carry): refuse before the first run rather
/// than let the highest levels fail on "Too many connections".
fn check_server_takes(server: &throwaway::Throwaway, levels: &[u32]) -> anyhow::Result<()> {
    let text = server.sql("SELECT @@max_connections")?;
    let taken: u32 = text
        .lines()
        .rev()
        .find_map(|l| l.trim().parse().ok())
        .with_context(|| format!("cannot read the server's max_connections from {text:?}"))?;
    let most = levels.iter().copied().max().unwrap_or(0);
    let room = taken.saturating_sub(16);
    if most > room {
        bail!(
            "the study's server takes {taken} connections (mariadbd lowers max_connections to what its file-descriptor limit carries), too few for {most} client threads: raise `ulimit -n` or use at most {room} threads"
        );
    }
    Ok(())
}

/// Mean of sysbench's per-interval `qps:` figures (over every respawned run).
pub(crate) fn sysbench_mean_qps(text: &str) -> f64 {
    let values: Vec<f64> = text
        .lines()
        .filter(|l| l.starts_with('['))
        .filter_map(|l| {
            l.split("qps: ")
                .nth(1)?
                .split_whitespace()
                .next()?
                .parse()
                .ok()
        })
        .collect();
    if values.is_empty() {
        0.0
    } else {
        values.iter().sum::<f64>() / values.len() as f64
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn sysbench_interval_qps() {
        let text = "[ 1s ] thds: 4 tps: 10.0 qps: 200.00 (r/w/o: 1/1/1) lat\n[ 2s ] thds: 4 tps: 10.0 qps: 100.00 (r/w/o)\nSQL statistics:\n";
        assert_eq!(super::sysbench_mean_qps(text), 150.0);
        assert_eq!(super::sysbench_mean_qps(""), 0.0);
    }
}
