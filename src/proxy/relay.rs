//! Forwards bytes both ways, unchanged, and shows each chunk to the session machine.
//!
//! One task per connection drives both directions with `select!`, so a peer that stops
//! reading never blocks the other direction, and the session needs no lock. Each direction
//! reads only when its buffer is empty, which gives natural backpressure: the proxy never
//! holds more than one buffer of data per direction.

use std::io;
use std::time::Instant;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::watch;

use crate::metrics::{Direction, ProxyMetrics};
use crate::session::{EventSink, Session};

/// Bytes read per direction at a time.
pub const RELAY_BUFFER: usize = 32 * 1024;

/// A buffer holding bytes read from one side and not yet written to the other.
struct Pending {
    buf: Box<[u8]>,
    start: usize,
    end: usize,
}

impl Pending {
    fn new() -> Self {
        Pending {
            buf: vec![0; RELAY_BUFFER].into_boxed_slice(),
            start: 0,
            end: 0,
        }
    }

    fn is_empty(&self) -> bool {
        self.start == self.end
    }

    fn unwritten(&self) -> &[u8] {
        &self.buf[self.start..self.end]
    }
}

/// How a relayed connection ended.
#[derive(Debug, PartialEq, Eq)]
pub enum RelayEnd {
    ClientClosed,
    ServerClosed,
    Shutdown,
}

/// Relays until either side closes or fails, or `shutdown` turns true.
pub async fn relay<S: EventSink>(
    client: &mut TcpStream,
    server: &mut TcpStream,
    session: &mut Session,
    sink: &mut S,
    metrics: &ProxyMetrics,
    mut shutdown: watch::Receiver<bool>,
) -> io::Result<RelayEnd> {
    let (mut client_rd, mut client_wr) = client.split();
    let (mut server_rd, mut server_wr) = server.split();
    let mut up = Pending::new();
    let mut down = Pending::new();
    // Once a side has closed, what it sent is still delivered before the relay ends.
    let mut ended: Option<RelayEnd> = None;

    let end = loop {
        if let Some(end) = ended.take() {
            if up.is_empty() && down.is_empty() {
                break end;
            }
            ended = Some(end);
        }
        let reading = ended.is_none();
        tokio::select! {
            step = pump(&mut client_rd, &mut server_wr, &mut up, reading) => match step? {
                Pumped::Read(0) => ended = Some(RelayEnd::ClientClosed),
                Pumped::Read(n) => {
                    metrics
                        .bytes(metrics.scenarios().current(), Direction::ClientToServer)
                        .inc_by(n as u64);
                    session.on_client_bytes(up.unwritten(), Instant::now(), sink);
                }
                Pumped::Wrote => {}
            },
            step = pump(&mut server_rd, &mut client_wr, &mut down, reading) => match step? {
                Pumped::Read(0) => ended = Some(RelayEnd::ServerClosed),
                Pumped::Read(n) => {
                    metrics
                        .bytes(metrics.scenarios().current(), Direction::ServerToClient)
                        .inc_by(n as u64);
                    session.on_server_bytes(down.unwritten(), Instant::now(), sink);
                }
                Pumped::Wrote => {}
            },
            changed = shutdown.changed() => {
                if changed.is_err() || *shutdown.borrow() {
                    break RelayEnd::Shutdown;
                }
            }
        }
    };
    // Best effort: the peers learn the connection is over even if one of them is gone.
    let _ = server_wr.shutdown().await;
    let _ = client_wr.shutdown().await;
    Ok(end)
}

enum Pumped {
    Read(usize),
    Wrote,
}

/// One step of one direction: write what is pending, or else read more (when allowed).
/// Cancel-safe: a cancelled read or write leaves `pending` as it was.
async fn pump<R, W>(
    rd: &mut R,
    wr: &mut W,
    pending: &mut Pending,
    reading: bool,
) -> io::Result<Pumped>
where
    R: AsyncReadExt + Unpin,
    W: AsyncWriteExt + Unpin,
{
    if pending.is_empty() {
        if !reading {
            return std::future::pending().await;
        }
        let n = rd.read(&mut pending.buf).await?;
        (pending.start, pending.end) = (0, n);
        return Ok(Pumped::Read(n));
    }
    let n = nonzero_write(wr.write(pending.unwritten()).await?)?;
    pending.start += n;
    Ok(Pumped::Wrote)
}

fn nonzero_write(n: usize) -> io::Result<usize> {
    if n == 0 {
        Err(io::Error::new(
            io::ErrorKind::WriteZero,
            "peer accepts no more data",
        ))
    } else {
        Ok(n)
    }
}
