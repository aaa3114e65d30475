//! The HTTP endpoint of the metrics port, on hyper (HTTP/1.x): `/metrics` (the Prometheus text
//! exposition), `/healthz`, and, when a [`Pages`] is given, the live page `/` and the JSON
//! report `/report.json`. Answers are gzip-compressed when the client asks for it, connections
//! are kept alive for clients that keep them (Prometheus does), and HEAD is answered as GET
//! without the body.
//!
//! Every request is bounded in time and memory, whatever the peer does:
//! - a request head must arrive within [`DEFAULT_REQUEST_TIMEOUT`] (or the configured timeout)
//!   of the connection's start, or of the previous answer on a kept-alive connection; then it
//!   gets `408 Request Timeout` and the connection is closed;
//! - it may be at most [`MAX_REQUEST_HEAD`] bytes and [`MAX_HEADERS`] header lines; past that it
//!   gets `431 Request Header Fields Too Large` (hyper's read buffer never grows further);
//! - making the answer, and writing it, get the same time each;
//! - at most [`MAX_OPEN_REQUESTS`] connections are served at once; more get `503` at once;
//! - a kept-alive connection with no request for [`KEEP_ALIVE_IDLE`] is closed.
//!
//! After an error answer, or an answer that closes, psprobe reads and drops what the client
//! still sends for a moment before closing, so that the client reads the answer instead of a
//! connection reset. Answers are made (rendered, compressed) on tokio's blocking pool, a few at
//! a time, never on the runtime's workers: those carry the relay.

mod bounded_io;
mod connection;
mod gzip;
mod routes;

use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::Semaphore;

use super::ProxyMetrics;
use crate::log_limit::RateLimited;

/// Longest request head accepted, bytes.
pub(crate) const MAX_REQUEST_HEAD: usize = 16 * 1024;
/// Header lines accepted in a request head (hyper's default; Prometheus sends about six).
pub(crate) const MAX_HEADERS: usize = 100;
/// Default time for the request head to arrive (and for the answer to be made, and written).
pub(crate) const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// Connections served at once; Prometheus needs one, probes and browsers a few.
pub(crate) const MAX_OPEN_REQUESTS: usize = 512;
/// A kept-alive connection with no new request for this long is closed: longer than
/// Prometheus's default scrape interval (1 minute), so its connection is reused.
pub(crate) const KEEP_ALIVE_IDLE: Duration = Duration::from_secs(120);
/// Connections being told 503 at once; past that they are closed unanswered.
const MAX_BUSY_ANSWERS: usize = 64;
/// The 503 for a connection over [`MAX_OPEN_REQUESTS`] gets this long in all.
const BUSY_TIMEOUT: Duration = Duration::from_secs(1);

static ACCEPT_FAILURES: RateLimited = RateLimited::new(Duration::from_secs(10));

/// What `/metrics` answers with: the Prometheus text exposition of whatever holds the
/// registry (psprobe's observer, or the metrics alone), so this endpoint needs nothing above
/// the metrics.
pub(crate) trait Exposition: Send + Sync + 'static {
    fn render(&self) -> String;
}

impl Exposition for ProxyMetrics {
    fn render(&self) -> String {
        ProxyMetrics::render(self)
    }
}

/// The live pages (`/` and `/report.json`), made by whoever holds the run's results, so this
/// endpoint needs nothing above the metrics.
pub(crate) trait Pages: Send + Sync + 'static {
    /// Changes whenever the pages do (a segment finished): their entity tag, quotes included.
    fn etag(&self) -> String;
    /// `/`: the run so far as an HTML page.
    fn html(&self) -> Page;
    /// `/report.json`: the JSON report of the run so far, or why there is none.
    fn json(&self) -> Result<Page, NoReport>;
}

/// Why `/report.json` has no report.
pub(crate) enum NoReport {
    /// Not yet (`503`): no estimate so far.
    Yet(String),
    /// Not in this process (`404`): no schedule runs.
    Here(String),
}

/// A live page as made, with the entity tag of what it shows.
pub(crate) struct Page {
    pub etag: String,
    pub body: String,
}

/// What the endpoint serves.
#[derive(Clone)]
pub(crate) struct Content {
    pub metrics: Arc<dyn Exposition>,
    /// `None`: `/` and `/report.json` are not found (no live page).
    pub pages: Option<Arc<dyn Pages>>,
}

/// Serves `content` until the task is dropped or aborted; `timeout` bounds the arrival of a
/// request's head, the making of its answer, and its writing.
pub(crate) async fn serve_with(listener: TcpListener, content: Content, timeout: Duration) {
    let open = Arc::new(Semaphore::new(MAX_OPEN_REQUESTS));
    let busy = Arc::new(Semaphore::new(MAX_BUSY_ANSWERS));
    let routes = routes::Routes::new(content, timeout);
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(e) => {
                if let Some(more) = ACCEPT_FAILURES.check() {
                    tracing::warn!(
                        "metrics endpoint: accept failed: {e} ({more} more since the last such line)"
                    );
                }
                // Out of descriptors and the like: back off instead of spinning.
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let Ok(permit) = Arc::clone(&open).try_acquire_owned() else {
            tracing::debug!("metrics endpoint: {peer} refused, {MAX_OPEN_REQUESTS} requests open");
            // A bounded number of 503s at once; past that a refused client is just closed.
            if let Ok(busy_permit) = Arc::clone(&busy).try_acquire_owned() {
                tokio::spawn(async move {
                    connection::answer_busy(stream, peer, BUSY_TIMEOUT).await;
                    drop(busy_permit);
                });
            }
            continue;
        };
        let routes = routes.for_connection();
        tokio::spawn(async move {
            connection::serve(stream, peer, routes, timeout).await;
            drop(permit);
        });
    }
}
