//! Targets for the byte-level parsers: the packet de-framer, the handshake and command
//! parsers, and the compressed-protocol decoder.

use std::ops::ControlFlow;

use psprobe_core::protocol::{
    binary_value, cleartext_plugin, count_connect_attrs, execute_header, is_eof,
    is_rows_terminator, parse_change_user, parse_client_hello, parse_eof_status, parse_err_code,
    parse_greeting, parse_ok, query_text, server_asks_for_cleartext, statement_id,
    terminator_status, Algorithm, Capabilities, Decoded, Decompressor, Deframer, PacketView,
    ResponseShape,
};
use psprobe_core::session::{ResponseReader, Step, CLIENT_CAPTURE_LIMIT, SERVER_CAPTURE_LIMIT};

use super::input::{chunks, poll_once, Input, Pieces};
use crate::proxy::packet_io::{Got, PacketBuf, MAX_HANDSHAKE_PACKET};

/// Capture limits worth trying: none, tiny, the session's two, and a page.
const CAPTURE_LIMITS: [usize; 6] = [0, 1, 7, SERVER_CAPTURE_LIMIT, 4096, CLIENT_CAPTURE_LIMIT];

type Packet = (u8, usize, Vec<u8>);

fn deframe(capture: usize, pieces: &[&[u8]]) -> (Vec<Packet>, bool) {
    let mut d = Deframer::new(capture);
    let mut got = Vec::new();
    for piece in pieces {
        let _ = d.feed(piece, |p| {
            assert_eq!(
                p.head.len(),
                p.len.min(capture),
                "head is the captured prefix"
            );
            assert_eq!(p.is_whole(), p.len <= capture);
            got.push((p.seq, p.len, p.head.to_vec()));
            ControlFlow::Continue(())
        });
    }
    (got, d.is_at_boundary())
}

/// The de-framer: the same packets whatever the chunk boundaries, and a break consumes
/// exactly the bytes of the packets delivered.
pub(super) fn frame(data: &[u8]) {
    let mut input = Input::new(data);
    let capture = CAPTURE_LIMITS[usize::from(input.byte()) % CAPTURE_LIMITS.len()];
    let stop_after = usize::from(input.byte());
    let cuts = input.cuts();
    let stream = input.rest();

    let whole = deframe(capture, &[stream]);
    let split = deframe(capture, &chunks(stream, &cuts));
    assert_eq!(whole, split, "chunk boundaries changed the packets");

    // Break on packet `stop_after`: the bytes consumed are those packets' wire bytes.
    let mut seen = 0;
    let mut wire = 0u64;
    let (flow, used) = Deframer::new(capture).feed_counted(stream, |p| {
        seen += 1;
        wire += p.wire_len();
        if seen > stop_after {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    });
    if flow.is_break() {
        assert_eq!(used as u64, wire, "a break consumes the packets delivered");
    } else {
        assert_eq!(used, stream.len());
    }
}

/// Reads connection-phase packets the way the proxy's handshake does, from a reader that
/// hands out `pieces`.
fn read_handshake_packets(pieces: &[&[u8]]) {
    let mut reader = Pieces::new(pieces);
    loop {
        let mut packet = PacketBuf::default();
        let got = poll_once(packet.read_packet(&mut reader)).expect("an in-memory read");
        assert!(packet.bytes().len() <= 4 + MAX_HANDSHAKE_PACKET);
        if got != Got::Packet {
            return;
        }
        let _ = parse_greeting(packet.payload());
        let _ = parse_client_hello(packet.payload());
    }
}

/// The handshake parsers (greeting, handshake response, change-user, connect attributes,
/// auth switch) on one payload, and the proxy's connection-phase packet reader on the stream.
pub(super) fn handshake(data: &[u8]) {
    let mut input = Input::new(data);
    let caps = input.u64();
    let cuts = input.cuts();
    let payload = input.rest();
    if let Ok((rest, g)) = parse_greeting(payload) {
        assert!(rest.len() <= payload.len());
        let _ = Capabilities(g.capabilities & caps).has_metadata_flag();
    }
    if let Ok((_, psprobe_core::protocol::ClientHello::Response(r))) = parse_client_hello(payload) {
        if let Some(attrs) = r.connect_attrs {
            let _ = count_connect_attrs(attrs);
        }
    }
    let _ = parse_change_user(payload, caps);
    let _ = count_connect_attrs(payload);
    let _ = server_asks_for_cleartext(payload);
    let _ = cleartext_plugin(payload);
    read_handshake_packets(&chunks(payload, &cuts));
}

const SHAPES: [ResponseShape; 9] = [
    ResponseShape::None,
    ResponseShape::Simple,
    ResponseShape::Text,
    ResponseShape::Query,
    ResponseShape::Prepare,
    ResponseShape::Fetch,
    ResponseShape::FieldList,
    ResponseShape::Auth,
    ResponseShape::Stream,
];

/// The command parsers (query text with attributes, binary values, execute header) on one
/// body, and a response reader of a chosen shape on a sequence of server packets.
pub(super) fn command(data: &[u8]) {
    let mut input = Input::new(data);
    let column_type = input.byte();
    let shape = SHAPES[usize::from(input.byte()) % SHAPES.len()];
    let caps = Capabilities(input.u64());
    let body_len = usize::from(input.u16());
    let body = input.take(body_len);
    for attributes in [false, true] {
        if let Ok((_, sql)) = query_text(body, attributes) {
            assert!(sql.len() <= body.len());
        }
    }
    let _ = binary_value(body, column_type);
    let _ = execute_header(body);
    let _ = statement_id(body);
    let _ = parse_ok(body);
    let _ = parse_err_code(body);
    let _ = parse_eof_status(body);

    // The response: packets of a 1-byte length each, as the de-framer would hand them over
    // (a length byte of 0xFF stands for a long packet of which only the head was captured).
    let mut reader = ResponseReader::new(shape);
    let mut rest = Input::new(input.rest());
    while !rest.is_empty() {
        let n = rest.byte();
        let head = rest.take(usize::from(n));
        let len = if n == 0xFF { 0xFF_FFFF + 7 } else { head.len() };
        let p = PacketView { seq: 1, len, head };
        let _ = is_eof(&p);
        let deprecate_eof = caps.has(psprobe_core::protocol::CLIENT_DEPRECATE_EOF);
        if is_rows_terminator(&p, deprecate_eof) {
            let _ = terminator_status(p.head, deprecate_eof);
        }
        if reader.takes_client_packets() && n % 2 == 1 {
            reader.on_client_packet(&p);
            continue;
        }
        match reader.on_server_packet(&p, caps) {
            Step::Done | Step::Invalid(_) => return,
            Step::Prepared { done: true, .. } => return,
            Step::More | Step::Prepared { .. } => {}
        }
    }
    let _ = reader.outcome();
}

/// Decodes `pieces` in order, each with a decode budget of `budget` bytes a call (resumed
/// until it is decoded, as the relay does between turns).
fn decompress(algorithm: Algorithm, pieces: &[&[u8]], budget: usize) -> (Vec<u8>, bool, bool) {
    let mut d = Decompressor::new(algorithm);
    let mut out = Vec::new();
    let mut failed = false;
    for piece in pieces {
        let mut collect = |plain: &[u8]| {
            out.extend_from_slice(plain);
            ControlFlow::Continue(())
        };
        let mut step = d.feed_within(piece, budget, &mut collect);
        while step == Ok(Decoded::More) {
            step = d.resume(budget, &mut collect);
        }
        if !matches!(step, Ok(Decoded::Done)) {
            failed = true;
            break;
        }
    }
    (out, failed, d.is_at_boundary())
}

/// The compressed-protocol decoder (zlib or zstd frames): what it emits and whether it fails
/// does not depend on the chunk boundaries or on a decode budget, and it never emits more than
/// the frames declare.
pub(super) fn compress(data: &[u8]) {
    let mut input = Input::new(data);
    let algorithm = if input.byte() % 2 == 0 {
        Algorithm::Zlib
    } else {
        Algorithm::Zstd
    };
    // 1 to 16 KiB decoded bytes a step; the whole stream is decoded without a budget.
    let budget = 1 + usize::from(input.byte()) * 64;
    let cuts = input.cuts();
    let stream = input.rest();
    let whole = decompress(algorithm, &[stream], usize::MAX);
    let split = decompress(algorithm, &chunks(stream, &cuts), budget);
    // A failure stops at once, so what was emitted before it may differ by a chunk's worth;
    // success and the bytes of a stream that decodes must not.
    assert_eq!(
        whole.1, split.1,
        "chunk boundaries changed whether the stream decodes"
    );
    if !whole.1 {
        assert_eq!(
            whole.0, split.0,
            "chunk boundaries changed the decoded bytes"
        );
        assert_eq!(whole.2, split.2);
    }
}
