//! A recorded conversation replayed through the relay, observed as `psprobe proxy` observes:
//! the relay bench's unit of work.
//!
//! Must not: be used by psprobe itself.

use std::cell::RefCell;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};
use std::time::Instant;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::observe::watch::Watch;
use crate::observe::Observer;
use crate::proxy::relay::relay;

/// A recorded conversation, replayed in order: which side sent each chunk (`true`: the
/// client) and its bytes.
pub type Recording<'a> = [(bool, &'a [u8])];

/// Where the replay is: the chunk next, and how much of it was read.
struct Cursor<'a> {
    chunks: &'a Recording<'a>,
    next: usize,
    offset: usize,
}

/// One peer of the relay: reads its own chunks when they are next in the recording, takes
/// every write whole. Both peers share the cursor (one task polls both, so never at once).
struct Peer<'a> {
    cursor: Rc<RefCell<Cursor<'a>>>,
    client: bool,
}

impl AsyncRead for Peer<'_> {
    fn poll_read(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let mut cursor = self.cursor.borrow_mut();
        let Some(&(client, data)) = cursor.chunks.get(cursor.next) else {
            return Poll::Ready(Ok(())); // the end: both peers close
        };
        if client != self.client {
            // The other peer's turn: it has data, so the relay's loop goes on without a wake.
            return Poll::Pending;
        }
        let rest = &data[cursor.offset..];
        let n = rest.len().min(buf.remaining());
        buf.put_slice(&rest[..n]);
        cursor.offset += n;
        if cursor.offset == data.len() {
            cursor.next += 1;
            cursor.offset = 0;
        }
        Poll::Ready(Ok(()))
    }
}

impl AsyncWrite for Peer<'_> {
    fn poll_write(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

/// Relays one recorded connection through the relay, observed as `psprobe proxy` observes
/// (session machine, live connection entry, recorder into `observer`); whether it was observed
/// to the end.
pub async fn relay_recording(observer: &Observer, chunks: &Recording<'_>) -> bool {
    let cursor = Rc::new(RefCell::new(Cursor {
        chunks,
        next: 0,
        offset: 0,
    }));
    let mut client = Peer {
        cursor: Rc::clone(&cursor),
        client: true,
    };
    let mut server = Peer {
        cursor,
        client: false,
    };
    let live = observer
        .connections
        .register(([127, 0, 0, 1], 40000).into());
    let mut watch = Watch::new(observer, &live, Instant::now());
    let (_keep, shutdown) = tokio::sync::watch::channel(false);
    let _ = relay(&mut client, &mut server, &mut watch, shutdown).await;
    watch.close();
    !watch.unobserved()
}
