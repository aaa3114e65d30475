//! The connection's socket as hyper sees it, with a bound on writing an answer: from its first
//! byte until all of it is with the kernel, an answer gets the endpoint's timeout, however
//! slowly the client reads (hyper has no write timeout of its own). And each answer's status
//! line says `HTTP/1.1`, as psprobe's answers always have (RFC 9112 section 2.3: a server sends
//! the highest version it conforms to), where hyper would echo an HTTP/1.0 request's version;
//! an HTTP/1.0 client is still answered as one (no chunks, the connection closed after).
//! Reads pass through.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::time::Sleep;

pub(super) struct BoundedIo {
    inner: TcpStream,
    limit: Duration,
    /// Running while an answer is being written (from its first write to its flush).
    answer: Option<Pin<Box<Sleep>>>,
    /// Bytes of an answer's `HTTP/1.0 ` still to be written as `HTTP/1.1 `.
    version_left: usize,
}

/// How hyper begins an answer to an HTTP/1.0 request, and what psprobe sends instead.
const ECHOED: &[u8] = b"HTTP/1.0 ";
const SENT: &[u8] = b"HTTP/1.1 ";

impl BoundedIo {
    pub(super) fn new(inner: TcpStream, limit: Duration) -> Self {
        BoundedIo {
            inner,
            limit,
            answer: None,
            version_left: 0,
        }
    }

    /// Everything written so far is with the kernel (no answer is half written).
    pub(super) fn flushed(&self) -> bool {
        self.answer.is_none()
    }

    pub(super) fn into_inner(self) -> TcpStream {
        self.inner
    }

    /// Waits until the client sends something (or closes).
    pub(super) async fn readable(&self) -> io::Result<()> {
        self.inner.readable().await
    }

    /// At an answer's first write: whether it begins with [`ECHOED`] (hyper writes the head
    /// whole, in one buffer).
    fn begin(&mut self, first: &[u8]) {
        if self.answer.is_none() && first.starts_with(ECHOED) {
            self.version_left = ECHOED.len();
        }
    }

    /// Writes what is left of [`SENT`] in place of the same bytes of the answer: as many of
    /// them as the socket takes.
    fn poll_version(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        let from = SENT.len() - self.version_left;
        let written = ready!(Pin::new(&mut self.inner).poll_write(cx, &SENT[from..]))?;
        self.version_left -= written.min(self.version_left);
        Poll::Ready(Ok(written))
    }

    /// Err once the answer in progress is past its time. Polling the timer registers the
    /// task, so a write that stays blocked is woken to fail.
    fn check(&mut self, cx: &mut Context<'_>) -> io::Result<()> {
        let limit = self.limit;
        let answer = self
            .answer
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
        if answer.as_mut().poll(cx).is_ready() {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("the client did not take its answer within {limit:?}"),
            ));
        }
        Ok(())
    }
}

impl AsyncRead for BoundedIo {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for BoundedIo {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        this.begin(buf);
        this.check(cx)?;
        if this.version_left > 0 {
            return this.poll_version(cx);
        }
        Pin::new(&mut this.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if let Some(first) = bufs.iter().find(|b| !b.is_empty()) {
            this.begin(first);
        }
        this.check(cx)?;
        if this.version_left > 0 {
            return this.poll_version(cx);
        }
        Pin::new(&mut this.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    /// hyper flushes once its buffer is all written: the answer is done.
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.answer.is_some() {
            this.check(cx)?;
        }
        let flushed = Pin::new(&mut this.inner).poll_flush(cx);
        if let Poll::Ready(Ok(())) = flushed {
            this.answer = None;
        }
        flushed
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}
