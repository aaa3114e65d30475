//! Wiring of the `psprobe proxy` command: config, logging, listeners, signals.

use std::io::Write;
use std::sync::Arc;

use anyhow::Context;
use tokio::net::TcpListener;

use crate::config::{ProxyArgs, ProxyConfig};
use tokio::sync::watch;

use crate::controller::{runner, ControllerError, ControllerSettings};
use crate::digest::FingerprintOptions;
use crate::metrics::{http, DigestCollector, ProxyMetrics};
use crate::proxy;
use crate::stats::{DigestStore, Observer, Scenarios};

pub fn run_proxy(args: &ProxyArgs) -> anyhow::Result<()> {
    let config = ProxyConfig::from_args(args)?;
    let controller = args
        .schedule
        .settings(args.config.as_deref(), &config.settings.upstream)?;
    init_logging(&config.log)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async move {
        // Credentials, privileges, performance_schema ON, and a crashed run's settings restored:
        // all before the first client is accepted.
        let controller = match controller {
            Some(settings) => {
                let started = runner::start(&settings).await?;
                Some((settings, started))
            }
            None => None,
        };
        serve(config, controller).await
    })
}

fn init_logging(filter: &str) -> anyhow::Result<()> {
    let filter = tracing_subscriber::EnvFilter::try_new(filter)
        .with_context(|| format!("log filter {filter:?} is not valid (try info or debug)"))?;
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
    Ok(())
}

async fn serve(
    config: ProxyConfig,
    controller: Option<(ControllerSettings, runner::Started)>,
) -> anyhow::Result<()> {
    let listener = TcpListener::bind(config.listen).await.with_context(|| {
        format!(
            "cannot listen on {} (is the port in use? pick another with --listen)",
            config.listen
        )
    })?;
    let metrics_listener = TcpListener::bind(config.metrics).await.with_context(|| {
        format!(
            "cannot serve metrics on {} (pick another port with --metrics)",
            config.metrics
        )
    })?;
    let proxy_addr = listener.local_addr().context("listener has no address")?;
    let metrics_addr = metrics_listener
        .local_addr()
        .context("metrics listener has no address")?;
    let observer = Arc::new(observer(&config).context("cannot register metrics")?);

    // One machine-readable line on stdout (scripts and tests read the bound ports from it).
    let mut stdout = std::io::stdout();
    writeln!(
        stdout,
        "psprobe listening proxy={proxy_addr} metrics={metrics_addr}"
    )
    .and_then(|()| stdout.flush())
    .context("cannot write to stdout")?;
    tracing::info!(
        "forwarding {proxy_addr} -> {}; metrics at http://{metrics_addr}/metrics",
        config.settings.upstream
    );

    let metrics_task = tokio::spawn(http::serve(metrics_listener, Arc::clone(&observer)));
    let (stop_controller, stop_rx) = watch::channel(false);
    let mut controller_task = controller.map(|(settings, started)| {
        let observer = Arc::clone(&observer);
        tokio::spawn(async move {
            report_controller(runner::run(settings, started, observer, stop_rx).await);
        })
    });
    let stop = async {
        shutdown_signal().await;
        // Settings are restored before the proxy stops.
        let _ = stop_controller.send(true);
        if let Some(task) = controller_task.take() {
            let _ = task.await;
        }
    };
    proxy::serve(listener, config.settings, observer, stop).await;
    metrics_task.abort();
    tracing::info!("stopped");
    Ok(())
}

fn observer(config: &ProxyConfig) -> prometheus::Result<Observer> {
    let scenarios = Arc::new(Scenarios::default());
    let digests = Arc::new(DigestStore::new(config.max_digests));
    let metrics = ProxyMetrics::new(Arc::clone(&scenarios))?;
    let collector = DigestCollector::new(
        Arc::clone(&digests),
        Arc::clone(&scenarios),
        config.metrics_top_digests,
    )?;
    metrics.registry().register(Box::new(collector))?;
    Ok(Observer {
        metrics,
        digests,
        scenarios,
        fingerprint: FingerprintOptions {
            fold_identifier_digits: config.digest_fold_digits,
            ..FingerprintOptions::default()
        },
    })
}

fn report_controller(result: Result<(), ControllerError>) {
    match result {
        Ok(()) => tracing::info!("controller finished; performance_schema settings restored"),
        // Fail-open: the proxy keeps serving, commands are labelled `none` from now on.
        Err(e) => tracing::error!("controller stopped: {e}"),
    }
}

/// Resolves on SIGINT or SIGTERM.
async fn shutdown_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = match signal(SignalKind::terminate()) {
        Ok(s) => s,
        Err(e) => {
            tracing::warn!("cannot watch SIGTERM ({e}); stop psprobe with SIGINT");
            let _ = tokio::signal::ctrl_c().await;
            return;
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => tracing::info!("SIGINT received"),
        _ = term.recv() => tracing::info!("SIGTERM received"),
    }
}
