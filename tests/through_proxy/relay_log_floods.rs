//! Floods of failing connections do not flood the log: failed TLS handshakes, failed upstream
//! connects and an upstream that does not greet as MySQL are each logged at most once a second
//! (the first two also counted one by one in the metrics), the next line saying how many were
//! left out.

use crate::common;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

use common::observed::{handshake_failures, wait_for};
use common::probe::Probe;
use common::server::{Flavor, Options, Server};

const FLOOD: usize = 100;
const LEFT_OUT: &str = "more like it since the last line)";

/// Reads until psprobe closes (EOF or reset).
fn until_closed(s: &mut TcpStream) {
    s.set_read_timeout(Some(Duration::from_secs(20)))
        .expect("timeout");
    let mut buf = [0u8; 1024];
    while let Ok(n) = s.read(&mut buf) {
        if n == 0 {
            return;
        }
    }
}

/// Lines of `log` that contain `what`.
fn lines(log: &str, what: &str) -> usize {
    log.lines().filter(|l| l.contains(what)).count()
}

/// At most one line a second (and one at the start) for a flood that lasted `elapsed`; then,
/// once more failures come a second later, a line with the count left out.
fn assert_rate_limited(probe: &Probe, what: &str, elapsed: Duration, mut fail_once: impl FnMut()) {
    let log = probe.stderr_text();
    let seen = lines(&log, what);
    let allowed = elapsed.as_secs() as usize + 2;
    assert!(
        (1..=allowed).contains(&seen),
        "{seen} lines for {FLOOD} failures in {elapsed:?}:\n{log}"
    );
    // The count left out arrives with the next line allowed (a failure at least a second
    // after the last line).
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let log = probe.stderr_text();
        if log
            .lines()
            .any(|l| l.contains(what) && l.contains(LEFT_OUT))
        {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "no count of the lines left out:\n{log}"
        );
        fail_once();
        std::thread::sleep(Duration::from_millis(100)); // one failure per poll
    }
}

#[test]
fn relay_log_flood_of_upstream_errors_is_rate_limited() {
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port();
    let probe = Probe::start(&format!("127.0.0.1:{port}"), &[]);
    let fail_once = || until_closed(&mut TcpStream::connect(probe.proxy_addr()).expect("connect"));
    let started = Instant::now();
    for _ in 0..FLOOD {
        fail_once();
    }
    let elapsed = started.elapsed();
    wait_for(&probe, "every failure counted", |s| {
        s.get("psprobe_upstream_connect_errors_total", &[]) >= FLOOD as f64
    });
    assert_rate_limited(&probe, "could not connect to upstream", elapsed, fail_once);
}

/// Reads the greeting, sends an SSLRequest, then bytes that are not TLS.
fn bad_tls_client(addr: &str) {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(20)))
        .expect("timeout");
    common::wire::read_packet(&mut s);
    let caps: u32 = (1 << 9) | (1 << 15) | (1 << 19); // PROTOCOL_41, SECURE, PLUGIN_AUTH
    s.write_all(&common::wire::ssl_request(caps))
        .expect("SSLRequest");
    s.write_all(b"GET / HTTP/1.1\r\nHost: psprobe\r\n\r\n")
        .expect("garbage");
    until_closed(&mut s);
}

#[test]
fn relay_log_flood_of_tls_handshake_failures_is_rate_limited() {
    let db = Server::start(
        Flavor::MariaDb1011,
        Options {
            performance_schema: false,
            extra_args: Vec::new(),
        },
    );
    let state = tempfile::tempdir().expect("state dir");
    let probe = Probe::start(
        &db.addr(),
        &["--state-dir", state.path().to_str().expect("utf-8 path")],
    );
    let addr = probe.proxy_addr().to_string();
    let started = Instant::now();
    for _ in 0..FLOOD {
        bad_tls_client(&addr);
    }
    let elapsed = started.elapsed();
    wait_for(&probe, "every failure counted", |s| {
        handshake_failures(s, "client", "bad_message") >= FLOOD as f64
    });
    assert_rate_limited(
        &probe,
        "client leg, bad_message); connection closed",
        elapsed,
        || bad_tls_client(&addr),
    );
}

/// An upstream that is not a MySQL server (an HTTP port answering at once): its bytes still go
/// to the client as they are, and psprobe says, rate limited, what it got instead of a greeting.
#[test]
fn relay_log_flood_of_non_mysql_upstream_greetings_is_rate_limited() {
    const ANSWER: &[u8] = b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n";
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let upstream = listener.local_addr().expect("addr").to_string();
    std::thread::spawn(move || {
        for s in listener.incoming() {
            let Ok(mut s) = s else { return };
            let _ = s.write_all(ANSWER);
        }
    });
    let probe = Probe::start(&upstream, &[]);
    let fail_once = || {
        let mut s = TcpStream::connect(probe.proxy_addr()).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(20)))
            .expect("timeout");
        let mut got = Vec::new();
        let _ = s.read_to_end(&mut got);
        assert_eq!(got, ANSWER, "relayed as they are");
    };
    let started = Instant::now();
    for _ in 0..FLOOD {
        fail_once();
    }
    let elapsed = started.elapsed();
    let log = probe.stderr_text();
    assert!(
        // What psprobe had read when it saw this was no MySQL packet: a header of 4 bytes.
        log.contains(r#"did not greet as a MySQL server (its first bytes: "HTTP")"#),
        "{log}"
    );
    assert_rate_limited(
        &probe,
        "did not greet as a MySQL server",
        elapsed,
        fail_once,
    );
}
