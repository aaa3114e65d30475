//! TLS termination, the MySQL 8 / MariaDB authentication exchanges that ride on it, and the
//! compressed protocol, through the session machine. Byte sequences follow the MySQL protocol
//! documentation (caching_sha2_password and sha256_password exchanges, compressed packets).

use std::io::Write;

use super::*;
use crate::protocol::compress::{frame_bytes, stored_frame};

/// A step of a scenario: bytes from one side, or the proxy finishing the TLS handshake.
#[derive(Clone)]
enum T {
    Bytes(Step),
    TlsUp,
}

fn b(step: Step) -> T {
    T::Bytes(step)
}

fn play_t(steps: &[T], base: Instant, mut next: impl FnMut(usize) -> usize) -> Run {
    let mut session = Session::new(base);
    let mut rec = Recorder::default();
    for (i, step) in steps.iter().enumerate() {
        let now = base + STEP * i as u32;
        let (dir, bytes) = match step {
            T::TlsUp => {
                session.tls_established();
                continue;
            }
            T::Bytes(step) => step,
        };
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

/// Like `replay`: whole, 1-byte and random chunks must agree.
fn replay_t(steps: &[T]) -> Run {
    let base = Instant::now();
    let whole = play_t(steps, base, |n| n);
    let mut others = vec![("1-byte", play_t(steps, base, |_| 1))];
    others.extend((1..=3).map(|seed| ("random", play_t(steps, base, chunker(seed)))));
    for (name, run) in others {
        assert_eq!(run.rec.0, whole.rec.0, "{name} chunks: events differ");
        assert_eq!(run.session.phase(), whole.session.phase(), "{name} chunks");
    }
    whole
}

fn all(steps: &[Step]) -> Vec<T> {
    steps.iter().cloned().map(T::Bytes).collect()
}

/// Greeting with CLIENT_SSL and the given default plugin.
fn tls_greeting(plugin: &str) -> Vec<u8> {
    greeting("8.0.36", MYSQL8_SERVER_CAPS | CLIENT_SSL, plugin)
}

fn hello_with(plugin: &'static str, auth: &'static [u8]) -> Hello<'static> {
    Hello {
        plugin,
        auth,
        ..HELLO
    }
}

/// Greeting, SSLRequest, TLS up, HandshakeResponse (seq 2): the start of a terminated login.
fn tls_login_start(plugin: &str, hello: &Hello<'_>) -> Vec<T> {
    let caps = BASE_CLIENT_CAPS | CLIENT_SSL;
    vec![
        b(s(packet(0, &tls_greeting(plugin)))),
        b(c(packet(1, &ssl_request(caps)))),
        T::TlsUp,
        b(c(packet(2, &handshake_response(caps, hello)))),
    ]
}

fn ping_exchange() -> Vec<T> {
    all(&exchange(&ping(), &[ok(0, AC)]))
}

#[test]
fn a_terminated_tls_connection_is_observed_like_a_plain_one() {
    let mut steps = tls_login_start("mysql_native_password", &HELLO);
    steps.push(b(s(packet(3, &ok(0, AC)))));
    steps.extend(all(&query("select 1", &[ok(0, AC)])));
    let run = replay_t(&steps);
    assert_eq!(run.session.phase(), Phase::Command);
    assert_eq!(started(&run.rec), [(0, K::Query, text("select 1"))]);
    assert_eq!(summary(&run.rec), [(K::Query, Fine, 0, 0)]);
    assert!(run.session.capabilities().has(CLIENT_SSL));
}

#[test]
fn tls_left_to_the_peers_is_reported_once_in_either_direction() {
    let caps = BASE_CLIENT_CAPS | CLIENT_SSL;
    for first in [Dir::Client, Dir::Server] {
        let record = vec![0x16, 0x03, 0x01, 0x00, 0x05, 1, 2, 3, 4, 5];
        let steps = vec![
            b(s(packet(0, &tls_greeting("caching_sha2_password")))),
            b(c(packet(1, &ssl_request(caps)))),
            b((first, record.clone())),
            b(c(record.clone())),
            b(s(record)),
        ];
        let run = replay_t(&steps);
        assert_eq!(run.rec.0, [Ev::Unobserved(UnobservedReason::Tls)]);
        assert_eq!(run.session.phase(), Phase::Unobserved);
    }
    // The proxy decided not to terminate: it says so itself.
    let mut session = Session::new(Instant::now());
    let mut rec = Recorder::default();
    session.on_server_bytes(&packet(0, &tls_greeting("x")), Instant::now(), &mut rec);
    session.on_client_bytes(&packet(1, &ssl_request(caps)), Instant::now(), &mut rec);
    session.unobserve(UnobservedReason::Tls, &mut rec);
    session.unobserve(UnobservedReason::Tls, &mut rec);
    assert_eq!(rec.0, [Ev::Unobserved(UnobservedReason::Tls)]);
}

/// What a proxy decides on in the connection phase is read here, not parsed again there: the
/// greeting's offer of TLS, and a login that would send the password in clear.
#[test]
fn what_the_proxy_asks_of_the_handshake() {
    let caps = BASE_CLIENT_CAPS | CLIENT_SSL;
    let mut session = Session::new(Instant::now());
    let mut rec = Recorder::default();
    assert!(
        !session.server_capabilities().has(CLIENT_SSL),
        "nothing read yet"
    );
    session.on_server_bytes(&packet(0, &tls_greeting("x")), Instant::now(), &mut rec);
    assert!(session.server_capabilities().has(CLIENT_SSL));
    session.on_client_bytes(&packet(1, &ssl_request(caps)), Instant::now(), &mut rec);
    session.tls_established();
    assert_eq!(session.cleartext_auth(), None);
    let hello = Hello {
        plugin: "mysql_clear_password",
        ..HELLO
    };
    let response = handshake_response(caps, &hello);
    session.on_client_bytes(&packet(2, &response), Instant::now(), &mut rec);
    assert_eq!(session.phase(), Phase::Authenticating);
    assert_eq!(session.cleartext_auth(), Some("mysql_clear_password"));

    let mut session = Session::new(Instant::now());
    session.on_server_bytes(&packet(0, &tls_greeting("x")), Instant::now(), &mut rec);
    session.on_client_bytes(
        &packet(1, &handshake_response(caps, &HELLO)),
        Instant::now(),
        &mut rec,
    );
    assert_eq!(
        session.cleartext_auth(),
        None,
        "mysql_native_password hashes it"
    );
}

// ------------------------------------------------ caching_sha2_password (MySQL 8 default)

/// AuthMoreData: 0x01 then the plugin's data.
fn more_data(data: &[u8]) -> Vec<u8> {
    [&[0x01][..], data].concat()
}

const FAST_AUTH_SUCCESS: u8 = 0x03;
const PERFORM_FULL_AUTHENTICATION: u8 = 0x04;
const REQUEST_PUBLIC_KEY: u8 = 0x02;
const PEM: &[u8] = b"-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA\n-----END PUBLIC KEY-----\n";

#[test]
fn caching_sha2_fast_auth_over_tls() {
    let hello = hello_with("caching_sha2_password", &[0x11; 32]);
    let mut steps = tls_login_start("caching_sha2_password", &hello);
    steps.push(b(s(packet(3, &more_data(&[FAST_AUTH_SUCCESS])))));
    steps.push(b(s(packet(4, &ok(0, AC)))));
    steps.extend(ping_exchange());
    let run = replay_t(&steps);
    assert_eq!(run.rec.0[0], Ev::Authenticated(true));
    assert_eq!(summary(&run.rec), [(K::Ping, Fine, 0, 0)]);
}

#[test]
fn caching_sha2_full_auth_sends_the_password_in_clear_over_tls() {
    let hello = hello_with("caching_sha2_password", &[0x11; 32]);
    let mut steps = tls_login_start("caching_sha2_password", &hello);
    steps.push(b(s(packet(3, &more_data(&[PERFORM_FULL_AUTHENTICATION])))));
    // On a secure channel the client answers with the NUL-terminated password.
    steps.push(b(c(packet(4, b"s3cret\0"))));
    steps.push(b(s(packet(5, &ok(0, AC)))));
    steps.extend(ping_exchange());
    let run = replay_t(&steps);
    assert_eq!(run.session.phase(), Phase::Command);
    assert_eq!(summary(&run.rec), [(K::Ping, Fine, 0, 0)]);
}

#[test]
fn caching_sha2_full_auth_with_a_public_key_request_on_a_plain_leg() {
    let hello = hello_with("caching_sha2_password", &[0x11; 32]);
    let caps = BASE_CLIENT_CAPS;
    let mut steps = all(&[
        s(packet(
            0,
            &greeting("8.0.36", MYSQL8_SERVER_CAPS, "caching_sha2_password"),
        )),
        c(packet(1, &handshake_response(caps, &hello))),
        s(packet(2, &more_data(&[PERFORM_FULL_AUTHENTICATION]))),
        c(packet(3, &[REQUEST_PUBLIC_KEY])),
        s(packet(4, &more_data(PEM))),
        // RSA-OAEP of (password XOR scramble): 256 bytes for a 2048-bit key. Its first byte
        // may be anything, 0x00 and 0xFF included: the session does not read client packets.
        c(packet(5, &[0x00; 256])),
        s(packet(6, &ok(0, AC))),
    ]);
    steps.extend(ping_exchange());
    let run = replay_t(&steps);
    assert_eq!(run.rec.0[0], Ev::Authenticated(true));
    assert_eq!(summary(&run.rec), [(K::Ping, Fine, 0, 0)]);
}

#[test]
fn caching_sha2_full_auth_refused() {
    let hello = hello_with("caching_sha2_password", &[0x11; 32]);
    let mut steps = tls_login_start("caching_sha2_password", &hello);
    steps.push(b(s(packet(3, &more_data(&[PERFORM_FULL_AUTHENTICATION])))));
    steps.push(b(c(packet(4, b"wrong\0"))));
    steps.push(b(s(packet(5, &err(1045, "Access denied for user 'app'")))));
    let run = replay_t(&steps);
    assert_eq!(run.rec.0, [Ev::Authenticated(false)]);
    assert_eq!(run.session.phase(), Phase::Closed);
}

// ------------------------------------------------ sha256_password

#[test]
fn sha256_password_in_clear_over_tls() {
    // With TLS the client sends the password itself as its first auth response.
    let hello = hello_with("sha256_password", b"s3cret\0");
    let mut steps = tls_login_start("sha256_password", &hello);
    steps.push(b(s(packet(3, &ok(0, AC)))));
    steps.extend(ping_exchange());
    let run = replay_t(&steps);
    assert_eq!(summary(&run.rec), [(K::Ping, Fine, 0, 0)]);
}

#[test]
fn sha256_password_public_key_exchange_on_a_plain_leg() {
    // Without TLS: the client asks for the key (auth data 0x01), gets it in AuthMoreData,
    // answers with the RSA-encrypted password.
    let hello = hello_with("sha256_password", &[0x01]);
    let mut steps = all(&[
        s(packet(
            0,
            &greeting("8.0.36", MYSQL8_SERVER_CAPS, "sha256_password"),
        )),
        c(packet(1, &handshake_response(BASE_CLIENT_CAPS, &hello))),
        s(packet(2, &more_data(PEM))),
        c(packet(3, &[0xFF; 256])),
        s(packet(4, &ok(0, AC))),
    ]);
    steps.extend(ping_exchange());
    let run = replay_t(&steps);
    assert_eq!(summary(&run.rec), [(K::Ping, Fine, 0, 0)]);
}

#[test]
fn auth_switch_to_sha256_password_over_tls() {
    let mut steps = tls_login_start("mysql_native_password", &HELLO);
    steps.push(b(s(packet(
        3,
        &auth_switch("sha256_password", &[0x22; 21]),
    ))));
    steps.push(b(c(packet(4, b"s3cret\0"))));
    steps.push(b(s(packet(5, &ok(0, AC)))));
    steps.extend(ping_exchange());
    let run = replay_t(&steps);
    assert_eq!(summary(&run.rec), [(K::Ping, Fine, 0, 0)]);
}

// ------------------------------------------------ compression

fn zlib(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(data).expect("zlib write");
    e.finish().expect("zlib finish")
}

/// The bytes of `steps` as `compress` frames them, one compressed packet per step, stored
/// below 50 bytes as MySQL does.
fn compressed(steps: &[Step], compress: impl Fn(&[u8]) -> Vec<u8>) -> Vec<Step> {
    steps
        .iter()
        .map(|(dir, bytes)| {
            let framed = if bytes.len() < 50 {
                stored_frame(0, bytes)
            } else {
                frame_bytes(0, &compress(bytes), bytes.len())
            };
            (*dir, framed)
        })
        .collect()
}

/// Commands after login, with results big enough to be compressed.
fn workload() -> Vec<Step> {
    let long = "x".repeat(200);
    let rows: Vec<Vec<u8>> = (0..30).map(|i| row(&format!("{long}{i}"))).collect();
    let mut steps = Vec::new();
    steps.extend(query(
        &format!("select '{long}' from t where id = 7"),
        &MYSQL_EOF.result_set(&["c"], &rows, AC),
    ));
    steps.extend(exchange(&ping(), &[ok(0, AC)]));
    steps.extend(query("update t set a = 1", &[ok(3, AC)]));
    steps
}

const MYSQL_EOF: Flavor = Flavor {
    deprecate_eof: false,
    metadata_flag: false,
};

fn events_of(steps: &[T]) -> Vec<(CommandKind, Outcome, u64, u64)> {
    summary(&replay_t(steps).rec)
}

#[test]
fn zlib_compressed_commands_give_the_same_events_as_plain_ones() {
    let plain_login = login(mysql8_greeting(), BASE_CLIENT_CAPS);
    let mut plain = all(&plain_login);
    plain.extend(all(&workload()));
    let expected = events_of(&plain);
    assert_eq!(expected.len(), 3);

    let mut zipped = all(&login(
        mysql8_greeting(),
        BASE_CLIENT_CAPS | CLIENT_COMPRESS,
    ));
    zipped.extend(all(&compressed(&workload(), zlib)));
    let run = replay_t(&zipped);
    assert_eq!(summary(&run.rec), expected);
    assert_eq!(run.session.compression(), Some(Algorithm::Zlib));
    assert!(run.session.is_observing());
    let sql = format!("select '{}' from t where id = 7", "x".repeat(200));
    assert_eq!(started(&run.rec)[0], (0, K::Query, text(&sql)));
}

#[test]
fn zstd_compressed_commands_give_the_same_events_as_plain_ones() {
    let mut plain = all(&login(mysql8_greeting(), BASE_CLIENT_CAPS));
    plain.extend(all(&workload()));
    let expected = events_of(&plain);

    let caps = BASE_CLIENT_CAPS | CLIENT_ZSTD_COMPRESSION;
    let mut hello = handshake_response(caps, &HELLO);
    hello.push(3); // zstd_compression_level
    let mut zipped = all(&[
        s(packet(0, &mysql8_greeting())),
        c(packet(1, &hello)),
        s(packet(2, &ok(0, AC))),
    ]);
    let zstd = |d: &[u8]| zstd::bulk::compress(d, 3).expect("zstd");
    zipped.extend(all(&compressed(&workload(), zstd)));
    let run = replay_t(&zipped);
    assert_eq!(run.session.compression(), Some(Algorithm::Zstd));
    assert_eq!(summary(&run.rec), expected);
}

/// A query far larger than the client capture (1 MiB) in one compressed frame: the frame's
/// tail past the capture is skipped, not decoded, and the events are those of the plain run,
/// whole or with a decode budget.
#[test]
fn a_large_compressed_query_gives_the_same_events_as_a_plain_one() {
    let big_sql = format!("select length('{}')", "x".repeat(1 << 20));
    let mut commands = query(&big_sql, &[ok(0, AC)]).to_vec();
    commands.extend(workload());
    let mut plain = all(&login(mysql8_greeting(), BASE_CLIENT_CAPS));
    plain.extend(all(&commands));
    let expected = replay_t(&plain).rec.0;

    let mut zipped = login(mysql8_greeting(), BASE_CLIENT_CAPS | CLIENT_COMPRESS);
    zipped.extend(compressed(&commands, zlib));
    let whole = replay_t(&all(&zipped));
    assert!(whole.session.is_observing());
    assert_eq!(summary(&whole.rec), summary(&Recorder(expected.clone())));
    let (stepped, _) = play_budgeted(&zipped, Instant::now(), 4096, false);
    assert_eq!(summary(&stepped.rec), summary(&whole.rec));
    let head = started(&whole.rec)[0].clone();
    assert_eq!(head, started(&Recorder(expected))[0]);
}

/// Plays `steps` whole with a decode budget of `budget` bytes; after each chunk, `catch_up`
/// is called until the session is no longer behind when `catch_up` is true (as the relay
/// does), else the next chunk comes while it is behind. Returns the run and how many
/// chunks left the session behind.
fn play_budgeted(steps: &[Step], base: Instant, budget: usize, catch_up: bool) -> (Run, usize) {
    let mut session = Session::new(base);
    session.set_decode_budget(Some(budget));
    let mut rec = Recorder::default();
    let mut behind = 0;
    for (i, (dir, bytes)) in steps.iter().enumerate() {
        let now = base + STEP * i as u32;
        match dir {
            Dir::Client => session.on_client_bytes(bytes, now, &mut rec),
            Dir::Server => session.on_server_bytes(bytes, now, &mut rec),
        }
        if session.is_behind() {
            behind += 1;
        }
        while catch_up && session.is_behind() {
            session.catch_up(&mut rec);
        }
    }
    while session.is_behind() {
        session.catch_up(&mut rec);
    }
    (Run { session, rec }, behind)
}

/// A small budget decodes in steps (the session says it is behind) and gives the events of
/// decoding in one go, whether the proxy catches up before the next chunk or not.
#[test]
fn a_decode_budget_gives_the_same_events_in_steps() {
    let mut zipped = login(mysql8_greeting(), BASE_CLIENT_CAPS | CLIENT_COMPRESS);
    zipped.extend(compressed(&workload(), zlib));
    // A result that inflates to more than one output buffer (32 KiB): decoded in steps.
    let rows: Vec<Vec<u8>> = (0..400)
        .map(|i| row(&format!("{}{i}", "y".repeat(200))))
        .collect();
    let big = query("select y from t", &MYSQL_EOF.result_set(&["y"], &rows, AC));
    zipped.extend(compressed(&big, zlib));
    let base = Instant::now();
    let (whole, _) = play_budgeted(&zipped, base, usize::MAX, true);
    assert_eq!(whole.rec.0.len(), replay_t(&all(&zipped)).rec.0.len());
    for catch_up in [true, false] {
        let (run, behind) = play_budgeted(&zipped, base, 100, catch_up);
        assert!(
            behind > 0,
            "a 100-byte budget never left the session behind"
        );
        assert_eq!(run.rec.0, whole.rec.0, "catch_up: {catch_up}");
        assert!(run.session.is_observing());
    }
}

#[test]
fn both_compression_flags_mean_zlib() {
    let caps = BASE_CLIENT_CAPS | CLIENT_COMPRESS | CLIENT_ZSTD_COMPRESSION;
    let run = replay_t(&all(&login(mysql8_greeting(), caps)));
    assert_eq!(run.session.compression(), Some(Algorithm::Zlib));
}

#[test]
fn compressed_bytes_in_the_chunk_of_the_ok_are_decoded() {
    // The server's OK ending authentication and an (empty, stored) compressed packet in one
    // read: de-framed as a plain packet, the 7 bytes would be an unexpected empty packet.
    let mut steps = all(&login(
        mysql8_greeting(),
        BASE_CLIENT_CAPS | CLIENT_COMPRESS,
    ));
    if let Some(T::Bytes((_, ok_bytes))) = steps.last_mut() {
        ok_bytes.extend(stored_frame(0, &[]));
    }
    steps.push(b(c(stored_frame(0, &packet(0, &ping())))));
    steps.push(b(s(stored_frame(0, &packet(1, &ok(0, AC))))));
    let run = replay_t(&steps);
    assert!(run.session.is_observing());
    assert_eq!(summary(&run.rec), [(K::Ping, Fine, 0, 0)]);
}

#[test]
fn compressed_tls_connection_is_observed() {
    let caps = BASE_CLIENT_CAPS | CLIENT_SSL | CLIENT_COMPRESS;
    let mut steps = vec![
        b(s(packet(0, &tls_greeting("mysql_native_password")))),
        b(c(packet(1, &ssl_request(caps)))),
        T::TlsUp,
        b(c(packet(2, &handshake_response(caps, &HELLO)))),
        b(s(packet(3, &ok(0, AC)))),
    ];
    steps.extend(all(&compressed(&workload(), zlib)));
    let run = replay_t(&steps);
    assert_eq!(summary(&run.rec).len(), 3);
    assert_eq!(run.session.compression(), Some(Algorithm::Zlib));
}

#[test]
fn a_corrupt_frame_stops_observation_once_and_leaves_the_command_unobserved() {
    let mut steps = all(&login(
        mysql8_greeting(),
        BASE_CLIENT_CAPS | CLIENT_COMPRESS,
    ));
    let query_bytes = packet(0, &com_query(&format!("select '{}'", "y".repeat(100))));
    steps.push(b(c(frame_bytes(0, &zlib(&query_bytes), query_bytes.len()))));
    // A zlib header, then a block of reserved type 3: corrupt before any output.
    let bad = [0x78, 0x9c, 0xff, 0xff, 0xff, 0xff];
    steps.push(b(s(frame_bytes(0, &bad, 11))));
    steps.push(b(c(stored_frame(0, &packet(0, &ping())))));
    let run = replay_t(&steps);
    let reason = Ev::Unobserved(UnobservedReason::CompressionError);
    assert_eq!(run.rec.0.iter().filter(|e| **e == reason).count(), 1);
    // Not aborted: the connection goes on, psprobe just cannot read the answer.
    assert_eq!(summary(&run.rec), [(K::Query, Unobserved, 0, 0)]);
    assert_eq!(run.session.phase(), Phase::Unobserved);
    assert!(UnobservedReason::CompressionError.is_parse_error());
}
