//! Wiring of the `psprobe proxy` command: config, logging, listeners, signals (what each one
//! does is [`crate::signals`]'s).
//!
//! Must not: hold measurement or protocol logic; it connects the modules that do.

mod duet_side;

use std::io::Write;
use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Context;
use tokio::net::TcpListener;
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;

use crate::admin::{self, AdminAuth, ObserverData};
use crate::config::{ProxyArgs, ProxyConfig};
use crate::live::{LivePage, LiveResults};

use crate::controller::error::ControllerError;
use crate::controller::schedule::runner;
use crate::controller::schedule::settings::ControllerSettings;
use crate::metrics::http::{self, Content};
use crate::observe::{ControllerHandle, Observer};
use crate::proxy;
use crate::tls::{TlsRuntime, TlsSettings};

pub(crate) fn run_proxy(args: &ProxyArgs) -> anyhow::Result<()> {
    let config = ProxyConfig::from_args(args)?;
    let tls = crate::config::tls_settings(args)?;
    let controller = args
        .schedule
        .settings(args.config.as_deref(), &config.settings.upstream)?;
    crate::runtime::init_logging(&config.log)?;
    let (controller, side_b) =
        crate::proxy_duet::split(&args.duet, &args.schedule, &config, controller)?;
    if let Some(fds) = proxy::limits::raise_fd_limit() {
        tracing::debug!("file-descriptor limit: {fds}");
    }
    let warnings = crate::secrets::argv_warnings(std::env::args_os())
        .into_iter()
        .chain(crate::secrets::exposed_secret_files(
            args.admin_password_file.as_deref(),
            args.schedule.controller_dsn_file.as_deref(),
            args.config.as_deref(),
        ))
        .chain(crate::secrets::secret_file_notes(&[
            (args.admin_password_file.as_deref(), "admin password"),
            (
                args.schedule.controller_dsn_file.as_deref(),
                "controller DSN",
            ),
        ]));
    for warning in warnings {
        tracing::warn!("{warning}");
    }
    // A duet's sides each get workers of their own (side a this runtime's, on its CPUs when
    // pinned); otherwise one runtime with a worker per CPU.
    let runtime = match &side_b {
        Some(b) => crate::runtime::side_runtime(b.pins.as_ref().map(|p| p[0].as_str()), "duet-a")
            .context("side a")?,
        None => crate::runtime::multi_thread()?,
    };
    runtime.block_on(async move {
        // Before anything starts: a shutdown signal during the start waits for it to finish.
        let signals = crate::signals::Signals::install();
        let running = launch_with_tls(&config, controller, Some(tls.clone())).await?;
        let running_b = match side_b {
            Some(b) => {
                let upstream = b.config.settings.upstream.clone();
                match duet_side::start(b, tls).await {
                    Ok(r) => Some(r),
                    Err(e) => {
                        let a = running.shutdown().await;
                        return Err(e.context(format!(
                            "side b of the duet ({upstream}) did not start; side a stopped{}",
                            match a {
                                Some(Ok(())) => ", its server's settings as found",
                                _ => "",
                            }
                        )));
                    }
                }
            }
            None => None,
        };
        signals.set_reloads_certificate(running.reloads_certificate());
        // One machine-readable line on stdout (scripts and tests read the bound ports from it).
        let mut stdout = std::io::stdout();
        let admin = running
            .admin_addr
            .map(|a| format!(" admin={a}"))
            .unwrap_or_default();
        let duet = running_b
            .as_ref()
            .map(|b| {
                format!(
                    " duet_proxy={} duet_metrics={}",
                    b.proxy_addr, b.metrics_addr
                )
            })
            .unwrap_or_default();
        writeln!(
            stdout,
            "psprobe listening proxy={} metrics={}{admin}{duet}",
            running.proxy_addr, running.metrics_addr
        )
        .and_then(|()| stdout.flush())
        .context("cannot write to stdout")?;
        signals.shutdown().await;
        let Some(running_b) = running_b else {
            return stopped(running.shutdown().await, "");
        };
        // Both sides put their servers back at once (each within --stop-timeout).
        let (a, b) = tokio::join!(running.shutdown(), running_b.shutdown());
        let b = stopped(b, "side b: ");
        if let Err(e) = &b {
            tracing::error!("{e:#}");
        }
        stopped(a, "side a: ").and(b)
    })
}

/// How a stop ended, as its last line says (`side`: "side a: " in a duet, else empty): an
/// error when it left a server changed.
fn stopped(ended: Option<Result<(), ControllerError>>, side: &str) -> anyhow::Result<()> {
    match ended {
        Some(Err(e)) if e.leaves_server_changed() => {
            let e = anyhow::Error::new(e);
            Err(match side.strip_suffix(": ") {
                Some(label) => e.context(label.to_string()),
                None => e,
            })
        }
        Some(Ok(())) => {
            tracing::info!("{side}stopped; the server's performance_schema settings are as found");
            Ok(())
        }
        _ => {
            tracing::info!("{side}stopped");
            Ok(())
        }
    }
}

/// A proxy (and its controller, when scheduled) running in this process.
pub(crate) struct Running {
    pub proxy_addr: SocketAddr,
    pub metrics_addr: SocketAddr,
    /// Where the admin interface listens, when it is on.
    pub admin_addr: Option<SocketAddr>,
    /// Finishes when the controller does (schedule complete, stopped, or failed), with how it
    /// ended (already logged).
    pub controller: Option<JoinHandle<Result<(), ControllerError>>>,
    stop_controller: watch::Sender<bool>,
    stop_proxy: oneshot::Sender<()>,
    proxy: JoinHandle<()>,
    metrics: JoinHandle<()>,
    admin: Option<admin::AdminHandle>,
    tls_reload: Option<JoinHandle<()>>,
}

impl Running {
    /// The proxy terminates TLS and reloads its certificate on SIGHUP.
    pub(crate) fn reloads_certificate(&self) -> bool {
        self.tls_reload.is_some()
    }

    /// Restores performance_schema settings (controller), then stops the proxy gracefully.
    /// Returns how the controller ended (`None`: none ran, or it was taken by the caller).
    pub(crate) async fn shutdown(mut self) -> Option<Result<(), ControllerError>> {
        let _ = self.stop_controller.send(true);
        let controller = match self.controller.take() {
            Some(task) => task.await.ok(),
            None => None,
        };
        let _ = self.stop_proxy.send(());
        let _ = self.proxy.await;
        self.metrics.abort();
        if let Some(admin) = self.admin {
            let _ = tokio::task::spawn_blocking(move || admin.stop()).await;
        }
        if let Some(reload) = self.tls_reload {
            reload.abort();
        }
        controller
    }
}

/// [`launch_with_tls`] without TLS termination: clients that ask for TLS are forwarded
/// verbatim (psprobe in-process in front of a throwaway server needs no certificate).
pub(crate) async fn launch(
    config: &ProxyConfig,
    controller: Option<ControllerSettings>,
) -> anyhow::Result<Running> {
    launch_with_tls(config, controller, None).await
}

/// Binds the listeners, loads (or makes) the TLS certificate, then (before the first client
/// is accepted) connects the controller, checks credentials, privileges and
/// performance_schema, and restores a crashed run's settings; then serves.
pub(crate) async fn launch_with_tls(
    config: &ProxyConfig,
    controller: Option<ControllerSettings>,
    tls: Option<TlsSettings>,
) -> anyhow::Result<Running> {
    let listener = proxy::limits::bind_listener(config.listen, config.listen_backlog)
        .with_context(|| {
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
    let admin_listener = match &config.admin {
        Some(admin) => Some(TcpListener::bind(admin.listen).await.with_context(|| {
            format!(
                "cannot serve the admin interface on {} (pick another port with --admin)",
                admin.listen
            )
        })?),
        None => None,
    };
    let note = tls.as_ref().and_then(|t| t.note.clone());
    let tls = Arc::new(match tls {
        Some(settings) => TlsRuntime::load(settings, &config.settings.upstream, proxy_addr.ip())
            .context("cannot set up TLS")?,
        None => TlsRuntime::passthrough(&config.settings.upstream),
    });
    let observer = Arc::new(observer(config).context("cannot register metrics")?);
    let live = Arc::new(
        LiveResults::new(observer.metrics.registry(), None)
            .context("cannot register the overhead gauges")?,
    );
    let scheduled = controller.is_some();
    let controller = match controller {
        Some(mut settings) => {
            let live = Arc::clone(&live);
            settings.on_phase = Some(Arc::new(move |records| live.on_segment(records)));
            let started = runner::start(&mut settings).await?;
            Some((settings, started))
        }
        None => None,
    };
    let admin_addr = match &admin_listener {
        Some(l) => Some(l.local_addr().context("admin listener has no address")?),
        None => None,
    };
    let admin = match (admin_listener, &config.admin) {
        (Some(listener), Some(admin)) => {
            if let Some(addr) = admin_addr {
                tracing::info!("admin interface on {addr}");
            }
            let data = ObserverData::new(
                Arc::clone(&observer),
                Arc::clone(&live.phases),
                Arc::clone(&live.overhead),
            )
            .with_attribution(Arc::clone(&live.attribution));
            // On a thread of its own at low priority: admin queries never take a relay worker.
            let listener = listener
                .into_std()
                .context("cannot hand the admin listener to its thread")?;
            Some(
                admin::spawn_dedicated(
                    listener,
                    Arc::new(data),
                    AdminAuth::new(&admin.user, &admin.password),
                    admin::Limits {
                        max_query_bytes: admin.max_query_bytes,
                        ..admin::Limits::default()
                    },
                )
                .context("cannot start the admin interface's thread")?,
            )
        }
        _ => None,
    };
    // Said once everything started (a refused start prints one line: its error).
    if let Some(note) = note {
        tracing::warn!("TLS: {note}");
    }
    if let Some(ca) = tls.acceptor.as_ref().and_then(|a| a.ca_path.as_ref()) {
        tracing::info!(
            "TLS: psprobe's certificate is signed by its own CA; clients that verify the server pass --ssl-ca={}",
            ca.display()
        );
    }
    tracing::info!(
        "forwarding {proxy_addr} -> {}; metrics at http://{metrics_addr}/metrics",
        config.settings.upstream
    );

    let content = Content {
        metrics: Arc::clone(&observer) as Arc<dyn http::Exposition>,
        pages: config
            .live_page
            .then(|| Arc::new(LivePage::new(Arc::clone(&live), scheduled)) as Arc<dyn http::Pages>),
    };
    let metrics = tokio::spawn(http::serve_with(
        metrics_listener,
        content,
        config.metrics_timeout,
    ));
    let (stop_controller, stop_rx) = watch::channel(false);
    let controller = controller.map(|(settings, started)| {
        let handle = ControllerHandle::new(Arc::clone(&observer));
        tokio::spawn(async move {
            let result = runner::run(settings, started, handle, stop_rx).await;
            report_controller(&result);
            result
        })
    });
    let (stop_proxy, stopped) = oneshot::channel::<()>();
    let tls_reload = tls.acceptor.is_some().then(|| {
        tokio::spawn(proxy::reload_on_sighup(
            Arc::clone(&tls),
            Arc::clone(&observer),
        ))
    });
    let proxy = tokio::spawn(proxy::serve(
        listener,
        config.settings.clone(),
        Arc::clone(&observer),
        tls,
        async {
            let _ = stopped.await;
        },
    ));
    Ok(Running {
        proxy_addr,
        metrics_addr,
        admin_addr,
        controller,
        stop_controller,
        stop_proxy,
        proxy,
        metrics,
        admin,
        tls_reload,
    })
}

/// The observer `config` describes (observe/config.rs builds it).
pub(crate) fn observer(config: &ProxyConfig) -> prometheus::Result<Observer> {
    config.observe().build(config.metrics_top_digests)
}

fn report_controller(result: &Result<(), ControllerError>) {
    match result {
        Ok(()) => tracing::info!("controller finished"),
        // Fail-open: the proxy keeps serving, commands are labelled `none` from now on.
        Err(e @ ControllerError::Connection { .. }) => tracing::error!(
            "controller stopped: {e}. The server went away or restarted mid-schedule: the segment \
             in progress is not written (what came before is), the restore's outcome is the line \
             above, and the proxy serves on; start psprobe again to measure again"
        ),
        Err(e) => tracing::error!("controller stopped: {e}"),
    }
}
