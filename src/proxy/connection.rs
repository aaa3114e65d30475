//! One client connection: connect upstream, run the connection phase (TLS), relay with
//! observation, account for it.
//!
//! Must not: record per-command statistics (its [`Watch`] does), or let a connection's end go
//! unaccounted (the active gauge and the live entry are dropped guards).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{watch, OwnedSemaphorePermit};

use crate::log_limit::more;
use crate::metrics::{ProxyMetrics, Refusal};
use crate::observe::connections::LiveConnection;
use crate::observe::watch::{Side, Watch};

use super::handshake::{self, ClientLeg, Ctx, Established, ServerLeg};
use super::relay::{relay, RelayEnd};
use super::{limits, sockets, upstream, Shared};

/// How often a connection waiting for a file descriptor tries again when no connection of
/// this proxy has closed meanwhile (descriptors freed elsewhere: the metrics endpoint, the
/// controller). A closing connection wakes the waiters at once.
const FD_RETRY: Duration = Duration::from_millis(500);

/// Keeps the active-connections gauge right however the task ends (return, error, abort).
struct ActiveGuard<'a>(&'a ProxyMetrics);

impl Drop for ActiveGuard<'_> {
    fn drop(&mut self) {
        self.0.connections_active.dec();
    }
}

pub(super) async fn handle(
    client: TcpStream,
    peer: SocketAddr,
    shared: Arc<Shared>,
    _permit: Option<OwnedSemaphorePermit>,
    shutdown: watch::Receiver<bool>,
) {
    let observer = &shared.observer;
    let metrics = &observer.metrics;
    let live = observer.connections.register(peer);
    metrics.connections_total.inc();
    metrics.connections_active.inc();
    let _active = ActiveGuard(metrics);
    sockets::tune(&client);
    let conn = live.id;
    tracing::trace!(conn, %peer, "client connected; connecting to the upstream");

    let mut watch = Watch::new(observer, &live, Instant::now());
    // Boxed: the connection phase's state (TLS handshakes, packet buffers) is the largest part
    // of this future by far, and lives on the heap only until the relay starts; a connection
    // in its relay (or one of thousands in a connect storm) holds the small rest.
    let phase = Box::pin(connection_phase(client, peer, &shared, &live, &mut watch));
    let limited = async {
        match shared.settings.client_handshake_timeout {
            Some(limit) => match tokio::time::timeout(limit, phase).await {
                Ok(established) => established,
                Err(_) => {
                    handshake_timed_out(peer, limit, &shared);
                    None
                }
            },
            None => phase.await,
        }
    };
    let mut cut = shutdown.clone();
    let established = tokio::select! {
        e = limited => e,
        _ = cut.wait_for(|cut| *cut) => None,
    };
    let result = match established {
        Some(established) => {
            tracing::trace!(conn, "connection phase done; relaying");
            relay_legs(established, &mut watch, shutdown).await
        }
        None => Ok(RelayEnd::ClientClosed),
    };
    watch.close();
    match result {
        Ok(end) => tracing::debug!("client {peer}: connection ended: {end:?}"),
        Err(e) => tracing::debug!("client {peer}: connection ended: {e}"),
    }
}

/// Connects upstream and runs the connection phase as far as psprobe follows it (to the
/// client's handshake response, or through authentication where TLS makes psprobe follow
/// it); `None` when the connection is over.
async fn connection_phase(
    mut client: TcpStream,
    peer: SocketAddr,
    shared: &Shared,
    live: &LiveConnection,
    watch: &mut Watch<'_>,
) -> Option<Established> {
    let settings = &shared.settings;
    let metrics = &shared.observer.metrics;
    let connect_started = Instant::now();
    let connected = tokio::select! {
        connected = connect_upstream(shared) => connected,
        () = gone(&client) => {
            // Before the upstream took the connection (its listen backlog full, in a connect
            // storm): nothing is owed to a client that left, and the server is spared one.
            tracing::debug!("client {peer}: closed while psprobe connected to the upstream");
            return None;
        }
    };
    let server = match connected {
        Ok(server) => server,
        Err(e) if limits::is_out_of_fds(&e) => {
            metrics.load.record_refusal(Refusal::NoFileDescriptors);
            if let Some(left_out) = shared.logs.refusals.check() {
                tracing::warn!(
                    "client {peer} refused with ERR 1040: no file descriptor left for its upstream connection ({e}); raise psprobe's limit (ulimit -n) or lower --max-connections{}",
                    more(left_out)
                );
            }
            limits::refuse(
                &mut client,
                "Too many connections: psprobe has no file descriptor left",
            )
            .await;
            return None;
        }
        Err(e) => {
            metrics.upstream_connect_errors.inc();
            if shared.observer.upstream_restarting() {
                // psprobe's own controller restarts the server now: expected, and said once
                // by the controller.
                tracing::debug!(
                    "client {peer}: could not connect to upstream {} (psprobe restarts it): {e}",
                    settings.upstream
                );
            } else if let Some(left_out) = shared.logs.upstream_errors.check() {
                tracing::warn!(
                    "client {peer}: could not connect to upstream {}: {e}{}",
                    settings.upstream,
                    more(left_out)
                );
            }
            upstream::refuse_client(&mut client, &settings.upstream, &e).await;
            return None;
        }
    };
    sockets::tune(&server);
    if let Some(idle) = settings.upstream_keepalive {
        if let Err(e) = upstream::keep_alive(&server, idle) {
            tracing::debug!("upstream keepalive not set: {e}");
        }
    }
    live.upstream_connected();
    tracing::trace!(
        conn = live.id,
        upstream_ms = connect_started.elapsed().as_secs_f64() * 1e3,
        "upstream connected; connection phase begins"
    );
    let ctx = Ctx {
        tls: &shared.tls,
        metrics,
        logs: &shared.logs,
        peer,
        upstream: &settings.upstream,
        greeted: &shared.greeted,
    };
    handshake::run(client, server, watch, &ctx).await
}

/// Resolves when the client has closed (or reset) its connection; pends forever once it has
/// sent a byte, which the connection phase then reads. Peeks: consumes nothing.
async fn gone(client: &TcpStream) {
    let mut byte = [0u8; 1];
    match client.peek(&mut byte).await {
        Ok(0) | Err(_) => {}
        Ok(_) => std::future::pending().await,
    }
}

/// Connects upstream. Out of file descriptors, it tries again until the connect timeout:
/// one is free as soon as any connection closes, and the client is waiting for its greeting.
/// It waits for a close (or `FD_RETRY`) rather than polling: hundreds of clients can be
/// waiting at once, and polling them all would keep psprobe busy while it can do nothing.
async fn connect_upstream(shared: &Shared) -> std::io::Result<TcpStream> {
    let settings = &shared.settings;
    let give_up = tokio::time::Instant::now() + settings.connect_timeout;
    loop {
        // Registered before the attempt, so a close during it is not missed.
        let freed = shared.fd_freed.notified();
        tokio::pin!(freed);
        freed.as_mut().enable();
        match upstream::connect(&settings.upstream, settings.connect_timeout).await {
            Err(e) if limits::is_out_of_fds(&e) && tokio::time::Instant::now() < give_up => {
                let retry = give_up.min(tokio::time::Instant::now() + FD_RETRY);
                tokio::select! {
                    () = freed => {}
                    () = tokio::time::sleep_until(retry) => {}
                }
            }
            done => return done,
        }
    }
}

fn handshake_timed_out(peer: SocketAddr, limit: Duration, shared: &Shared) {
    shared.observer.metrics.load.handshake_timeouts.inc();
    if let Some(left_out) = shared.logs.handshake_timeouts.check() {
        tracing::warn!(
            "client {peer}: no handshake response within {limit:?} (--client-handshake-timeout); closed{}",
            more(left_out)
        );
    }
}

/// Relays over whatever each leg became; each pairing is its own instance of the relay, so
/// the plain one is exactly the plain TCP relay.
async fn relay_legs(
    e: Established,
    watch: &mut Watch<'_>,
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
async fn start<C, U>(
    client: &mut C,
    server: &mut U,
    client_rest: &[u8],
    server_rest: &[u8],
    watch: &mut Watch<'_>,
    shutdown: watch::Receiver<bool>,
) -> std::io::Result<RelayEnd>
where
    C: AsyncRead + AsyncWrite + Unpin,
    U: AsyncRead + AsyncWrite + Unpin,
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
