//! A minimal HTTP/1.x endpoint for `/metrics` and `/healthz`: enough for Prometheus and probes,
//! with no HTTP framework on the dependency tree.

use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::proxy::throttle::{more, Throttle};
use crate::stats::Observer;

/// Out of file descriptors, every scrape would fail to be accepted: one line a second.
static ACCEPT_ERRORS: Throttle = Throttle::new(Duration::from_secs(1));

const MAX_REQUEST_HEAD: usize = 8 * 1024;
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// Serves until the task is dropped or aborted.
pub async fn serve(listener: TcpListener, observer: Arc<Observer>) {
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(e) => {
                if let Some(left_out) = ACCEPT_ERRORS.allow(std::time::Instant::now()) {
                    tracing::warn!("metrics endpoint: accept failed: {e}{}", more(left_out));
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let observer = Arc::clone(&observer);
        tokio::spawn(async move {
            if let Err(e) = tokio::time::timeout(REQUEST_TIMEOUT, answer(stream, &observer)).await {
                tracing::debug!("metrics request from {peer} timed out: {e}");
            }
        });
    }
}

async fn answer(mut stream: TcpStream, observer: &Observer) {
    let mut head = Vec::with_capacity(1024);
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
        if head.len() > MAX_REQUEST_HEAD {
            let _ = respond(
                &mut stream,
                "431 Request Header Fields Too Large",
                "text/plain",
                b"",
            )
            .await;
            return;
        }
    }
    let request_line = head.split(|&b| b == b'\n').next().unwrap_or_default();
    let mut parts = request_line.split(|&b| b == b' ');
    let method = parts.next().unwrap_or_default();
    let path = parts.next().unwrap_or_default();
    let path = path.split(|&b| b == b'?').next().unwrap_or_default();
    let head_only = method == b"HEAD";
    if method != b"GET" && !head_only {
        let _ = respond(
            &mut stream,
            "405 Method Not Allowed",
            "text/plain",
            b"use GET\n",
        )
        .await;
        return;
    }
    let (status, content_type, body) = match path {
        b"/metrics" => (
            "200 OK",
            "text/plain; version=0.0.4; charset=utf-8",
            observer.metrics.render().into_bytes(),
        ),
        b"/healthz" => ("200 OK", "text/plain", b"ok\n".to_vec()),
        _ => (
            "404 Not Found",
            "text/plain",
            b"psprobe serves /metrics and /healthz\n".to_vec(),
        ),
    };
    let body = if head_only { &[][..] } else { &body[..] };
    let _ = respond(&mut stream, status, content_type, body).await;
}

async fn respond(
    stream: &mut TcpStream,
    status: &str,
    content_type: &str,
    body: &[u8],
) -> std::io::Result<()> {
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(body).await?;
    stream.shutdown().await
}
