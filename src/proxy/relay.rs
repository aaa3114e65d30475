//! Forwards bytes both ways, unchanged, and shows each chunk to the session machine.
//!
//! One task per connection drives both directions from a single poll function, so a peer that
//! stops reading never blocks the other direction, and the session needs no lock.
//!
//! Read, observe, forward in one step: a chunk is read into the worker thread's scratch
//! buffer, shown to the session machine (about 0.1 µs), and written to the other side in the
//! same poll, not on a later turn of a loop. Observing first means a chunk that was read is
//! counted even if the write fails. Whatever the other side does not accept at once is kept in
//! that direction's own buffer, and the direction reads nothing more until it is written: the
//! proxy never holds more than one buffer of data per direction, and an idle connection holds
//! none at all (its buffers are allocated the first time a write is incomplete, then kept, so
//! a busy connection does not allocate per chunk).

use std::cell::RefCell;
use std::future::{poll_fn, Future};
use std::io;
use std::pin::{pin, Pin};
use std::task::{ready, Context, Poll};
use std::time::Instant;

use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::tcp::{ReadHalf, WriteHalf};
use tokio::net::TcpStream;
use tokio::sync::watch;

use crate::metrics::{Direction, ProxyMetrics};
use crate::session::{EventSink, Session};

/// Bytes read per direction at a time.
pub const RELAY_BUFFER: usize = 32 * 1024;

thread_local! {
    /// Where every relay on this thread reads into. Only used inside one synchronous poll
    /// step (read, forward, observe), so no two relays ever see it at the same time.
    static SCRATCH: RefCell<Box<[u8]>> = RefCell::new(vec![0; RELAY_BUFFER].into_boxed_slice());
}

/// Bytes read from one side and not yet accepted by the other.
#[derive(Default)]
struct Pending {
    buf: Vec<u8>,
    written: usize,
}

impl Pending {
    fn is_empty(&self) -> bool {
        self.written == self.buf.len()
    }

    fn unwritten(&self) -> &[u8] {
        &self.buf[self.written..]
    }

    fn consume(&mut self, n: usize) {
        self.written += n;
    }

    fn keep(&mut self, rest: &[u8]) {
        if self.buf.capacity() == 0 {
            // Once, for the connection's life: the largest remainder is one scratch buffer.
            self.buf.reserve_exact(RELAY_BUFFER);
        }
        self.buf.clear();
        self.buf.extend_from_slice(rest);
        self.written = 0;
    }
}

/// How a relayed connection ended.
#[derive(Debug, PartialEq, Eq)]
pub enum RelayEnd {
    ClientClosed,
    ServerClosed,
    Shutdown,
}

/// Which way a direction carries bytes.
#[derive(Clone, Copy)]
enum Side {
    Client,
    Server,
}

/// What one direction did in one step.
enum Step {
    Moved,
    Closed,
}

/// The parts of a connection the poll steps need.
struct Relay<'a, S> {
    client_rd: ReadHalf<'a>,
    client_wr: WriteHalf<'a>,
    server_rd: ReadHalf<'a>,
    server_wr: WriteHalf<'a>,
    session: &'a mut Session,
    sink: &'a mut S,
    metrics: &'a ProxyMetrics,
    up: Pending,
    down: Pending,
    /// Once a side has closed, what it sent is still delivered before the relay ends.
    ended: Option<RelayEnd>,
}

/// Relays until either side closes or fails, or `shutdown` turns true.
pub async fn relay<S: EventSink>(
    client: &mut TcpStream,
    server: &mut TcpStream,
    session: &mut Session,
    sink: &mut S,
    metrics: &ProxyMetrics,
    shutdown: watch::Receiver<bool>,
) -> io::Result<RelayEnd> {
    let (client_rd, client_wr) = client.split();
    let (server_rd, server_wr) = server.split();
    let mut relay = Relay {
        client_rd,
        client_wr,
        server_rd,
        server_wr,
        session,
        sink,
        metrics,
        up: Pending::default(),
        down: Pending::default(),
        ended: None,
    };
    // Built once and polled only when the channel has moved: once polled, its waker stays
    // registered, and re-polling it on every wake-up cost ~4% of the relay's instructions.
    let mut moved = shutdown.clone();
    let mut stop = pin!(cut(shutdown));
    let mut armed = false;
    let end = poll_fn(|cx| {
        if !armed || moved.has_changed().unwrap_or(true) {
            armed = true;
            moved.borrow_and_update();
            if stop.as_mut().poll(cx).is_ready() {
                return Poll::Ready(Ok(RelayEnd::Shutdown));
            }
        }
        relay.poll(cx)
    })
    .await;
    // Best effort: the peers learn the connection is over even if one of them is gone.
    let _ = relay.server_wr.shutdown().await;
    let _ = relay.client_wr.shutdown().await;
    end
}

/// Resolves when the proxy cuts open connections (or is gone).
async fn cut(mut shutdown: watch::Receiver<bool>) {
    while !*shutdown.borrow_and_update() {
        if shutdown.changed().await.is_err() {
            return;
        }
    }
}

impl<S: EventSink> Relay<'_, S> {
    /// Moves data both ways until neither can go on without waiting.
    fn poll(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<RelayEnd>> {
        loop {
            let up = self.poll_side(cx, Side::Client)?;
            let down = self.poll_side(cx, Side::Server)?;
            for (step, closed) in [
                (&up, RelayEnd::ClientClosed),
                (&down, RelayEnd::ServerClosed),
            ] {
                if let Poll::Ready(Step::Closed) = step {
                    self.ended.get_or_insert(closed);
                }
            }
            if self.ended.is_some() && self.up.is_empty() && self.down.is_empty() {
                return Poll::Ready(Ok(self.ended.take().unwrap_or(RelayEnd::Shutdown)));
            }
            // Both waiting: their wakers are registered (tokio's cooperative budget also
            // lands here, so a busy stream yields to other connections).
            if up.is_pending() && down.is_pending() {
                return Poll::Pending;
            }
        }
    }

    /// One step of one direction: write what is pending, or else read, observe and forward.
    ///
    /// Reads and writes go through tokio's `poll_read` / `poll_write`, which treat a short
    /// read or write as "drained" and skip the `recv` / `send` that would only say EAGAIN.
    fn poll_side(&mut self, cx: &mut Context<'_>, side: Side) -> Poll<io::Result<Step>> {
        let (from, to, pending) = match side {
            Side::Client => (&mut self.client_rd, &mut self.server_wr, &mut self.up),
            Side::Server => (&mut self.server_rd, &mut self.client_wr, &mut self.down),
        };
        if !pending.is_empty() {
            let n = ready!(Pin::new(to).poll_write(cx, pending.unwritten()))?;
            if n == 0 {
                return Poll::Ready(Err(write_zero()));
            }
            pending.consume(n);
            return Poll::Ready(Ok(Step::Moved));
        }
        if self.ended.is_some() {
            // Nothing more is read once a side has closed; the other direction or the
            // shutdown future wakes the task.
            return Poll::Pending;
        }
        SCRATCH.with_borrow_mut(|scratch| {
            let mut read = ReadBuf::new(scratch);
            ready!(Pin::new(from).poll_read(cx, &mut read))?;
            let now = Instant::now();
            let chunk = read.filled();
            if chunk.is_empty() {
                return Poll::Ready(Ok(Step::Closed));
            }
            // Observed before it is written: what was read counts even when the write fails
            // (a peer gone mid-command), as the commands it carries did reach psprobe.
            observe(self.session, self.sink, self.metrics, side, chunk, now);
            forward(cx, to, chunk, pending)?;
            Poll::Ready(Ok(Step::Moved))
        })
    }
}

/// Writes what the other side accepts now; keeps the rest for when it is writable (the
/// write readiness is registered by `poll_write` when it does not take everything).
fn forward(
    cx: &mut Context<'_>,
    to: &mut WriteHalf<'_>,
    chunk: &[u8],
    pending: &mut Pending,
) -> io::Result<()> {
    match Pin::new(to).poll_write(cx, chunk) {
        Poll::Ready(Ok(0)) => Err(write_zero()),
        Poll::Ready(Ok(n)) => {
            if n < chunk.len() {
                pending.keep(&chunk[n..]);
            }
            Ok(())
        }
        Poll::Pending => {
            pending.keep(chunk);
            Ok(())
        }
        Poll::Ready(Err(e)) => Err(e),
    }
}

fn observe<S: EventSink>(
    session: &mut Session,
    sink: &mut S,
    metrics: &ProxyMetrics,
    side: Side,
    chunk: &[u8],
    now: Instant,
) {
    let scenario = metrics.scenarios().current();
    match side {
        Side::Client => {
            metrics
                .bytes(scenario, Direction::ClientToServer)
                .inc_by(chunk.len() as u64);
            session.on_client_bytes(chunk, now, sink);
        }
        Side::Server => {
            metrics
                .bytes(scenario, Direction::ServerToClient)
                .inc_by(chunk.len() as u64);
            session.on_server_bytes(chunk, now, sink);
        }
    }
}

fn write_zero() -> io::Error {
    io::Error::new(io::ErrorKind::WriteZero, "peer accepts no more data")
}

#[cfg(test)]
#[path = "relay_tests.rs"]
mod tests;
