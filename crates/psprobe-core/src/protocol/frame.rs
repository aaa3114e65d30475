//! Streaming de-framer for the MySQL packet layer.
//!
//! A MySQL packet is a 3-byte little-endian payload length, a 1-byte sequence id and the
//! payload. A payload of 0xFFFFFF bytes or more is split into 0xFFFFFF-byte packets followed by
//! a shorter one (an empty one when the payload is an exact multiple). Together they are one
//! *logical* packet.
//!
//! The relay hands us whatever each `read()` returned. We must observe those bytes without
//! owning them and without buffering large payloads: a logical packet that lies wholly inside
//! the chunk is handed on as a borrowed slice (no copy); one that spans chunks is copied into a
//! reusable scratch buffer, but only up to `capture_limit` bytes. Consumers get the total length
//! and the captured head, and decide for themselves whether a truncated head is enough.

use std::ops::ControlFlow;

/// Payload length of a physical packet that is continued by the next one.
pub const MAX_PACKET_PAYLOAD: usize = 0xFF_FFFF;

/// Bytes of header in front of every physical packet.
pub const HEADER_LEN: usize = 4;

/// A 3-byte little-endian length, as in packet headers (and a compressed frame's uncompressed
/// length). Keeps the low 24 bits: callers pass lengths they have bounded.
pub fn le24(n: usize) -> [u8; 3] {
    [n as u8, (n >> 8) as u8, (n >> 16) as u8]
}

/// The 3-byte little-endian length at the start of a header.
pub fn read_le24(b: [u8; 3]) -> usize {
    usize::from(b[0]) | usize::from(b[1]) << 8 | usize::from(b[2]) << 16
}

/// One whole physical packet: header, then `payload`. For packets psprobe writes itself
/// (errors, rewritten commands): `payload` is at most [`MAX_PACKET_PAYLOAD`] bytes.
pub fn encode_packet(seq: u8, payload: &[u8]) -> Vec<u8> {
    debug_assert!(payload.len() <= MAX_PACKET_PAYLOAD);
    let mut out = Vec::with_capacity(HEADER_LEN + payload.len());
    out.extend_from_slice(&le24(payload.len()));
    out.push(seq);
    out.extend_from_slice(payload);
    out
}

/// One logical packet, as much of it as was captured.
#[derive(Debug, Clone, Copy)]
pub struct PacketView<'a> {
    /// Sequence id of the first physical packet.
    pub seq: u8,
    /// Total payload length of the logical packet (all physical packets together).
    pub len: usize,
    /// The first `min(len, capture_limit)` bytes of the payload.
    pub head: &'a [u8],
}

impl PacketView<'_> {
    /// True when `head` holds the whole payload.
    pub fn is_whole(&self) -> bool {
        self.head.len() == self.len
    }

    /// First payload byte, if the payload is not empty.
    pub fn first_byte(&self) -> Option<u8> {
        self.head.first().copied()
    }

    /// Bytes this logical packet occupies on the wire, headers included.
    pub fn wire_len(&self) -> u64 {
        let physical_packets = self.len / MAX_PACKET_PAYLOAD + 1;
        (self.len + physical_packets * HEADER_LEN) as u64
    }
}

/// Incremental de-framer; one per direction of a connection.
#[derive(Debug)]
pub struct Deframer {
    capture_limit: usize,
    header: [u8; HEADER_LEN],
    header_filled: usize,
    /// Payload bytes of the current physical packet still to come (0 while reading a header).
    remaining: usize,
    /// Length of the current physical packet (decides whether another one continues it).
    physical_len: usize,
    /// The previous physical packet was 0xFFFFFF long: the next one continues the same payload.
    continued: bool,
    logical_len: usize,
    first_seq: u8,
    scratch: Vec<u8>,
}

impl Deframer {
    /// `capture_limit` bounds how many payload bytes of one logical packet are ever copied.
    pub fn new(capture_limit: usize) -> Self {
        Deframer {
            capture_limit,
            header: [0; HEADER_LEN],
            header_filled: 0,
            remaining: 0,
            physical_len: 0,
            continued: false,
            logical_len: 0,
            first_seq: 0,
            scratch: Vec::new(),
        }
    }

    /// True when no partial packet is pending: the byte stream ends on a packet boundary.
    pub fn is_at_boundary(&self) -> bool {
        self.header_filled == 0 && self.remaining == 0 && !self.continued
    }

    /// Payload bytes coming next that would only be counted, not copied: the rest of the
    /// physical packet being read once its captured head is full. A decoder of the compressed
    /// protocol may skip producing them ([`Deframer::skip`]).
    pub fn ignorable(&self) -> usize {
        if self.header_filled == 0 && self.scratch.len() >= self.capture_limit {
            self.remaining
        } else {
            0
        }
    }

    /// Counts `n` payload bytes that were not produced (at most [`Deframer::ignorable`]; any
    /// more are not skipped), calling `on_packet` if that ends a logical packet.
    pub fn skip<F>(&mut self, n: usize, mut on_packet: F) -> ControlFlow<()>
    where
        F: FnMut(PacketView<'_>) -> ControlFlow<()>,
    {
        let n = n.min(self.ignorable());
        if n == 0 {
            return ControlFlow::Continue(());
        }
        self.remaining -= n;
        if self.remaining == 0 {
            return self.end_physical_packet(&mut on_packet);
        }
        ControlFlow::Continue(())
    }

    /// Consumes from the front of `data` whole packets (header and payload both in `data`, one
    /// physical packet each, payload not empty) while `wanted` holds for their first payload
    /// byte, calling nobody: the fast path for runs of packets that are only counted, such as
    /// a result set's rows. Only at a packet boundary (elsewhere it consumes nothing). Returns
    /// the packets and the wire bytes consumed.
    pub fn skip_whole_packets_while(
        &mut self,
        data: &mut &[u8],
        wanted: impl Fn(u8) -> bool,
    ) -> (u64, u64) {
        if !self.is_at_boundary() {
            return (0, 0);
        }
        let (mut packets, mut bytes) = (0u64, 0u64);
        let mut rest = *data;
        while let [a, b, c, _seq, first, ..] = *rest {
            let len = read_le24([a, b, c]);
            let wire = HEADER_LEN + len;
            if len == 0 || len >= MAX_PACKET_PAYLOAD || rest.len() < wire || !wanted(first) {
                break;
            }
            packets += 1;
            bytes += wire as u64;
            rest = &rest[wire..];
        }
        *data = rest;
        (packets, bytes)
    }

    /// Feeds one chunk of the byte stream, calling `on_packet` for every logical packet that
    /// completes inside it. Stops early when `on_packet` breaks.
    pub fn feed<F>(&mut self, data: &[u8], on_packet: F) -> ControlFlow<()>
    where
        F: FnMut(PacketView<'_>) -> ControlFlow<()>,
    {
        self.feed_counted(data, on_packet).0
    }

    /// Like [`Deframer::feed`], and also says how many bytes of `data` were consumed: all of
    /// them, or on a break, those up to the end of the packet `on_packet` broke on (the rest
    /// may belong to another layer, such as the compressed protocol that starts after it).
    pub fn feed_counted<F>(&mut self, data: &[u8], mut on_packet: F) -> (ControlFlow<()>, usize)
    where
        F: FnMut(PacketView<'_>) -> ControlFlow<()>,
    {
        let total = data.len();
        let mut rest = data;
        let flow = self.feed_inner(&mut rest, &mut on_packet);
        (flow, total - rest.len())
    }

    fn feed_inner<F>(&mut self, data: &mut &[u8], mut on_packet: F) -> ControlFlow<()>
    where
        F: FnMut(PacketView<'_>) -> ControlFlow<()>,
    {
        while !data.is_empty() {
            if self.remaining == 0 {
                let take = (HEADER_LEN - self.header_filled).min(data.len());
                self.header[self.header_filled..self.header_filled + take]
                    .copy_from_slice(&data[..take]);
                self.header_filled += take;
                *data = &data[take..];
                if self.header_filled < HEADER_LEN {
                    return ControlFlow::Continue(());
                }
                self.header_filled = 0;
                let len = read_le24([self.header[0], self.header[1], self.header[2]]);
                if !self.continued {
                    self.first_seq = self.header[3];
                    self.logical_len = 0;
                    self.scratch.clear();
                }
                self.logical_len += len;
                self.physical_len = len;
                self.remaining = len;

                // Fast path: a whole single-packet payload inside this chunk is not copied.
                if !self.continued && len < MAX_PACKET_PAYLOAD && data.len() >= len {
                    let (payload, rest) = data.split_at(len);
                    *data = rest;
                    self.remaining = 0;
                    let view = PacketView {
                        seq: self.first_seq,
                        len,
                        head: &payload[..len.min(self.capture_limit)],
                    };
                    on_packet(view)?;
                    continue;
                }
                if len == 0 {
                    self.end_physical_packet(&mut on_packet)?;
                }
            } else {
                let take = self.remaining.min(data.len());
                let room = self.capture_limit.saturating_sub(self.scratch.len());
                self.scratch.extend_from_slice(&data[..take.min(room)]);
                self.remaining -= take;
                *data = &data[take..];
                if self.remaining == 0 {
                    self.end_physical_packet(&mut on_packet)?;
                }
            }
        }
        ControlFlow::Continue(())
    }

    fn end_physical_packet<F>(&mut self, on_packet: &mut F) -> ControlFlow<()>
    where
        F: FnMut(PacketView<'_>) -> ControlFlow<()>,
    {
        self.continued = self.physical_len == MAX_PACKET_PAYLOAD;
        if self.continued {
            return ControlFlow::Continue(());
        }
        on_packet(PacketView {
            seq: self.first_seq,
            len: self.logical_len,
            head: &self.scratch,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn packet(seq: u8, payload: &[u8]) -> Vec<u8> {
        encode_packet(seq, payload)
    }

    #[test]
    fn whole_packets_are_skipped_only_at_a_boundary_and_while_wanted() {
        let stream = [
            packet(1, b"row1"),
            packet(2, b"r2"),
            packet(3, &[0xFE, 0, 0, 2, 0]),
            packet(4, b"after"),
        ]
        .concat();
        let not_fe = |b: u8| b != 0xFE;
        let mut d = Deframer::new(64);
        let mut rest = &stream[..];
        assert_eq!(
            d.skip_whole_packets_while(&mut rest, not_fe),
            (2, 4 + 4 + 4 + 2)
        );
        assert_eq!(rest[4], 0xFE, "stops at the first unwanted packet");
        // Mid-packet: nothing is skipped; a cut packet is not skipped either.
        let mut d = Deframer::new(64);
        let _ = d.feed(&stream[..3], |_| ControlFlow::Continue(()));
        let mut rest = &stream[3..];
        assert_eq!(d.skip_whole_packets_while(&mut rest, not_fe), (0, 0));
        let mut d = Deframer::new(64);
        let mut cut = &stream[..8 + 3];
        assert_eq!(d.skip_whole_packets_while(&mut cut, not_fe), (1, 8));
        assert_eq!(cut.len(), 3);
        // An empty payload is never skipped (the reader decides what it means).
        let empty = packet(0, b"");
        let mut rest = &empty[..];
        assert_eq!(d.skip_whole_packets_while(&mut rest, |_| true), (0, 0));
    }

    #[test]
    fn lengths_round_trip_through_three_bytes() {
        for n in [0, 1, 0xFB, 0x1_0000, 0xAB_CDEF, MAX_PACKET_PAYLOAD] {
            assert_eq!(read_le24(le24(n)), n);
        }
        assert_eq!(encode_packet(7, b"ab"), [2, 0, 0, 7, b'a', b'b']);
    }

    /// Splits a payload the way a MySQL peer does, including the trailing empty packet.
    fn split_payload(first_seq: u8, payload: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        let mut seq = first_seq;
        let mut last_len = 0;
        for chunk in payload.chunks(MAX_PACKET_PAYLOAD) {
            out.extend(packet(seq, chunk));
            seq = seq.wrapping_add(1);
            last_len = chunk.len();
        }
        if payload.is_empty() || last_len == MAX_PACKET_PAYLOAD {
            out.extend(packet(seq, &[]));
        }
        out
    }

    fn collect(d: &mut Deframer, chunks: &[&[u8]]) -> Vec<(u8, usize, Vec<u8>)> {
        let mut got = Vec::new();
        for c in chunks {
            let _ = d.feed(c, |p| {
                got.push((p.seq, p.len, p.head.to_vec()));
                ControlFlow::Continue(())
            });
        }
        got
    }

    #[test]
    fn whole_packets_in_one_chunk() {
        let mut bytes = packet(0, b"\x03select 1");
        bytes.extend(packet(1, b""));
        bytes.extend(packet(2, b"\x0e"));
        let got = collect(&mut Deframer::new(1024), &[&bytes]);
        assert_eq!(
            got,
            vec![
                (0, 9, b"\x03select 1".to_vec()),
                (1, 0, vec![]),
                (2, 1, vec![0x0e])
            ]
        );
    }

    #[test]
    fn byte_by_byte_gives_the_same_packets() {
        let mut bytes = packet(0, b"\x03select 1");
        bytes.extend(packet(1, b"abc"));
        let chunks: Vec<&[u8]> = bytes.chunks(1).collect();
        let mut d = Deframer::new(1024);
        let got = collect(&mut d, &chunks);
        assert_eq!(
            got,
            vec![(0, 9, b"\x03select 1".to_vec()), (1, 3, b"abc".to_vec())]
        );
        assert!(d.is_at_boundary());
    }

    #[test]
    fn capture_limit_truncates_head_but_keeps_length() {
        let payload = vec![7u8; 5000];
        let bytes = packet(3, &payload);
        let (a, b) = bytes.split_at(100);
        let got = collect(&mut Deframer::new(64), &[a, b]);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].1, 5000);
        assert_eq!(got[0].2.len(), 64);
    }

    #[test]
    fn payload_over_16mib_is_one_logical_packet() {
        let payload: Vec<u8> = (0..MAX_PACKET_PAYLOAD + 10).map(|i| i as u8).collect();
        let bytes = split_payload(0, &payload);
        assert_eq!(bytes.len(), payload.len() + 8);
        let chunks: Vec<&[u8]> = bytes.chunks(65536).collect();
        let got = collect(&mut Deframer::new(16), &chunks);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].0, 0);
        assert_eq!(got[0].1, MAX_PACKET_PAYLOAD + 10);
        assert_eq!(got[0].2, payload[..16].to_vec());
    }

    #[test]
    fn exact_16mib_payload_ends_with_empty_packet() {
        let payload = vec![0xABu8; MAX_PACKET_PAYLOAD];
        let mut bytes = split_payload(5, &payload);
        assert_eq!(
            bytes.len(),
            MAX_PACKET_PAYLOAD + 8,
            "data packet + empty packet"
        );
        bytes.extend(packet(0, b"\x0e"));
        let mut d = Deframer::new(8);
        let got = collect(&mut d, &[&bytes]);
        assert_eq!(
            got.len(),
            2,
            "the empty packet ends the payload, it is no packet itself"
        );
        assert_eq!((got[0].0, got[0].1), (5, MAX_PACKET_PAYLOAD));
        assert_eq!((got[1].0, got[1].1), (0, 1));
        assert!(d.is_at_boundary());
    }

    #[test]
    fn wire_len_counts_every_header() {
        let v = PacketView {
            seq: 0,
            len: MAX_PACKET_PAYLOAD,
            head: &[],
        };
        assert_eq!(v.wire_len(), MAX_PACKET_PAYLOAD as u64 + 8);
        let v = PacketView {
            seq: 0,
            len: 5,
            head: &[],
        };
        assert_eq!(v.wire_len(), 9);
    }

    #[test]
    fn break_stops_feeding() {
        let mut bytes = packet(0, b"a");
        bytes.extend(packet(1, b"b"));
        let mut seen = 0;
        let flow = Deframer::new(8).feed(&bytes, |_| {
            seen += 1;
            ControlFlow::Break(())
        });
        assert_eq!(seen, 1);
        assert!(flow.is_break());
    }
}
