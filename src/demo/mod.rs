//! `psprobe demo`: the whole study on a throwaway server in one command. Starts a MariaDB or
//! MySQL server (`--server`, performance_schema ON) and runs, with sysbench through the proxy: the seed study's five
//! runtime scenarios switched fast; pfsoff in short slow pairs through restarts of the
//! throwaway server, until its interval is within +-3 points (the full demo; the quick one
//! says how long that takes and leaves it out); then what each instrument group costs, with
//! the advice for a sample budget. Writes the HTML reports and prints their headlines.
//!
//! Must not: touch any server but the throwaway one it started, or leave processes behind.

pub(crate) mod duet;
pub(crate) mod duet_on_copy;
pub(crate) mod duet_run;
pub(crate) mod interrupt;
pub(crate) mod server_choice;
pub(crate) mod stage_costs;
pub(crate) mod sysbench;
pub(crate) mod throwaway;

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::Args;

use crate::app::launch;
use crate::config::ProxyConfig;
use crate::controller::client::dsn::ControllerDsn;
use crate::controller::model::catalog::Catalog;
use crate::controller::model::groups::Groups;
use crate::controller::schedule::args::{default_slow_reference, DEFAULT_PHASE};
use crate::controller::schedule::attribution::AttributionPlan;
use crate::controller::schedule::settings::ControllerSettings;
use crate::progress::Progress;
use crate::proxy::ProxySettings;

#[derive(Debug, Args)]
pub(crate) struct DemoArgs {
    /// About 5 minutes: the five runtime scenarios for 90 s and the instrument groups for 2
    /// minutes, pfsoff left out (without it: up to 35 minutes, with 3 minutes of runtime
    /// scenarios, pfsoff through restarts until +-3 points or 20 minutes, and 8 minutes of
    /// groups with a confirmed recommendation).
    #[arg(long)]
    pub quick: bool,
    /// Where to write the HTML report [default: ./psprobe-demo-report.html].
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// sysbench threads [default: 4].
    #[arg(long, value_name = "N")]
    pub threads: Option<u32>,
    /// The server to start: `mariadb` (the host's mariadbd), `mysql` (the host's mysqld), a
    /// Debian tree holding usr/sbin/mysqld or usr/sbin/mariadbd (run with chroot, as
    /// scripts/setup-sid-mysql.sh makes MySQL 9.7's at target/sid-mysql), or a server
    /// program's path.
    #[arg(long, value_name = "NAME|PATH", default_value = "mariadb")]
    pub server: String,
    /// Measure pfsoff (performance_schema OFF) as a duet, with --quick too: the demo's server
    /// and a copy of its data at once, each on half the CPUs with half the clients, every
    /// phase entered by restart and the roles swapped every phase, until +-1.5 points or 5
    /// minutes (about 3 here); its report beside the demo's (STEM.pfsoff-duet.md).
    #[arg(long)]
    pub duet: bool,
    /// With --duet: the longest pfsoff's duet may take (it ends sooner once within +-1.5
    /// points); at least 1m, the time about 5 pairs need for an interval [default: 5m].
    #[arg(long, value_name = "DURATION", requires = "duet", value_parser = crate::duration::duration_arg)]
    pub duet_time: Option<Duration>,
}

/// The schedule of a demo or experiment run: the runtime scenarios switched fast for
/// `duration`, with `slow_blocks` blocks of the restart scenarios spread over it.
pub(crate) struct Plan {
    /// Slot of a runtime scenario; `None`: psprobe's default.
    pub phase: Option<Duration>,
    /// `None`: chosen from the carryover profile.
    pub settle: Option<Duration>,
    pub duration: Duration,
    pub restart_settle: Duration,
    pub slow_phase: Duration,
    /// `None`: as many as the duration holds, or until `target_halfwidth` (slow-only runs).
    pub slow_blocks: Option<u64>,
    /// Seed of the schedule's order (`None`: a fixed one).
    pub seed: Option<u64>,
    /// Stop once every interval is within this many points.
    pub target_halfwidth: Option<f64>,
}

impl Plan {
    /// The runtime scenarios' schedule of a demo.
    pub(crate) fn runtime(quick: bool) -> Self {
        Plan {
            phase: None,
            settle: None,
            duration: Duration::from_secs(if quick { 90 } else { 180 }),
            restart_settle: Duration::from_secs(5),
            slow_phase: Duration::from_secs(12),
            slow_blocks: None,
            seed: None,
            target_halfwidth: None,
        }
    }

    /// pfsoff against pfson_conoff_insoff in slow pairs until +-`target` points (or `cap`).
    pub(crate) fn pfsoff(cap: Duration, target: f64) -> Self {
        Plan {
            duration: cap,
            // Short phases, many restarts: each server start's own level is most of the noise
            // (docs/measurement.md), so starts count, not window length. The settle is re-chosen
            // from the restart profile after the first restarts.
            slow_phase: Duration::from_secs(5),
            restart_settle: Duration::from_secs(2),
            slow_blocks: None,
            target_halfwidth: Some(target),
            ..Plan::runtime(false)
        }
    }

    /// A duet's schedule: every phase `slow_phase` long and entered by restart (its settle
    /// chosen from the restart profile after a first second), for up to `duration` or until
    /// +-`target` points.
    pub(crate) fn duet(
        duration: Duration,
        slow_phase: Duration,
        target: Option<f64>,
        seed: Option<u64>,
    ) -> Self {
        Plan {
            duration,
            slow_phase,
            restart_settle: Duration::from_secs(1),
            slow_blocks: None,
            seed,
            target_halfwidth: target,
            ..Plan::runtime(false)
        }
    }

    /// Expected length of the schedule.
    pub(crate) fn nominal(&self) -> Duration {
        self.duration
    }
}

/// One schedule under one sysbench load, on a throwaway server.
pub(crate) struct ScheduledRun {
    pub workload: &'static str,
    pub threads: u32,
    /// The built-in scenarios and any from a config file.
    pub catalog: Catalog,
    pub scenarios: Vec<String>,
    /// Instead of `scenarios`: what each of these groups costs.
    pub attribution: Option<AttributionPlan>,
    pub phase_log: PathBuf,
    pub sysbench_out: PathBuf,
}

/// Runs psprobe in-process in front of `server` with the controller cycling `run.scenarios`,
/// and sysbench through it until the schedule is done. The phase log is in `run.phase_log`.
pub(crate) fn run_schedule(
    server: &throwaway::Throwaway,
    tables: &sysbench::Tables,
    plan: &Plan,
    run: &ScheduledRun,
    who: &str,
) -> anyhow::Result<()> {
    interrupt::check()?;
    let _ = std::fs::remove_file(&run.phase_log);
    let settings = controller_settings(server, plan, run, &run.phase_log, who)?;
    let nominal = plan.nominal();
    crate::runtime::block_on_multi_thread(async {
        let config = local_proxy_config(&server.addr());
        let mut running = launch(&config, Some(settings)).await?;
        let what = match &run.attribution {
            Some(a) => format!("{} instrument groups", a.groups.len()),
            None => format!("{} scenarios", run.scenarios.len()),
        };
        println!(
            "{who}: {} x {} threads through psprobe {}: {what} for about {}s; live page http://{}/",
            run.workload,
            run.threads,
            running.proxy_addr,
            nominal.as_secs() + 15,
            running.metrics_addr
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
        // SIGINT or SIGTERM (`interrupt`): stop here, so that the caller stops the server and
        // removes its folder.
        if let Some(controller) = running.controller.as_mut() {
            let mut progress = Progress::start(who, nominal + Duration::from_secs(15));
            let mut ticker = tokio::time::interval(Duration::from_millis(250));
            let mut ticks = 0u64;
            loop {
                tokio::select! {
                    _ = &mut *controller => break,
                    _ = ticker.tick() => {
                        if interrupt::interrupted() {
                            break;
                        }
                        ticks += 1;
                        if ticks % 4 == 0 {
                            progress.tick();
                        }
                    }
                }
            }
            progress.finish();
        }
        running.controller = None;
        load.stop();
        running.shutdown().await;
        interrupt::check()
    })
}

/// The controller's settings for `run` on `server` under `plan`, its phase log at `phase_log`.
fn controller_settings(
    server: &throwaway::Throwaway,
    plan: &Plan,
    run: &ScheduledRun,
    phase_log: &std::path::Path,
    who: &str,
) -> anyhow::Result<ControllerSettings> {
    let mut catalog = run.catalog.clone();
    for name in &run.scenarios {
        catalog.resolve(name)?;
    }
    let phase = match plan.phase {
        Some(p) => p,
        None => crate::duration::parse_duration("phase", DEFAULT_PHASE)?,
    };
    Ok(ControllerSettings {
        dsn: ControllerDsn::parse(&server.dsn(), "the throwaway server")?,
        slow_reference: default_slow_reference(&catalog, &run.scenarios),
        catalog,
        scenarios: run.scenarios.clone(),
        phase,
        phase_auto: plan.phase.is_none(),
        settle: plan.settle,
        segment: Duration::from_secs(5),
        restart_settle: plan.restart_settle,
        restart_settle_auto: true,
        slow_phase: plan.slow_phase,
        slow_blocks: plan.slow_blocks,
        slow_every: Duration::from_secs(120),
        blocks: None,
        duration: Some(plan.duration),
        target_halfwidth: plan.target_halfwidth,
        seed: plan.seed.unwrap_or(20261129),
        state_file: server.dir().join("ps-snapshot.json"),
        phase_log: phase_log.to_path_buf(),
        restart_cmd: Some(server.restart_cmd()),
        restart_timeout: Duration::from_secs(120),
        stop_timeout: Duration::from_secs(30),
        config_path: None,
        upstream: server.addr(),
        identity: format!("psprobe-{who}"),
        on_phase: None,
        // The throwaway server runs here; its pid file follows it across restarts.
        mysqld_pid: Some(crate::controller::client::server_cpu::PidSource::File(
            server.pid_file(),
        )),
        attribution: run.attribution.clone(),
        duet: None,
    })
}

/// A proxy configuration listening on free local ports in front of `upstream`.
pub(crate) fn local_proxy_config(upstream: &str) -> ProxyConfig {
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
            relay: Default::default(),
        },
        listen_backlog: crate::proxy::limits::DEFAULT_LISTEN_BACKLOG,
        max_digests: crate::stats::DEFAULT_MAX_DIGESTS,
        metrics_top_digests: crate::metrics::DEFAULT_TOP_DIGESTS,
        digest_fold_digits: false,
        digest_style: psprobe_core::digest::DigestStyle::default(),
        admin: None,
        metrics_timeout: crate::metrics::http::DEFAULT_REQUEST_TIMEOUT,
        live_page: true,
        log: "warn".to_string(),
    }
}

/// The sample budget the demo advises for (percent of throughput).
const DEMO_BUDGET: f64 = 5.0;
/// pfsoff's interval in the full demo, points (and the longest it may take).
const PFSOFF_TARGET: f64 = 3.0;
const PFSOFF_CAP: Duration = Duration::from_secs(20 * 60);
/// `--duet`: pfsoff's duet ends at +-1.5 points, or after 5 minutes.
const DUET_TARGET: f64 = 1.5;
const DUET_CAP: Duration = Duration::from_secs(5 * 60);

/// `--quick` without `--duet`: pfsoff is left out, in one line that says why and where it is
/// measured.
fn pfsoff_left_out() -> String {
    format!(
        "demo: pfsoff (performance_schema OFF) needs a restart per phase: about 10-15 minutes of \
         slow pairs for an interval of +-{PFSOFF_TARGET} points on a machine like this one; the full \
         demo measures it (DEMO_FULL=1 scripts/demo.sh, or psprobe demo without --quick), and so \
         does --duet, in up to {} more minutes",
        DUET_CAP.as_secs() / 60
    )
}

/// The instrument groups' schedule in the demo, and the recommendation's confirmation in it.
fn groups_time(quick: bool) -> (Duration, Option<Duration>) {
    if quick {
        (Duration::from_secs(120), None)
    } else {
        (Duration::from_secs(480), Some(Duration::from_secs(120)))
    }
}

/// The longest the demo's schedules take with their starts and the server's setup: what
/// `--quick`'s help, the README and scripts/demo.sh say (5 and 35 minutes).
#[cfg(test)]
fn longest(quick: bool) -> Duration {
    let stage = stage_costs::CELL_OVERHEAD;
    let runtime = Plan::runtime(quick).duration + stage;
    let pfsoff = if quick {
        Duration::ZERO
    } else {
        PFSOFF_CAP + stage
    };
    stage_costs::STUDY_SETUP + runtime + pfsoff + groups_time(quick).0 + stage
}

pub(crate) fn run(args: &DemoArgs) -> anyhow::Result<()> {
    interrupt::install();
    // Clients refused while the server restarts for pfsoff are expected here; psprobe's own
    // account of each planned restart (what, why, how long) is shown.
    crate::runtime::init_logging_from_env(Some(
        "warn,psprobe::proxy=error,psprobe::controller::schedule::lead=info",
    ));
    let threads = args.threads.unwrap_or(4);
    let duet_time = args.duet_time.unwrap_or(DUET_CAP);
    if duet_time < duet_on_copy::MIN_DUET {
        anyhow::bail!(
            "--duet-time {:.0}s is too short for a duet's interval: give at least {}s (about 5 pairs of two {}s phases)",
            duet_time.as_secs_f64(),
            duet_on_copy::MIN_DUET.as_secs(),
            duet_on_copy::PHASE.as_secs()
        );
    }
    let output = args
        .output
        .clone()
        .unwrap_or_else(|| PathBuf::from("psprobe-demo-report.html"));
    let choice = server_choice::ServerChoice::resolve(&args.server)?;
    println!(
        "demo: starting a throwaway {} server (performance_schema ON): {}",
        choice.name(),
        choice.version
    );
    let server = throwaway::Throwaway::start(&choice)?;
    println!(
        "demo: {} on {} (data in {})",
        server.name(),
        server.addr(),
        server.dir().display()
    );
    let tables = sysbench::Tables {
        count: 4,
        size: 10_000,
    };
    sysbench::prepare(&server.addr(), &tables)?;
    let run =
        |name: &str, scenarios: Vec<String>, attribution: Option<AttributionPlan>| ScheduledRun {
            workload: "oltp_read_write",
            threads,
            catalog: Catalog::builtin(),
            scenarios,
            attribution,
            phase_log: server.dir().join(format!("{name}.phases.jsonl")),
            sysbench_out: server.dir().join(format!("{name}.sysbench.txt")),
        };

    // 1. The seed study's runtime scenarios, switched fast.
    let runtime: Vec<String> = Catalog::seed_names()
        .into_iter()
        .filter(|s| s != "pfsoff")
        .collect();
    let fast = run("runtime", runtime, None);
    run_schedule(&server, &tables, &Plan::runtime(args.quick), &fast, "demo")?;
    let mut study = std::fs::read_to_string(&fast.phase_log).unwrap_or_default();

    // 2. pfsoff: performance_schema OFF, only through restarts, in short slow pairs.
    let pfsoff_scenarios = vec!["pfsoff".to_string(), "pfson_conoff_insoff".to_string()];
    if args.duet {
        let stem = output.with_extension("pfsoff-duet");
        let files = duet_run::DuetFiles::beside(&stem);
        let report = stem.with_extension("pfsoff-duet.md");
        duet_on_copy::DuetOnCopy {
            server: &server,
            choice: &choice,
            tables: &tables,
            catalog: &Catalog::builtin(),
            reference: "pfson_conoff_insoff",
            workload: "oltp_read_write",
            threads,
            duration: duet_time,
            target: DUET_TARGET,
            seed: None,
            who: "demo-duet",
        }
        .run(&files, &report, |_| Ok(()))?;
        println!("demo: pfsoff in a duet: report {}", report.display());
    } else if args.quick {
        println!("{}", pfsoff_left_out());
    } else {
        let slow = run("pfsoff", pfsoff_scenarios, None);
        run_schedule(
            &server,
            &tables,
            &Plan::pfsoff(PFSOFF_CAP, PFSOFF_TARGET),
            &slow,
            "demo",
        )?;
        study.push_str(&std::fs::read_to_string(&slow.phase_log).unwrap_or_default());
    }

    // 3. What each instrument group costs, and the advice for a sample budget.
    let groups = Groups::builtin();
    let mut plan = AttributionPlan::new(
        groups.select(&groups.builtin_names())?,
        Some(DEMO_BUDGET),
        Vec::new(),
    );
    let (attribution_time, confirm) = groups_time(args.quick);
    plan.confirm = confirm;
    let attribution = run("groups", Vec::new(), Some(plan));
    let attribution_plan = Plan {
        duration: attribution_time,
        ..Plan::runtime(args.quick)
    };
    run_schedule(&server, &tables, &attribution_plan, &attribution, "demo")?;

    // Keep the phase logs and sysbench's output beside the reports (the server's directory
    // goes).
    let kept_log = output.with_extension("phases.jsonl");
    std::fs::write(&kept_log, &study)
        .with_context(|| format!("cannot write the phase log {}", kept_log.display()))?;
    let groups_output = output.with_extension("groups.html");
    let groups_log = groups_output.with_extension("phases.jsonl");
    std::fs::copy(&attribution.phase_log, &groups_log)
        .with_context(|| format!("cannot copy the phase log to {}", groups_log.display()))?;
    let _ = std::fs::copy(&fast.sysbench_out, output.with_extension("sysbench.txt"));
    println!(
        "demo: phase logs {} and {}",
        kept_log.display(),
        groups_log.display()
    );
    let log = crate::phase_log::parse_log(&study);
    println!(
        "{}",
        crate::report::write_report(
            &log.phases,
            &log.runs,
            &output,
            Some(crate::report::Format::Html)
        )?
    );
    let groups = crate::phase_log::read_log(&groups_log)
        .with_context(|| format!("cannot read the phase log {}", groups_log.display()))?;
    println!(
        "{}",
        crate::report::write_report(
            &groups.phases,
            &groups.runs,
            &groups_output,
            Some(crate::report::Format::Html)
        )?
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_demo_lasts_what_its_help_says() {
        // --quick's help, the README and scripts/demo.sh: about 5 minutes, else up to 35
        // (tests/checks/docs_links.rs holds the three texts to these figures).
        let quick = longest(true);
        assert!(
            quick > Duration::from_secs(4 * 60) && quick <= Duration::from_secs(5 * 60 + 30),
            "{quick:?}"
        );
        assert!(
            longest(false) <= Duration::from_secs(35 * 60),
            "{:?}",
            longest(false)
        );
        assert!(longest(false) > Duration::from_secs(30 * 60));
    }

    /// `--quick` leaves pfsoff out in one line naming the two ways to measure it.
    #[test]
    fn the_quick_demo_says_where_pfsoff_is_measured() {
        let line = pfsoff_left_out();
        assert!(!line.contains('\n'), "{line}");
        for part in [
            "needs a restart per phase",
            "DEMO_FULL=1",
            "--duet, in up to 5 more minutes",
        ] {
            assert!(line.contains(part), "{part}: {line}");
        }
    }
}
