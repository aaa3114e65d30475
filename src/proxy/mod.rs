//! The tokio side: accept clients, connect each to the upstream, run the connection phase
//! (TLS on either leg), relay. Each connection's bytes are shown to its
//! `observe::watch::Watch`, which counts and parses them and records the commands; the
//! connection phase acts on what the watch's session parsed.
//!
//! Must not: change a byte between the peers, wait on metrics, or panic on anything the network
//! sends; parsing errors end observation of that connection, never its relay. Nor parse what
//! the session parses, or record a command itself (`tests/checks/module_graph.rs` checks).

pub(crate) mod config;
mod connection;
mod greeting;
pub(crate) mod handshake;
pub(crate) mod limits;
pub(crate) mod packet_io;
pub(crate) mod relay;
pub(crate) mod relay_pool;
mod reload;
mod sockets;
pub(crate) mod upstream;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Notify, Semaphore};
use tokio::task::JoinSet;

use crate::log_limit::{more, RateLimited};
use crate::metrics::Refusal;
use crate::observe::Observer;
use crate::tls::{Cause, Leg, TlsRuntime};

use relay_pool::{RelayPool, RelayRuntime};

pub(crate) use config::{MaxConnections, ProxySettings};
pub(crate) use reload::reload_on_sighup;

/// Lines that floods of clients would otherwise repeat: at most one of each kind a second.
pub(crate) struct FloodLogs {
    pub accept_errors: RateLimited,
    pub refusals: RateLimited,
    pub handshake_timeouts: RateLimited,
    /// Failed TLS handshakes, one limit per leg and cause (so each kind still gets its line):
    /// a client that failed them in a loop wrote 7,000 lines in 10 s before.
    pub tls_failures: [[RateLimited; Cause::ALL.len()]; Leg::ALL.len()],
    /// The upstream refused or did not answer a connect: every client of a server that is
    /// down fails the same way.
    pub upstream_errors: RateLimited,
    /// The upstream greeted late or not as a MySQL server: every client meets the same.
    pub no_greeting: RateLimited,
}

impl FloodLogs {
    pub(crate) fn new() -> Self {
        FloodLogs {
            accept_errors: RateLimited::new(FLOOD_LOG_EVERY),
            refusals: RateLimited::new(FLOOD_LOG_EVERY),
            handshake_timeouts: RateLimited::new(FLOOD_LOG_EVERY),
            tls_failures: std::array::from_fn(|_| {
                std::array::from_fn(|_| RateLimited::new(FLOOD_LOG_EVERY))
            }),
            upstream_errors: RateLimited::new(FLOOD_LOG_EVERY),
            no_greeting: RateLimited::new(FLOOD_LOG_EVERY),
        }
    }

    /// The limit of TLS handshake failures on `leg` for `cause`.
    pub(crate) fn tls_failure(&self, leg: Leg, cause: Cause) -> &RateLimited {
        let leg = Leg::ALL.iter().position(|l| *l == leg).unwrap_or(0);
        let cause = Cause::ALL.iter().position(|c| *c == cause).unwrap_or(0);
        &self.tls_failures[leg][cause]
    }
}

const FLOOD_LOG_EVERY: Duration = Duration::from_secs(1);
/// How long accepting pauses after an error such as EMFILE, unless a connection closes first
/// (which frees descriptors): the client stays in the backlog and is accepted once a
/// descriptor is free, without spinning meanwhile.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(500);

/// What every connection of this proxy shares.
pub(crate) struct Shared {
    pub settings: ProxySettings,
    pub observer: Arc<Observer>,
    pub tls: Arc<TlsRuntime>,
    pub logs: FloodLogs,
    /// When the upstream last greeted one of the connections.
    pub greeted: greeting::LastGreeting,
    /// Woken when a connection closes, freeing descriptors that waiting connections need.
    pub fd_freed: Notify,
}

/// Accepts connections until `stop` resolves, then lets open connections finish for up to
/// `shutdown_grace` before closing them.
pub(crate) async fn serve(
    listener: TcpListener,
    settings: ProxySettings,
    observer: Arc<Observer>,
    tls: Arc<TlsRuntime>,
    stop: impl std::future::Future<Output = ()>,
) {
    let max = settings.max_connections.resolve();
    let load = &observer.metrics.load;
    load.connections_limit
        .set(max.map_or(0, |n| i64::try_from(n).unwrap_or(i64::MAX)));
    match max {
        Some(n) => tracing::info!(
            "serving at most {n} client connections at once (--max-connections); more get ERR 1040"
        ),
        None => tracing::info!("no limit on client connections (--max-connections 0)"),
    }
    let permits = max.map(|n| Arc::new(Semaphore::new(n.min(Semaphore::MAX_PERMITS))));
    let pool = start_pool(settings.relay);
    // Where the last connection went: ties between loops are taken in turn from there.
    let mut turn = 0;
    let shared = Arc::new(Shared {
        settings,
        observer,
        tls,
        logs: FloodLogs::new(),
        greeted: greeting::LastGreeting::new(),
        fd_freed: Notify::new(),
    });
    let (cut_tx, cut_rx) = watch::channel(false);
    let mut connections = JoinSet::new();
    tokio::pin!(stop);
    // Set after an accept error that repeats until a descriptor is free.
    let mut paused: Option<tokio::time::Instant> = None;
    loop {
        tokio::select! {
            accepted = listener.accept(), if paused.is_none() => match accepted {
                Ok((client, peer)) => {
                    let permit = match &permits {
                        None => None,
                        Some(permits) => match Arc::clone(permits).try_acquire_owned() {
                            Ok(permit) => Some(permit),
                            Err(_) => {
                                connections.spawn(refuse_over_limit(client, peer, Arc::clone(&shared)));
                                continue;
                            }
                        },
                    };
                    let shared = Arc::clone(&shared);
                    let cut = cut_rx.clone();
                    let connection = move |client| connection::handle(client, peer, shared, permit, cut);
                    match pool.place(&mut turn) {
                        None => {
                            connections.spawn(connection(client));
                        }
                        Some(placed) => spawn_on_loop(&mut connections, &placed, client, peer, connection),
                    }
                }
                Err(e) => {
                    shared.observer.metrics.load.accept_errors.inc();
                    if let Some(left_out) = shared.logs.accept_errors.check() {
                        let hint = if limits::is_out_of_fds(&e) {
                            "; psprobe is out of file descriptors: raise its limit (ulimit -n) or lower --max-connections"
                        } else {
                            ""
                        };
                        tracing::warn!("accept failed: {e}{hint}{}", more(left_out));
                    }
                    // Per-connection errors (the client left before accept) pass at once; the
                    // others (no descriptor left) would repeat until something closes: wait.
                    if !matches!(
                        e.kind(),
                        std::io::ErrorKind::ConnectionAborted | std::io::ErrorKind::ConnectionReset
                    ) {
                        paused = Some(tokio::time::Instant::now() + ACCEPT_BACKOFF);
                    }
                }
            },
            () = tokio::time::sleep_until(paused.unwrap_or_else(tokio::time::Instant::now)), if paused.is_some() => {
                paused = None;
            }
            Some(_) = connections.join_next(), if !connections.is_empty() => {
                // Its descriptors are closed: accept again, and wake connections waiting for one.
                paused = None;
                shared.fd_freed.notify_waiters();
            }
            () = &mut stop => break,
        }
    }
    drop(listener);
    let open = connections.len();
    if open > 0 {
        tracing::info!(
            "shutting down: waiting up to {:?} for {open} open connection(s)",
            shared.settings.shutdown_grace
        );
        let drain = async { while connections.join_next().await.is_some() {} };
        if tokio::time::timeout(shared.settings.shutdown_grace, drain)
            .await
            .is_err()
        {
            tracing::info!("closing {} connection(s) still open", connections.len());
            let _ = cut_tx.send(true);
            while connections.join_next().await.is_some() {}
        }
    }
    drop(pool);
}

/// Runs `connection` on `placed`'s loop, its socket registered with that loop's own reactor
/// (so both legs are polled by that one thread); a socket that cannot move is closed.
fn spawn_on_loop<F>(
    connections: &mut JoinSet<()>,
    placed: &relay_pool::Placed<'_>,
    client: TcpStream,
    peer: SocketAddr,
    connection: impl FnOnce(TcpStream) -> F + Send + 'static,
) where
    F: std::future::Future<Output = ()> + Send + 'static,
{
    let cannot = move |e: std::io::Error| {
        tracing::debug!("client {peer}: cannot hand its connection to a relay thread: {e}");
    };
    match client.into_std() {
        Ok(client) => {
            let on_loop = async move {
                match TcpStream::from_std(client) {
                    Ok(client) => connection(client).await,
                    Err(e) => cannot(e),
                }
            };
            connections.spawn_on(placed.counted(on_loop), placed.handle());
        }
        Err(e) => cannot(e),
    }
}

/// The relay's event loops; on the caller's runtime (said once) if their threads cannot start.
fn start_pool(runtime: RelayRuntime) -> RelayPool {
    match RelayPool::start(runtime) {
        Ok(pool) => {
            match pool.loops() {
                0 => tracing::info!(
                    "relaying on the shared work-stealing runtime (--relay-runtime work-stealing)"
                ),
                n => tracing::info!(
                    "relaying on {n} event loop(s), each connection on one (--relay-runtime loops)"
                ),
            }
            pool
        }
        Err(e) => {
            tracing::warn!(
                "cannot start the relay's threads ({e}); relaying on the shared runtime instead"
            );
            RelayPool::Shared
        }
    }
}

/// `--max-connections` reached: ERR 1040 in place of the greeting, as mysqld does.
async fn refuse_over_limit(mut client: TcpStream, peer: SocketAddr, shared: Arc<Shared>) {
    shared
        .observer
        .metrics
        .load
        .record_refusal(Refusal::MaxConnections);
    if let Some(left_out) = shared.logs.refusals.check() {
        tracing::warn!(
            "client {peer} refused with ERR 1040: --max-connections reached{}",
            more(left_out)
        );
    }
    limits::refuse(&mut client, "Too many connections").await;
}
