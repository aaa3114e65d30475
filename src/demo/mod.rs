//! `psprobe demo`: the whole study on a throwaway server in one command. Starts a mariadbd
//! (performance_schema ON), runs the proxy with the controller cycling the six seed scenarios
//! (pfsoff through a restart of the throwaway server), drives sysbench through the proxy,
//! then writes the HTML report and prints the headline table.
//!
//! Must not: touch any server but the throwaway one it started, or leave processes behind.

pub mod experiment;
pub mod sysbench;
pub mod throwaway;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Args;

use crate::app::launch;
use crate::config::ProxyConfig;
use crate::controller::client::dsn::ControllerDsn;
use crate::controller::model::catalog::Catalog;
use crate::controller::schedule::args::{default_slow_reference, DEFAULT_PHASE};
use crate::controller::schedule::settings::ControllerSettings;
use crate::proxy::ProxySettings;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_bar_fills_and_caps() {
        let half = progress_bar(Duration::from_secs(60), Duration::from_secs(120));
        assert!(
            half.starts_with("[###############---------------]"),
            "{half}"
        );
        assert!(half.contains(" 50%"));
        let over = progress_bar(Duration::from_secs(200), Duration::from_secs(120));
        assert!(over.contains("100%") && !over.contains('-'), "{over}");
    }
}

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// About 3 minutes instead of about 8.
    #[arg(long)]
    pub quick: bool,
    /// Where to write the HTML report [default: ./psprobe-demo-report.html].
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// sysbench threads [default: 4].
    #[arg(long, value_name = "N")]
    pub threads: Option<u32>,
}

/// The schedule of a demo or experiment run: the runtime scenarios switched fast for
/// `duration`, with `slow_blocks` blocks of the restart scenarios spread over it.
pub struct Plan {
    /// Slot of a runtime scenario; `None`: psprobe's default.
    pub phase: Option<Duration>,
    /// `None`: chosen from the carryover profile.
    pub settle: Option<Duration>,
    pub duration: Duration,
    pub restart_settle: Duration,
    pub slow_phase: Duration,
    pub slow_blocks: u64,
    /// Seed of the schedule's order (`None`: a fixed one).
    pub seed: Option<u64>,
}

impl Plan {
    pub fn new(quick: bool) -> Self {
        if quick {
            Plan {
                phase: None,
                settle: None,
                duration: Duration::from_secs(150),
                restart_settle: Duration::from_secs(3),
                slow_phase: Duration::from_secs(8),
                slow_blocks: 2,
                seed: None,
            }
        } else {
            Plan {
                phase: None,
                settle: None,
                duration: Duration::from_secs(480),
                restart_settle: Duration::from_secs(5),
                slow_phase: Duration::from_secs(20),
                slow_blocks: 4,
                seed: None,
            }
        }
    }

    /// Expected length of the schedule.
    pub fn nominal(&self) -> Duration {
        self.duration
    }
}

/// One schedule under one sysbench load, on a throwaway server.
pub struct ScheduledRun {
    pub workload: &'static str,
    pub threads: u32,
    /// The built-in scenarios and any from a config file.
    pub catalog: Catalog,
    pub scenarios: Vec<String>,
    pub phase_log: PathBuf,
    pub sysbench_out: PathBuf,
}

/// Runs psprobe in-process in front of `server` with the controller cycling `run.scenarios`,
/// and sysbench through it until the schedule is done. The phase log is in `run.phase_log`.
pub fn run_schedule(
    server: &throwaway::Throwaway,
    tables: &sysbench::Tables,
    plan: &Plan,
    run: &ScheduledRun,
    who: &str,
) -> anyhow::Result<()> {
    let _ = std::fs::remove_file(&run.phase_log);
    let mut catalog = run.catalog.clone();
    for name in &run.scenarios {
        catalog.resolve(name)?;
    }
    let phase = match plan.phase {
        Some(p) => p,
        None => crate::duration::parse_duration("phase", DEFAULT_PHASE)?,
    };
    let settings = ControllerSettings {
        dsn: ControllerDsn::parse(&server.dsn(), "the throwaway server")?,
        slow_reference: default_slow_reference(&catalog, &run.scenarios),
        catalog,
        scenarios: run.scenarios.clone(),
        phase,
        settle: plan.settle,
        segment: Duration::from_secs(5),
        restart_settle: plan.restart_settle,
        restart_settle_auto: true,
        slow_phase: plan.slow_phase,
        slow_blocks: Some(plan.slow_blocks),
        slow_every: Duration::from_secs(120),
        blocks: None,
        duration: Some(plan.duration),
        target_halfwidth: None,
        seed: plan.seed.unwrap_or(20261129),
        state_file: server.dir().join("ps-snapshot.json"),
        phase_log: run.phase_log.clone(),
        restart_cmd: Some(server.restart_cmd()),
        restart_timeout: Duration::from_secs(120),
        upstream: server.addr(),
        identity: format!("psprobe-{who}"),
        on_phase: None,
        // The throwaway server runs here; its pid file follows it across restarts.
        mysqld_pid: Some(crate::controller::client::server_cpu::PidSource::File(
            server.pid_file(),
        )),
        attribution: None,
    };
    let nominal = plan.nominal();
    crate::runtime::block_on_multi_thread(async {
        let config = local_proxy_config(&server.addr());
        let mut running = launch(&config, Some(settings)).await?;
        println!(
            "{who}: {} x {} threads through psprobe {}: {} scenarios for about {}s",
            run.workload,
            run.threads,
            running.proxy_addr,
            run.scenarios.len(),
            nominal.as_secs() + 15
        );
        // Longer than the schedule; stopped when the schedule is done.
        let load = sysbench::Load::start_workload(
            &running.proxy_addr.to_string(),
            run.workload,
            tables,
            run.threads,
            nominal + Duration::from_secs(600),
            &run.sysbench_out,
        )?;
        let started = Instant::now();
        if let Some(controller) = running.controller.as_mut() {
            let mut ticker = tokio::time::interval(Duration::from_secs(10));
            loop {
                tokio::select! {
                    _ = &mut *controller => break,
                    _ = ticker.tick() => {
                        println!("{who}: {}", progress_bar(started.elapsed(), nominal + Duration::from_secs(15)));
                    }
                }
            }
        }
        running.controller = None;
        load.stop();
        running.shutdown().await;
        anyhow::Ok(())
    })
}

/// `[#########-----------]  45%  54s of ~120s`: one line per tick (works in logs and CI too).
pub fn progress_bar(elapsed: Duration, expected: Duration) -> String {
    const WIDTH: usize = 30;
    let fraction = (elapsed.as_secs_f64() / expected.as_secs_f64().max(1.0)).min(1.0);
    let filled = (fraction * WIDTH as f64).round() as usize;
    format!(
        "[{}{}] {:3.0}%  {}s of ~{}s",
        "#".repeat(filled),
        "-".repeat(WIDTH - filled),
        fraction * 100.0,
        elapsed.as_secs(),
        expected.as_secs()
    )
}

/// A proxy configuration listening on free local ports in front of `upstream`.
pub fn local_proxy_config(upstream: &str) -> ProxyConfig {
    ProxyConfig {
        listen: ([127, 0, 0, 1], 0).into(),
        metrics: ([127, 0, 0, 1], 0).into(),
        settings: ProxySettings {
            upstream: upstream.to_string(),
            connect_timeout: Duration::from_secs(5),
            shutdown_grace: Duration::from_secs(2),
            max_connections: crate::proxy::MaxConnections::FromFdLimit,
            client_handshake_timeout: Some(crate::config::DEFAULT_CLIENT_HANDSHAKE_TIMEOUT),
            upstream_keepalive: Some(crate::config::DEFAULT_UPSTREAM_KEEPALIVE),
        },
        listen_backlog: crate::proxy::limits::DEFAULT_LISTEN_BACKLOG,
        max_digests: crate::stats::DEFAULT_MAX_DIGESTS,
        metrics_top_digests: crate::metrics::DEFAULT_TOP_DIGESTS,
        digest_fold_digits: false,
        digest_style: psprobe_core::digest::DigestStyle::default(),
        admin: None,
        metrics_timeout: crate::metrics::http::DEFAULT_REQUEST_TIMEOUT,
        log: "warn".to_string(),
    }
}

pub fn run(args: &DemoArgs) -> anyhow::Result<()> {
    // Clients refused while the server restarts for pfsoff are expected here.
    crate::runtime::init_logging_from_env(Some("warn,psprobe::proxy=error"));
    let plan = Plan::new(args.quick);
    let threads = args.threads.unwrap_or(4);
    let output = args
        .output
        .clone()
        .unwrap_or_else(|| PathBuf::from("psprobe-demo-report.html"));
    println!("demo: starting a throwaway mariadbd (performance_schema ON)");
    let server = throwaway::Throwaway::start()?;
    println!(
        "demo: mariadbd on {} (data in {})",
        server.addr(),
        server.dir().display()
    );
    let tables = sysbench::Tables {
        count: 4,
        size: 10_000,
    };
    sysbench::prepare(&server.addr(), &tables)?;

    let phase_log = server.dir().join("phases.jsonl");
    let sysbench_out = server.dir().join("sysbench.txt");
    let run = ScheduledRun {
        workload: "oltp_read_write",
        threads,
        catalog: Catalog::builtin(),
        scenarios: Catalog::seed_names(),
        phase_log: phase_log.clone(),
        sysbench_out: sysbench_out.clone(),
    };
    run_schedule(&server, &tables, &plan, &run, "demo")?;
    // Keep the phase log and sysbench's output beside the report (the server's directory goes).
    let kept_log = output.with_extension("phases.jsonl");
    std::fs::copy(&phase_log, &kept_log)
        .with_context(|| format!("cannot copy the phase log to {}", kept_log.display()))?;
    let _ = std::fs::copy(&sysbench_out, output.with_extension("sysbench.txt"));
    println!("demo: phase log {}", kept_log.display());
    let log = crate::phase_log::read_log(&kept_log)
        .with_context(|| format!("cannot read the phase log {}", kept_log.display()))?;
    crate::report::write_demo_report(&log.phases, &log.runs, &output)?;
    Ok(())
}
