//! Forwards bytes both ways, unchanged, and shows each chunk to the connection's
//! [`Watch`] (observe/: counters, the session machine, the recorder).
//!
//! One task per connection drives both directions from a single poll function, so a peer that
//! stops reading never blocks the other direction, and the session needs no lock.
//!
//! Read, forward, observe in one step: a chunk is read into the worker thread's scratch
//! buffer, written to the other side, then shown to the session machine (about 0.1 µs), all in
//! the same poll, not on a later turn of a loop. Writing first keeps parsing off the hop
//! (docs/performance.md: parsing first cost ~12% of queries/s at 1 thread); the chunk is
//! observed whatever the write did (done, partial, refused, failed), so what was read is
//! always counted, even from a peer that closes right after sending. Whatever the other side
//! does not accept at once is kept in that direction's own buffer, and the direction reads
//! nothing more until it is written: the proxy never holds more than one buffer of data per
//! direction, and an idle connection holds none at all (its buffers are allocated the first
//! time a write is incomplete, then kept, so a busy connection does not allocate per chunk).
//!
//! The streams are generic: plain TCP, or TLS (tokio-rustls) on either leg. A TLS writer may
//! keep encrypted bytes after accepting plaintext, so a direction flushes its writer before it
//! reads again (a no-op on TCP).
//!
//! A client's EOF is a half-close until the server says otherwise: some tools send a query and
//! then shut down their sending side (`shutdown(SHUT_WR)`) and read the answer to the end.
//! What the client sent is delivered, then the server's write side is shut down (on TLS,
//! close_notify first), and the server's answer is still relayed until the server closes,
//! which mariadbd does once it has answered and read the EOF. A server's EOF ends the
//! connection (after what it sent is delivered): MySQL servers never half-close, and a client
//! left open by a server that is gone would hold psprobe's descriptors for nothing.
//!
//! Fairness: one connection moves at most [`FAIR_SHARE`] bytes a turn, then its task yields
//! until its worker has looked for ready sockets, so a few connections streaming large results
//! do not make the others' small queries wait behind megabytes of copying.
//!
//! Must not: allocate per chunk, parse or count what it relays (the watch does), or wait on
//! anything but the two peers and the cut.

use std::cell::RefCell;
use std::future::{poll_fn, Future};
use std::io;
use std::pin::{pin, Pin};
use std::task::{ready, Context, Poll};
use std::time::Instant;

use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::sync::watch;

use crate::observe::watch::{Side, Watch};

/// Bytes read per direction at a time.
pub(crate) const RELAY_BUFFER: usize = 32 * 1024;

/// Bytes a connection moves in one turn before it lets the others go first. tokio's own
/// budget (128 socket operations) let a streaming connection copy 2 MiB a turn: with 100
/// clients pulling large results, a small query waited behind 200 MiB of copying on a busy
/// host. 256 KiB is eight reads, enough that a stream spends its time copying, not yielding.
pub(crate) const FAIR_SHARE: usize = 256 * 1024;

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
    /// Bytes went to the writer since its last flush.
    unflushed: bool,
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
pub(crate) enum RelayEnd {
    /// The client closed first (the server's answer to what it sent was still relayed).
    ClientClosed,
    ServerClosed,
    Shutdown,
}

/// What one direction did in one step.
enum Step {
    /// Bytes read or written.
    Moved(usize),
    Closed,
}

/// The parts of a connection the poll steps need.
struct Relay<'a, 'w, C, U> {
    client: &'a mut C,
    server: &'a mut U,
    watch: &'a mut Watch<'w>,
    up: Pending,
    down: Pending,
    /// The client sent its EOF: nothing more is read from it; once what it sent has gone on,
    /// the server's write side is shut down and its answer still relayed.
    client_eof: bool,
    /// The server's write side has been shut down after the client's EOF.
    upstream_shut: bool,
    /// The relay ends once what the other side is owed has been delivered.
    ended: Option<RelayEnd>,
}

/// Relays until the server closes (or the client closes and the server then does), either
/// side fails, or `shutdown` turns true.
pub(crate) async fn relay<C, U>(
    client: &mut C,
    server: &mut U,
    watch: &mut Watch<'_>,
    shutdown: watch::Receiver<bool>,
) -> io::Result<RelayEnd>
where
    C: AsyncRead + AsyncWrite + Unpin,
    U: AsyncRead + AsyncWrite + Unpin,
{
    let mut relay = Relay {
        client,
        server,
        watch,
        up: Pending::default(),
        down: Pending::default(),
        client_eof: false,
        upstream_shut: false,
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
    let _ = relay.server.shutdown().await;
    let _ = relay.client.shutdown().await;
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

/// Lets the worker's other tasks run first: this task is polled again once the worker has
/// run what is queued and looked for ready sockets (tokio defers a yielding task until then).
fn yield_turn<T>(cx: &mut Context<'_>) -> Poll<T> {
    let mut later = pin!(tokio::task::yield_now());
    // The first poll registers the wake-up and is always pending.
    let _ = later.as_mut().poll(cx);
    Poll::Pending
}

impl<C, U> Relay<'_, '_, C, U>
where
    C: AsyncRead + AsyncWrite + Unpin,
    U: AsyncRead + AsyncWrite + Unpin,
{
    /// Moves data both ways until neither can go on without waiting, or this turn's share is
    /// used.
    fn poll(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<RelayEnd>> {
        let mut moved = 0;
        let mut decoded = false;
        loop {
            if self.watch.behind() {
                // A chunk relayed earlier still decodes (a large compressed frame): one
                // bounded step a turn, so other connections' bytes do not wait for it.
                if decoded {
                    return yield_turn(cx);
                }
                self.watch.catch_up();
                decoded = true;
            }
            // While it is behind, this connection reads nothing more (its own bytes wait for
            // their observation, bounded by one buffer per direction); what waits is written.
            let hold = self.watch.behind();
            let up = self.poll_up(cx, hold)?;
            let down = self.poll_side(cx, Side::Server, hold || self.ended.is_some())?;
            if let Poll::Ready(Step::Closed) = up {
                self.client_eof = true;
            }
            if let Poll::Ready(Step::Closed) = down {
                let first = if self.client_eof {
                    RelayEnd::ClientClosed
                } else {
                    RelayEnd::ServerClosed
                };
                self.ended.get_or_insert(first);
            }
            if self.ended.is_some() && self.up.is_empty() && self.down.is_empty() {
                return Poll::Ready(Ok(self.ended.take().unwrap_or(RelayEnd::Shutdown)));
            }
            if up.is_pending() && down.is_pending() {
                // Both waiting: their wakers are registered (tokio's cooperative budget also
                // lands here). Still behind: come back for the next step after the others.
                if self.watch.behind() {
                    return yield_turn(cx);
                }
                return Poll::Pending;
            }
            for step in [&up, &down] {
                if let Poll::Ready(Step::Moved(n)) = step {
                    moved += n;
                }
            }
            if moved >= FAIR_SHARE {
                return yield_turn(cx);
            }
        }
    }

    /// The client-to-server direction; after the client's EOF, what it sent is delivered and
    /// the half-close carried to the server.
    fn poll_up(&mut self, cx: &mut Context<'_>, hold: bool) -> Poll<io::Result<Step>> {
        if !self.client_eof {
            return self.poll_side(cx, Side::Client, hold || self.ended.is_some());
        }
        if let Poll::Ready(step) = self.poll_side(cx, Side::Client, true) {
            return Poll::Ready(step);
        }
        if self.up.is_empty() && !self.up.unflushed && !self.upstream_shut {
            // Best effort: a server already gone shows in the other direction.
            let _ = ready!(Pin::new(&mut *self.server).poll_shutdown(cx));
            self.upstream_shut = true;
        }
        // Nothing more comes from the client: the other direction (or the cut) wakes the task.
        Poll::Pending
    }

    /// One step of one direction: write what is pending, or else (unless `hold`) read,
    /// forward and observe.
    fn poll_side(
        &mut self,
        cx: &mut Context<'_>,
        side: Side,
        hold: bool,
    ) -> Poll<io::Result<Step>> {
        match side {
            Side::Client => step(
                cx,
                side,
                &mut *self.client,
                &mut *self.server,
                &mut self.up,
                hold,
                self.watch,
            ),
            Side::Server => step(
                cx,
                side,
                &mut *self.server,
                &mut *self.client,
                &mut self.down,
                hold,
                self.watch,
            ),
        }
    }
}

/// One step of one direction.
///
/// Reads and writes go through tokio's `poll_read` / `poll_write`, which treat a short
/// read or write as "drained" and skip the `recv` / `send` that would only say EAGAIN.
fn step<R, W>(
    cx: &mut Context<'_>,
    side: Side,
    from: &mut R,
    to: &mut W,
    pending: &mut Pending,
    hold: bool,
    watch: &mut Watch<'_>,
) -> Poll<io::Result<Step>>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    if !pending.is_empty() {
        let n = ready!(Pin::new(&mut *to).poll_write(cx, pending.unwritten()))?;
        if n == 0 {
            return Poll::Ready(Err(write_zero()));
        }
        pending.consume(n);
        return Poll::Ready(Ok(Step::Moved(n)));
    }
    if pending.unflushed {
        // TLS: encrypted bytes the writer kept go out before more is read.
        ready!(Pin::new(&mut *to).poll_flush(cx))?;
        pending.unflushed = false;
    }
    if hold {
        // Nothing is read now; the other direction, the shutdown future or the relay's own
        // yield wakes the task.
        return Poll::Pending;
    }
    SCRATCH.with_borrow_mut(|scratch| {
        let mut read = ReadBuf::new(scratch);
        match ready!(Pin::new(from).poll_read(cx, &mut read)) {
            Ok(()) => {}
            // A TLS peer that closes without close_notify (most MySQL clients after
            // COM_QUIT): the end of the stream, like a TCP close.
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                return Poll::Ready(Ok(Step::Closed));
            }
            Err(e) => return Poll::Ready(Err(e)),
        }
        let now = Instant::now();
        let chunk = read.filled();
        if chunk.is_empty() {
            return Poll::Ready(Ok(Step::Closed));
        }
        // Written first, observed whatever the write did: a failed write still leaves the
        // chunk counted (the commands it carries did reach psprobe).
        let sent = forward(cx, to, chunk, pending);
        watch.observe(side, chunk, now);
        sent?;
        Poll::Ready(Ok(Step::Moved(chunk.len())))
    })
}

/// Writes what the other side accepts now; keeps the rest for when it is writable (the
/// write readiness is registered by `poll_write` when it does not take everything).
fn forward<W: AsyncWrite + Unpin>(
    cx: &mut Context<'_>,
    to: &mut W,
    chunk: &[u8],
    pending: &mut Pending,
) -> io::Result<()> {
    pending.unflushed = true;
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

fn write_zero() -> io::Error {
    io::Error::new(io::ErrorKind::WriteZero, "peer accepts no more data")
}

#[cfg(test)]
#[path = "relay_tests.rs"]
mod tests;
