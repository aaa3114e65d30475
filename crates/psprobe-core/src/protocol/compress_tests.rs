//! The compressed-protocol decoder on frames made the way MySQL makes them: zlib streams from
//! flate2, zstd frames from the reference zstd library, stored frames below the threshold.

use std::io::Write;
use std::ops::ControlFlow;

use proptest::prelude::*;

use super::*;
use crate::protocol::frame::Deframer;

/// MySQL compresses a payload only from this size on (MIN_COMPRESS_LENGTH); smaller ones are
/// stored.
const MIN_COMPRESS_LENGTH: usize = 50;

fn zlib(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(data).expect("zlib write");
    e.finish().expect("zlib finish")
}

fn zstd(data: &[u8], level: i32) -> Vec<u8> {
    zstd::bulk::compress(data, level).expect("zstd compress")
}

/// One compressed packet as a MySQL peer writes it.
fn mysql_frame(algorithm: Algorithm, seq: u8, payload: &[u8], level: i32) -> Vec<u8> {
    if payload.len() < MIN_COMPRESS_LENGTH {
        return stored_frame(seq, payload);
    }
    let compressed = match algorithm {
        Algorithm::Zlib => zlib(payload),
        Algorithm::Zstd => zstd(payload, level),
    };
    frame_bytes(seq, &compressed, payload.len())
}

fn packet(seq: u8, payload: &[u8]) -> Vec<u8> {
    let n = payload.len();
    let mut out = vec![n as u8, (n >> 8) as u8, (n >> 16) as u8, seq];
    out.extend_from_slice(payload);
    out
}

/// Feeds `chunks` and returns the decoded stream, or the first error.
fn decode(algorithm: Algorithm, chunks: &[&[u8]]) -> Result<Vec<u8>, DecodeError> {
    let mut d = Decompressor::new(algorithm);
    let mut out = Vec::new();
    for c in chunks {
        let flow = d.feed(c, |piece| {
            assert!(piece.len() <= OUTPUT_CHUNK);
            out.extend_from_slice(piece);
            ControlFlow::Continue(())
        })?;
        assert!(flow.is_continue());
    }
    assert!(d.is_at_boundary(), "stream ended mid-frame");
    Ok(out)
}

/// Feeds `chunks` with a decode budget, resuming until each chunk is decoded (as a proxy
/// does between other connections' work): the decoded stream, or the first error. Checks that
/// no call emits much more than its budget.
fn decode_in_steps(
    algorithm: Algorithm,
    chunks: &[&[u8]],
    budget: usize,
) -> Result<Vec<u8>, DecodeError> {
    let mut d = Decompressor::new(algorithm);
    let mut out = Vec::new();
    for c in chunks {
        let mut step = 0;
        let mut decoded = d.feed_within(c, budget, |piece| {
            step += piece.len();
            out.extend_from_slice(piece);
            ControlFlow::Continue(())
        })?;
        assert!(
            step < budget.max(1) + OUTPUT_CHUNK,
            "{step} bytes in one call"
        );
        while decoded == Decoded::More {
            assert!(d.is_behind());
            let mut step = 0;
            decoded = d.resume(budget, |piece| {
                step += piece.len();
                out.extend_from_slice(piece);
                ControlFlow::Continue(())
            })?;
            assert!(
                step < budget.max(1) + OUTPUT_CHUNK,
                "{step} bytes in one step"
            );
        }
        assert_eq!(decoded, Decoded::Done);
        assert!(!d.is_behind());
    }
    assert!(d.is_at_boundary(), "stream ended mid-frame");
    Ok(out)
}

fn split_every(bytes: &[u8], step: usize) -> Vec<&[u8]> {
    bytes.chunks(step.max(1)).collect()
}

#[test]
fn stored_frames_pass_through_byte_by_byte() {
    let stream = [packet(0, b"\x03select 1"), packet(0, b"\x0e")].concat();
    let wire = [stored_frame(0, &stream[..5]), stored_frame(1, &stream[5..])].concat();
    for step in [1, 2, 7, 8, wire.len()] {
        assert_eq!(
            decode(Algorithm::Zlib, &split_every(&wire, step)).unwrap(),
            stream
        );
    }
}

#[test]
fn zlib_frame_with_several_packets_split_anywhere() {
    let query = format!("\x03select '{}'", "x".repeat(300));
    let stream = [packet(0, query.as_bytes()), packet(0, b"\x01")].concat();
    let wire = mysql_frame(Algorithm::Zlib, 0, &stream, 0);
    assert_ne!(&wire[4..7], &[0, 0, 0], "compressed, not stored");
    for step in [1, 3, 7, 64, wire.len()] {
        assert_eq!(
            decode(Algorithm::Zlib, &split_every(&wire, step)).unwrap(),
            stream
        );
    }
}

#[test]
fn a_packet_spanning_frames_is_rejoined() {
    let payload: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
    let stream = packet(1, &payload);
    let mut wire = Vec::new();
    for (i, part) in stream.chunks(65_000).enumerate() {
        wire.extend(mysql_frame(Algorithm::Zlib, i as u8, part, 0));
    }
    let got = decode(Algorithm::Zlib, &split_every(&wire, 4096)).unwrap();
    assert!(got == stream);
    let mut packets = 0;
    let _ = Deframer::new(16).feed(&got, |p| {
        assert_eq!(p.len, payload.len());
        packets += 1;
        ControlFlow::Continue(())
    });
    assert_eq!(packets, 1);
}

#[test]
fn a_frame_of_almost_16_mib_decodes_in_fixed_pieces() {
    let payload = vec![b'a'; MAX_UNCOMPRESSED_LEN];
    let wire = mysql_frame(Algorithm::Zlib, 0, &payload, 0);
    let mut d = Decompressor::new(Algorithm::Zlib);
    let (mut total, mut pieces) = (0usize, 0usize);
    for c in wire.chunks(1000) {
        let flow = d.feed(c, |p| {
            total += p.len();
            pieces += 1;
            ControlFlow::Continue(())
        });
        assert_eq!(flow, Ok(ControlFlow::Continue(())));
    }
    assert_eq!(total, MAX_UNCOMPRESSED_LEN);
    assert!(pieces >= MAX_UNCOMPRESSED_LEN / OUTPUT_CHUNK);
}

#[test]
fn declared_length_must_match() {
    let stream = vec![7u8; 500];
    let compressed = zlib(&stream);
    let short = frame_bytes(0, &compressed, 499);
    assert!(matches!(
        decode(Algorithm::Zlib, &[&short]),
        Err(DecodeError::TooLong { declared: 499 })
    ));
    let long = frame_bytes(0, &compressed, 501);
    assert!(matches!(
        decode(Algorithm::Zlib, &[&long]),
        Err(DecodeError::LengthMismatch {
            declared: 501,
            actual: 500
        })
    ));
    let zs = frame_bytes(0, &zstd(&stream, 3), 400);
    assert!(matches!(
        decode(Algorithm::Zstd, &[&zs]),
        Err(DecodeError::TooLong { declared: 400 })
    ));
}

#[test]
fn corrupt_and_trailing_data_are_errors_and_the_decoder_stays_failed() {
    let stream = vec![7u8; 500];
    let mut compressed = zlib(&stream);
    compressed[3] ^= 0xFF;
    let bad = frame_bytes(0, &compressed, 500);
    assert!(decode(Algorithm::Zlib, &[&bad]).is_err());

    let mut trailing = zlib(&stream);
    trailing.extend_from_slice(b"junk");
    assert_eq!(
        decode(Algorithm::Zlib, &[&frame_bytes(0, &trailing, 500)]),
        Err(DecodeError::TrailingBytes)
    );
    assert_eq!(
        decode(Algorithm::Zlib, &[&frame_bytes(0, &[], 10)]),
        Err(DecodeError::EmptyPayload(10))
    );
    let garbage = frame_bytes(0, &[0x28, 0xb5, 0x2f, 0xfd, 1, 2, 3, 4, 5, 6, 7, 8], 100);
    assert!(matches!(
        decode(Algorithm::Zstd, &[&garbage]),
        Err(DecodeError::Zstd(_))
    ));

    let mut d = Decompressor::new(Algorithm::Zlib);
    assert!(d.feed(&bad, |_| ControlFlow::Continue(())).is_err());
    let good = stored_frame(0, b"abc");
    let mut seen = 0;
    let _ = d.feed(&good, |_| {
        seen += 1;
        ControlFlow::Continue(())
    });
    assert_eq!(seen, 0, "a failed decoder hands nothing on");
}

#[test]
fn a_declared_length_allocates_nothing_until_data_arrives() {
    // 16 MiB declared, 16 MiB of compressed payload announced, 20 bytes sent.
    let mut d = Decompressor::new(Algorithm::Zstd);
    let mut header = frame_bytes(0, &[], MAX_UNCOMPRESSED_LEN);
    header[..3].copy_from_slice(&[0xFF, 0xFF, 0xFF]);
    header.extend_from_slice(&zstd(&[1; 1000], 1)[..13]);
    assert!(d
        .feed(&header, |_| ControlFlow::Continue(()))
        .unwrap()
        .is_continue());
    assert!(
        d.zstd.input.capacity() < 1024,
        "{}",
        d.zstd.input.capacity()
    );
    assert!(d.zstd.decoder.is_none(), "waits for a whole frame header");
}

#[test]
fn a_zstd_window_larger_than_the_frame_is_refused_before_it_is_allocated() {
    // Found writing the `compress` fuzz target: a 20-byte zstd frame header asking for a
    // 96 MiB window made ruzstd reserve it, for a frame declaring 100 bytes of output.
    // Window descriptor 0x7C: 2^(10 + 15) * (1 + 4/8) = 48 MiB; 0x84: 2^26 * 1.5 = 96 MiB.
    for window_descriptor in [0x7Cu8, 0x84] {
        let mut payload = vec![0x28, 0xB5, 0x2F, 0xFD, 0x00, window_descriptor];
        payload.extend_from_slice(&[0x01, 0x00, 0x00]); // a last raw block of 0 bytes ...
        payload.extend_from_slice(&[0u8; 11]);
        let wire = frame_bytes(0, &payload, 100);
        let e = decode(Algorithm::Zstd, &[&wire]).unwrap_err();
        assert!(
            matches!(&e, DecodeError::Zstd(m) if m.contains("window")),
            "{e}"
        );
    }
    assert_eq!(
        zstd_window(&[0x28, 0xB5, 0x2F, 0xFD, 0x00, 0x84]),
        Some(96 << 20)
    );
    // Single segment, 2-byte content size (stored minus 256): the window is the content size.
    assert_eq!(
        zstd_window(&[0x28, 0xB5, 0x2F, 0xFD, 0x60, 0x00, 0x01]),
        Some(256 + 256)
    );
    assert_eq!(zstd_window(&[0x28, 0xB5, 0x2F]), None, "not whole yet");
    // What encoders write for each packet size, at every level, still decodes.
    for len in [50, 1000, 70_000, 1 << 20] {
        let payload: Vec<u8> = (0..len).map(|i| (i * 7 % 251) as u8).collect();
        for level in [1, 3, 19] {
            let wire = mysql_frame(Algorithm::Zstd, 0, &packet(0, &payload), level);
            assert_eq!(
                decode(Algorithm::Zstd, &[&wire]).unwrap(),
                packet(0, &payload)
            );
        }
    }
}

#[test]
fn a_zstd_frame_without_its_checksum_ends_instead_of_looping() {
    // Found by the `compress` fuzz target: with the checksum flag set and the checksum bytes
    // missing, ruzstd reports 4 bytes read on every call, and the decode loop never ended.
    let payload = packet(0, &[7u8; 300]);
    let mut compressed = zstd::bulk::Compressor::new(3).expect("zstd");
    compressed
        .set_parameter(zstd::zstd_safe::CParameter::ChecksumFlag(true))
        .expect("checksum flag");
    let mut frame = compressed.compress(&payload).expect("compress");
    frame.truncate(frame.len() - 4);
    let wire = frame_bytes(0, &frame, payload.len());
    let (done, result) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = done.send(decode(Algorithm::Zstd, &[&wire]).map(|out| out.len()));
    });
    let result = result
        .recv_timeout(std::time::Duration::from_secs(20))
        .expect("the decoder returns");
    assert!(matches!(result, Ok(304) | Err(_)), "{result:?}");
}

/// A frame cut after its last block but before its checksum: ruzstd then stops draining what
/// it decoded, which made the bytes emitted depend on the chunking (32,768 bytes whole, 81,985
/// cut 5/4/1; found by the `compress` fuzz target). Both must emit everything decoded.
#[test]
fn a_frame_cut_before_its_checksum_emits_the_same_bytes_however_it_is_split() {
    let stream: &[u8] = &[
        0x28, 0x53, 0x00, 0x00, 0x4d, 0xfe, 0x03, 0x28, 0xb5, 0x2f, 0xfd, 0x2f, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x0a, 0x00, 0x0a, 0x0a, 0x03, 0x02, 0x00, 0x29,
    ];
    let emitted = |chunks: &[&[u8]]| {
        let mut d = Decompressor::new(Algorithm::Zstd);
        let mut out = Vec::new();
        for c in chunks {
            let flow = d.feed(c, |piece| {
                out.extend_from_slice(piece);
                ControlFlow::Continue(())
            });
            assert!(matches!(flow, Ok(ControlFlow::Continue(()))), "{flow:?}");
        }
        out
    };
    let whole = emitted(&[stream]);
    let (a, rest) = stream.split_at(5);
    let (b, rest) = rest.split_at(4);
    let (c, rest) = rest.split_at(1);
    let cut = emitted(&[a, b, c, rest]);
    assert_eq!(whole.len(), 81_985);
    assert_eq!(whole, cut);
    assert_eq!(whole, emitted(&split_every(stream, 1)));
}

#[test]
fn a_consumer_that_stops_mid_frame_is_no_decode_error() {
    // Found by the `session` fuzz target: the session stopped observing inside a frame's
    // last chunk, the decoder then reported the frame short (LengthMismatch), and the session
    // stopped observing a second time.
    let payload = packet(0, &[1u8; 500]);
    let wire = mysql_frame(Algorithm::Zlib, 0, &payload, 0);
    let mut d = Decompressor::new(Algorithm::Zlib);
    let flow = d.feed(&wire, |_| ControlFlow::Break(()));
    assert_eq!(flow, Ok(ControlFlow::Break(())));
}

/// 16 MiB frames of zeros (16 KiB of zlib, a few hundred bytes of zstd each), several in one
/// chunk: with a budget, each call decodes a bounded step, and the steps add up to the same
/// bytes as decoding all at once.
#[test]
fn a_budget_decodes_frames_that_inflate_a_thousandfold_in_bounded_steps() {
    let zeros = vec![0u8; MAX_UNCOMPRESSED_LEN];
    for algorithm in [Algorithm::Zlib, Algorithm::Zstd] {
        let frame = mysql_frame(algorithm, 0, &zeros, 3);
        assert!(frame.len() < 20_000, "{} bytes", frame.len());
        let wire = [frame.clone(), stored_frame(1, b"tail"), frame].concat();
        let expected = [&zeros[..], b"tail", &zeros[..]].concat();
        for budget in [0, 1, 100_000, 1 << 20] {
            for chunks in [vec![&wire[..]], split_every(&wire, 4096)] {
                let got = decode_in_steps(algorithm, &chunks, budget).expect("decodes");
                assert!(got == expected, "{algorithm:?} budget {budget}");
            }
        }
    }
}

/// A zip bomb that lies about its length (declares 1,000 bytes, inflates to 16 MiB): with or
/// without a budget, decoding stops with an error after at most the declared length plus one
/// output buffer, however the frame is split, and the decoder ignores what follows.
#[test]
fn a_zip_bomb_is_not_inflated_past_its_declared_length() {
    let bomb = zlib(&vec![0u8; MAX_UNCOMPRESSED_LEN]);
    let wire = [frame_bytes(0, &bomb, 1000), stored_frame(1, b"after")].concat();
    for budget in [1, 4096, usize::MAX] {
        for chunks in [vec![&wire[..]], split_every(&wire, 512)] {
            let mut d = Decompressor::new(Algorithm::Zlib);
            let mut emitted = 0;
            let mut result = Ok(Decoded::Done);
            for c in &chunks {
                result = d.feed_within(c, budget, |p| {
                    emitted += p.len();
                    ControlFlow::Continue(())
                });
                while result == Ok(Decoded::More) {
                    result = d.resume(budget, |p| {
                        emitted += p.len();
                        ControlFlow::Continue(())
                    });
                }
                if result.is_err() {
                    break;
                }
            }
            assert_eq!(
                result,
                Err(DecodeError::TooLong { declared: 1000 }),
                "budget {budget}"
            );
            assert!(emitted <= 1000 + OUTPUT_CHUNK, "{emitted} bytes emitted");
            assert!(!d.is_behind());
            assert_eq!(
                d.feed_within(b"more", budget, |_| ControlFlow::Continue(())),
                Ok(Decoded::Stopped)
            );
        }
    }
}

/// Bytes fed while the decoder is behind come after what it kept, never before.
#[test]
fn input_fed_while_behind_is_decoded_after_the_backlog() {
    let big: Vec<u8> = (0..1_000_000u32).map(|i| (i / 1000) as u8).collect();
    for algorithm in [Algorithm::Zlib, Algorithm::Zstd] {
        let wire = [
            mysql_frame(algorithm, 0, &big, 3),
            stored_frame(1, b"after"),
        ]
        .concat();
        let (first, second) = wire.split_at(wire.len() - 12);
        let mut d = Decompressor::new(algorithm);
        let mut out = Vec::new();
        let mut collect = |p: &[u8]| {
            out.extend_from_slice(p);
            ControlFlow::Continue(())
        };
        assert_eq!(
            d.feed_within(first, 64 * 1024, &mut collect),
            Ok(Decoded::More)
        );
        assert_eq!(
            d.feed_within(second, 64 * 1024, &mut collect),
            Ok(Decoded::Done)
        );
        assert!(out == [&big[..], b"after"].concat(), "{algorithm:?}");
        assert!(d.is_at_boundary());
    }
}

/// A consumer that stops during a resumed step stops the decoder for good, as in one call.
#[test]
fn a_consumer_that_stops_while_resuming_stops_the_decoder() {
    let big = vec![7u8; 500_000];
    let wire = mysql_frame(Algorithm::Zlib, 0, &big, 3);
    let mut d = Decompressor::new(Algorithm::Zlib);
    let keep = |_: &[u8]| ControlFlow::Continue(());
    assert_eq!(d.feed_within(&wire, 1, keep), Ok(Decoded::More));
    let stop = |_: &[u8]| ControlFlow::Break(());
    assert_eq!(d.resume(1, stop), Ok(Decoded::Stopped));
    assert!(!d.is_behind());
    assert_eq!(d.resume(1, keep), Ok(Decoded::Stopped));
}

#[test]
fn sequence_ids_are_read_from_every_header() {
    let wire = [stored_frame(0, b"ab"), stored_frame(1, b"cd")].concat();
    let mut d = Decompressor::new(Algorithm::Zlib);
    assert!(d
        .feed(&wire, |_| ControlFlow::Continue(()))
        .unwrap()
        .is_continue());
    assert_eq!(d.last_sequence_id(), Some(1));
}

/// A random packet stream as a peer would send it: small and larger payloads, some
/// compressible text, some noise.
fn packet_stream() -> impl Strategy<Value = Vec<Vec<u8>>> {
    let payload = prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..40),
        (1usize..5000, any::<u8>()).prop_map(|(n, b)| {
            (0..n)
                .map(|i| b.wrapping_add((i % 7) as u8))
                .collect::<Vec<u8>>()
        }),
        proptest::collection::vec(any::<u8>(), 40..3000),
    ];
    proptest::collection::vec(payload, 1..20)
}

fn wire_stream(packets: &[Vec<u8>]) -> Vec<u8> {
    packets
        .iter()
        .enumerate()
        .flat_map(|(i, p)| packet(i as u8, p))
        .collect()
}

/// Cuts `stream` into frame payloads at the given sizes (cycled) and frames each.
fn frames(algorithm: Algorithm, stream: &[u8], sizes: &[usize], level: i32) -> Vec<u8> {
    let mut wire = Vec::new();
    let (mut at, mut i) = (0, 0usize);
    while at < stream.len() {
        let n = sizes[i % sizes.len()].min(stream.len() - at);
        wire.extend(mysql_frame(algorithm, i as u8, &stream[at..at + n], level));
        at += n;
        i += 1;
    }
    wire
}

fn cut(wire: &[u8], points: &[usize]) -> Vec<Vec<u8>> {
    let mut points: Vec<usize> = points.iter().map(|p| p % (wire.len() + 1)).collect();
    points.sort_unstable();
    points.dedup();
    let mut out = Vec::new();
    let mut last = 0;
    for p in points.into_iter().chain([wire.len()]) {
        out.push(wire[last..p].to_vec());
        last = p;
    }
    out
}

fn packets_of(stream: &[u8]) -> Vec<(u8, Vec<u8>)> {
    let mut out = Vec::new();
    let _ = Deframer::new(usize::MAX).feed(stream, |p| {
        out.push((p.seq, p.head.to_vec()));
        ControlFlow::Continue(())
    });
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn zstd_random_streams_decode_to_the_same_packets(
        packets in packet_stream(),
        sizes in proptest::collection::vec(1usize..9000, 1..6),
        cuts in proptest::collection::vec(any::<usize>(), 0..12),
        level in 1i32..6,
        budget in 0usize..70_000,
    ) {
        let stream = wire_stream(&packets);
        let wire = frames(Algorithm::Zstd, &stream, &sizes, level);
        let chunks = cut(&wire, &cuts);
        let chunks: Vec<&[u8]> = chunks.iter().map(Vec::as_slice).collect();
        let decoded = decode(Algorithm::Zstd, &chunks).expect("decodes");
        prop_assert!(decoded == stream);
        prop_assert!(decode_in_steps(Algorithm::Zstd, &chunks, budget).expect("decodes") == stream);
        let expected: Vec<(u8, Vec<u8>)> =
            packets.iter().enumerate().map(|(i, p)| (i as u8, p.clone())).collect();
        prop_assert_eq!(packets_of(&decoded), expected);
    }

    #[test]
    fn zlib_random_streams_decode_to_the_same_packets(
        packets in packet_stream(),
        sizes in proptest::collection::vec(1usize..9000, 1..6),
        cuts in proptest::collection::vec(any::<usize>(), 0..12),
        budget in 0usize..70_000,
    ) {
        let stream = wire_stream(&packets);
        let wire = frames(Algorithm::Zlib, &stream, &sizes, 0);
        let chunks = cut(&wire, &cuts);
        let chunks: Vec<&[u8]> = chunks.iter().map(Vec::as_slice).collect();
        prop_assert!(decode(Algorithm::Zlib, &chunks).expect("decodes") == stream);
        prop_assert!(decode_in_steps(Algorithm::Zlib, &chunks, budget).expect("decodes") == stream);
    }

    #[test]
    fn any_bytes_never_panic(
        algorithm in prop_oneof![Just(Algorithm::Zlib), Just(Algorithm::Zstd)],
        bytes in proptest::collection::vec(any::<u8>(), 0..4000),
        cuts in proptest::collection::vec(any::<usize>(), 0..8),
    ) {
        let mut d = Decompressor::new(algorithm);
        for c in cut(&bytes, &cuts) {
            let _ = d.feed(&c, |p| {
                assert!(p.len() <= OUTPUT_CHUNK);
                ControlFlow::Continue(())
            });
        }
    }
}
