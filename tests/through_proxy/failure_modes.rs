//! Failure modes: the upstream down or gone mid-result, a client killed mid-result, bytes that
//! are not MySQL at all, an upstream that is an HTTP server, and shutdown on SIGTERM. psprobe must keep forwarding verbatim, keep
//! its gauges right, never hang, and stay up.

use crate::common;

use common::cli::{mariadb, mariadb_ok, split_addr, DATABASE, PASSWORD, USER};
use common::mariadb::MariaDb;
use common::probe::Probe;
use common::prom::Scrape;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant};

/// Polls `cond` until it yields a value; panics once `timeout` has passed.
fn wait_until<T>(what: &str, timeout: Duration, mut cond: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(v) = cond() {
            return v;
        }
        assert!(Instant::now() < deadline, "no {what} within {timeout:?}");
        thread::sleep(Duration::from_millis(20)); // poll interval
    }
}

/// Scrapes until `pred` holds; returns that scrape.
fn scrape_until(
    probe: &Probe,
    what: &str,
    timeout: Duration,
    pred: impl Fn(&Scrape) -> bool,
) -> Scrape {
    let deadline = Instant::now() + timeout;
    loop {
        let m = probe.scrape();
        if pred(&m) {
            return m;
        }
        assert!(
            Instant::now() < deadline,
            "no {what} within {timeout:?}:\n{}",
            m.text
        );
        thread::sleep(Duration::from_millis(20)); // poll interval
    }
}

/// Waits for every client connection to be closed and accounted for.
fn idle(probe: &Probe, timeout: Duration) -> Scrape {
    scrape_until(probe, "psprobe_connections_active == 0", timeout, |m| {
        m.get("psprobe_connections_active", &[]) == 0.0
    })
}

/// Asserts the sum of the matching series, showing the whole scrape when it differs.
#[track_caller]
fn expect(m: &Scrape, name: &str, labels: &[(&str, &str)], want: f64) {
    assert_eq!(m.get(name, labels), want, "{name}{labels:?}\n{}", m.text);
}

const CONNECT_ERRORS: &str = "psprobe_upstream_connect_errors_total";
const COMMANDS: &str = "psprobe_commands_total";
const UNOBSERVED: &str = "psprobe_unobserved_connections_total";
const PARSE_ERRORS: &str = "psprobe_parse_errors_total";
const BYTES: &str = "psprobe_bytes_total";
const C2S: (&str, &str) = ("direction", "client_to_server");
const S2C: (&str, &str) = ("direction", "server_to_client");
const QUERY_ROWS: [(&str, &str); 2] = [("command", "query"), ("outcome", "rows")];
const QUERY_ABORTED: [(&str, &str); 2] = [("command", "query"), ("outcome", "aborted")];

fn bytes(m: &Scrape) -> f64 {
    m.get(BYTES, &[S2C])
}

/// The CLI through the proxy must fail, and show psprobe's reason and code. (The installed
/// libmariadb shows any ERR received before the handshake as "ERROR 2002 ... cannot be
/// verified: CODE - MESSAGE", and rejects codes of the client range, 2003 included, as
/// "ERROR 2027 Received malformed packet", dropping the message: psprobe sends 1429.)
fn assert_refused(proxy: &str, upstream: &str) {
    let out = mariadb(proxy, &["-e", "SELECT 1"], None);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success(),
        "the CLI succeeded without upstream: {stderr}"
    );
    let why = format!("psprobe could not connect to upstream {upstream}");
    assert!(stderr.contains(&why), "stderr lacks {why:?}: {stderr}");
    assert!(
        stderr.contains("1429"),
        "psprobe's error code is shown: {stderr}"
    );
}

#[test]
fn upstream_down_then_back() {
    let mut db = MariaDb::start_default();
    let mut probe = Probe::start(&db.addr(), &[]);
    db.kill();
    assert_refused(probe.proxy_addr(), &db.addr());
    let m = idle(&probe, Duration::from_secs(10));
    expect(&m, CONNECT_ERRORS, &[], 1.0);
    assert!(probe.wait_exit(Duration::ZERO).is_none(), "psprobe exited");
    assert_eq!(probe.healthz(), 200);

    db.restart();
    let out = mariadb_ok(probe.proxy_addr(), &["-N", "-e", "SELECT 1"], None);
    assert_eq!(out.trim(), "1");
    let m = idle(&probe, Duration::from_secs(10));
    expect(&m, CONNECT_ERRORS, &[], 1.0);
    expect(&m, "psprobe_connections_total", &[], 2.0);
    expect(&m, COMMANDS, &QUERY_ROWS, 1.0);
}

#[test]
fn upstream_never_listening() {
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port();
    let upstream = format!("127.0.0.1:{port}");
    let mut probe = Probe::start(&upstream, &[]);
    assert_refused(probe.proxy_addr(), &upstream);
    assert_refused(probe.proxy_addr(), &upstream);
    let m = idle(&probe, Duration::from_secs(10));
    expect(&m, CONNECT_ERRORS, &[], 2.0);
    expect(&m, COMMANDS, &[], 0.0);
    assert!(probe.wait_exit(Duration::ZERO).is_none(), "psprobe exited");
}

/// An upstream that is no MySQL server at all: a real HTTP server, which waits for its client
/// to speak. The client (the real CLI) gets psprobe's error naming the cause within 3 s, not
/// silence and an empty close; psprobe stays up.
#[test]
fn an_http_upstream_is_an_error_within_3s() {
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port();
    let mut cmd = Command::new("python3");
    cmd.args([
        "-m",
        "http.server",
        &port.to_string(),
        "--bind",
        "127.0.0.1",
    ])
    .current_dir(std::env::temp_dir())
    .stdout(Stdio::null())
    .stderr(Stdio::null());
    let http = KillOnDrop(psprobe_harness::child::spawn_tied(cmd).expect("python3 -m http.server"));
    let upstream = format!("127.0.0.1:{port}");
    wait_until("the HTTP server to listen", Duration::from_secs(20), || {
        TcpStream::connect(&upstream).ok()
    });
    let mut probe = Probe::start(&upstream, &[]);
    for _ in 0..2 {
        let started = Instant::now();
        let out = mariadb(probe.proxy_addr(), &["-e", "SELECT 1"], None);
        let took = started.elapsed();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{err}");
        // (The client wraps an error before the handshake: "ERROR 2002 ... cannot be verified:
        // 1043 - psprobe: ...".)
        assert!(
            err.contains("1043 - psprobe: the server at")
                && err.contains("sent no greeting")
                && err.contains("is it a MySQL server"),
            "{err}"
        );
        assert!(
            took < Duration::from_secs(3),
            "the error came after {took:?}"
        );
    }
    assert!(probe.wait_exit(Duration::ZERO).is_none(), "psprobe exited");
    assert!(probe
        .stderr_text()
        .contains("has greeted no connection lately"));
    drop(http);
}

/// Deterministic pseudo-random bytes (xorshift64*).
fn noise(seed: u64, len: usize) -> Vec<u8> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            s ^= s >> 12;
            s ^= s << 25;
            s ^= s >> 27;
            (s.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 56) as u8
        })
        .collect()
}

fn assert_same(what: &str, sent: &[u8], got: &[u8]) {
    if sent != got {
        let at = sent.iter().zip(got).position(|(a, b)| a != b);
        panic!(
            "{what}: sent {} bytes, got {}; first difference at {at:?}",
            sent.len(),
            got.len()
        );
    }
}

/// A one-connection fake server: sends `hello`, then echoes whatever it receives until EOF.
fn echo_server(hello: Vec<u8>) -> (String, thread::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind fake server");
    let addr = listener.local_addr().expect("fake server addr").to_string();
    let server = thread::spawn(move || {
        let (mut s, _) = listener.accept().expect("accept from psprobe");
        s.write_all(&hello).expect("send hello");
        let mut buf = vec![0u8; 16 * 1024];
        while let Ok(n @ 1..) = s.read(&mut buf) {
            if s.write_all(&buf[..n]).is_err() {
                break;
            }
        }
    });
    (addr, server)
}

/// Through the proxy: expects `hello`, then sends `data` in irregular chunks while reading
/// the echo back; both must arrive byte for byte. Closes only after the whole echo is read.
fn exchange(proxy: &str, hello: &[u8], data: &[u8]) {
    let mut s = TcpStream::connect(proxy).expect("connect to proxy");
    s.set_nodelay(true).expect("nodelay");
    s.set_read_timeout(Some(Duration::from_secs(30)))
        .expect("read timeout");
    let mut got = vec![0u8; hello.len()];
    s.read_exact(&mut got).expect("read hello through proxy");
    assert_same("server hello", hello, &got);
    let (mut w, data_w) = (s.try_clone().expect("clone stream"), data.to_vec());
    let writer = thread::spawn(move || {
        let (mut off, mut st) = (0, 0x1234_5678_9abc_def1_u64);
        while off < data_w.len() {
            st ^= st << 13;
            st ^= st >> 7;
            st ^= st << 17;
            let n = (1 + (st % 20_000) as usize).min(data_w.len() - off);
            w.write_all(&data_w[off..off + n])
                .expect("send through proxy");
            off += n;
        }
    });
    let mut echo = vec![0u8; data.len()];
    s.read_exact(&mut echo).expect("read echo through proxy");
    writer.join().expect("writer thread panicked");
    assert_same("echo", data, &echo);
}

fn garbage_case(hello: Vec<u8>, data: Vec<u8>) -> Scrape {
    let (addr, server) = echo_server(hello.clone());
    let probe = Probe::start(&addr, &[]);
    exchange(probe.proxy_addr(), &hello, &data);
    // psprobe passes the client's close on to the upstream.
    wait_until("EOF at the fake server", Duration::from_secs(10), || {
        server.is_finished().then_some(())
    });
    let m = idle(&probe, Duration::from_secs(10));
    expect(&m, UNOBSERVED, &[], 1.0);
    let sent = (data.len(), hello.len() + data.len());
    expect(&m, BYTES, &[C2S], sent.0 as f64);
    expect(&m, BYTES, &[S2C], sent.1 as f64);
    expect(&m, COMMANDS, &[], 0.0);
    m
}

#[test]
fn garbage_server_is_forwarded_verbatim_unobserved() {
    let mut hello = noise(1, 64 * 1024);
    // A first "packet" that completes (a random 3-byte length would make psprobe wait for up
    // to 16 MB that never come) and claims protocol version 9.
    hello[..5].copy_from_slice(&[42, 0, 0, 0, 9]);
    let m = garbage_case(hello, noise(2, 1024 * 1024));
    expect(&m, UNOBSERVED, &[("reason", "unsupported_protocol")], 1.0);
    expect(&m, PARSE_ERRORS, &[], 0.0);
}

/// A plausible MariaDB protocol-10 greeting packet (sequence id 0).
fn greeting_v10() -> Vec<u8> {
    // CONNECT_WITH_DB | PROTOCOL_41 | SECURE_CONNECTION | PLUGIN_AUTH; bit 0 clear: MariaDB.
    let caps: u32 = 1 << 3 | 1 << 9 | 1 << 15 | 1 << 19;
    let mut p = vec![10u8];
    p.extend_from_slice(b"10.11.99-MariaDB-fake\0");
    p.extend_from_slice(&42u32.to_le_bytes());
    p.extend_from_slice(b"abcdefgh\0"); // scramble part 1, filler
    p.extend_from_slice(&(caps as u16).to_le_bytes());
    p.push(45); // utf8mb4_general_ci
    p.extend_from_slice(&2u16.to_le_bytes()); // SERVER_STATUS_AUTOCOMMIT
    p.extend_from_slice(&((caps >> 16) as u16).to_le_bytes());
    p.push(21);
    p.extend_from_slice(&[0; 10]); // reserved, MariaDB extended capabilities
    p.extend_from_slice(b"ijklmnopqrst\0mysql_native_password\0");
    let mut packet = vec![p.len() as u8, 0, 0, 0];
    packet.extend(p);
    packet
}

#[test]
fn garbage_client_after_real_greeting_is_a_parse_error() {
    // A "HandshakeResponse" that claims PROTOCOL_41 but is far too short, then random bytes.
    let mut data = vec![10, 0, 0, 1, 0x00, 0x02, 0x00, 0x00];
    data.extend(noise(3, 6));
    data.extend(noise(4, 256 * 1024));
    let m = garbage_case(greeting_v10(), data);
    expect(&m, PARSE_ERRORS, &[], 1.0);
    expect(&m, PARSE_ERRORS, &[("reason", "malformed_packet")], 1.0);
}

/// About 67 MB of `SELECT * FROM big`: 16^4 = 65536 rows of 1000 bytes. (A cross join rather
/// than INSERT ... SELECT doubling, which needs an internal temporary table per step.)
fn big_table(db: &MariaDb) {
    db.sql(
        "CREATE TABLE psprobe_test.d (n INT); \
         INSERT INTO psprobe_test.d VALUES (0),(1),(2),(3),(4),(5),(6),(7),(8),(9),(10),(11),(12),(13),(14),(15); \
         CREATE TABLE psprobe_test.big (id INT AUTO_INCREMENT PRIMARY KEY, pad VARCHAR(1000)); \
         INSERT INTO psprobe_test.big (pad) SELECT REPEAT('x', 1000) \
         FROM psprobe_test.d a, psprobe_test.d b, psprobe_test.d c, psprobe_test.d e;",
    );
    assert_eq!(
        db.sql("SELECT COUNT(*) FROM psprobe_test.big").trim(),
        "65536"
    );
}

struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The CLI running `sql` row by row (--quick), its stdout piped but not read: once the pipe
/// is full it stops reading its socket and the proxy's writes back up.
fn stalled_cli(proxy: &str, sql: &str) -> KillOnDrop {
    let (host, port) = split_addr(proxy);
    let child = Command::new("mariadb")
        .args([
            "--no-defaults",
            "--protocol=TCP",
            "--quick",
            "-h",
            host,
            "-P",
            port,
        ])
        .arg(format!("-u{USER}"))
        .arg(format!("-p{PASSWORD}"))
        .args([DATABASE, "-e", sql])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn mariadb");
    KillOnDrop(child)
}

/// Starts the big SELECT through the proxy and returns once more than 1 MB has flowed back.
fn big_select_in_flight(db: &MariaDb, probe: &Probe) -> KillOnDrop {
    let mut cli = stalled_cli(probe.proxy_addr(), "SELECT * FROM big");
    // Mid-result: more than the greeting and login, far less than the 65 MB. (What a stalled
    // client lets through is its own buffers plus psprobe's unsent bound, TCP_NOTSENT_LOWAT:
    // about 300 KB here; before that bound psprobe's send buffer took 4 MB more.)
    scrape_until(
        probe,
        "100 KB server_to_client",
        Duration::from_secs(60),
        |m| bytes(m) > 1e5,
    );
    assert!(
        cli.0.try_wait().expect("try_wait").is_none(),
        "the CLI should be stalled"
    );
    let running = db.sql(
        "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO = 'SELECT * FROM big'",
    );
    assert_eq!(running.trim(), "1", "the SELECT runs on the server");
    cli
}

#[test]
fn client_killed_mid_result() {
    let db = MariaDb::start_default();
    big_table(&db);
    let probe = Probe::start(&db.addr(), &[]);
    let mut cli = big_select_in_flight(&db, &probe);
    cli.0.kill().expect("SIGKILL the CLI");
    cli.0.wait().expect("reap the CLI");
    let killed = Instant::now();
    let m = idle(&probe, Duration::from_secs(15));
    eprintln!(
        "client killed: connections_active 0 after {:?}",
        killed.elapsed()
    );
    expect(&m, COMMANDS, &QUERY_ABORTED, 1.0);
    expect(&m, COMMANDS, &QUERY_ROWS, 0.0);
    assert!(bytes(&m) < 65e6, "{}", m.text);
    // The upstream side was closed too: the server gives up the query and the session.
    let q = "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE USER = 'psprobe'";
    wait_until("upstream session gone", Duration::from_secs(15), || {
        (db.sql(q).trim() == "0").then_some(())
    });
    eprintln!(
        "client killed: upstream session gone after {:?}",
        killed.elapsed()
    );
    let out = mariadb_ok(probe.proxy_addr(), &["-N", "-e", "SELECT 1"], None);
    assert_eq!(out.trim(), "1", "psprobe still serves new clients");
}

#[test]
fn upstream_killed_mid_result() {
    let mut db = MariaDb::start_default();
    big_table(&db);
    let probe = Probe::start(&db.addr(), &[]);
    let mut cli = big_select_in_flight(&db, &probe);
    db.kill();
    let killed = Instant::now();
    // Let the CLI read what is still buffered; it must then find the connection gone.
    let mut stdout = cli.0.stdout.take().expect("stdout piped");
    let drain = thread::spawn(move || std::io::copy(&mut stdout, &mut std::io::sink()));
    let status: ExitStatus = wait_until("CLI exit", Duration::from_secs(30), || {
        cli.0.try_wait().expect("try_wait")
    });
    let exited = killed.elapsed();
    let printed = drain.join().expect("drain thread").unwrap_or(0);
    let mut stderr = String::new();
    let _ = cli
        .0
        .stderr
        .take()
        .expect("stderr piped")
        .read_to_string(&mut stderr);
    eprintln!("upstream killed: CLI exited after {exited:?} ({status}, {printed} bytes printed): {stderr}");
    assert!(!status.success(), "the CLI saw a complete result? {stderr}");
    let m = idle(&probe, Duration::from_secs(15));
    eprintln!(
        "upstream killed: connections_active 0 after {:?}",
        killed.elapsed()
    );
    expect(&m, COMMANDS, &QUERY_ABORTED, 1.0);
    expect(&m, COMMANDS, &QUERY_ROWS, 0.0);
}

/// Runs the CLI on a thread and returns once the server is executing `sql`.
fn query_running(
    db: &MariaDb,
    probe: &Probe,
    sql: &'static str,
) -> thread::JoinHandle<std::process::Output> {
    let proxy = probe.proxy_addr().to_owned();
    let client = thread::spawn(move || mariadb(&proxy, &["-N", "-e", sql], None));
    let q = format!("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO = '{sql}'");
    wait_until(sql, Duration::from_secs(30), || {
        (db.sql(&q).trim() == "1").then_some(())
    });
    client
}

#[test]
fn sigterm_lets_the_running_query_finish_then_exits_0() {
    let db = MariaDb::start_default();
    let mut probe = Probe::start(&db.addr(), &["--shutdown-grace", "10s"]);
    let client = query_running(&db, &probe, "SELECT SLEEP(2)");
    let signalled = Instant::now();
    probe.signal(libc::SIGTERM);
    let proxy = probe.proxy_addr().to_owned();
    let refused = wait_until("refused connection", Duration::from_secs(2), || {
        TcpStream::connect(&proxy)
            .is_err()
            .then(|| signalled.elapsed())
    });
    let status = probe
        .wait_exit(Duration::from_secs(15))
        .expect("psprobe did not exit within 15 s");
    let exited = signalled.elapsed();
    eprintln!("grace 10s: refusing after {refused:?}, exited after {exited:?} ({status})");
    assert_eq!(status.code(), Some(0), "{status}");
    let out = client.join().expect("client thread");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the running query was cut: {stderr}");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "0");
    assert!(
        exited < Duration::from_secs(8),
        "psprobe waited for more than its one connection"
    );
}

#[test]
fn sigterm_cuts_a_long_query_after_the_grace() {
    let db = MariaDb::start_default();
    let mut probe = Probe::start(&db.addr(), &["--shutdown-grace", "200ms"]);
    let client = query_running(&db, &probe, "SELECT SLEEP(30)");
    let signalled = Instant::now();
    probe.signal(libc::SIGTERM);
    let status = probe
        .wait_exit(Duration::from_secs(5))
        .expect("psprobe did not exit within 5 s");
    let exited = signalled.elapsed();
    assert_eq!(status.code(), Some(0), "{status}");
    wait_until("the CLI to finish", Duration::from_secs(5), || {
        client.is_finished().then_some(())
    });
    let out = client.join().expect("client thread");
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!(
        "grace 200ms: exited after {exited:?}, CLI after {:?}: {stderr}",
        signalled.elapsed()
    );
    assert!(!out.status.success(), "SLEEP(30) cannot have completed");
}
