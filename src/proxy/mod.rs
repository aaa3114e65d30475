//! The tokio side: accept clients, connect each to the upstream, relay and observe.

mod connection;
pub mod handshake;
pub mod packet_io;
pub mod relay;
mod reload;
pub mod upstream;

use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::stats::Observer;
use crate::tls::TlsRuntime;

pub use reload::reload_on_sighup;

/// What the proxy needs to run, validated by the config layer.
#[derive(Debug, Clone)]
pub struct ProxySettings {
    /// `host:port` of the MySQL / MariaDB server.
    pub upstream: String,
    pub connect_timeout: Duration,
    /// How long open connections may go on after a shutdown signal before they are cut.
    pub shutdown_grace: Duration,
}

/// Accepts connections until `stop` resolves, then lets open connections finish for up to
/// `shutdown_grace` before closing them.
pub async fn serve(
    listener: TcpListener,
    settings: ProxySettings,
    observer: Arc<Observer>,
    tls: Arc<TlsRuntime>,
    stop: impl std::future::Future<Output = ()>,
) {
    let settings = Arc::new(settings);
    let (cut_tx, cut_rx) = watch::channel(false);
    let mut connections = JoinSet::new();
    tokio::pin!(stop);
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((client, peer)) => {
                    connections.spawn(connection::handle(
                        client,
                        peer,
                        Arc::clone(&settings),
                        Arc::clone(&observer),
                        Arc::clone(&tls),
                        cut_rx.clone(),
                    ));
                }
                Err(e) => {
                    // Out of file descriptors and the like: back off instead of spinning.
                    tracing::warn!("accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
            () = &mut stop => break,
        }
    }
    drop(listener);
    let open = connections.len();
    if open > 0 {
        tracing::info!(
            "shutting down: waiting up to {:?} for {open} open connection(s)",
            settings.shutdown_grace
        );
        let drain = async { while connections.join_next().await.is_some() {} };
        if tokio::time::timeout(settings.shutdown_grace, drain)
            .await
            .is_err()
        {
            tracing::info!("closing {} connection(s) still open", connections.len());
            let _ = cut_tx.send(true);
            while connections.join_next().await.is_some() {}
        }
    }
}
