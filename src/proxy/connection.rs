//! One client connection: connect upstream, relay with observation, account for it.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use tokio::net::TcpStream;
use tokio::sync::watch;

use crate::metrics::ProxyMetrics;
use crate::session::Session;
use crate::stats::{ConnectionRecorder, Observer};

use super::relay::relay;
use super::upstream;
use super::ProxySettings;

/// Keeps the active-connections gauge right however the task ends (return, error, abort).
struct ActiveGuard<'a>(&'a ProxyMetrics);

impl Drop for ActiveGuard<'_> {
    fn drop(&mut self) {
        self.0.connections_active.dec();
    }
}

pub async fn handle(
    mut client: TcpStream,
    peer: SocketAddr,
    settings: Arc<ProxySettings>,
    observer: Arc<Observer>,
    shutdown: watch::Receiver<bool>,
) {
    let metrics = &observer.metrics;
    let live = observer.connections.register(peer);
    metrics.connections_total.inc();
    metrics.connections_active.inc();
    let _active = ActiveGuard(metrics);
    let _ = client.set_nodelay(true);

    let mut server = match upstream::connect(&settings.upstream, settings.connect_timeout).await {
        Ok(server) => server,
        Err(e) => {
            metrics.upstream_connect_errors.inc();
            tracing::warn!(
                "client {peer}: could not connect to upstream {}: {e}",
                settings.upstream
            );
            upstream::refuse_client(&mut client, &settings.upstream, &e).await;
            return;
        }
    };
    let _ = server.set_nodelay(true);
    live.upstream_connected();

    let mut session = Session::new(Instant::now());
    let mut sink = live.track(ConnectionRecorder::new(&observer));
    let result = relay(
        &mut client,
        &mut server,
        &mut session,
        &mut sink,
        metrics,
        shutdown,
    )
    .await;
    session.on_close(&mut sink);
    match result {
        Ok(end) => tracing::debug!("client {peer}: connection ended: {end:?}"),
        Err(e) => tracing::debug!("client {peer}: connection ended: {e}"),
    }
}
