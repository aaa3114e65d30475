//! One connection of the endpoint: hyper serves its requests (keep-alive, HEAD, the automatic
//! 400 and 431 answers); around it, what hyper does not do: `408` to a request whose head is
//! late, closing a kept-alive connection idle for [`KEEP_ALIVE_IDLE`], and lingering after an
//! answer that closes so that the client reads it rather than a reset.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{self, HeaderValue};
use hyper::server::conn::http1;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::bounded_io::BoundedIo;
use super::routes::{Answer, Routes};
use super::{KEEP_ALIVE_IDLE, MAX_HEADERS, MAX_REQUEST_HEAD};

/// After an answer that closes: how long, and how many bytes, of what the client still sends
/// are read and dropped before the connection is closed.
const LINGER_TIME: Duration = Duration::from_secs(2);
const LINGER_BYTES: usize = 4 << 20;

const REQUEST_TIMEOUT: &[u8] =
    b"HTTP/1.1 408 Request Timeout\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";

fn builder(timeout: Duration) -> http1::Builder {
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        // Runs from the connection's start, and from each answer on: the head's bound.
        .header_read_timeout(timeout)
        .max_buf_size(MAX_REQUEST_HEAD)
        .max_headers(MAX_HEADERS)
        .keep_alive(true);
    builder
}

/// Serves `stream` until it closes, errs, or breaks a bound.
pub(super) async fn serve(stream: TcpStream, peer: SocketAddr, routes: Routes, timeout: Duration) {
    tracing::trace!("metrics endpoint: {peer} connected");
    let mut io = BoundedIo::new(stream, timeout);
    loop {
        let mut conn = builder(timeout).serve_connection(TokioIo::new(io), routes.clone());
        let ended = std::future::poll_fn(|cx| conn.poll_without_shutdown(cx)).await;
        let parts = conn.into_parts();
        io = parts.io.into_inner();
        let served = routes.requests();
        match ended {
            // The client closed, or the last answer closes the connection (HTTP/1.0, a
            // `Connection: close`, a refused method).
            Ok(()) => return linger(io.into_inner(), timeout).await,
            Err(e) if e.is_timeout() => {
                // hyper's header timeout; the bytes it holds are a head begun, unless they
                // are the empty lines a client may send between requests.
                let begun = parts.read_buf.iter().any(|&b| b != b'\r' && b != b'\n');
                if begun || served == 0 {
                    tracing::debug!(
                        "metrics endpoint: {peer} sent no complete request within {timeout:?}"
                    );
                    // Unless an answer is still half written (the client does not read):
                    // then there is no room for another, and the connection just closes.
                    if io.flushed() {
                        refuse(io.into_inner(), timeout).await;
                    }
                    return;
                }
                // A kept-alive connection between requests: it may idle a while longer.
                let rest = KEEP_ALIVE_IDLE.saturating_sub(timeout);
                match tokio::time::timeout(rest, io.readable()).await {
                    Ok(Ok(())) => continue,
                    _ => {
                        tracing::trace!(
                            "metrics endpoint: {peer} idle for {KEEP_ALIVE_IDLE:?}, closed"
                        );
                        return;
                    }
                }
            }
            // A head hyper could not parse: it answered 400 or 431 itself.
            Err(e) if e.is_parse() => {
                tracing::debug!("metrics endpoint: {peer}: {e}");
                return linger(io.into_inner(), timeout).await;
            }
            Err(e) => {
                tracing::debug!("metrics endpoint: {peer}: {e}");
                return;
            }
        }
    }
}

/// `408 Request Timeout`, then a linger.
async fn refuse(mut stream: TcpStream, timeout: Duration) {
    let answer = stream.write_all(REQUEST_TIMEOUT);
    if matches!(tokio::time::timeout(timeout, answer).await, Ok(Ok(()))) {
        linger(stream, timeout).await;
    }
}

/// Ends the answer (FIN), then reads and drops what the client still sends, bounded, so the
/// answer is not lost to a reset; then closes.
async fn linger(mut stream: TcpStream, timeout: Duration) {
    if !matches!(
        tokio::time::timeout(timeout, stream.shutdown()).await,
        Ok(Ok(()))
    ) {
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

/// A connection over the limit: `503` to its request, the whole within `limit`.
pub(super) async fn answer_busy(stream: TcpStream, peer: SocketAddr, limit: Duration) {
    let work = async {
        let io = BoundedIo::new(stream, limit);
        let mut conn = builder(limit).serve_connection(TokioIo::new(io), Busy);
        let ended = std::future::poll_fn(|cx| conn.poll_without_shutdown(cx)).await;
        let io = conn.into_parts().io.into_inner().into_inner();
        if ended.is_ok() {
            linger(io, limit).await;
        }
    };
    if tokio::time::timeout(limit, work).await.is_err() {
        tracing::debug!("metrics endpoint: {peer} took no 503 within {limit:?}");
    }
}

/// Answers every request with `503`, and closes.
#[derive(Clone, Copy)]
struct Busy;

impl hyper::service::Service<Request<Incoming>> for Busy {
    type Response = Answer;
    type Error = Infallible;
    type Future = std::future::Ready<Result<Answer, Infallible>>;

    fn call(&self, _: Request<Incoming>) -> Self::Future {
        let mut answer = Response::new(Full::new(Bytes::from_static(b"busy\n")));
        *answer.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
        let headers = answer.headers_mut();
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
        headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
        std::future::ready(Ok(answer))
    }
}
