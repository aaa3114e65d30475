//! Byte-level fixes around opensrv-mysql 0.7, which cannot be configured for these:
//!
//! - [`DenialWriter`]: a refused login gets opensrv's ERR 1698 "Authenticate failed, ...";
//!   clients and scripts expect MySQL's 1045 "Access denied for user ...". The writer swallows
//!   opensrv's packet and sends ours under the same sequence number.
//! - [`CommandReader`], on the client's packets before opensrv reads them:
//!   - COM_FIELD_LIST (which the `mariadb` CLI sends for every table after `USE db`, to
//!     complete column names) is answered by opensrv with an OK packet the client reads as a
//!     column definition, and then waits forever. It becomes a COM_QUERY of
//!     [`FIELD_LIST_MARKER`], which the shim answers with an ERR (the CLI then skips column
//!     completion for that table).
//!   - A command longer than the query size cap is dropped as it streams in (never buffered
//!     whole) and becomes a COM_QUERY of [`TOO_LARGE_MARKER`] and its length, answered with an
//!     ERR; the connection goes on.
//!   - A COM_QUERY that is not UTF-8 (opensrv would close the connection without a word)
//!     becomes [`NOT_UTF8_MARKER`], answered with an ERR.

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{ready, Context, Poll};

use psprobe_core::protocol::{encode_packet, read_le24};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// Query text COM_FIELD_LIST is rewritten to (a NUL first, so no client types it by accident).
pub(crate) const FIELD_LIST_MARKER: &str = "\0psprobe:COM_FIELD_LIST";
/// Query text a command over the size cap is replaced with, followed by its length in bytes.
pub(crate) const TOO_LARGE_MARKER: &str = "\0psprobe:TOO_LARGE:";
/// Query text a COM_QUERY that is not UTF-8 is replaced with.
pub(crate) const NOT_UTF8_MARKER: &str = "\0psprobe:NOT_UTF8";

const COM_QUERY: u8 = 0x03;
const COM_FIELD_LIST: u8 = 0x04;
const HEADER: usize = 4;
const MAX_PAYLOAD: usize = 0xFF_FFFF;

/// The ERR packet payload to send instead of opensrv-mysql's own when a login is refused; set
/// by the shim's `authenticate`, taken by [`DenialWriter`].
pub(crate) type Denial = Arc<Mutex<Option<Vec<u8>>>>;

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn payload_len(header: &[u8]) -> usize {
    read_le24([header[0], header[1], header[2]])
}

fn packet(seq: u8, payload: &[u8]) -> Vec<u8> {
    encode_packet(seq, payload)
}

/// Passes bytes through until a login is refused; then replaces opensrv's ERR packet.
pub(crate) struct DenialWriter<W> {
    inner: W,
    denial: Denial,
    state: DenialState,
}

enum DenialState {
    Pass,
    /// Swallowing opensrv's ERR packet; bytes seen so far.
    Swallow(Vec<u8>),
    /// Writing the replacement packet.
    Emit {
        packet: Vec<u8>,
        written: usize,
    },
    Done,
}

impl<W> DenialWriter<W> {
    pub(crate) fn new(inner: W, denial: Denial) -> Self {
        DenialWriter {
            inner,
            denial,
            state: DenialState::Pass,
        }
    }
}

impl<W: AsyncWrite + Unpin> DenialWriter<W> {
    /// Writes the replacement packet, once opensrv's packet has been seen entirely.
    fn poll_emit(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        loop {
            match &mut self.state {
                DenialState::Swallow(seen) => {
                    if seen.len() < HEADER || seen.len() < HEADER + payload_len(seen) {
                        return Poll::Ready(Ok(()));
                    }
                    let payload = lock(&self.denial).take().unwrap_or_default();
                    let packet = packet(seen[3], &payload);
                    self.state = DenialState::Emit { packet, written: 0 };
                }
                DenialState::Emit { packet, written } => {
                    while *written < packet.len() {
                        let n =
                            ready!(Pin::new(&mut self.inner).poll_write(cx, &packet[*written..]))?;
                        if n == 0 {
                            return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
                        }
                        *written += n;
                    }
                    self.state = DenialState::Done;
                }
                DenialState::Pass | DenialState::Done => return Poll::Ready(Ok(())),
            }
        }
    }
}

impl<W: AsyncWrite + Unpin> AsyncWrite for DenialWriter<W> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if matches!(this.state, DenialState::Pass) && lock(&this.denial).is_some() {
            this.state = DenialState::Swallow(Vec::new());
        }
        match &mut this.state {
            DenialState::Pass => Pin::new(&mut this.inner).poll_write(cx, buf),
            DenialState::Swallow(seen) => {
                seen.extend_from_slice(buf);
                Poll::Ready(Ok(buf.len()))
            }
            // Nothing follows a refusal; drop anything that would.
            DenialState::Emit { .. } | DenialState::Done => Poll::Ready(Ok(buf.len())),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        ready!(this.poll_emit(cx))?;
        Pin::new(&mut this.inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        ready!(this.poll_emit(cx))?;
        Pin::new(&mut this.inner).poll_shutdown(cx)
    }
}

/// Passes the client's packets through to opensrv, with the rewrites described in the module
/// documentation. Reads whole packets (up to the cap) before handing them on.
pub(crate) struct CommandReader<R> {
    inner: R,
    /// Longest command payload (command byte included) passed on.
    max_command: usize,
    /// Bytes read from the client, not yet split into packets.
    incoming: Vec<u8>,
    /// Packets ready for opensrv, from `out_pos`.
    out: Vec<u8>,
    out_pos: usize,
    /// The previous packet had the maximal length: the next one continues its payload.
    continuation: bool,
    /// A command over the cap being dropped.
    discard: Option<Discard>,
    eof: bool,
}

#[derive(Debug)]
struct Discard {
    /// Payload bytes of the current packet still to drop.
    remaining: usize,
    /// Sequence number of the current packet (the marker takes it).
    seq: u8,
    /// The current packet has the maximal length: another one follows.
    more: bool,
    /// Payload bytes of the whole command.
    total: usize,
}

fn marker_packet(seq: u8, marker: &str) -> Vec<u8> {
    let mut query = vec![COM_QUERY];
    query.extend_from_slice(marker.as_bytes());
    packet(seq, &query)
}

impl<R> CommandReader<R> {
    pub(crate) fn new(inner: R, max_command: usize) -> Self {
        CommandReader {
            inner,
            max_command: max_command.max(1),
            incoming: Vec::new(),
            out: Vec::new(),
            out_pos: 0,
            continuation: false,
            discard: None,
            eof: false,
        }
    }

    /// Moves complete packets from `incoming` to `out` (dropping what is over the cap); false
    /// when nothing moved. An oversized packet outside a command (a handshake response) is an
    /// error: the connection is closed.
    fn split_packets(&mut self) -> io::Result<bool> {
        let mut moved = false;
        loop {
            if let Some(d) = &mut self.discard {
                let n = d.remaining.min(self.incoming.len());
                self.incoming.drain(..n);
                d.remaining -= n;
                if d.remaining > 0 {
                    break;
                }
                if d.more {
                    if self.incoming.len() < HEADER {
                        break;
                    }
                    let len = payload_len(&self.incoming);
                    d.seq = self.incoming[3];
                    d.remaining = len;
                    d.more = len == MAX_PAYLOAD;
                    d.total = d.total.saturating_add(len);
                    self.incoming.drain(..HEADER);
                    continue;
                }
                let marker = format!("{TOO_LARGE_MARKER}{}", d.total);
                self.out.extend_from_slice(&marker_packet(d.seq, &marker));
                self.discard = None;
                self.continuation = false;
                moved = true;
                continue;
            }
            if self.incoming.len() < HEADER {
                break;
            }
            let len = payload_len(&self.incoming);
            let seq = self.incoming[3];
            // A command is the first packet (sequence 0) of an exchange; the handshake response
            // (sequence 1) and continuations are left alone.
            let command = seq == 0 && !self.continuation;
            if len > self.max_command {
                if !command {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        format!("admin client sent a {len}-byte packet during login"),
                    ));
                }
                self.incoming.drain(..HEADER);
                self.discard = Some(Discard {
                    remaining: len,
                    seq,
                    more: len == MAX_PAYLOAD,
                    total: len,
                });
                continue;
            }
            if self.incoming.len() < HEADER + len {
                break;
            }
            let whole: Vec<u8> = self.incoming.drain(..HEADER + len).collect();
            let payload = &whole[HEADER..];
            if command && payload.first() == Some(&COM_FIELD_LIST) {
                self.out
                    .extend_from_slice(&marker_packet(seq, FIELD_LIST_MARKER));
            } else if command
                && payload.first() == Some(&COM_QUERY)
                && std::str::from_utf8(&payload[1..]).is_err()
            {
                self.out
                    .extend_from_slice(&marker_packet(seq, NOT_UTF8_MARKER));
            } else {
                self.out.extend_from_slice(&whole);
            }
            self.continuation = len == MAX_PAYLOAD;
            moved = true;
        }
        Ok(moved)
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for CommandReader<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        loop {
            if this.out_pos < this.out.len() {
                let n = buf.remaining().min(this.out.len() - this.out_pos);
                buf.put_slice(&this.out[this.out_pos..this.out_pos + n]);
                this.out_pos += n;
                if this.out_pos == this.out.len() {
                    this.out.clear();
                    this.out_pos = 0;
                }
                return Poll::Ready(Ok(()));
            }
            if this.split_packets()? {
                continue;
            }
            if this.eof {
                // A truncated packet at the end goes through as it is; opensrv reports it.
                if this.incoming.is_empty() || this.discard.is_some() {
                    return Poll::Ready(Ok(()));
                }
                this.out = std::mem::take(&mut this.incoming);
                continue;
            }
            let mut chunk = [0u8; 8192];
            let mut read = ReadBuf::new(&mut chunk);
            ready!(Pin::new(&mut this.inner).poll_read(cx, &mut read))?;
            if read.filled().is_empty() {
                this.eof = true;
            }
            this.incoming.extend_from_slice(read.filled());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use psprobe_core::protocol::encode_err;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test]
    async fn denial_writer_replaces_the_refusal_packet() {
        let (client, mut server_end) = tokio::io::duplex(4096);
        let denial: Denial = Arc::new(Mutex::new(None));
        let mut writer = DenialWriter::new(client, Arc::clone(&denial));
        writer.write_all(&[1, 0, 0, 0, 0xAA]).await.unwrap();
        *lock(&denial) = Some(encode_err(1045, b"28000", "Access denied"));
        // opensrv's packet, in two pieces, sequence 2.
        writer.write_all(&[5, 0, 0, 2, 0xFF]).await.unwrap();
        writer.write_all(&[0xA2, 0x06, b'#', b'x']).await.unwrap();
        writer.flush().await.unwrap();
        writer.shutdown().await.unwrap();
        drop(writer);
        let mut got = Vec::new();
        server_end.read_to_end(&mut got).await.unwrap();
        let payload = encode_err(1045, b"28000", "Access denied");
        let mut expected = vec![1, 0, 0, 0, 0xAA];
        expected.extend_from_slice(&packet(2, &payload));
        assert_eq!(got, expected);
    }

    #[tokio::test]
    async fn field_list_becomes_a_marker_query() {
        let (mut client, server_end) = tokio::io::duplex(64);
        let mut stream = Vec::new();
        // Handshake response starting with 0x04 (sequence 1): untouched.
        stream.extend_from_slice(&packet(1, &[COM_FIELD_LIST, 1, 2]));
        stream.extend_from_slice(&packet(0, b"\x03select 1"));
        stream.extend_from_slice(&packet(0, b"\x04digests\0"));
        stream.extend_from_slice(&packet(0, b"\x0e"));
        let writer = tokio::spawn({
            let stream = stream.clone();
            async move {
                // Small pieces, to split packets across reads.
                for piece in stream.chunks(3) {
                    client.write_all(piece).await.unwrap();
                }
            }
        });
        let mut reader = CommandReader::new(server_end, 1 << 20);
        let mut got = Vec::new();
        reader.read_to_end(&mut got).await.unwrap();
        writer.await.unwrap();
        let mut query = vec![COM_QUERY];
        query.extend_from_slice(FIELD_LIST_MARKER.as_bytes());
        let mut expected = Vec::new();
        expected.extend_from_slice(&packet(1, &[COM_FIELD_LIST, 1, 2]));
        expected.extend_from_slice(&packet(0, b"\x03select 1"));
        expected.extend_from_slice(&packet(0, &query));
        expected.extend_from_slice(&packet(0, b"\x0e"));
        assert_eq!(got, expected);
    }

    #[tokio::test]
    async fn truncated_input_passes_through() {
        let (mut client, server_end) = tokio::io::duplex(64);
        client.write_all(&[9, 0, 0, 0, 3, b'x']).await.unwrap();
        drop(client);
        let mut got = Vec::new();
        CommandReader::new(server_end, 1 << 20)
            .read_to_end(&mut got)
            .await
            .unwrap();
        assert_eq!(got, [9, 0, 0, 0, 3, b'x']);
    }

    #[tokio::test]
    async fn oversized_commands_become_a_marker_and_bad_utf8_too() {
        let (mut client, server_end) = tokio::io::duplex(1 << 16);
        let mut stream = Vec::new();
        let mut big = vec![COM_QUERY];
        big.extend(std::iter::repeat_n(b'x', 5000));
        stream.extend_from_slice(&packet(0, &big));
        stream.extend_from_slice(&packet(0, b"\x03select \xff"));
        stream.extend_from_slice(&packet(0, b"\x03select 1"));
        let writer = tokio::spawn(async move {
            for piece in stream.chunks(700) {
                client.write_all(piece).await.unwrap();
            }
        });
        let mut got = Vec::new();
        CommandReader::new(server_end, 1000)
            .read_to_end(&mut got)
            .await
            .unwrap();
        writer.await.unwrap();
        let mut expected = marker_packet(0, &format!("{TOO_LARGE_MARKER}5001"));
        expected.extend_from_slice(&marker_packet(0, NOT_UTF8_MARKER));
        expected.extend_from_slice(&packet(0, b"\x03select 1"));
        assert_eq!(got, expected);
    }

    #[tokio::test]
    async fn oversized_login_packets_close_the_connection() {
        let (mut client, server_end) = tokio::io::duplex(1 << 16);
        client.write_all(&packet(1, &[0u8; 2000])).await.unwrap();
        drop(client);
        let mut got = Vec::new();
        let err = CommandReader::new(server_end, 1000)
            .read_to_end(&mut got)
            .await
            .unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
    }
}
