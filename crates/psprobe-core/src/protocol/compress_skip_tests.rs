//! Skipping what the consumer ignores: a large packet's tail past the capture is passed over,
//! not decoded, and the packets seen are the same as when every byte is decoded.

use std::io::Write;
use std::ops::ControlFlow;

use super::*;
use crate::protocol::frame::{encode_packet, Deframer};

const CAPTURE: usize = 1024;

fn compress(algorithm: Algorithm, data: &[u8]) -> Vec<u8> {
    match algorithm {
        Algorithm::Zlib => {
            let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
            e.write_all(data).expect("zlib write");
            e.finish().expect("zlib finish")
        }
        Algorithm::Zstd => zstd::bulk::compress(data, 3).expect("zstd compress"),
    }
}

/// The packet stream cut into frames at `cuts` (offsets into the stream), each compressed.
fn framed(algorithm: Algorithm, stream: &[u8], cuts: &[usize]) -> Vec<u8> {
    let mut wire = Vec::new();
    let mut at = 0;
    for (seq, &end) in cuts.iter().chain([&stream.len()]).enumerate() {
        let part = &stream[at..end];
        wire.extend(frame_bytes(
            seq as u8,
            &compress(algorithm, part),
            part.len(),
        ));
        at = end;
    }
    wire
}

/// A de-framer behind the decoder, counting what it was given and what it was spared.
struct Counting {
    frames: Deframer,
    decoded: usize,
    skipped: usize,
    packets: Vec<(u8, usize, Vec<u8>)>,
}

impl Counting {
    fn new() -> Self {
        Counting {
            frames: Deframer::new(CAPTURE),
            decoded: 0,
            skipped: 0,
            packets: Vec::new(),
        }
    }
}

impl Plain for Counting {
    fn bytes(&mut self, plain: &[u8]) -> ControlFlow<()> {
        self.decoded += plain.len();
        let packets = &mut self.packets;
        self.frames.feed(plain, |p| {
            packets.push((p.seq, p.len, p.head.to_vec()));
            ControlFlow::Continue(())
        })
    }

    fn ignorable(&self) -> usize {
        self.frames.ignorable()
    }

    fn skipped(&mut self, n: usize) -> ControlFlow<()> {
        self.skipped += n;
        let packets = &mut self.packets;
        self.frames.skip(n, |p| {
            packets.push((p.seq, p.len, p.head.to_vec()));
            ControlFlow::Continue(())
        })
    }
}

/// Feeds `wire` in chunks of `step` with a decode budget, resuming until each chunk is done.
fn run(algorithm: Algorithm, wire: &[u8], step: usize, budget: usize) -> Counting {
    let mut d = Decompressor::new(algorithm);
    let mut sink = Counting::new();
    for c in wire.chunks(step) {
        let mut decoded = d.feed_plain_within(c, budget, &mut sink);
        while decoded == Ok(Decoded::More) {
            decoded = d.resume_plain(budget, &mut sink);
        }
        assert_eq!(decoded, Ok(Decoded::Done));
    }
    assert!(d.is_at_boundary(), "stream ended mid-frame");
    sink
}

/// Every byte decoded (a closure consumer never skips), then de-framed.
fn reference(algorithm: Algorithm, wire: &[u8]) -> Vec<(u8, usize, Vec<u8>)> {
    let mut d = Decompressor::new(algorithm);
    let mut frames = Deframer::new(CAPTURE);
    let mut packets = Vec::new();
    let flow = d.feed(wire, |plain| {
        frames.feed(plain, |p| {
            packets.push((p.seq, p.len, p.head.to_vec()));
            ControlFlow::Continue(())
        })
    });
    assert_eq!(flow, Ok(ControlFlow::Continue(())));
    packets
}

/// A 4 MiB query, then a small one: the large one's tail reaches the end of its frame.
fn big_then_small() -> Vec<u8> {
    let mut query = vec![0x03];
    query.extend(b"SELECT LENGTH('");
    query.extend(std::iter::repeat_n(b'x', 4 << 20));
    query.extend(b"')");
    let mut stream = encode_packet(0, &query);
    stream.extend(encode_packet(0, b"\x03SELECT 1"));
    stream
}

#[test]
fn a_large_packets_tail_is_skipped_and_the_packets_are_the_same() {
    let stream = big_then_small();
    let big_end = stream.len() - (4 + 9);
    for algorithm in [Algorithm::Zlib, Algorithm::Zstd] {
        // One frame per packet; the big packet across two frames, the second also holding the
        // small packet; everything in one frame (nothing can be skipped).
        for cuts in [vec![big_end], vec![1 << 20], vec![]] {
            let wire = framed(algorithm, &stream, &cuts);
            let want = reference(algorithm, &wire);
            assert_eq!(want.len(), 2);
            for (step, budget) in [(wire.len(), usize::MAX), (997, 4096), (1, usize::MAX)] {
                let got = run(algorithm, &wire, step, budget);
                assert_eq!(got.packets, want, "{algorithm:?} cuts {cuts:?} step {step}");
                assert_eq!(got.decoded + got.skipped, stream.len());
                if cuts == [big_end] {
                    // The capture and at most a piece or two past it, not 4 MiB.
                    assert!(got.decoded < CAPTURE + 3 * OUTPUT_CHUNK, "{}", got.decoded);
                } else if cuts.is_empty() {
                    assert_eq!(got.skipped, 0, "the small packet follows in the same frame");
                } else {
                    // The first frame's tail is skipped; the second frame must be decoded
                    // to find the small packet.
                    assert!(got.skipped > (1 << 20) - CAPTURE - 3 * OUTPUT_CHUNK);
                }
            }
        }
    }
}

#[test]
fn a_skipped_tail_is_not_checked_but_a_decoded_one_is() {
    let stream = big_then_small();
    let big_end = stream.len() - (4 + 9);
    let mut wire = framed(Algorithm::Zlib, &stream, &[big_end]);
    // The first frame's zlib checksum (its last 4 bytes) made wrong.
    let first_frame_end = COMPRESSED_HEADER_LEN + read_le24([wire[0], wire[1], wire[2]]);
    wire[first_frame_end - 1] ^= 0xFF;
    let mut d = Decompressor::new(Algorithm::Zlib);
    assert_eq!(
        d.feed(&wire, |_| ControlFlow::Continue(())),
        Err(DecodeError::Zlib),
        "decoding every byte finds the bad checksum"
    );
    let got = run(Algorithm::Zlib, &wire, wire.len(), usize::MAX);
    assert_eq!(got.packets.len(), 2, "skipping never reaches it");
}

#[test]
fn a_consumer_that_stops_on_a_skipped_packet_stops_the_decoder() {
    struct StopAtFirst(Deframer);
    impl Plain for StopAtFirst {
        fn bytes(&mut self, plain: &[u8]) -> ControlFlow<()> {
            self.0.feed(plain, |_| ControlFlow::Break(()))
        }
        fn ignorable(&self) -> usize {
            self.0.ignorable()
        }
        fn skipped(&mut self, n: usize) -> ControlFlow<()> {
            self.0.skip(n, |_| ControlFlow::Break(()))
        }
    }
    let stream = big_then_small();
    let wire = framed(Algorithm::Zlib, &stream, &[stream.len() - 13]);
    let mut d = Decompressor::new(Algorithm::Zlib);
    let mut sink = StopAtFirst(Deframer::new(CAPTURE));
    assert_eq!(
        d.feed_plain_within(&wire, usize::MAX, &mut sink),
        Ok(Decoded::Stopped)
    );
    assert!(!d.is_behind());
}
