//! One client connection: connect upstream, run the connection phase (TLS), relay with
//! observation, account for it.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::watch;

use crate::metrics::ProxyMetrics;
use crate::session::{EventSink, Session};
use crate::stats::{ConnectionRecorder, Observer};
use crate::tls::TlsRuntime;

use super::handshake::{self, ClientLeg, Ctx, Established, ServerLeg};
use super::relay::{relay, RelayEnd, Side, Watch};
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
    tls: Arc<TlsRuntime>,
    shutdown: watch::Receiver<bool>,
) {
    let metrics = &observer.metrics;
    let live = observer.connections.register(peer);
    metrics.connections_total.inc();
    metrics.connections_active.inc();
    let _active = ActiveGuard(metrics);
    let _ = client.set_nodelay(true);
    let conn = live.id;
    tracing::trace!(conn, %peer, "client connected; connecting to the upstream");

    let connect_started = Instant::now();
    let server = match upstream::connect(&settings.upstream, settings.connect_timeout).await {
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
    tracing::trace!(
        conn,
        upstream_ms = connect_started.elapsed().as_secs_f64() * 1e3,
        "upstream connected; connection phase begins"
    );

    let mut session = Session::new(Instant::now());
    let mut sink = live.track(ConnectionRecorder::new(&observer));
    let mut watch = Watch::new(&mut session, &mut sink, metrics);
    let ctx = Ctx {
        tls: &tls,
        peer,
        upstream: &settings.upstream,
    };
    let mut cut = shutdown.clone();
    let established = tokio::select! {
        e = handshake::run(client, server, &mut watch, &ctx) => e,
        _ = cut.wait_for(|cut| *cut) => None,
    };
    let result = match established {
        Some(established) => {
            tracing::trace!(conn, "connection phase done; relaying");
            relay_legs(established, &mut watch, shutdown).await
        }
        None => Ok(RelayEnd::ClientClosed),
    };
    watch.count_carriage();
    session.on_close(&mut sink);
    match result {
        Ok(end) => tracing::debug!("client {peer}: connection ended: {end:?}"),
        Err(e) => tracing::debug!("client {peer}: connection ended: {e}"),
    }
}

/// Relays over whatever each leg became; each pairing is its own instance of the relay, so
/// the plain one is exactly the plain TCP relay.
async fn relay_legs<S: EventSink>(
    e: Established,
    watch: &mut Watch<'_, S>,
    shutdown: watch::Receiver<bool>,
) -> std::io::Result<RelayEnd> {
    let Established {
        client,
        server,
        client_rest,
        server_rest,
    } = e;
    match (client, server) {
        (ClientLeg::Plain(mut c), ServerLeg::Plain(mut s)) => {
            start(&mut c, &mut s, &client_rest, &server_rest, watch, shutdown).await
        }
        (ClientLeg::Tls(mut c), ServerLeg::Tls(mut s)) => {
            start(
                &mut *c,
                &mut *s,
                &client_rest,
                &server_rest,
                watch,
                shutdown,
            )
            .await
        }
        (ClientLeg::Tls(mut c), ServerLeg::Plain(mut s)) => {
            start(&mut *c, &mut s, &client_rest, &server_rest, watch, shutdown).await
        }
        (ClientLeg::Plain(mut c), ServerLeg::Tls(mut s)) => {
            start(&mut c, &mut *s, &client_rest, &server_rest, watch, shutdown).await
        }
    }
}

/// Forwards (and observes) what the connection phase read but did not handle, then relays.
async fn start<C, U, S>(
    client: &mut C,
    server: &mut U,
    client_rest: &[u8],
    server_rest: &[u8],
    watch: &mut Watch<'_, S>,
    shutdown: watch::Receiver<bool>,
) -> std::io::Result<RelayEnd>
where
    C: AsyncRead + AsyncWrite + Unpin,
    U: AsyncRead + AsyncWrite + Unpin,
    S: EventSink,
{
    if !server_rest.is_empty() {
        let sent = client.write_all(server_rest).await;
        watch.observe(Side::Server, server_rest, Instant::now());
        sent?;
    }
    if !client_rest.is_empty() {
        let sent = server.write_all(client_rest).await;
        watch.observe(Side::Client, client_rest, Instant::now());
        sent?;
    }
    relay(client, server, watch, shutdown).await
}
