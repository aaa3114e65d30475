//! The second side of a duet (`psprobe proxy --duet-upstream`, flags in `proxy_duet`) running:
//! its proxy and controller on an async runtime of its own, in a thread of its own.
//!
//! Must not: outlive side a (its stop, or side a gone, stops it and puts its server back).

use std::net::SocketAddr;

use anyhow::{bail, Context};

use super::launch_with_tls;
use crate::controller::error::ControllerError;
use crate::proxy_duet::SideB;
use crate::tls::TlsSettings;

/// Side b running on an async runtime of its own, in a thread of its own: with one runtime
/// for both proxies, its workers served either side's connections, and at 16 and more clients
/// a side one side's relay fell behind the other's for whole phases (docs/measurement.md).
pub(super) struct RunningB {
    pub(super) proxy_addr: SocketAddr,
    pub(super) metrics_addr: SocketAddr,
    stop: tokio::sync::oneshot::Sender<()>,
    thread: std::thread::JoinHandle<Option<Result<(), ControllerError>>>,
}

/// Starts side b's proxy and controller (on side b's CPUs when pinned); returns once it
/// listens, or with why it could not.
pub(super) async fn start(side: SideB, tls: TlsSettings) -> anyhow::Result<RunningB> {
    let (ready_tx, ready_rx) = tokio::sync::oneshot::channel();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let SideB {
        config,
        settings,
        pins,
    } = side;
    let cpus = pins.map(|[_, b]| b);
    let thread = std::thread::Builder::new()
        .name("duet-b".into())
        .spawn(move || {
            let runtime = match crate::runtime::side_runtime(cpus.as_deref(), "duet-b") {
                Ok(r) => r,
                Err(e) => {
                    let _ = ready_tx.send(Err(e.context("side b")));
                    return None;
                }
            };
            runtime.block_on(async move {
                let running = match launch_with_tls(&config, Some(settings), Some(tls)).await {
                    Ok(r) => r,
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                        return None;
                    }
                };
                let _ = ready_tx.send(Ok((running.proxy_addr, running.metrics_addr)));
                // A stop, or side a gone (the sender dropped): put the server back.
                let _ = stop_rx.await;
                running.shutdown().await
            })
        })
        .context("cannot start side b's thread")?;
    match ready_rx.await {
        Ok(Ok((proxy_addr, metrics_addr))) => Ok(RunningB {
            proxy_addr,
            metrics_addr,
            stop: stop_tx,
            thread,
        }),
        Ok(Err(e)) => Err(e),
        Err(_) => bail!("side b's thread ended before it listened"),
    }
}

impl RunningB {
    /// Stops side b as [`crate::app::Running::shutdown`] does side a: its settings put back,
    /// then its proxy; how its controller ended.
    pub(super) async fn shutdown(self) -> Option<Result<(), ControllerError>> {
        let _ = self.stop.send(());
        let thread = self.thread;
        tokio::task::spawn_blocking(move || thread.join().ok().flatten())
            .await
            .ok()
            .flatten()
    }
}
