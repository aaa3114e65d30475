//! The one place psprobe builds its tokio runtimes and sets up its logging, for every
//! subcommand. (The admin interface's low-priority thread builds its own current-thread runtime
//! on purpose: it must never share a worker with the relay.) A leaf but for `progress`, whose
//! writer puts log lines above a progress bar.

use std::future::Future;
use std::io::IsTerminal;

use anyhow::Context;
use tracing_subscriber::EnvFilter;

/// A runtime with a worker thread per CPU (the proxy's).
pub(crate) fn multi_thread() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

/// A runtime for one side of a duet, built on the calling thread after pinning it to `cpus`
/// (a CPU list; its workers inherit them), with as many workers as the side has CPUs (half of
/// this process's when not pinned). One runtime per side: sharing one, its workers served
/// either side's connections, and one side's relay could fall behind the other's for whole
/// phases (docs/measurement.md, "Duet runs").
pub(crate) fn side_runtime(
    cpus: Option<&str>,
    name: &str,
) -> anyhow::Result<tokio::runtime::Runtime> {
    if let Some(list) = cpus {
        crate::cpus::pin_this_thread(&crate::cpus::parse_list(list)?)?;
    }
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(crate::cpus::side_workers(cpus)?)
        .thread_name(name)
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

/// Runs `f` to completion on a [`multi_thread`] runtime (the demo's schedules).
pub(crate) fn block_on_multi_thread<T>(
    f: impl Future<Output = anyhow::Result<T>>,
) -> anyhow::Result<T> {
    multi_thread()?.block_on(f)
}

/// Runs `f` to completion on this thread (short-lived clients such as `psprobe ps`).
pub(crate) fn block_on_current_thread<T>(
    f: impl Future<Output = anyhow::Result<T>>,
) -> anyhow::Result<T> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?
        .block_on(f)
}

/// Logs to stderr through `filter` (RUST_LOG syntax; a bad one is the user's error to fix).
pub(crate) fn init_logging(filter: &str) -> anyhow::Result<()> {
    let filter = EnvFilter::try_new(filter)
        .with_context(|| format!("log filter {filter:?} is not valid (try info or debug)"))?;
    install(filter);
    Ok(())
}

/// Logs to stderr through RUST_LOG when it is set, else through `default` (`None`: silent).
pub(crate) fn init_logging_from_env(default: Option<&str>) {
    let filter = match (EnvFilter::try_from_default_env(), default) {
        (Ok(filter), _) => filter,
        (Err(_), Some(default)) => EnvFilter::new(default),
        (Err(_), None) => return,
    };
    install(filter);
}

fn install(filter: EnvFilter) {
    // A second initialisation (psprobe demo runs the proxy in-process) keeps the first.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(crate::progress::log_writer)
        .with_ansi(std::io::stderr().is_terminal())
        .try_init();
}
