//! One duet on two throwaway servers: each side's proxy, controller and sysbench load, the
//! side's proxy on an async runtime of its own whose threads run on the side's CPUs.
//!
//! Why a runtime per side: with one runtime for both proxies, its worker threads served both
//! sides' connections from whichever CPU they ran on, so at 16 and more clients a side one
//! side's relay could fall behind the other's for whole phases (a side's server at a third of
//! its CPU while the other's ran at full rate, docs/measurement.md): a disturbance of one side
//! alone, which the duet cannot cancel. A side's runtime on the side's CPUs makes each side
//! whole: server, load and relay on the same CPUs, nothing shared but the kernel.
//!
//! Must not: leave a side running when the other failed or the run was interrupted.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context};

use super::{controller_settings, local_proxy_config, sysbench, throwaway};
use super::{Plan, ScheduledRun};
use crate::app::launch;
use crate::controller::schedule::duet::DuetSide;
use crate::controller::schedule::settings::ControllerSettings;
use crate::progress::Progress;

/// What a duet run wrote.
pub(crate) struct DuetFiles {
    pub logs: [PathBuf; 2],
    pub sysbench: [PathBuf; 2],
    /// Where each side ran (one sentence, for the report).
    pub placement: PathBuf,
}

impl DuetFiles {
    /// The files of a duet whose report is `stem`.md.
    pub(crate) fn beside(stem: &Path) -> Self {
        let at =
            |side: &str, what: &str| PathBuf::from(format!("{}.{side}.{what}", stem.display()));
        DuetFiles {
            logs: [at("a", "phases.jsonl"), at("b", "phases.jsonl")],
            sysbench: [at("a", "sysbench.txt"), at("b", "sysbench.txt")],
            placement: PathBuf::from(format!("{}.placement.txt", stem.display())),
        }
    }
}

/// Runs `run` as a duet on `servers` (side a, side b): a proxy, a controller and a sysbench
/// load for each, in this process, until both schedules are done. `pins`: each side's CPU
/// list (its server is pinned by the caller; its sysbench and its proxy here).
pub(crate) fn run_duet(
    servers: [&throwaway::Throwaway; 2],
    tables: &sysbench::Tables,
    plan: &Plan,
    run: &ScheduledRun,
    files: &DuetFiles,
    pins: Option<[String; 2]>,
    who: &str,
) -> anyhow::Result<()> {
    let (side_a, side_b) = DuetSide::pair();
    let mut settings = Vec::new();
    for (i, side) in [side_a, side_b].into_iter().enumerate() {
        let _ = std::fs::remove_file(&files.logs[i]);
        let mut s = controller_settings(servers[i], plan, run, &files.logs[i], who)?;
        s.slow_reference = run.scenarios.first().cloned();
        s.identity = format!("psprobe-{who}-{}", side.side.label());
        s.duet = Some(side);
        settings.push(s);
    }
    let nominal = plan.nominal();
    let stop = Arc::new(AtomicBool::new(false));
    let outcomes = std::thread::scope(|scope| {
        let sides: Vec<_> = settings
            .into_iter()
            .enumerate()
            .map(|(i, s)| {
                let side = Side {
                    label: ["a", "b"][i],
                    upstream: servers[i].addr(),
                    cpus: pins.as_ref().map(|p| p[i].clone()),
                    log: files.sysbench[i].clone(),
                };
                let stop = Arc::clone(&stop);
                scope.spawn(move || {
                    let ran = side.run(s, tables, run, nominal, who, &stop);
                    if ran.is_err() {
                        // The partner would wait for this side at its next meeting.
                        stop.store(true, Ordering::SeqCst);
                    }
                    ran
                })
            })
            .collect();
        let interrupted = watch(&sides, &stop, who, nominal);
        let outcomes: Vec<anyhow::Result<()>> = sides
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(anyhow::anyhow!("the side's thread panicked")))
            })
            .collect();
        (interrupted, outcomes)
    });
    let (interrupted, outcomes) = outcomes;
    if interrupted {
        bail!(
            "interrupted: both servers are stopped and their folders removed; nothing is reported"
        );
    }
    for (label, outcome) in ["a", "b"].iter().zip(outcomes) {
        outcome.with_context(|| format!("side {label}"))?;
    }
    Ok(())
}

/// Waits until both sides are done, ticking the progress line; on SIGINT or SIGTERM
/// (`interrupt`) tells them to stop (the caller then stops the servers and removes their
/// folders). Whether it was interrupted.
fn watch(
    sides: &[std::thread::ScopedJoinHandle<'_, anyhow::Result<()>>],
    stop: &AtomicBool,
    who: &str,
    nominal: Duration,
) -> bool {
    let mut progress = Progress::start(who, nominal + Duration::from_secs(15));
    let mut ticks = 0u64;
    let mut interrupted = false;
    while !sides.iter().all(|h| h.is_finished()) {
        if super::interrupt::interrupted() {
            interrupted = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(250)); // the progress line's and a stop's pace
        ticks += 1;
        if ticks % 4 == 0 {
            progress.tick();
        }
    }
    progress.finish();
    if interrupted {
        stop.store(true, Ordering::SeqCst);
    }
    interrupted
}

/// One side of the duet, as its thread runs it.
struct Side {
    label: &'static str,
    upstream: String,
    /// The side's CPUs (`None`: every CPU).
    cpus: Option<String>,
    log: std::path::PathBuf,
}

impl Side {
    /// The side's proxy and controller on a runtime of its own (on the side's CPUs), its
    /// sysbench load, until its schedule ends or `stop` is set.
    fn run(
        self,
        settings: ControllerSettings,
        tables: &sysbench::Tables,
        run: &ScheduledRun,
        nominal: Duration,
        who: &str,
        stop: &AtomicBool,
    ) -> anyhow::Result<()> {
        let runtime =
            crate::runtime::side_runtime(self.cpus.as_deref(), &format!("duet-{}", self.label))
                .with_context(|| format!("side {}", self.label))?;
        runtime.block_on(async {
            let config = local_proxy_config(&self.upstream);
            let mut r = launch(&config, Some(settings)).await?;
            println!(
                "{who}: side {} {} x {} threads through psprobe {} to {}; live page http://{}/",
                self.label, run.workload, run.threads, r.proxy_addr, self.upstream, r.metrics_addr
            );
            // Longer than the schedule; stopped when it is done.
            let load = match sysbench::Load::start_pinned(
                &r.proxy_addr.to_string(),
                run.workload,
                tables,
                run.threads,
                nominal + Duration::from_secs(600),
                &self.log,
                self.cpus.clone(),
            ) {
                Ok(load) => load,
                Err(e) => {
                    r.controller = None;
                    r.shutdown().await;
                    return Err(e);
                }
            };
            let ended = match r.controller.as_mut() {
                Some(controller) => {
                    let mut poll = tokio::time::interval(Duration::from_millis(100));
                    loop {
                        tokio::select! {
                            ended = &mut *controller => break Some(ended),
                            _ = poll.tick() => if stop.load(Ordering::SeqCst) { break None; },
                        }
                    }
                }
                _ => None,
            };
            load.stop();
            r.controller = None;
            r.shutdown().await;
            match ended {
                Some(Ok(Ok(()))) => Ok(()),
                Some(Ok(Err(e))) => bail!("its schedule failed: {e}"),
                Some(Err(e)) => bail!("its schedule did not finish: {e}"),
                // Stopped from outside (the caller says why).
                None => Ok(()),
            }
        })
    }
}
