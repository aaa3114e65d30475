//! Session state machine over byte streams built by `test_bytes`. Every scenario is replayed
//! in one chunk per step, in 1-byte chunks and in random chunkings: all must agree.

#[path = "test_bytes.rs"]
mod test_bytes;

use std::time::{Duration, Instant};

use proptest::prelude::*;

use super::Outcome::{Aborted, Error, NoResponse, Ok as Fine, Rows, Unobserved};
use super::UnobservedReason::{MalformedPacket, UnexpectedPacket, UnsupportedProtocol};
use super::*;
use crate::protocol::command::CURSOR_TYPE_READ_ONLY;
use crate::protocol::handshake::*;
use crate::protocol::CommandKind as K;
use crate::protocol::MAX_PACKET_PAYLOAD;
use test_bytes::{Step, *};

const AC: u16 = SERVER_STATUS_AUTOCOMMIT;
const MORE: u16 = SERVER_MORE_RESULTS_EXISTS;
const CURSOR: u16 = SERVER_STATUS_CURSOR_EXISTS;
/// Step `i` of a scenario is fed at `base + i * STEP`.
const STEP: Duration = Duration::from_millis(10);

/// Owned copy of `Statement`.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Stmt {
    None,
    Text(Vec<u8>, bool),
    Prepared(u32, Option<Vec<u8>>),
}

fn text(sql: &str) -> Stmt {
    Stmt::Text(sql.as_bytes().to_vec(), false)
}

fn prepared(id: u32, sql: Option<&str>) -> Stmt {
    Stmt::Prepared(id, sql.map(|s| s.as_bytes().to_vec()))
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Ev {
    Started(u64, CommandKind, Stmt, Instant),
    Finished(CommandFinished),
    Unobserved(UnobservedReason),
    Authenticated(bool),
}

#[derive(Debug, Default)]
struct Recorder(Vec<Ev>);

impl EventSink for Recorder {
    fn command_started(&mut self, e: &CommandStarted<'_>) {
        let stmt = match e.statement {
            Statement::None => Stmt::None,
            Statement::Text { sql, truncated } => Stmt::Text(sql.to_vec(), truncated),
            Statement::Prepared { id, sql } => Stmt::Prepared(id, sql.map(<[u8]>::to_vec)),
        };
        self.0.push(Ev::Started(e.seq, e.kind, stmt, e.at));
    }
    fn command_finished(&mut self, e: &CommandFinished) {
        self.0.push(Ev::Finished(*e));
    }
    fn unobserved(&mut self, reason: UnobservedReason) {
        self.0.push(Ev::Unobserved(reason));
    }
    fn authenticated(&mut self, ok: bool) {
        self.0.push(Ev::Authenticated(ok));
    }
}

/// The recorded events of one variant, mapped: `pick!(rec, Ev::Finished(f) => f.rows)`.
macro_rules! pick {
    ($rec:expr, $pat:pat => $out:expr) => {
        $rec.0
            .iter()
            .filter_map(|e| match e {
                $pat => Some($out),
                _ => None,
            })
            .collect::<Vec<_>>()
    };
}

fn started(rec: &Recorder) -> Vec<(u64, CommandKind, Stmt)> {
    pick!(rec, Ev::Started(seq, kind, stmt, _) => (*seq, *kind, stmt.clone()))
}

fn finished(rec: &Recorder) -> Vec<CommandFinished> {
    pick!(rec, Ev::Finished(f) => *f)
}

/// (kind, outcome, rows, affected rows) of every finished command.
fn summary(rec: &Recorder) -> Vec<(CommandKind, Outcome, u64, u64)> {
    pick!(rec, Ev::Finished(f) => (f.kind, f.outcome, f.rows, f.affected_rows))
}

struct Run {
    session: Session,
    rec: Recorder,
}

/// Feeds step `i` at `base + i * STEP`, cut into chunks of `next(bytes left)` bytes.
fn play(steps: &[Step], base: Instant, mut next: impl FnMut(usize) -> usize) -> Run {
    let mut session = Session::new(base);
    let mut rec = Recorder::default();
    for (i, (dir, bytes)) in steps.iter().enumerate() {
        let now = base + STEP * i as u32;
        let mut rest = &bytes[..];
        while !rest.is_empty() {
            let (chunk, tail) = rest.split_at(next(rest.len()).clamp(1, rest.len()));
            match dir {
                Dir::Client => session.on_client_bytes(chunk, now, &mut rec),
                Dir::Server => session.on_server_bytes(chunk, now, &mut rec),
            }
            rest = tail;
        }
    }
    Run { session, rec }
}

/// xorshift64 chunk sizes: mostly tiny, sometimes large.
fn chunker(seed: u64) -> impl FnMut(usize) -> usize {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    move |left| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let r = (x >> 8) as usize;
        [1 + r % 5, 1 + r % 5, 1 + r % 100, 1 + r % 70_000, left][(x % 5) as usize]
    }
}

/// Replays a scenario whole, byte by byte and in random chunks; asserts they all agree and
/// returns the whole-chunk run.
fn replay(steps: &[Step]) -> Run {
    let base = Instant::now();
    let whole = play(steps, base, |n| n);
    let mut others = vec![("1-byte", play(steps, base, |_| 1))];
    others.extend((1..=3).map(|seed| ("random", play(steps, base, chunker(seed)))));
    for (name, run) in others {
        assert_eq!(run.rec.0, whole.rec.0, "{name} chunks: events differ");
        assert_eq!(run.session.phase(), whole.session.phase(), "{name} chunks");
        assert_eq!(run.session.capabilities(), whole.session.capabilities());
        let (a, b) = (
            run.session.prepared_statements(),
            whole.session.prepared_statements(),
        );
        assert_eq!(a.len(), b.len(), "{name} chunks");
    }
    whole
}

/// Expected report of a command at seq 0 answered one step after it was sent.
fn fin(kind: CommandKind, outcome: Outcome, request: &[u8], response: &[u8]) -> CommandFinished {
    CommandFinished {
        seq: 0,
        kind,
        outcome,
        rows: 0,
        affected_rows: 0,
        request_bytes: request.len() as u64,
        response_bytes: response.len() as u64,
        latency: Some(STEP),
    }
}

// ---------------------------------------------------------------- connection phase

#[test]
fn mysql8_handshake_negotiates_the_intersection() {
    let client = BASE_CLIENT_CAPS | CLIENT_DEPRECATE_EOF | CLIENT_QUERY_ATTRIBUTES;
    let steps = login(mysql8_greeting(), client);
    assert_eq!(replay(&steps[..1]).session.phase(), Phase::AwaitClientHello);
    let hello = replay(&steps[..2]);
    assert_eq!(hello.session.phase(), Phase::Authenticating);
    let caps = hello.session.capabilities();
    assert_eq!(caps, Capabilities(client & MYSQL8_SERVER_CAPS));
    assert!(caps.has(CLIENT_DEPRECATE_EOF | CLIENT_QUERY_ATTRIBUTES) && hello.rec.0.is_empty());
    let run = replay(&steps);
    assert_eq!(run.session.phase(), Phase::Command);
    assert_eq!(run.rec.0, [Ev::Authenticated(true)]);
}

#[test]
fn mariadb_extended_capabilities_are_negotiated() {
    let g = mariadb_greeting();
    let greeting = parse_greeting(&g).unwrap().1;
    assert_eq!(greeting.capabilities, MARIADB_SERVER_CAPS);
    assert_eq!(greeting.server_version, b"5.5.5-10.11.6-MariaDB-log");
    assert_eq!(greeting.auth_plugin, Some(&b"mysql_native_password"[..]));

    let client = MARIADB_CLIENT_CAPS | CLIENT_DEPRECATE_EOF;
    let caps = replay(&login(g.clone(), client)).session.capabilities();
    assert_eq!(caps, Capabilities(client & MARIADB_SERVER_CAPS));
    assert!(caps.has(MARIADB_CLIENT_CACHE_METADATA | MARIADB_CLIENT_PROGRESS));
    assert!(caps.has(MARIADB_CLIENT_STMT_BULK_OPERATIONS) && caps.has_metadata_flag());
    assert!(!caps.has(CLIENT_MYSQL));
    // A MySQL-flavoured client (bit 0 set) announces no extended capabilities, and a MySQL
    // server's reserved bytes are none either.
    let pairs = [
        (g, BASE_CLIENT_CAPS),
        (mysql8_greeting(), MARIADB_CLIENT_CAPS),
    ];
    for (g, client) in pairs {
        let caps = replay(&login(g, client)).session.capabilities();
        assert_eq!((caps.0 >> 32, caps.has_metadata_flag()), (0, false));
    }
}

fn hello_response(payload: &[u8]) -> HandshakeResponse<'_> {
    match parse_client_hello(payload) {
        Ok(([], ClientHello::Response(r))) => r,
        other => panic!("not a HandshakeResponse41: {other:?}"),
    }
}

#[test]
fn client_hello_fields_and_connect_attrs() {
    let caps = BASE_CLIENT_CAPS | CLIENT_CONNECT_WITH_DB;
    let auth = [7u8; 300]; // a 3-byte length-encoded length
    let payload = handshake_response(
        caps,
        &Hello {
            auth: &auth,
            ..HELLO
        },
    );
    let r = hello_response(&payload);
    assert_eq!((r.capabilities, r.max_packet_size), (caps, 16 << 20));
    assert_eq!((r.username, r.auth_response), (&b"app"[..], &auth[..]));
    assert_eq!(r.database, Some(&b"shop"[..]));
    assert_eq!(r.auth_plugin, Some(&b"mysql_native_password"[..]));
    assert_eq!(r.connect_attrs, Some(&connect_attrs(HELLO.attrs)[..]));
    assert_eq!(count_connect_attrs(r.connect_attrs.unwrap()), Ok(2));

    // One-byte auth length, no database, no attributes.
    let caps = BASE_CLIENT_CAPS & !(CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA | CLIENT_CONNECT_ATTRS);
    let payload = handshake_response(caps, &HELLO);
    let r = hello_response(&payload);
    assert_eq!(
        (r.auth_response, r.database, r.connect_attrs),
        (HELLO.auth, None, None)
    );
    // MariaDB extended capabilities come from the last 4 filler bytes.
    let payload = handshake_response(MARIADB_CLIENT_CAPS, &HELLO);
    assert_eq!(hello_response(&payload).capabilities, MARIADB_CLIENT_CAPS);

    let ssl = ssl_request(BASE_CLIENT_CAPS);
    let capabilities = BASE_CLIENT_CAPS | CLIENT_SSL;
    let expected = ClientHello::SslRequest { capabilities };
    assert_eq!(parse_client_hello(&ssl).unwrap().1, expected);
    assert!(
        parse_client_hello(b"\x85\x00\xff\xff\xffroot\0").is_err(),
        "3.20"
    );
    assert_eq!(count_connect_attrs(b""), Ok(0));
    assert!(count_connect_attrs(&lenenc_str(b"key-without-value")).is_err());
    assert!(count_connect_attrs(b"\x05ab").is_err());
}

#[test]
fn auth_switch_request_is_not_an_eof() {
    let switch = auth_switch("mysql_native_password", b"0123456789abcdefghij\0");
    for switch in [switch, vec![0xFE]] {
        let mut steps = login(mysql8_greeting(), BASE_CLIENT_CAPS);
        steps[2] = s(packet(2, &switch));
        steps.push(c(packet(3, &[0x03; 20]))); // auth data that looks like COM_QUERY
        steps.push(s(packet(4, &ok(0, AC))));
        steps.extend(exchange(&ping(), &[ok(0, AC)]));
        let run = replay(&steps);
        assert_eq!(run.rec.0[0], Ev::Authenticated(true));
        assert_eq!(started(&run.rec), [(0, K::Ping, Stmt::None)]);
        assert_eq!(summary(&run.rec), [(K::Ping, Fine, 0, 0)]);
    }
}

#[test]
fn auth_more_data_then_ok() {
    let key = b"\x01-----BEGIN PUBLIC KEY-----\nMIIBIjAN\n-----END PUBLIC KEY-----\n";
    let full = vec![
        s(packet(2, &[0x01, 0x04])), // caching_sha2: perform full authentication
        c(packet(3, &[0x02])),       // request the public key
        s(packet(4, key)),
        c(packet(5, &[0xAB; 256])),
        s(packet(6, &ok(0, AC))),
    ];
    let fast = vec![s(packet(2, &[0x01, 0x03])), s(packet(3, &ok(0, AC)))];
    for tail in [full, fast] {
        let mut steps = login(mysql8_greeting(), BASE_CLIENT_CAPS);
        steps.pop();
        steps.extend(tail);
        let run = replay(&steps);
        assert_eq!(run.rec.0, [Ev::Authenticated(true)]);
        assert_eq!(run.session.phase(), Phase::Command);
    }
}

#[test]
fn refused_logins_close_the_session() {
    let mut steps = login(mysql8_greeting(), BASE_CLIENT_CAPS);
    steps[2] = s(packet(2, &err(1045, "Access denied for user 'app'")));
    steps.push(c(packet(0, &com_query("select 1"))));
    let hello = handshake_response(BASE_CLIENT_CAPS, &HELLO);
    let refused = err(1040, "Too many connections");
    let refused_greeting = vec![s(packet(0, &refused)), c(packet(1, &hello))];
    for steps in [steps, refused_greeting] {
        let run = replay(&steps);
        assert_eq!(run.rec.0, [Ev::Authenticated(false)]);
        assert_eq!(run.session.phase(), Phase::Closed);
        assert!(!run.session.is_observing());
    }
}

#[test]
fn tls_not_terminated_is_left_unobserved_compression_is_decoded() {
    let tls = [
        s(packet(0, &mysql8_greeting())),
        c(packet(1, &ssl_request(BASE_CLIENT_CAPS))),
        c(vec![0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xFC]),
        s(vec![0x16, 0x03, 0x03, 0x00, 0x7A, 0x02]),
    ];
    let run = replay(&tls);
    assert_eq!(run.rec.0, [Ev::Unobserved(UnobservedReason::Tls)]);
    assert_eq!(run.session.phase(), Phase::Unobserved);

    // A compressed connection is decoded (more in transport_tests.rs).
    let mut steps = login(mysql8_greeting(), BASE_CLIENT_CAPS | CLIENT_COMPRESS);
    steps.push(c(vec![0x0D, 0, 0, 0, 0, 0, 0, 0x09, 0, 0, 0, 0x03, b's']));
    let run = replay(&steps);
    assert_eq!(run.rec.0, [Ev::Authenticated(true)]);
    assert!(run.session.is_observing());

    // Only the client asks for compression: nothing is compressed.
    let caps = MYSQL8_SERVER_CAPS & !CLIENT_COMPRESS;
    let mut steps = login(
        greeting("8.0.36", caps, "sha256_password"),
        BASE_CLIENT_CAPS,
    );
    steps[1] = c(packet(
        1,
        &handshake_response(BASE_CLIENT_CAPS | CLIENT_COMPRESS, &HELLO),
    ));
    steps.extend(exchange(&ping(), &[ok(0, AC)]));
    assert_eq!(summary(&replay(&steps).rec), [(K::Ping, Fine, 0, 0)]);
}

#[test]
fn unsupported_protocols_and_talking_first() {
    let greeting = s(packet(0, &mysql8_greeting()));
    let old_client = c(packet(1, b"\x85\x00\xff\xff\xffroot\0abcdefgh"));
    let mut v9 = mysql8_greeting();
    v9[0] = 9;
    let cases = [
        (vec![greeting, old_client], UnsupportedProtocol),
        (vec![s(packet(0, &v9))], UnsupportedProtocol),
        (vec![c(packet(0, b"hello"))], UnexpectedPacket),
    ];
    for (steps, reason) in cases {
        let run = replay(&steps);
        assert_eq!(run.rec.0, [Ev::Unobserved(reason)]);
        assert_eq!(run.session.phase(), Phase::Unobserved);
    }
}

// ---------------------------------------------------------------- commands

#[test]
fn query_ok_with_affected_rows() {
    for d in [false, true] {
        let (mut steps, _) = mysql(d);
        let sql = "update t set a = 1 where b < 3";
        let (q, r) = (packet(0, &com_query(sql)), packet(1, &ok(3, AC)));
        steps.extend([c(q.clone()), s(r.clone())]);
        let run = replay(&steps);
        assert_eq!(started(&run.rec), [(0, K::Query, text(sql))]);
        let mut expected = fin(K::Query, Fine, &q, &r);
        expected.affected_rows = 3;
        assert_eq!(finished(&run.rec), [expected]);
    }
}

#[test]
fn text_result_sets_with_and_without_eof() {
    for d in [false, true] {
        let (mut steps, f) = mysql(d);
        let rows = [
            text_row(&[Some(b"1"), None]),
            text_row(&[Some(b""), Some(b"")]), // 00 00: looks like the start of an OK
            text_row(&[None, Some(b"x")]),
        ];
        let q = packet(0, &com_query("select a, b from t"));
        let r = packets(1, &f.result_set(&["a", "b"], &rows, AC));
        steps.extend([c(q.clone()), s(r.clone())]);
        let mut expected = fin(K::Query, Rows, &q, &r);
        expected.rows = 3;
        assert_eq!(
            finished(&replay(&steps).rec),
            [expected],
            "deprecate_eof={d}"
        );
    }
}

#[test]
fn multiple_results_are_one_command() {
    for d in [false, true] {
        let (mut steps, f) = mysql(d);
        let mut multi = f.result_set(&["1"], &[row("1")], AC | MORE);
        multi.extend(f.result_set(&["2", "3"], &[row("2"), row("3")], AC | MORE));
        multi.push(ok(2, AC));
        steps.extend(query("select 1; select 2, 3; update t", &multi));
        let mut call = f.result_set(&["x"], &[row("1"), row("2"), row("3")], AC | MORE);
        call.push(ok(0, AC));
        steps.extend(query("call p()", &call));
        steps.extend(query("update a; update b", &[ok(1, AC | MORE), ok(4, AC)]));
        let expected = [
            (K::Query, Rows, 3, 2),
            (K::Query, Rows, 3, 0),
            (K::Query, Fine, 0, 5),
        ];
        assert_eq!(summary(&replay(&steps).rec), expected, "deprecate_eof={d}");
    }
}

#[test]
fn a_row_of_16_mib_starting_with_fe_is_a_row() {
    let big = vec![b'x'; 1 << 24];
    let huge = text_row(&[Some(&big[..])]);
    assert!(huge[0] == 0xFE && huge.len() > MAX_PACKET_PAYLOAD);
    for d in [false, true] {
        let (mut steps, f) = mysql(d);
        let response = f.result_set(&["blob"], &[huge.clone(), row("small")], AC);
        steps.extend(query("select blob from t", &response));
        let expected = [(K::Query, Rows, 2, 0)];
        assert_eq!(summary(&replay(&steps).rec), expected, "deprecate_eof={d}");
    }
}

#[test]
fn long_runs_of_rows_are_counted_exactly_in_any_chunking() {
    // Rows are counted in bulk while whole ones sit in a chunk; packets that may not be rows
    // (0xFE, 0xFF) and rows cut by a chunk go the packet-by-packet way. Each must give the
    // same count and bytes, whatever the chunking (replay compares them).
    for d in [false, true] {
        let (mut steps, f) = mysql(d);
        let mut rows: Vec<Vec<u8>> = (0..700)
            .map(|i| match i % 7 {
                0 => text_row(&[None, Some(b"x")]), // starts with 0xFB (NULL)
                1 => text_row(&[Some(b""), Some(b"")]),
                _ => text_row(&[Some(&vec![b'7'; i % 300]), None]),
            })
            .collect();
        if !d {
            // Without DEPRECATE_EOF a 0xFE packet of 9+ bytes is a row: read, not skipped.
            rows.insert(350, [&[0xFE][..], &[b'y'; 20][..]].concat());
        }
        let expected_rows = rows.len() as u64;
        let q = packet(0, &com_query("select a, b from t"));
        // Two result sets in one response; the second is cut by an ERR after its rows.
        let mut payloads = f.result_set(&["a", "b"], &rows, AC | MORE);
        payloads.extend(f.result_set(&["c"], &[row("1"), row("2")], AC));
        *payloads.last_mut().unwrap() = err(1317, "Query execution was interrupted");
        let response = packets(1, &payloads);
        steps.extend([c(q.clone()), s(response.clone())]);
        let run = replay(&steps);
        let got = finished(&run.rec);
        assert_eq!(got.len(), 1, "deprecate_eof={d}");
        assert_eq!(got[0].outcome, Error(1317), "deprecate_eof={d}");
        assert_eq!(got[0].rows, expected_rows + 2, "deprecate_eof={d}");
        assert_eq!(
            got[0].response_bytes,
            response.len() as u64,
            "deprecate_eof={d}"
        );
        assert_eq!(got[0].request_bytes, q.len() as u64, "deprecate_eof={d}");
    }
}

#[test]
fn err_in_the_middle_of_rows() {
    for d in [false, true] {
        let (mut steps, f) = mysql(d);
        let mut response = f.result_set(&["a"], &[row("1"), row("2")], AC);
        *response.last_mut().unwrap() = err(1317, "Query execution was interrupted");
        steps.extend(query("select a from t", &response));
        assert_eq!(
            summary(&replay(&steps).rec),
            [(K::Query, Error(1317), 2, 0)]
        );
    }
}

#[test]
fn mariadb_progress_reports_do_not_end_a_command() {
    for d in [false, true] {
        let (mut steps, f) = mariadb(d);
        let alter = [
            progress_report(1, 2, 250),
            progress_report(2, 2, 900),
            ok(0, AC),
        ];
        steps.extend(query("alter table t engine = InnoDB", &alter));
        let mut select = vec![progress_report(1, 1, 500)];
        select.extend(f.result_set(&["c"], &[row("7")], AC));
        steps.extend(query("select count(*) from t", &select));
        let expected = [(K::Query, Fine, 0, 0), (K::Query, Rows, 1, 0)];
        assert_eq!(summary(&replay(&steps).rec), expected);
    }
}

#[test]
fn load_data_local_infile_is_one_command() {
    let (mut steps, _) = mysql(true);
    let sql = "LOAD DATA LOCAL INFILE '/tmp/t.csv' INTO TABLE t";
    let q = packet(0, &com_query(sql));
    let request = packet(1, b"\xFB/tmp/t.csv");
    let file = [
        packet(2, b"\x03select 1\n"),
        packet(3, b"2,b\n"),
        packet(4, b""),
    ]
    .concat();
    let done = packet(5, &ok(3, AC));
    steps.extend([
        c(q.clone()),
        s(request.clone()),
        c(file.clone()),
        s(done.clone()),
    ]);
    steps.extend(exchange(&ping(), &[ok(0, AC)]));
    let run = replay(&steps);
    assert_eq!(
        started(&run.rec),
        [(0, K::Query, text(sql)), (1, K::Ping, Stmt::None)]
    );
    let mut expected = fin(
        K::Query,
        Fine,
        &[q, file].concat(),
        &[request, done].concat(),
    );
    (expected.affected_rows, expected.latency) = (3, Some(STEP * 3));
    assert_eq!(finished(&run.rec)[0], expected);
    assert_eq!(finished(&run.rec)[1].kind, K::Ping);
}

#[test]
fn prepare_then_execute_resolves_the_text() {
    for d in [false, true] {
        let (mut steps, f) = mysql(d);
        let sql = "select a, b from t where id = ?";
        let prep = packet(0, &prepare(sql));
        let prep_r = packets(1, &f.prepare_response(7, &["a", "b"], 1));
        let exec = packet(0, &com_stmt_execute(7, 0));
        // Binary rows start with 0x00 and can be as short as an OK packet.
        let rows = [
            binary_row(&[Some(b"1"), None]),
            binary_row(&[Some(b""), Some(b"")]),
        ];
        let exec_r = packets(1, &f.result_set(&["a", "b"], &rows, AC));
        steps.extend([
            c(prep.clone()),
            s(prep_r.clone()),
            c(exec.clone()),
            s(exec_r.clone()),
        ]);
        steps.extend(f.prep("insert into t values (?, ?)", 8, &[], 2));
        steps.extend(f.prep("do 1", 9, &[], 0));
        let run = replay(&steps);
        let execute = (1, K::StmtExecute, prepared(7, Some(sql)));
        assert_eq!(
            started(&run.rec)[..2],
            [(0, K::StmtPrepare, text(sql)), execute]
        );
        let done = finished(&run.rec);
        assert_eq!(done[0], fin(K::StmtPrepare, Fine, &prep, &prep_r));
        let mut expected = fin(K::StmtExecute, Rows, &exec, &exec_r);
        (expected.seq, expected.rows) = (1, 2);
        assert_eq!(done[1], expected);
        assert_eq!(summary(&run.rec)[2..], [(K::StmtPrepare, Fine, 0, 0); 2]);
        let statements = run.session.prepared_statements();
        assert_eq!(
            (statements.len(), statements.get(7)),
            (3, Some(sql.as_bytes()))
        );
    }
}

#[test]
fn mariadb_execute_with_id_minus_one_is_the_last_prepared() {
    let (mut steps, f) = mariadb(true);
    let sql = "select ? + 1";
    steps.extend(f.prep(sql, 3, &["x"], 1));
    let result = f.result_set(&["x"], &[binary_row(&[Some(b"43")])], AC);
    steps.extend(exchange(&com_stmt_execute(LAST_PREPARED_ID, 0), &result));
    steps.push(c(packet(0, &com_stmt(0x19, LAST_PREPARED_ID, b""))));
    let run = replay(&steps);
    let text = prepared(3, Some(sql));
    let expected = [(1, K::StmtExecute, text.clone()), (2, K::StmtClose, text)];
    assert_eq!(started(&run.rec)[1..], expected);
    assert_eq!(summary(&run.rec)[1], (K::StmtExecute, Rows, 1, 0));
    assert!(run.session.prepared_statements().is_empty());
}

#[test]
fn mariadb_pipelined_prepare_and_execute_minus_one() {
    // MariaDB's statement id 0xFFFFFFFF exists for exactly this pipelining
    // (mariadb_stmt_execute_direct): PREPARE and EXECUTE(-1) leave before any response.
    let (mut steps, f) = mariadb(true);
    steps.extend(f.prep("select 1", 1, &["1"], 0));
    let sql = "select ? + 1";
    let execute = packet(0, &com_stmt_execute(LAST_PREPARED_ID, 0));
    steps.push(c([packet(0, &prepare(sql)), execute].concat()));
    let mut responses = f.prepare_response(2, &["x"], 1);
    responses.extend(f.result_set(&["x"], &[binary_row(&[Some(b"43")])], AC));
    steps.push(s(packets(1, &responses)));
    let stmt = started(&replay(&steps).rec)[2].2.clone();
    let right_text = matches!(&stmt, Stmt::Prepared(_, Some(t)) if t == sql.as_bytes());
    assert!(right_text, "EXECUTE(-1) attributed to {stmt:?}");
}

#[test]
fn execute_minus_one_after_a_truncated_prepare() {
    let (mut steps, f) = mariadb(true);
    steps.extend(f.prep("select 1", 1, &["1"], 0));
    let long_sql = format!("select '{}' + ?", "x".repeat(CLIENT_CAPTURE_LIMIT));
    steps.extend(f.prep(&long_sql, 2, &["x"], 1));
    steps.push(c(packet(0, &com_stmt_execute(LAST_PREPARED_ID, 0))));
    assert_eq!(started(&replay(&steps).rec)[2].2, prepared(2, None));
}

#[test]
fn close_and_send_long_data_have_no_response() {
    let (mut steps, f) = mysql(true);
    steps.extend(f.prep("insert into t values (?)", 7, &[], 1));
    let long_data = packet(0, &com_stmt(0x18, 7, b"\x00\x00long value"));
    let close = packet(0, &com_stmt(0x19, 7, b""));
    steps.push(c([long_data.clone(), close.clone()].concat()));
    let unknown = err(1243, "Unknown prepared statement handler");
    steps.extend(exchange(&com_stmt_execute(7, 0), &[unknown]));
    let run = replay(&steps);
    let done = finished(&run.rec);
    for (i, kind, request) in [
        (1, K::StmtSendLongData, long_data),
        (2, K::StmtClose, close),
    ] {
        let mut expected = fin(kind, NoResponse, &request, &[]);
        (expected.seq, expected.latency) = (i as u64, None);
        assert_eq!(done[i], expected);
    }
    assert_eq!(started(&run.rec)[3], (3, K::StmtExecute, prepared(7, None)));
    assert_eq!(done[3].outcome, Error(1243));
    assert!(run.session.prepared_statements().is_empty());
}

#[test]
fn cursor_execute_and_fetch() {
    for d in [false, true] {
        let (mut steps, f) = mysql(d);
        steps.extend(f.prep("select a from t", 4, &["a"], 0));
        // Column definitions, then EOF (OK under DEPRECATE_EOF) saying a cursor is open.
        let open = [
            column_count(1, None),
            column_def("a"),
            f.end_rows(AC | CURSOR),
        ];
        steps.extend(exchange(&com_stmt_execute(4, CURSOR_TYPE_READ_ONLY), &open));
        let fetch = com_stmt(0x1c, 4, &2u32.to_le_bytes());
        let rows = [
            binary_row(&[Some(b"1")]),
            binary_row(&[None]),
            f.end_rows(AC | CURSOR),
        ];
        steps.extend(exchange(&fetch, &rows));
        steps.extend(exchange(
            &fetch,
            &[f.end_rows(AC | SERVER_STATUS_LAST_ROW_SENT)],
        ));
        let fetched = |rows| (K::StmtFetch, Rows, rows, 0);
        let expected = [(K::StmtExecute, Rows, 0, 0), fetched(2), fetched(0)];
        assert_eq!(
            summary(&replay(&steps).rec)[1..],
            expected,
            "deprecate_eof={d}"
        );
    }
}

#[test]
fn mariadb_metadata_caching_skips_column_definitions() {
    for d in [false, true] {
        let (mut steps, f) = mariadb(d);
        steps.extend(f.prep("select a, b from t", 5, &["a", "b"], 0));
        let brow = binary_row(&[Some(b"1"), None]);
        let full = f.result_set(&["a", "b"], std::slice::from_ref(&brow), AC);
        steps.extend(exchange(&com_stmt_execute(5, 0), &full));
        let cached = f.cached_result_set(2, &[brow.clone(), brow], AC);
        assert_eq!(cached[0], [2, 0]);
        steps.extend(exchange(&com_stmt_execute(5, 0), &cached));
        // Text-protocol result sets carry the metadata byte too.
        steps.extend(query("select 1", &f.result_set(&["1"], &[row("1")], AC)));
        let execute = |rows| (K::StmtExecute, Rows, rows, 0);
        let expected = [execute(1), execute(2), (K::Query, Rows, 1, 0)];
        assert_eq!(
            summary(&replay(&steps).rec)[1..],
            expected,
            "deprecate_eof={d}"
        );
    }
}

#[test]
fn mysql_optional_resultset_metadata() {
    let caps = BASE_CLIENT_CAPS | CLIENT_DEPRECATE_EOF | CLIENT_OPTIONAL_RESULTSET_METADATA;
    let mut steps = login(mysql8_greeting(), caps);
    let f = Flavor {
        deprecate_eof: true,
        metadata_flag: true,
    };
    steps.extend(query("select 1", &f.result_set(&["1"], &[row("1")], AC)));
    let skipped = f.cached_result_set(1, &[row("1"), row("2")], AC);
    steps.extend(query("select 1 union select 2", &skipped));
    // Prepare-OK with metadata_follows = 0: no parameter or column definitions follow.
    let mut none = prepare_ok(1, 1, 1);
    none.push(0);
    steps.extend(exchange(&prepare("select ?"), &[none]));
    let mut full = f.prepare_response(2, &["x"], 1);
    full[0].push(1);
    steps.extend(exchange(&prepare("select ?"), &full));
    steps.extend(exchange(&ping(), &[ok(0, AC)]));
    let outcomes = pick!(replay(&steps).rec, Ev::Finished(f) => (f.outcome, f.rows));
    assert_eq!(
        outcomes,
        [(Rows, 1), (Rows, 2), (Fine, 0), (Fine, 0), (Fine, 0)]
    );
}

#[test]
fn mariadb_bulk_execute() {
    let (mut steps, f) = mariadb(true);
    let sql = "insert into t values (?)";
    steps.extend(f.prep(sql, 9, &[], 1));
    let mut body = 0x80u16.to_le_bytes().to_vec(); // STMT_BULK_FLAG_SEND_TYPES_TO_SERVER
    body.extend_from_slice(&[0xFD, 0x00]);
    for v in [&b"a"[..], b"b", b"c"] {
        body.push(0); // no indicator
        body.extend(lenenc_str(v));
    }
    steps.extend(exchange(&com_stmt(0xFA, 9, &body), &[ok(3, AC)]));
    let run = replay(&steps);
    assert_eq!(
        started(&run.rec)[1],
        (1, K::StmtBulkExecute, prepared(9, Some(sql)))
    );
    assert_eq!(summary(&run.rec)[1], (K::StmtBulkExecute, Fine, 0, 3));
}

#[test]
fn simple_commands() {
    for d in [false, true] {
        let (mut steps, f) = mysql(d);
        let stats = b"Uptime: 3600  Threads: 2  Questions: 10  Slow queries: 0  Opens: 20";
        let fields = vec![column_def("a"), column_def("b"), f.end_rows(AC)];
        let exchanges = [
            (ping(), vec![ok(0, AC)]),
            (command(0x02, b"shop"), vec![ok(0, AC)]),
            (command(0x0c, &42u32.to_le_bytes()), vec![ok(0, AC)]),
            (command(0x1b, &1u16.to_le_bytes()), vec![f.end_rows(AC)]),
            (command(0x09, b""), vec![stats.to_vec()]),
            (command(0x04, b"t\0"), fields),
        ];
        for (cmd, response) in exchanges {
            steps.extend(exchange(&cmd, &response));
        }
        let expected = [
            (K::Ping, Fine, 0, 0),
            (K::InitDb, Fine, 0, 0),
            (K::ProcessKill, Fine, 0, 0),
            (K::SetOption, Fine, 0, 0),
            (K::Statistics, Fine, 0, 0),
            (K::FieldList, Rows, 2, 0), // one "row" per column definition
        ];
        assert_eq!(summary(&replay(&steps).rec), expected, "deprecate_eof={d}");
    }
}

#[test]
fn reset_connection_forgets_prepared_statements() {
    let (mut steps, f) = mysql(true);
    steps.extend(f.prep("select 1", 1, &["1"], 0));
    assert_eq!(replay(&steps).session.prepared_statements().len(), 1);
    steps.extend(exchange(&command(0x1f, b""), &[ok(0, AC)]));
    let unknown = err(1243, "Unknown prepared statement");
    steps.extend(exchange(&com_stmt_execute(1, 0), &[unknown]));
    let run = replay(&steps);
    assert!(run.session.prepared_statements().is_empty());
    assert_eq!(started(&run.rec)[2], (2, K::StmtExecute, prepared(1, None)));
}

#[test]
fn change_user_with_auth_switch() {
    let mut body = b"other\0\x14".to_vec();
    body.extend_from_slice(&[0x11; 20]);
    body.extend_from_slice(b"shop\0\x2d\x00mysql_native_password\0");
    body.extend(lenenc_str(&connect_attrs(HELLO.attrs)));
    let cu = parse_change_user(&body, BASE_CLIENT_CAPS).unwrap().1;
    assert_eq!((cu.username, cu.database), (&b"other"[..], &b"shop"[..]));
    assert_eq!(cu.auth_plugin, Some(&b"mysql_native_password"[..]));

    let denied = err(1045, "Access denied");
    for (last, outcome, left) in [(ok(0, AC), Fine, 0), (denied, Error(1045), 1)] {
        let (mut steps, f) = mysql(true);
        steps.extend(f.prep("select 1", 1, &["1"], 0));
        let request = packet(0, &command(0x11, &body));
        let switch = packet(
            1,
            &auth_switch("caching_sha2_password", b"0123456789abcdefghij\0"),
        );
        let auth = packet(2, &[0x03; 32]); // auth data that looks like COM_QUERY
        let rest = packets(3, &[vec![0x01, 0x03], last]);
        steps.extend([
            c(request.clone()),
            s(switch.clone()),
            c(auth.clone()),
            s(rest.clone()),
        ]);
        steps.extend(exchange(&ping(), &[ok(0, AC)]));
        let run = replay(&steps);
        let kinds = pick!(run.rec, Ev::Started(_, kind, ..) => *kind);
        assert_eq!(kinds, [K::StmtPrepare, K::ChangeUser, K::Ping]);
        let (requested, answered) = ([request, auth].concat(), [switch, rest].concat());
        let mut expected = fin(K::ChangeUser, outcome, &requested, &answered);
        (expected.seq, expected.latency) = (1, Some(STEP * 3));
        assert_eq!(finished(&run.rec)[1], expected);
        assert_eq!(run.session.prepared_statements().len(), left);
    }
}

#[test]
fn binlog_dump_is_counted_but_not_timed() {
    let (mut steps, _) = mysql(false);
    let mut body = 4u32.to_le_bytes().to_vec();
    body.extend_from_slice(&[0x01, 0x00, 0x02, 0x00, 0x00, 0x00]); // NON_BLOCK, server id 2
    body.extend_from_slice(b"binlog.000001");
    let event = |n: u8| [&[0x00, n, 0, 0, 0][..], &[0x0F; 24]].concat();
    steps.extend(exchange(
        &command(0x12, &body),
        &[event(1), event(2), event(3), eof(AC)],
    ));
    let done = finished(&replay(&steps).rec);
    let got = (done[0].kind, done[0].outcome, done[0].rows, done[0].latency);
    assert_eq!(got, (K::BinlogDump, Fine, 3, None));
}

#[test]
fn quit_ends_the_conversation() {
    let (mut steps, _) = mysql(true);
    let quit = packet(0, &command(0x01, b""));
    steps.extend([
        c(quit.clone()),
        s(packet(0, &err(1927, "Connection was killed"))),
    ]);
    let run = replay(&steps);
    let mut expected = fin(K::Quit, NoResponse, &quit, &[]);
    expected.latency = None;
    assert_eq!(finished(&run.rec), [expected]);
    assert_eq!(run.session.phase(), Phase::Closed);
    assert!(!run.session.is_observing());
}

#[test]
fn quit_pipelined_behind_a_query() {
    // The server answers commands in order, so the OK of the query precedes the close.
    let (mut steps, _) = mysql(true);
    let insert = packet(0, &com_query("insert into log values (1)"));
    steps.extend([
        c([insert, packet(0, &[0x01])].concat()),
        s(packet(1, &ok(1, AC))),
    ]);
    let mut run = replay(&steps);
    run.session.on_close(&mut run.rec);
    // QUIT has no response, so it finishes first; the query then gets its OK.
    let done = summary(&run.rec);
    assert_eq!(done, [(K::Quit, NoResponse, 0, 0), (K::Query, Fine, 0, 1)]);
}

#[test]
fn query_attributes_precede_the_text() {
    let mut with_attr = b"\x01\x01\x00\x01\xFE\x00".to_vec();
    with_attr.extend(lenenc_str(b"trace_id"));
    with_attr.extend(lenenc_str(b"abc"));
    with_attr.extend_from_slice(b"select 2");
    let caps = BASE_CLIENT_CAPS | CLIENT_DEPRECATE_EOF | CLIENT_QUERY_ATTRIBUTES;
    let mut steps = login(mysql8_greeting(), caps);
    for body in [&b"\x00\x01select 1"[..], &with_attr[..]] {
        steps.extend(exchange(&command(0x03, body), &[ok(0, AC)]));
    }
    let texts = pick!(replay(&steps).rec, Ev::Started(_, _, stmt, _) => stmt.clone());
    assert_eq!(texts, [text("select 1"), text("select 2")]);
    // Without the capability the same bytes are all text.
    let (mut steps, _) = mariadb(true);
    steps.push(c(packet(0, &command(0x03, b"\x00\x01select 1"))));
    assert_eq!(started(&replay(&steps).rec)[0].2, text("\0\x01select 1"));
}

#[test]
fn a_command_of_exactly_16_mib_is_one_command() {
    let mut payload = b"\x03select '".to_vec();
    payload.resize(MAX_PACKET_PAYLOAD - 1, b'a');
    payload.push(b'\'');
    let (bytes, next_seq) = split_packet(0, &payload);
    assert_eq!(
        (bytes.len(), next_seq),
        (MAX_PACKET_PAYLOAD + 8, 2),
        "data + empty packet"
    );
    let (mut steps, _) = mysql(true);
    steps.extend([c(bytes.clone()), s(packet(2, &ok(0, AC)))]);
    let run = replay(&steps);
    let captured = payload[1..CLIENT_CAPTURE_LIMIT].to_vec();
    assert_eq!(
        started(&run.rec),
        [(0, K::Query, Stmt::Text(captured, true))]
    );
    let done = finished(&run.rec);
    assert_eq!((done.len(), done[0].request_bytes), (1, bytes.len() as u64));
}

#[test]
fn pipelined_commands_finish_in_order() {
    let (mut steps, f) = mysql(true);
    let insert = packet(0, &com_query("insert into t values (1)"));
    steps.push(c([insert, packet(0, &com_query("select 1"))].concat()));
    let result = packets(1, &f.result_set(&["1"], &[row("1")], AC));
    steps.push(s([packet(1, &ok(1, AC)), result].concat()));
    let done = pick!(replay(&steps).rec, Ev::Finished(f) => (f.seq, f.outcome, f.rows, f.latency));
    assert_eq!(done, [(0, Fine, 0, Some(STEP)), (1, Rows, 1, Some(STEP))]);

    let (mut steps, _) = mysql(true);
    steps.push(c((0..=MAX_PIPELINE_DEPTH)
        .flat_map(|_| packet(0, &ping()))
        .collect()));
    let run = replay(&steps);
    assert_eq!(started(&run.rec).len(), MAX_PIPELINE_DEPTH);
    // Not aborted: the server may answer them all, psprobe just stops reading.
    let done = finished(&run.rec);
    assert_eq!(done.len(), MAX_PIPELINE_DEPTH);
    assert!(done.iter().all(|f| f.outcome == Unobserved));
    let too_deep = Ev::Unobserved(UnobservedReason::PipelineTooDeep);
    assert_eq!(run.rec.0.last(), Some(&too_deep));
}

#[test]
fn deep_pipelines_are_counted_exactly() {
    let depth = 300;
    let (mut steps, _) = mysql(true);
    steps.push(c((0..depth).flat_map(|_| packet(0, &ping())).collect()));
    // The answers in chunks that cut packets anywhere.
    let answers: Vec<u8> = (0..depth).flat_map(|_| packet(1, &ok(0, AC))).collect();
    for part in answers.chunks(7) {
        steps.push(s(part.to_vec()));
    }
    let run = replay(&steps);
    let done = finished(&run.rec);
    assert_eq!(done.len(), depth);
    assert!(done.iter().all(|f| f.outcome == Fine), "{done:?}");
    assert_eq!(pick!(run.rec, Ev::Unobserved(r) => *r), []);
    assert_eq!(run.session.phase(), Phase::Command);
}

// ---------------------------------------------------------------- unexpected input

#[test]
fn unexpected_packets_stop_observation_once() {
    let cases = [
        (vec![s(packet(0, &eof(AC)))], UnexpectedPacket, 0), // nothing in flight
        (
            exchange(&ping(), &[vec![0x05, 1, 2, 3]]).to_vec(),
            UnexpectedPacket,
            1,
        ),
        (
            query("select 1", &[vec![0xFC, 1]]).to_vec(),
            MalformedPacket,
            1,
        ), // bad count
        (
            vec![c(packet(3, &com_query("select 1")))],
            UnexpectedPacket,
            0,
        ), // seq not 0
        (vec![c(packet(0, b""))], MalformedPacket, 0),
    ];
    for (tail, reason, aborted) in cases {
        let (mut steps, _) = mysql(true);
        steps.extend(tail);
        steps.extend(exchange(&ping(), &[ok(0, AC)]));
        steps.push(s(packet(0, &eof(AC))));
        let run = replay(&steps);
        assert_eq!(pick!(run.rec, Ev::Unobserved(r) => *r), [reason]);
        assert_eq!(
            run.rec.0.last(),
            Some(&Ev::Unobserved(reason)),
            "nothing after it"
        );
        let done = finished(&run.rec);
        assert_eq!(done.len(), aborted);
        assert!(done
            .iter()
            .all(|f| f.outcome == Unobserved && f.latency.is_none()));
        assert_eq!(run.session.phase(), Phase::Unobserved);
    }
}

#[test]
fn unsolicited_err_and_close() {
    let (mut steps, _) = mysql(true);
    steps.push(s(packet(
        0,
        &err(4031, "The client was disconnected by the server"),
    )));
    let run = replay(&steps);
    assert_eq!((run.rec.0.len(), run.session.phase()), (1, Phase::Closed));

    let (mut steps, _) = mysql(true);
    steps.push(c(packet(0, &com_query("select sleep(10)"))));
    let mut run = replay(&steps);
    run.session.on_close(&mut run.rec);
    let done = finished(&run.rec);
    assert_eq!(
        (done.len(), done[0].outcome, done[0].latency),
        (1, Aborted, None)
    );
    assert_eq!(run.session.phase(), Phase::Closed);
}

#[test]
fn affected_rows_sum_saturates() {
    let (mut steps, _) = mysql(true);
    steps.extend(query(
        "update a; update b",
        &[ok(u64::MAX, AC | MORE), ok(1, AC)],
    ));
    assert_eq!(finished(&replay(&steps).rec)[0].affected_rows, u64::MAX);
}

// ---------------------------------------------------------------- latency

/// A MySQL 8 session in the command phase, and a clock starting after its login.
fn logged_in() -> (Session, Recorder, impl Fn(u64) -> Instant) {
    let base = Instant::now();
    let run = play(&mysql(true).0, base, |n| n);
    let clock = move |ms: u64| base + Duration::from_secs(1) + Duration::from_millis(ms);
    (run.session, Recorder::default(), clock)
}

fn started_at(rec: &Recorder) -> Vec<Instant> {
    pick!(rec, Ev::Started(.., at) => *at)
}

#[test]
fn latency_runs_from_command_to_the_last_response_chunk() {
    let (mut sess, mut rec, t) = logged_in();
    let f = Flavor {
        deprecate_eof: true,
        metadata_flag: false,
    };
    sess.on_client_bytes(&packet(0, &com_query("select a from t")), t(0), &mut rec);
    let response = packets(1, &f.result_set(&["a"], &[row("1"), row("2")], AC));
    let (first, last) = response.split_at(response.len() - 3);
    sess.on_server_bytes(first, t(3), &mut rec);
    assert!(finished(&rec).is_empty());
    let t2 = t(7) + Duration::from_micros(250);
    sess.on_server_bytes(last, t2, &mut rec);
    assert_eq!(started_at(&rec), [t(0)]);
    assert_eq!(finished(&rec)[0].latency, Some(t2 - t(0)));
}

#[test]
fn a_command_arriving_in_pieces_is_timed_from_its_first_bytes() {
    let (mut sess, mut rec, t) = logged_in();
    let q = packet(0, &com_query("select sleep(1)"));
    sess.on_client_bytes(&q[..2], t(0), &mut rec);
    sess.on_client_bytes(&q[2..], t(5), &mut rec);
    sess.on_server_bytes(&packet(1, &ok(0, AC)), t(20), &mut rec);
    // A command of two physical packets: the first at t(100), the second at t(140).
    let mut big = com_query("select '");
    big.resize(MAX_PACKET_PAYLOAD + 100, b'b');
    let (bytes, next_seq) = split_packet(0, &big);
    let (first, second) = bytes.split_at(MAX_PACKET_PAYLOAD + 4);
    sess.on_client_bytes(first, t(100), &mut rec);
    sess.on_client_bytes(second, t(140), &mut rec);
    sess.on_server_bytes(&packet(next_seq, &ok(0, AC)), t(150), &mut rec);
    assert_eq!(started_at(&rec), [t(0), t(100)]);
    let latencies = pick!(rec, Ev::Finished(f) => f.latency);
    assert_eq!(latencies, [Some(t(20) - t(0)), Some(t(150) - t(100))]);
}

#[test]
fn pipelined_packets_are_timed_from_the_chunk_they_began_in() {
    let (mut sess, mut rec, t) = logged_in();
    let (a, b) = (packet(0, &ping()), packet(0, &com_query("select 1")));
    sess.on_client_bytes(&[&a[..], &b[..3]].concat(), t(0), &mut rec);
    sess.on_client_bytes(&b[3..], t(4), &mut rec);
    sess.on_server_bytes(&packet(1, &ok(0, AC)), t(10), &mut rec);
    sess.on_server_bytes(&packet(1, &ok(0, AC)), t(12), &mut rec);
    // A later command in a fresh chunk starts a fresh clock.
    sess.on_client_bytes(&a, t(50), &mut rec);
    sess.on_server_bytes(&packet(1, &ok(0, AC)), t(51), &mut rec);
    assert_eq!(started_at(&rec), [t(0), t(0), t(50)]);
    let latencies = pick!(rec, Ev::Finished(f) => f.latency.unwrap());
    assert_eq!(latencies, [t(10) - t(0), t(12) - t(0), t(51) - t(50)]);
}

// ---------------------------------------------------------------- fail-open properties

/// Sessions to fuzz from: fresh, MySQL 8 or MariaDB in the command phase.
fn start(kind: usize) -> (Session, Recorder) {
    let steps = match kind {
        0 => Vec::new(),
        1 => mysql(false).0,
        _ => mariadb(true).0,
    };
    let run = play(&steps, Instant::now(), |n| n);
    (run.session, run.rec)
}

/// Feeds `(from_client, bytes)` items, cut into chunks of the (cycled) `sizes`.
fn feed(sess: &mut Session, rec: &mut Recorder, ops: &[(bool, Vec<u8>)], sizes: &[usize]) {
    let now = Instant::now();
    let mut sizes = sizes.iter().cycle();
    for (from_client, bytes) in ops {
        let mut rest = &bytes[..];
        while !rest.is_empty() {
            let (chunk, tail) = rest.split_at((*sizes.next().unwrap()).clamp(1, rest.len()));
            if *from_client {
                sess.on_client_bytes(chunk, now, rec);
            } else {
                sess.on_server_bytes(chunk, now, rec);
            }
            rest = tail;
        }
    }
}

/// Raw bytes, or framed packets with a first byte psprobe cares about.
fn arb_ops() -> impl Strategy<Value = Vec<(bool, Vec<u8>)>> {
    let raw = prop::collection::vec(any::<u8>(), 0..48);
    let firsts = [0x00u8, 0x01, 0x03, 0x0e, 0x11, 0x16, 0x17, 0xfb, 0xfe, 0xff];
    let tail = prop::collection::vec(any::<u8>(), 0..24);
    let framed = (0u8..3, prop::sample::select(firsts.to_vec()), tail)
        .prop_map(|(seq, first, tail)| packet(seq, &[&[first][..], &tail].concat()));
    prop::collection::vec((any::<bool>(), prop_oneof![raw, framed]), 0..32)
}

fn arb_sizes() -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(1usize..20, 1..8)
}

/// Invariants of the event stream, whatever the input.
fn check_events(rec: &Recorder) -> Result<(), TestCaseError> {
    if let Some(i) = rec.0.iter().position(|e| matches!(e, Ev::Unobserved(_))) {
        prop_assert_eq!(i + 1, rec.0.len(), "events after observation stopped");
    }
    prop_assert!(pick!(rec, Ev::Authenticated(ok) => *ok).len() <= 1);
    let started = pick!(rec, Ev::Started(seq, ..) => *seq);
    prop_assert!(started.iter().enumerate().all(|(i, &seq)| seq == i as u64));
    let mut finished = pick!(rec, Ev::Finished(f) => f.seq);
    prop_assert!(finished.iter().all(|seq| started.contains(seq)));
    let n = finished.len();
    finished.sort_unstable();
    finished.dedup();
    prop_assert_eq!(finished.len(), n, "a command finished twice");
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn arbitrary_bytes_never_panic(kind in 0usize..3, ops in arb_ops(), sizes in arb_sizes()) {
        let (mut sess, mut rec) = start(kind);
        feed(&mut sess, &mut rec, &ops, &sizes);
        sess.on_close(&mut rec);
        check_events(&rec)?;
    }

    #[test]
    fn after_a_malformed_packet_everything_is_ignored(
        kind in 1usize..3, trigger in 0usize..3, ops in arb_ops(), sizes in arb_sizes()
    ) {
        let (mut sess, mut rec) = start(kind);
        let trigger = match trigger {
            0 => vec![(false, packet(0, &eof(AC)))],
            1 => vec![(true, packet(0, &ping())), (false, packet(1, &[0x05, 0x00]))],
            _ => vec![(true, packet(7, &com_query("select 1")))],
        };
        feed(&mut sess, &mut rec, &trigger, &sizes);
        prop_assert_eq!(pick!(rec, Ev::Unobserved(r) => *r).len(), 1);
        prop_assert!(!sess.is_observing());
        let seen = rec.0.len();
        feed(&mut sess, &mut rec, &ops, &sizes);
        sess.on_close(&mut rec);
        prop_assert_eq!(rec.0.len(), seen);
        prop_assert_eq!(sess.phase(), Phase::Unobserved);
    }
}

#[path = "transport_tests.rs"]
mod transport;
