//! SIGHUP reloads psprobe's certificate: new handshakes use the new one, connections already
//! up keep theirs (nothing is dropped).

use std::sync::Arc;

use crate::metrics::ProxyMetrics;
use crate::observe::Observer;
use crate::tls::TlsRuntime;

/// Reloads on every SIGHUP until the task is aborted.
pub(crate) async fn reload_on_sighup(tls: Arc<TlsRuntime>, observer: Arc<Observer>) {
    use tokio::signal::unix::{signal, SignalKind};
    let Some(acceptor) = &tls.acceptor else {
        return;
    };
    let mut hangup = match signal(SignalKind::hangup()) {
        Ok(s) => s,
        Err(e) => {
            tracing::warn!("cannot watch SIGHUP ({e}); restart psprobe to change its certificate");
            return;
        }
    };
    while hangup.recv().await.is_some() {
        let metrics: &ProxyMetrics = &observer.metrics;
        match acceptor.reload() {
            Ok(()) => {
                metrics.transport.certificate_reloads_ok.inc();
                tracing::info!(
                    "SIGHUP: TLS certificate reloaded; new connections use it, open ones keep theirs"
                );
            }
            Err(e) => {
                metrics.transport.certificate_reloads_failed.inc();
                tracing::error!(
                    "SIGHUP: TLS certificate not reloaded, the previous one stays: {e}"
                );
            }
        }
    }
}
