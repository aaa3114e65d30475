//! A minimal HTTP/1.x endpoint for `/metrics` and `/healthz`: enough for Prometheus and probes,
//! with no HTTP framework on the dependency tree.
//!
//! Every request is bounded in time and memory, whatever the peer does:
//! - the request head (request line and headers) may take [`DEFAULT_REQUEST_TIMEOUT`] (or the
//!   configured timeout) to arrive; then it gets `408 Request Timeout`;
//! - it may be at most [`MAX_REQUEST_HEAD`] bytes; past that it gets `431 Request Header Fields
//!   Too Large` (its buffer never grows further);
//! - the answer gets the same time to be written;
//! - at most [`MAX_OPEN_REQUESTS`] connections are served at once; more get `503` at once.
//!
//! A head ends at an empty line, `\r\n\r\n` or a bare `\n\n` (RFC 9112 section 2.2 lets a
//! server take a lone LF as a line end). Every answer closes the connection. After an error
//! answer psprobe reads and drops what the client still sends for a moment before closing, so
//! that the client reads the answer instead of a connection reset.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;

use super::ProxyMetrics;
use crate::log_limit::RateLimited;

/// Longest request head accepted, bytes.
pub const MAX_REQUEST_HEAD: usize = 16 * 1024;
/// Default time for the request head to arrive (and for the answer to be written).
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// Connections served at once; Prometheus needs one, probes a few.
pub const MAX_OPEN_REQUESTS: usize = 512;
/// After an error answer: how long, and how many bytes, of the rest of the request are read and
/// dropped before the connection is closed.
const LINGER_TIME: Duration = Duration::from_secs(2);
const LINGER_BYTES: usize = 4 << 20;
/// The 503 for a connection over [`MAX_OPEN_REQUESTS`] gets this long to be written.
const BUSY_WRITE_TIMEOUT: Duration = Duration::from_secs(1);

static ACCEPT_FAILURES: RateLimited = RateLimited::new(Duration::from_secs(10));

/// What `/metrics` answers with: the Prometheus text exposition of whatever holds the
/// registry (psprobe's observer, or the metrics alone), so this endpoint needs nothing above
/// the metrics.
pub trait Exposition: Send + Sync + 'static {
    fn render(&self) -> String;
}

impl Exposition for ProxyMetrics {
    fn render(&self) -> String {
        ProxyMetrics::render(self)
    }
}

/// Serves with [`DEFAULT_REQUEST_TIMEOUT`] until the task is dropped or aborted.
pub async fn serve<E: Exposition>(listener: TcpListener, observer: Arc<E>) {
    serve_with(listener, observer, DEFAULT_REQUEST_TIMEOUT).await
}

/// Serves until the task is dropped or aborted; `timeout` bounds the arrival of a request's
/// head, and the writing of its answer.
pub async fn serve_with<E: Exposition>(listener: TcpListener, observer: Arc<E>, timeout: Duration) {
    let open = Arc::new(Semaphore::new(MAX_OPEN_REQUESTS));
    loop {
        let (mut stream, peer) = match listener.accept().await {
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
            tokio::spawn(async move {
                let answer = respond(&mut stream, Status::Busy, "text/plain", b"busy\n");
                let _ = tokio::time::timeout(BUSY_WRITE_TIMEOUT, answer).await;
            });
            continue;
        };
        let observer = Arc::clone(&observer);
        tokio::spawn(async move {
            handle(stream, peer, observer.as_ref(), timeout).await;
            drop(permit);
        });
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Status {
    Ok,
    BadRequest,
    NotFound,
    MethodNotAllowed,
    RequestTimeout,
    HeadTooLarge,
    Busy,
}

impl Status {
    fn line(self) -> &'static str {
        match self {
            Status::Ok => "200 OK",
            Status::BadRequest => "400 Bad Request",
            Status::NotFound => "404 Not Found",
            Status::MethodNotAllowed => "405 Method Not Allowed",
            Status::RequestTimeout => "408 Request Timeout",
            Status::HeadTooLarge => "431 Request Header Fields Too Large",
            Status::Busy => "503 Service Unavailable",
        }
    }
}

/// Why no complete head was read.
#[derive(Debug, PartialEq, Eq)]
enum HeadError {
    /// The peer closed (or the connection failed) first.
    Closed,
    TooLarge,
}

async fn handle<E: Exposition>(
    mut stream: TcpStream,
    peer: SocketAddr,
    observer: &E,
    timeout: Duration,
) {
    tracing::trace!("metrics endpoint: {peer} connected");
    let head = match tokio::time::timeout(timeout, read_head(&mut stream)).await {
        Ok(Ok(head)) => head,
        Ok(Err(HeadError::Closed)) => return,
        Ok(Err(HeadError::TooLarge)) => {
            tracing::debug!(
                "metrics endpoint: {peer} sent more than {MAX_REQUEST_HEAD} bytes of request head"
            );
            let body = format!("request head over {MAX_REQUEST_HEAD} bytes\n");
            return refuse(&mut stream, Status::HeadTooLarge, body.as_bytes(), timeout).await;
        }
        Err(_) => {
            tracing::debug!("metrics endpoint: {peer} sent no complete request within {timeout:?}");
            return refuse(&mut stream, Status::RequestTimeout, b"", timeout).await;
        }
    };
    let (status, content_type, body) = route(&head, observer);
    tracing::trace!("metrics endpoint: {peer} answered {}", status.line());
    if matches!(status, Status::BadRequest | Status::MethodNotAllowed) {
        // A body may follow what was not understood: drain it so the answer is read.
        return refuse(&mut stream, status, &body, timeout).await;
    }
    let answer = respond(&mut stream, status, content_type, &body);
    if tokio::time::timeout(timeout, answer).await.is_err() {
        tracing::debug!("metrics endpoint: {peer} did not take its answer within {timeout:?}");
    }
}

/// The answer to a complete request head.
fn route<E: Exposition>(head: &[u8], observer: &E) -> (Status, &'static str, Vec<u8>) {
    let start = head.iter().position(|&b| b != b'\r' && b != b'\n');
    let head = &head[start.unwrap_or(head.len())..];
    let first = head.split(|&b| b == b'\n').next().unwrap_or_default();
    let request_line = first.strip_suffix(b"\r").unwrap_or(first);
    let mut parts = request_line.split(|&b| b == b' ').filter(|p| !p.is_empty());
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return (
            Status::BadRequest,
            "text/plain",
            b"bad request line\n".to_vec(),
        );
    };
    if !version.starts_with(b"HTTP/1.") {
        return (
            Status::BadRequest,
            "text/plain",
            b"HTTP/1.x only\n".to_vec(),
        );
    }
    let head_only = method == b"HEAD";
    if method != b"GET" && !head_only {
        return (
            Status::MethodNotAllowed,
            "text/plain",
            b"use GET\n".to_vec(),
        );
    }
    let path = target.split(|&b| b == b'?').next().unwrap_or_default();
    let (status, content_type, body) = match path {
        b"/metrics" => (
            Status::Ok,
            "text/plain; version=0.0.4; charset=utf-8",
            observer.render().into_bytes(),
        ),
        b"/healthz" => (Status::Ok, "text/plain", b"ok\n".to_vec()),
        _ => (
            Status::NotFound,
            "text/plain",
            b"psprobe serves /metrics and /healthz\n".to_vec(),
        ),
    };
    (
        status,
        content_type,
        if head_only { Vec::new() } else { body },
    )
}

/// Reads until the empty line that ends a request head, at most [`MAX_REQUEST_HEAD`] bytes
/// (plus one read).
async fn read_head(stream: &mut TcpStream) -> Result<Vec<u8>, HeadError> {
    let mut head = Vec::with_capacity(1024);
    let mut chunk = [0u8; 4096];
    loop {
        let searched = head.len();
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return Err(HeadError::Closed),
            Ok(n) => head.extend_from_slice(&chunk[..n]),
        }
        if let Some(end) = head_end(&head, searched) {
            head.truncate(end);
            return Ok(head);
        }
        if head.len() > MAX_REQUEST_HEAD {
            return Err(HeadError::TooLarge);
        }
    }
}

/// Where the head in `buf` ends (just past its empty line), looking at line ends from
/// `from` on (earlier bytes were searched already). Empty lines before the request line are
/// skipped, as RFC 9112 asks.
fn head_end(buf: &[u8], from: usize) -> Option<usize> {
    let start = buf.iter().position(|&b| b != b'\r' && b != b'\n')?;
    // An empty line is "\n" then "\r\n" or "\n"; the first "\n" may be 2 bytes before `from`.
    let search_from = from.saturating_sub(2).max(start);
    let mut i = search_from;
    while let Some(offset) = buf[i..].iter().position(|&b| b == b'\n') {
        let lf = i + offset;
        match (buf.get(lf + 1), buf.get(lf + 2)) {
            (Some(b'\n'), _) => return Some(lf + 2),
            (Some(b'\r'), Some(b'\n')) => return Some(lf + 3),
            _ => i = lf + 1,
        }
    }
    None
}

/// Answers an error, then reads and drops what the client still sends (bounded), so the answer
/// is not lost to a reset, and closes.
async fn refuse(stream: &mut TcpStream, status: Status, body: &[u8], timeout: Duration) {
    let answer = respond(stream, status, "text/plain", body);
    if !matches!(tokio::time::timeout(timeout, answer).await, Ok(Ok(()))) {
        return;
    }
    let drain = async {
        let mut chunk = [0u8; 4096];
        let mut dropped = 0usize;
        while dropped < LINGER_BYTES {
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => break,
                Ok(n) => dropped += n,
            }
        }
    };
    let _ = tokio::time::timeout(LINGER_TIME, drain).await;
}

async fn respond(
    stream: &mut TcpStream,
    status: Status,
    content_type: &str,
    body: &[u8],
) -> std::io::Result<()> {
    let head = format!(
        "HTTP/1.1 {}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        status.line(),
        body.len()
    );
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(body).await?;
    stream.shutdown().await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn end(buf: &[u8]) -> Option<usize> {
        head_end(buf, 0)
    }

    #[test]
    fn heads_end_at_an_empty_line_with_or_without_cr() {
        assert_eq!(end(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"), Some(27));
        assert_eq!(end(b"GET / HTTP/1.1\nHost: x\n\n"), Some(24));
        assert_eq!(end(b"GET / HTTP/1.1\r\n\n"), Some(17));
        assert_eq!(end(b"GET / HTTP/1.1\n\r\nrest"), Some(17));
        assert_eq!(end(b"GET / HTTP/1.1\r\nHost: x\r\n"), None);
        assert_eq!(end(b"GET / HTTP/1.1\r\n\r"), None);
        // Empty lines before the request line are not its end.
        assert_eq!(end(b"\r\n\r\n"), None);
        assert_eq!(end(b"\r\nGET / HTTP/1.0\n\n"), Some(18));
    }

    #[test]
    fn the_end_is_found_across_reads() {
        let whole = b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";
        for split in 0..whole.len() {
            let found = head_end(&whole[..split], 0);
            assert_eq!(found, None, "split {split}");
            assert_eq!(head_end(whole, split), Some(whole.len()), "split {split}");
        }
        let bare = b"GET / HTTP/1.0\n\n";
        for split in 0..bare.len() {
            assert_eq!(head_end(bare, split), Some(bare.len()), "split {split}");
        }
    }
}
