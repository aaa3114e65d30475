//! Endpoint abuse against a real psprobe: the metrics endpoint under requests that never end,
//! end with a bare LF, carry 1 MB of headers, or come 200 at once, and the same bounds on
//! kept-alive connections with gzip and HEAD (a real Prometheus keeps its connection); the
//! admin port under a password-guessing loop (while a real mariadbd is served through the
//! proxy), a 10 MB query,
//! bytes that are not UTF-8 and malformed SQL; and an admin interface without a password,
//! which must not start.

use crate::common;

use std::collections::BTreeMap;
use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::process::{Command, Output};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use common::cli::{mariadb_ok, run_with_timeout, split_addr};
use common::mariadb::MariaDb;
use common::probe::Probe;
use tempfile::TempDir;

const ADMIN_SECRET: &str = "abuse-admin-secret";
/// No server there: the endpoint tests need none.
const NOWHERE: &str = "127.0.0.1:1";
const CLIENT_TIMEOUT: Duration = Duration::from_secs(30);

/// psprobe with the admin interface on, its state (TLS files) in a temporary directory.
fn start(upstream: &str, extra: &[&str]) -> (Probe, TempDir) {
    let state = tempfile::tempdir().expect("tempdir");
    let mut args = vec![
        "--admin",
        "127.0.0.1:0",
        "--state-dir",
        state.path().to_str().expect("UTF-8 path"),
    ];
    args.extend_from_slice(extra);
    let probe = Probe::start_with_env(upstream, &args, &[("PSPROBE_ADMIN_PASSWORD", ADMIN_SECRET)]);
    (probe, state)
}

/// The `mariadb` CLI on the admin port: `-B --force`, statements from `stdin`.
fn admin_cli(probe: &Probe, password: &str, stdin: &[u8]) -> Output {
    let (host, port) = split_addr(probe.admin_addr());
    let mut cmd = Command::new("/usr/bin/mariadb");
    cmd.args(["--no-defaults", "--protocol=TCP", "-h", host, "-P", port])
        .args(["-u", "admin", &format!("-p{password}")])
        .args(["-B", "--force", "--max-allowed-packet=64M"]);
    run_with_timeout(cmd, Some(stdin), CLIENT_TIMEOUT)
}

// ---- metrics endpoint ----

/// A request whose head never ends gets 408 once the timeout passes, then the connection is
/// closed; one that trickles a byte at a time gets the same (the bound is on the whole head).
#[test]
fn an_unfinished_request_gets_408() {
    let (probe, _state) = start(NOWHERE, &["--metrics-timeout", "1s"]);
    let r = probe.http_raw(
        b"GET /metrics HTTP/1.1\r\nHost: x\r\n",
        Duration::from_secs(10),
    );
    assert_eq!(r.status, Some(408), "{r:?}");
    assert!(r.closed, "connection left open: {r:?}");
    assert!(
        r.elapsed >= Duration::from_millis(900) && r.elapsed < Duration::from_secs(4),
        "408 after {:?}",
        r.elapsed
    );
    eprintln!("figure: 408 after {:?} (--metrics-timeout 1s)", r.elapsed);

    let addr: SocketAddr = probe.metrics_addr().parse().expect("address");
    let mut s = TcpStream::connect(addr).expect("connect");
    let started = Instant::now();
    let mut answered = None;
    for byte in b"GET /metrics HTTP/1.1\r\nX-Slow: "
        .iter()
        .cycle()
        .take(200)
    {
        if s.write_all(&[*byte]).is_err() {
            answered = Some(started.elapsed());
            break;
        }
        std::thread::sleep(Duration::from_millis(50)); // trickling, by design
    }
    let elapsed = answered.unwrap_or_else(|| started.elapsed());
    assert!(
        elapsed < Duration::from_secs(6),
        "a trickling request held for {elapsed:?}"
    );
    assert_eq!(probe.healthz(), 200);
}

/// Requests whose lines end in a bare LF are answered like CRLF ones; malformed ones get 400,
/// other methods 405.
#[test]
fn bare_lf_and_malformed_requests_are_answered() {
    let (probe, _state) = start(NOWHERE, &[]);
    let timeout = Duration::from_secs(5);
    let r = probe.http_raw(b"GET /healthz HTTP/1.0\n\n", timeout);
    assert_eq!((r.status, r.body()), (Some(200), "ok\n"), "{r:?}");
    let r = probe.http_raw(b"GET /metrics HTTP/1.1\nHost: x\n\n", timeout);
    assert_eq!(r.status, Some(200), "{r:?}");
    assert!(r.body().contains("psprobe_connections_active"), "{r:?}");
    let r = probe.http_raw(b"\r\nGET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", timeout);
    assert_eq!(r.status, Some(200), "leading empty line: {r:?}");
    for bad in [
        &b"GARBAGE\r\n\r\n"[..],
        b"GET /healthz\r\n\r\n",
        b"GET /healthz SMTP/1.0\r\n\r\n",
    ] {
        let r = probe.http_raw(bad, timeout);
        assert_eq!(
            r.status,
            Some(400),
            "{:?}: {r:?}",
            String::from_utf8_lossy(bad)
        );
        assert!(r.closed);
    }
    let r = probe.http_raw(b"POST /metrics HTTP/1.1\r\n\r\n", timeout);
    assert_eq!(r.status, Some(405), "{r:?}");
}

/// 1 MB of headers, 20 connections at once: each gets 431 (not a reset), and psprobe's peak
/// memory grows by far less than what was sent.
#[test]
fn a_megabyte_of_headers_gets_431_with_bounded_memory() {
    let (probe, _state) = start(NOWHERE, &[]);
    let addr: SocketAddr = probe.metrics_addr().parse().expect("address");
    let before = probe.status_kib("VmHWM");
    let mut request = b"GET /metrics HTTP/1.1\r\n".to_vec();
    while request.len() < 1 << 20 {
        request.extend_from_slice(
            b"X-Padding: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n",
        );
    }
    request.extend_from_slice(b"\r\n");
    let request = Arc::new(request);
    let clients: Vec<_> = (0..20)
        .map(|_| {
            let request = Arc::clone(&request);
            std::thread::spawn(move || {
                let s = TcpStream::connect(addr).expect("connect");
                s.set_read_timeout(Some(Duration::from_secs(10)))
                    .expect("timeout");
                let mut writer = s.try_clone().expect("clone");
                // psprobe answers before it has read everything: write on the side.
                let sender = std::thread::spawn(move || drop(writer.write_all(&request)));
                let mut raw = Vec::new();
                let _ = std::io::Read::read_to_end(&mut &s, &mut raw);
                let _ = sender.join();
                String::from_utf8_lossy(&raw).into_owned()
            })
        })
        .collect();
    for client in clients {
        let answer = client.join().expect("client thread");
        assert!(
            answer.starts_with("HTTP/1.1 431 Request Header Fields Too Large\r\n"),
            "{answer:?}"
        );
    }
    let growth = probe.status_kib("VmHWM").saturating_sub(before);
    eprintln!("figure: peak RSS growth with 20 x 1 MB of headers: {growth} KiB");
    assert!(growth < 8 * 1024, "peak RSS grew by {growth} KiB");
    assert_eq!(probe.healthz(), 200);
}

/// 200 clients scrape /metrics and /healthz at the same moment: every request succeeds.
#[test]
fn two_hundred_concurrent_scrapes_succeed() {
    let (probe, _state) = start(NOWHERE, &[]);
    let probe = Arc::new(probe);
    let start = Arc::new(Barrier::new(200));
    let clients: Vec<_> = (0..200)
        .map(|i| {
            let (probe, start) = (Arc::clone(&probe), Arc::clone(&start));
            std::thread::spawn(move || {
                let path = if i % 2 == 0 { "/metrics" } else { "/healthz" };
                start.wait();
                let (status, body) = probe.http_get(path);
                (path, status, body)
            })
        })
        .collect();
    let mut statuses = BTreeMap::new();
    for client in clients {
        let (path, status, body) = client.join().expect("scrape thread");
        let ok = match path {
            "/metrics" => body.contains("psprobe_connections_active"),
            _ => body == "ok\n",
        };
        *statuses.entry((path, status, ok)).or_insert(0) += 1;
    }
    assert_eq!(
        statuses,
        BTreeMap::from([
            (("/healthz", 200, true), 100),
            (("/metrics", 200, true), 100)
        ])
    );
}

/// Past `MAX_OPEN_REQUESTS` (512) connections at once, the next is told 503 at once rather
/// than queued; once some close, requests are served again.
#[test]
fn past_512_open_requests_the_next_gets_503_at_once() {
    const MAX_OPEN_REQUESTS: usize = 512;
    let (probe, _state) = start(NOWHERE, &["--metrics-timeout", "60s"]);
    let addr: SocketAddr = probe.metrics_addr().parse().expect("metrics address");
    let mut idle: Vec<TcpStream> = (0..MAX_OPEN_REQUESTS)
        .map(|_| TcpStream::connect_timeout(&addr, CLIENT_TIMEOUT).expect("connect"))
        .collect();
    // Accepted in order: by the time this one is, the 512 before it hold every slot.
    let busy = probe.http_raw(b"GET /healthz HTTP/1.1\r\n\r\n", CLIENT_TIMEOUT);
    assert_eq!(busy.status, Some(503), "{}", busy.text);
    assert!(busy.text.ends_with("busy\n"), "{}", busy.text);
    assert!(busy.closed, "the 503 closes the connection");
    assert!(
        busy.elapsed < Duration::from_secs(5),
        "answered at once: {:?}",
        busy.elapsed
    );
    idle.truncate(MAX_OPEN_REQUESTS - 8);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let r = probe.http_raw(b"GET /healthz HTTP/1.1\r\n\r\n", CLIENT_TIMEOUT);
        if r.status == Some(200) {
            assert!(r.text.ends_with("ok\n"), "{}", r.text);
            break;
        }
        assert_eq!(r.status, Some(503), "{}", r.text);
        assert!(Instant::now() < deadline, "no slot freed within 10 s");
        std::thread::sleep(Duration::from_millis(50)); // poll interval
    }
    drop(idle);
}

/// One answer read off a kept-alive connection: the head, and exactly the body its
/// Content-Length announces (none for `head_only`).
fn read_answer(s: &mut TcpStream, head_only: bool) -> (String, Vec<u8>) {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        let n = std::io::Read::read(s, &mut byte).expect("read an answer's head");
        assert_eq!(n, 1, "closed after {:?}", String::from_utf8_lossy(&head));
        head.push(byte[0]);
    }
    let head = String::from_utf8(head).expect("UTF-8 head");
    let length: usize = head
        .lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse().ok())?
        })
        .unwrap_or_else(|| panic!("no Content-Length: {head}"));
    let mut body = vec![0u8; if head_only { 0 } else { length }];
    std::io::Read::read_exact(s, &mut body).expect("read the body");
    (head, body)
}

fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines().find_map(|l| {
        let (n, v) = l.split_once(':')?;
        n.eq_ignore_ascii_case(name).then(|| v.trim())
    })
}

/// gzip, keep-alive and HEAD under the same bounds: on one connection a gzipped scrape (when
/// asked for), a plain one, a HEAD (the length, no body) and /healthz; then a head left
/// unfinished on that kept-alive connection gets 408 after the timeout and the close. One over
/// 16 KiB on a kept-alive connection gets 431; `gzip;q=0` gets no gzip.
#[test]
fn kept_alive_connections_take_gzip_and_head_within_the_same_bounds() {
    let (probe, _state) = start(NOWHERE, &["--metrics-timeout", "1s"]);
    let addr: SocketAddr = probe.metrics_addr().parse().expect("address");
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nAccept-Encoding: gzip\r\n\r\n")
        .expect("send");
    let (head, packed) = read_answer(&mut s, false);
    assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
    assert_eq!(header(&head, "content-encoding"), Some("gzip"), "{head}");
    let mut text = String::new();
    std::io::Read::read_to_string(
        &mut flate2::read::GzDecoder::new(packed.as_slice()),
        &mut text,
    )
    .expect("a gzip body");
    assert!(text.contains("psprobe_connections_active"), "{text}");
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        .expect("send on the same connection");
    let (head, plain) = read_answer(&mut s, false);
    assert_eq!(header(&head, "content-encoding"), None, "{head}");
    let plain = String::from_utf8(plain).expect("UTF-8");
    assert!(plain.contains("psprobe_connections_active"));
    eprintln!(
        "figure: /metrics {} bytes, gzipped {} ({:.1}x)",
        plain.len(),
        packed.len(),
        plain.len() as f64 / packed.len() as f64
    );
    assert!(
        packed.len() * 4 < plain.len(),
        "{} vs {}",
        packed.len(),
        plain.len()
    );
    s.write_all(
        b"HEAD /metrics HTTP/1.1\r\nHost: x\r\n\r\nGET /healthz HTTP/1.1\r\nHost: x\r\n\r\n",
    )
    .expect("send a HEAD and a GET");
    let (head, _) = read_answer(&mut s, true);
    assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
    let length: usize = header(&head, "content-length").unwrap().parse().unwrap();
    assert!(length > 1000, "HEAD tells the GET's length: {head}");
    let (head, body) = read_answer(&mut s, false);
    assert!(
        head.starts_with("HTTP/1.1 200 OK\r\n"),
        "no body came after the HEAD: {head}"
    );
    assert_eq!(body, b"ok\n");

    let started = Instant::now();
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
        .expect("send an unfinished head");
    let mut rest = Vec::new();
    let closed = std::io::Read::read_to_end(&mut s, &mut rest).is_ok();
    let rest = String::from_utf8_lossy(&rest);
    assert!(
        rest.starts_with("HTTP/1.1 408 Request Timeout\r\n"),
        "{rest:?}"
    );
    assert!(closed, "the 408 closes the connection");
    let took = started.elapsed();
    assert!(took < Duration::from_secs(4), "408 after {took:?}");
    eprintln!("figure: 408 on a kept-alive connection after {took:?} (--metrics-timeout 1s)");

    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    s.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nAccept-Encoding: gzip;q=0\r\n\r\n")
        .expect("send");
    let (head, body) = read_answer(&mut s, false);
    assert_eq!(
        (header(&head, "content-encoding"), &body[..]),
        (None, &b"ok\n"[..])
    );
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nAccept-Encoding: gzip;q=0\r\n\r\n")
        .expect("send");
    let (head, _) = read_answer(&mut s, false);
    assert_eq!(
        header(&head, "content-encoding"),
        None,
        "q=0 refuses gzip: {head}"
    );
    let mut big = b"GET /metrics HTTP/1.1\r\nHost: x\r\n".to_vec();
    while big.len() < 20 * 1024 {
        big.extend_from_slice(
            b"X-Padding: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n",
        );
    }
    big.extend_from_slice(b"\r\n");
    s.write_all(&big).expect("send 20 KiB of head");
    let mut rest = Vec::new();
    let _ = std::io::Read::read_to_end(&mut s, &mut rest);
    let rest = String::from_utf8_lossy(&rest);
    assert!(
        rest.starts_with("HTTP/1.1 431 Request Header Fields Too Large\r\n"),
        "{rest:?}"
    );
    assert_eq!(probe.healthz(), 200);
}

/// A real Prometheus, scraping every second, asks for gzip and keeps its connection: its
/// scrapes are answered gzipped, many on one connection, and its samples arrive whole.
#[test]
fn prometheus_scrapes_gzipped_on_one_kept_connection() {
    let (probe, _state) = start(NOWHERE, &["--log", "info,psprobe::metrics=trace"]);
    let prom = common::prometheus::Prometheus::start(&[probe.metrics_addr()], "1s");
    let answered = |log: &str| -> Vec<u64> {
        log.lines()
            .filter_map(|l| {
                let rest = l
                    .split("GET /metrics answered 200 gzipped, request ")
                    .nth(1)?;
                rest.split_whitespace().next()?.parse().ok()
            })
            .collect()
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    while answered(&probe.stderr_text()).len() < 8 {
        assert!(
            Instant::now() < deadline,
            "no 8 gzipped scrapes in 60 s:\n{}\n{}",
            probe.stderr_text(),
            prom.log_text()
        );
        std::thread::sleep(Duration::from_millis(200)); // poll interval
    }
    let log = probe.stderr_text();
    let requests = answered(&log);
    let connections = log
        .lines()
        .filter(|l| l.contains("metrics endpoint: ") && l.ends_with(" connected"))
        .count();
    eprintln!(
        "figure: {} gzipped scrapes over {connections} connection(s), up to {} on one",
        requests.len(),
        requests.iter().max().unwrap()
    );
    assert!(
        connections <= 2,
        "{connections} connections for {} scrapes",
        requests.len()
    );
    assert!(requests.iter().max() >= Some(&6), "{requests:?}");
    let up = prom.query("up").expect("query up");
    assert_eq!(up["result"][0]["value"][1], "1", "{up}");
    let series = prom
        .query("psprobe_connections_limit")
        .expect("query a psprobe series");
    assert_eq!(common::prometheus::result_len(&series), 1, "{series}");
}

// ---- admin port ----

/// Wrong-password logins from 8 connections at once for 3 s: at most the burst plus one
/// password check per second get an answer to their guess (1045); the rest are refused unchecked
/// (1129); the log has one WARN line for the whole storm; proxied traffic is served meanwhile;
/// the right password works again once a check is free.
#[test]
fn password_guessing_is_throttled_and_logged_once() {
    let db = MariaDb::start_default();
    let (probe, _state) = start(&db.addr(), &[]);
    let port = split_addr(probe.admin_addr()).1.to_string();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let storm = Duration::from_secs(3);
    let url = |password: &str| format!("mysql://admin:{password}@127.0.0.1:{port}/");
    let proxied = {
        let proxy = probe.proxy_addr().to_string();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_secs(1)); // in the middle of the storm
            let started = Instant::now();
            let out = mariadb_ok(&proxy, &["-N", "-e", "SELECT 40 + 2"], None);
            (out, started.elapsed())
        })
    };
    let started = Instant::now();
    let counts: BTreeMap<u16, u64> = runtime.block_on(async {
        let deadline = tokio::time::Instant::now() + storm;
        let tasks: Vec<_> = (0..8)
            .map(|_| {
                let url = url("a-wrong-guess");
                tokio::spawn(async move {
                    let mut counts = BTreeMap::new();
                    while tokio::time::Instant::now() < deadline {
                        let code = match mysql_async::Conn::from_url(url.as_str()).await {
                            Ok(conn) => {
                                let _ = conn.disconnect().await;
                                0
                            }
                            Err(mysql_async::Error::Server(e)) => e.code,
                            Err(_) => 1,
                        };
                        *counts.entry(code).or_insert(0u64) += 1;
                    }
                    counts
                })
            })
            .collect();
        let mut total = BTreeMap::new();
        for task in tasks {
            for (code, n) in task.await.expect("guessing task") {
                *total.entry(code).or_insert(0) += n;
            }
        }
        total
    });
    let elapsed = started.elapsed();
    let checked = counts.get(&1045).copied().unwrap_or(0);
    let blocked = counts.get(&1129).copied().unwrap_or(0);
    eprintln!(
        "figure: {:.1} password checks/s, {:.0} attempts/s over {elapsed:?}: {counts:?}",
        checked as f64 / elapsed.as_secs_f64(),
        (checked + blocked) as f64 / elapsed.as_secs_f64()
    );
    assert_eq!(
        counts
            .keys()
            .copied()
            .filter(|c| ![1045, 1129].contains(c))
            .count(),
        0,
        "only refusals expected: {counts:?}"
    );
    // 5 at once, then one per second (and a second of slack).
    assert!(
        (5..=5 + elapsed.as_secs() + 1).contains(&checked),
        "{checked} password checks in {elapsed:?}: {counts:?}"
    );
    assert!(blocked > 0, "{counts:?}");

    let (out, took) = proxied.join().expect("proxied client");
    assert_eq!(out.trim(), "42");
    assert!(took < Duration::from_secs(5), "proxied query took {took:?}");

    let stderr = probe.stderr_text();
    let warnings = stderr
        .lines()
        .filter(|l| l.contains("WARN") && l.contains("admin login refused"))
        .count();
    assert!(
        (1..=2).contains(&warnings),
        "{warnings} WARN lines:\n{stderr}"
    );
    assert!(!stderr.contains("a-wrong-guess"), "{stderr}");

    // The right password works once the peer has a check again (within a second or two).
    let deadline = Instant::now() + Duration::from_secs(5);
    runtime.block_on(async {
        loop {
            match mysql_async::Conn::from_url(url(ADMIN_SECRET).as_str()).await {
                Ok(conn) => {
                    let _ = conn.disconnect().await;
                    break;
                }
                Err(mysql_async::Error::Server(e)) if e.code == 1129 => {
                    assert!(e.message.contains("try again in"), "{}", e.message);
                    assert!(Instant::now() < deadline, "still blocked: {}", e.message);
                    tokio::time::sleep(Duration::from_millis(250)).await;
                }
                Err(e) => panic!("right password refused: {e}"),
            }
        }
    });
}

/// A 10 MB query is answered with ERROR 1153 and dropped as it arrives (psprobe's peak memory
/// barely moves); the connection goes on. A smaller cap is configurable.
#[test]
fn a_ten_megabyte_query_is_refused_without_buffering() {
    let (probe, _state) = start(NOWHERE, &[]);
    // The first query of a connection sets up its SQL engine: not what is measured.
    let out = admin_cli(&probe, ADMIN_SECRET, b"SELECT 'warm';\n");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let before = probe.status_kib("VmHWM");
    let mut script = b"SELECT '".to_vec();
    script.extend(std::iter::repeat_n(b'x', 10_000_000));
    script.extend_from_slice(b"';\nSELECT 'after';\n");
    let started = Instant::now();
    let out = admin_cli(&probe, ADMIN_SECRET, &script);
    let took = started.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("ERROR 1153 (08S01)") && stderr.contains("accepts at most 1048576"),
        "{stderr}"
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "after\nafter\n");
    let growth = probe.status_kib("VmHWM").saturating_sub(before);
    eprintln!("figure: 10 MB admin query refused in {took:?}; peak RSS growth {growth} KiB");
    assert!(growth < 8 * 1024, "peak RSS grew by {growth} KiB");

    let (small, _state) = start(NOWHERE, &["--admin-max-query-size", "8KiB"]);
    let mut script = b"SELECT '".to_vec();
    script.extend(std::iter::repeat_n(b'y', 9000));
    script.extend_from_slice(b"';\nSELECT 'after';\n");
    let out = admin_cli(&small, ADMIN_SECRET, &script);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("accepts at most 8192"), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "after\nafter\n");
}

/// Bytes that are not UTF-8, malformed SQL and writes each get a clear ERR, the connection
/// goes on, and the session settings clients send on connect are accepted.
#[test]
fn bad_queries_get_clear_errors() {
    let (probe, _state) = start(NOWHERE, &["--log", "debug"]);
    let script = b"SELECT '\xff\xfe';\nSELEC 1;\nSELECT FROM WHERE;\nSET GLOBAL x = 1;\n\
        SET SESSION sql_mode = 'ANSI';\nSET NAMES utf8mb4;\nSET autocommit = 1;\nSET @a = 1;\n\
        SELECT 'after';\n";
    let out = admin_cli(&probe, ADMIN_SECRET, script);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let errors: Vec<&str> = stderr.lines().filter(|l| l.starts_with("ERROR")).collect();
    assert_eq!(errors.len(), 4, "{stderr}");
    assert!(
        errors[0].starts_with("ERROR 1300 (HY000) at line 1: The query is not valid UTF-8"),
        "{stderr}"
    );
    assert!(
        errors[1].starts_with(
            "ERROR 1064 (42000) at line 2: You have an error in your SQL syntax near 'SELEC'"
        ),
        "{stderr}"
    );
    assert!(
        errors[2].starts_with("ERROR 1064 (42000) at line 3:"),
        "{stderr}"
    );
    assert!(
        errors[3].starts_with(
            "ERROR 1290 (HY000) at line 4: psprobe admin is read-only: SET GLOBAL is refused"
        ),
        "{stderr}"
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "after\nafter\n");
    let log = probe.stderr_text();
    assert!(log.contains("admin query is not valid UTF-8"), "{log}");
}

/// Without a password the admin interface does not start, on a loopback address or any other:
/// one line says what to do.
#[test]
fn the_admin_interface_needs_a_password() {
    for (addr, why) in [
        ("0.0.0.0:0", "it listens beyond this host"),
        ("127.0.0.1:0", "anyone on this host"),
    ] {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_psprobe"));
        cmd.env_remove("PSPROBE_ADMIN_PASSWORD")
            .args([
                "proxy",
                "--listen",
                "127.0.0.1:0",
                "--metrics",
                "127.0.0.1:0",
            ])
            .args(["--upstream", NOWHERE, "--admin", addr]);
        let out = run_with_timeout(cmd, None, CLIENT_TIMEOUT);
        assert_eq!(out.status.code(), Some(2), "{out:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(
            stderr.contains("needs a password") && stderr.contains(why),
            "{stderr}"
        );
        assert!(
            stderr.contains("PSPROBE_ADMIN_PASSWORD") && stderr.contains("--admin-password-file"),
            "{stderr}"
        );
        assert!(out.stdout.is_empty(), "it must not have started");
    }
}
