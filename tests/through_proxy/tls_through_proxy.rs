//! TLS through psprobe against real servers with TLS on: MariaDB 10.11 (host), 11.8 (Debian
//! 13 chroot) and MySQL 9.7 (Debian sid chroot, its own generated certificate). The mariadb CLI
//! and openssl s_client are the clients.

use crate::common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::certs::Certs;
use common::cli::{mariadb, mariadb_ok, run_with_timeout, split_addr, DATABASE, PASSWORD, USER};
use common::observed::{self, digests, handshake_failures, transport, unobserved, wait_for};
use common::probe::Probe;
use common::server::{Flavor, Options, PerFlavor, Server};

static SERVERS: PerFlavor = PerFlavor::new();

/// A TLS server (performance_schema off) with `extra` options.
fn start(v: Flavor, extra: &[&str]) -> Server {
    Server::start(
        v,
        Options {
            performance_schema: false,
            extra_args: extra.iter().map(|s| s.to_string()).collect(),
        },
    )
}

/// One TLS server per flavor, shared by the tests of this suite.
fn server(v: Flavor) -> &'static Server {
    SERVERS.get(v, || start(v, &[]))
}

/// psprobe in front of `upstream`, generated certificates in its own state dir.
fn probe(upstream: &str, extra: &[&str]) -> (Probe, tempfile::TempDir) {
    let state = tempfile::tempdir().expect("state dir");
    let mut args = vec!["--state-dir", state.path().to_str().expect("utf-8 path")];
    args.extend_from_slice(extra);
    (Probe::start(upstream, &args), state)
}

fn psprobe_ca(state: &tempfile::TempDir) -> String {
    state.path().join("tls/ca.pem").display().to_string()
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The cipher the client reports for its own leg (`status` command of the CLI).
fn client_cipher(status: &str) -> String {
    status
        .lines()
        .find(|l| l.starts_with("SSL:"))
        .and_then(|l| l.split("Cipher in use is ").nth(1))
        .unwrap_or("")
        .trim()
        .to_string()
}

fn tls_clients_are_observed(v: Flavor) {
    let db = server(v);
    let (probe, state) = probe(&db.addr(), &[]);
    let addr = probe.proxy_addr().to_string();

    let out = mariadb_ok(
        &addr,
        &[
            "--ssl",
            "-e",
            "status; SHOW STATUS LIKE 'Ssl_cipher'; SELECT 'tls-digest-check' AS probe_marker",
        ],
        None,
    );
    assert!(
        !client_cipher(&out).is_empty(),
        "client leg not TLS:\n{out}"
    );
    let upstream_cipher = out
        .lines()
        .find(|l| l.starts_with("Ssl_cipher"))
        .and_then(|l| l.split('\t').nth(1))
        .unwrap_or("");
    assert!(!upstream_cipher.is_empty(), "server leg not TLS:\n{out}");

    // Verification of psprobe's certificate with psprobe's CA works; with another CA it fails.
    let ca = psprobe_ca(&state);
    let ok = mariadb(
        &addr,
        &[
            "--ssl-verify-server-cert",
            &format!("--ssl-ca={ca}"),
            "-e",
            "SELECT 1",
        ],
        None,
    );
    assert!(ok.status.success(), "{}", text(&ok));
    let wrong = db.ca().display().to_string();
    let refused = mariadb(
        &addr,
        &[
            "--ssl-verify-server-cert",
            &format!("--ssl-ca={wrong}"),
            "-e",
            "SELECT 1",
        ],
        None,
    );
    assert!(!refused.status.success(), "wrong CA accepted");

    // TLS 1.2 and 1.3 on the client leg.
    for (version, cipher_prefix) in [("TLSv1.2", "ECDHE-"), ("TLSv1.3", "TLS_")] {
        let out = mariadb_ok(
            &addr,
            &["--ssl", &format!("--tls-version={version}"), "-e", "status"],
            None,
        );
        let cipher = client_cipher(&out);
        assert!(cipher.starts_with(cipher_prefix), "{version}: {cipher}");
    }

    let s = wait_for(&probe, "a refused handshake counted", |s| {
        handshake_failures(s, "client", "certificate") >= 1.0
    });
    assert!(
        digests(&s).contains_key("select ? as probe_marker"),
        "{:?}",
        digests(&s)
    );
    assert_eq!(unobserved(&s), 0.0, "{}", s.text);
    assert!(transport(&s, "terminated", "none") >= 4.0, "{}", s.text);
    assert!(probe
        .stderr_text()
        .contains("TLS handshake with the client failed"));
}

#[test]
fn tls_clients_are_observed_10_11() {
    tls_clients_are_observed(Flavor::MariaDb1011);
}

#[test]
fn tls_clients_are_observed_11_8() {
    tls_clients_are_observed(Flavor::MariaDb118);
}

#[test]
fn tls_clients_are_observed_mysql_9_7() {
    tls_clients_are_observed(Flavor::MySql97);
}

/// `openssl s_client -starttls mysql`: the subject of the first certificate, the count of
/// certificates sent, and whether the session was resumed.
fn s_client(addr: &str, extra: &[&str]) -> (String, usize, bool) {
    let mut cmd = Command::new("openssl");
    cmd.args([
        "s_client",
        "-starttls",
        "mysql",
        "-connect",
        addr,
        "-showcerts",
    ])
    .args(extra);
    // With -sess_out, stdin stays open until s_client has saved the session: with TLS 1.3 the
    // ticket arrives after the handshake, and closing stdin at once can quit before it is read.
    // (Its stdout is block-buffered into the pipe, so the file is the signal, not the text.)
    let saved = extra
        .iter()
        .position(|a| *a == "-sess_out")
        .and_then(|i| extra.get(i + 1))
        .map(Path::new);
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut child = cmd.spawn().expect("run openssl");
    let stdin = child.stdin.take();
    let deadline = Instant::now() + Duration::from_secs(20);
    while saved.is_some_and(|f| !f.exists()) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(stdin);
    let mut stdout = String::new();
    let _ = child
        .stdout
        .take()
        .expect("stdout piped")
        .read_to_string(&mut stdout);
    let _ = child.wait();
    let subject = stdout
        .lines()
        .find(|l| l.starts_with("subject="))
        .unwrap_or("")
        .to_string();
    let certs = stdout.matches("BEGIN CERTIFICATE").count();
    (subject, certs, stdout.contains("Reused, TLS"))
}

#[test]
fn openssl_sees_psprobe_in_terminate_and_the_server_in_passthrough() {
    let db = server(Flavor::MariaDb1011);
    let (terminate, _s1) = probe(&db.addr(), &[]);
    let (subject, certs, _) = s_client(terminate.proxy_addr(), &[]);
    assert!(subject.contains("psprobe"), "{subject}");
    assert_eq!(certs, 2, "the whole chain: leaf and CA");

    // Session resumption, TLS 1.2 (session id) and 1.3 (ticket).
    let dir = tempfile::tempdir().expect("tempdir");
    for version in ["-tls1_2", "-tls1_3"] {
        let sess = dir.path().join(version).display().to_string();
        let (_, _, first) = s_client(terminate.proxy_addr(), &[version, "-sess_out", &sess]);
        let (_, _, again) = s_client(terminate.proxy_addr(), &[version, "-sess_in", &sess]);
        assert!(!first && again, "{version}: session not resumed");
    }

    let (passthrough, _s2) = probe(&db.addr(), &["--client-tls", "passthrough"]);
    let (subject, _, _) = s_client(passthrough.proxy_addr(), &[]);
    assert!(subject.contains("mariadb test server"), "{subject}");
    let out = mariadb_ok(passthrough.proxy_addr(), &["--ssl", "-e", "SELECT 1"], None);
    assert!(out.contains('1'));
    let s = wait_for(&passthrough, "passthrough counted", |s| {
        transport(s, "passthrough", "unknown") >= 2.0
    });
    assert!(
        s.get("psprobe_unobserved_connections_total", &[("reason", "tls")]) >= 2.0,
        "{}",
        s.text
    );
    assert!(s.get("psprobe_unobserved_exchanges_total", &[]) >= 1.0);
    assert!(s.get("psprobe_unobserved_bytes_total", &[]) > 0.0);
}

fn secure_transport_required(v: Flavor) {
    let db = start(v, &["--require-secure-transport=ON"]);
    let (probe, _state) = probe(&db.addr(), &[]);
    let out = mariadb_ok(
        probe.proxy_addr(),
        &["--ssl", "-N", "-B", "-e", "SHOW STATUS LIKE 'Ssl_version'"],
        None,
    );
    assert!(out.contains("TLSv1."), "server leg not TLS: {out}");
    // A plain client is refused as it would be without psprobe...
    let plain = mariadb(probe.proxy_addr(), &["--skip-ssl", "-e", "SELECT 1"], None);
    let direct = mariadb(&db.addr(), &["--skip-ssl", "-e", "SELECT 1"], None);
    assert!(!plain.status.success() && !direct.status.success());
    // ...and served with --server-tls required, psprobe encrypting the server leg for it.
    let (required, _state2) = probe_required(&db.addr());
    let out = mariadb_ok(
        required.proxy_addr(),
        &[
            "--skip-ssl",
            "-N",
            "-B",
            "-e",
            "status; SHOW STATUS LIKE 'Ssl_version'",
        ],
        None,
    );
    assert!(client_cipher(&out).is_empty(), "client leg is plain");
    assert!(out.contains("TLSv1."), "server leg is TLS: {out}");
    let s = wait_for(&required, "plain connection counted", |s| {
        transport(s, "none", "none") >= 1.0
    });
    assert!(
        digests(&s).contains_key("show status like ?"),
        "{:?}",
        digests(&s)
    );
    assert_eq!(unobserved(&s), 0.0);
}

fn probe_required(addr: &str) -> (Probe, tempfile::TempDir) {
    probe(addr, &["--server-tls", "required"])
}

#[test]
fn secure_transport_required_10_11() {
    secure_transport_required(Flavor::MariaDb1011);
}

#[test]
fn secure_transport_required_11_8() {
    secure_transport_required(Flavor::MariaDb118);
}

#[test]
fn secure_transport_required_mysql_9_7() {
    secure_transport_required(Flavor::MySql97);
}

#[test]
fn server_tls_disabled_terminates_onto_a_plain_leg() {
    let db = server(Flavor::MariaDb1011);
    let (probe, _state) = probe(&db.addr(), &["--server-tls", "disabled"]);
    let out = mariadb_ok(
        probe.proxy_addr(),
        &[
            "--ssl",
            "-e",
            "status; SHOW STATUS LIKE 'Ssl_version'; SELECT 42",
        ],
        None,
    );
    assert!(!client_cipher(&out).is_empty(), "client leg is TLS:\n{out}");
    let version = out
        .lines()
        .find(|l| l.starts_with("Ssl_version"))
        .unwrap_or("");
    assert_eq!(
        version.trim(),
        "Ssl_version",
        "server leg is plain: {version:?}"
    );
    let s = wait_for(&probe, "terminated", |s| {
        transport(s, "terminated", "none") >= 1.0
    });
    assert!(digests(&s).contains_key("select ?"), "{:?}", digests(&s));
}

/// Raw client: reads the greeting, sends an SSLRequest, returns the socket.
fn after_ssl_request(addr: &str) -> TcpStream {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(20)))
        .expect("timeout");
    let mut header = [0u8; 4];
    s.read_exact(&mut header).expect("greeting header");
    let len = usize::from(header[0]) | usize::from(header[1]) << 8 | usize::from(header[2]) << 16;
    let mut greeting = vec![0; len];
    s.read_exact(&mut greeting).expect("greeting");
    let caps: u32 = (1 << 9) | (1 << 15) | (1 << 19); // PROTOCOL_41, SECURE, PLUGIN_AUTH
    s.write_all(&common::wire::ssl_request(caps))
        .expect("SSLRequest");
    s
}

/// The peer closed (EOF or reset) within 20 s.
fn closed_by_peer(s: &mut TcpStream) -> bool {
    let mut buf = [0u8; 256];
    loop {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => return true,
            Ok(_) => continue, // an alert
        }
    }
}

#[test]
fn bad_tls_input_is_counted_logged_and_closed_without_disturbing_others() {
    let db = server(Flavor::MariaDb1011);
    let (probe, _state) = probe(&db.addr(), &["--tls-handshake-timeout", "1s"]);
    let addr = probe.proxy_addr().to_string();

    // A stalled one, started first, and an ordinary client that works meanwhile.
    let mut stalled = after_ssl_request(&addr);
    let started = Instant::now();

    let mut garbage = after_ssl_request(&addr);
    garbage
        .write_all(b"GET / HTTP/1.1\r\nHost: psprobe\r\n\r\n")
        .expect("garbage");
    assert!(closed_by_peer(&mut garbage));

    let mut truncated = after_ssl_request(&addr);
    // The first bytes of a TLS 1.2 ClientHello, then the client is gone.
    truncated
        .write_all(&[
            0x16, 0x03, 0x01, 0x00, 0xc8, 0x01, 0x00, 0x00, 0xc4, 0x03, 0x03,
        ])
        .expect("partial hello");
    drop(truncated);

    let out = mariadb_ok(&addr, &["--ssl", "-e", "SELECT 'still fine'"], None);
    assert!(out.contains("still fine"));

    assert!(closed_by_peer(&mut stalled));
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "stall bounded by the timeout"
    );

    let s = wait_for(&probe, "three failures", |s| {
        handshake_failures(s, "client", "bad_message") >= 1.0
            && handshake_failures(s, "client", "closed") >= 1.0
            && handshake_failures(s, "client", "timeout") >= 1.0
    });
    assert!(transport(&s, "terminated", "none") >= 1.0);
    let log = probe.stderr_text();
    for cause in ["bad_message", "closed", "timeout"] {
        assert!(
            log.contains(&format!("client leg, {cause}); connection closed")),
            "no log line for {cause}:\n{log}"
        );
    }
    assert_eq!(s.get("psprobe_connections_active", &[]), 0.0, "{}", s.text);
}

#[test]
fn sighup_reloads_the_certificate_and_keeps_connections() {
    let db = server(Flavor::MariaDb1011);
    let dir = tempfile::tempdir().expect("tempdir");
    let first = Certs::make(
        &dir.path().join("a"),
        "first CA",
        &["localhost", "127.0.0.1"],
    );
    let live_cert = dir.path().join("cert.pem");
    let live_key = dir.path().join("key.pem");
    std::fs::copy(&first.cert, &live_cert).expect("copy");
    std::fs::copy(&first.key, &live_key).expect("copy");
    let (probe, _state) = probe(
        &db.addr(),
        &[
            "--tls-cert",
            live_cert.to_str().expect("utf-8"),
            "--tls-key",
            live_key.to_str().expect("utf-8"),
        ],
    );
    let addr = probe.proxy_addr().to_string();
    let issuer = |addr: &str| {
        let mut cmd = Command::new("openssl");
        cmd.args(["s_client", "-starttls", "mysql", "-connect", addr]);
        let out = run_with_timeout(cmd, Some(b""), Duration::from_secs(20));
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .find(|l| l.starts_with("issuer="))
            .unwrap_or("")
            .to_string()
    };
    assert!(issuer(&addr).contains("first CA"));

    // A TLS session that stays open across the reload.
    let (host, port) = split_addr(&addr);
    let mut cli = Command::new("mariadb")
        .args([
            "--no-defaults",
            "--protocol=TCP",
            "-h",
            host,
            "-P",
            port,
            "-N",
            "-B",
            "--ssl",
        ])
        .arg("--unbuffered")
        .arg(format!("-u{USER}"))
        .arg(format!("-p{PASSWORD}"))
        .arg(DATABASE)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn mariadb");
    let mut stdin = cli.stdin.take().expect("stdin");
    let mut lines = BufReader::new(cli.stdout.take().expect("stdout")).lines();
    writeln!(stdin, "SELECT 'before';").expect("write");
    assert_eq!(lines.next().expect("line").expect("read"), "before");

    let second = Certs::make(
        &dir.path().join("b"),
        "second CA",
        &["localhost", "127.0.0.1"],
    );
    std::fs::copy(&second.cert, &live_cert).expect("copy");
    std::fs::copy(&second.key, &live_key).expect("copy");
    probe.signal(libc::SIGHUP);
    wait_for(&probe, "reload", |s| {
        s.get("psprobe_tls_certificate_reloads_total", &[("result", "ok")]) >= 1.0
    });
    assert!(issuer(&addr).contains("second CA"));

    writeln!(stdin, "SELECT 'after';").expect("write");
    assert_eq!(lines.next().expect("line").expect("read"), "after");
    drop(stdin);
    assert!(cli.wait().expect("wait").success());

    // A broken file is refused, the certificate in use stays.
    std::fs::write(&live_key, "not a key\n").expect("write");
    probe.signal(libc::SIGHUP);
    wait_for(&probe, "failed reload", |s| {
        s.get(
            "psprobe_tls_certificate_reloads_total",
            &[("result", "error")],
        ) >= 1.0
    });
    assert!(issuer(&addr).contains("second CA"));
}

fn ed25519_plain_and_tls(v: Flavor) {
    let db = server(v);
    db.sql(
        "INSTALL SONAME 'auth_ed25519'; \
         CREATE USER IF NOT EXISTS edu@'%' IDENTIFIED VIA ed25519 USING PASSWORD('ed-secret'); \
         GRANT ALL ON *.* TO edu@'%';",
    );
    let (probe, _state) = probe(&db.addr(), &[]);
    let (host, port) = split_addr(probe.proxy_addr());
    for tls in ["--skip-ssl", "--ssl"] {
        let mut cmd = Command::new("mariadb");
        cmd.args([
            "--no-defaults",
            "--protocol=TCP",
            "-h",
            host,
            "-P",
            port,
            "-N",
            "-B",
        ])
        .args([
            "-uedu",
            "-ped-secret",
            tls,
            "-e",
            "SELECT CURRENT_USER(), 'ed25519-ok'",
        ]);
        let out = run_with_timeout(cmd, None, Duration::from_secs(30));
        assert!(out.status.success(), "{tls}: {}", text(&out));
        assert!(String::from_utf8_lossy(&out.stdout).contains("ed25519-ok"));
    }
    let s = wait_for(&probe, "both logins", |s| {
        transport(s, "terminated", "none") >= 1.0 && transport(s, "none", "none") >= 1.0
    });
    assert_eq!(unobserved(&s), 0.0);
    assert_eq!(
        digests(&s).get("select current_user(), ?"),
        Some(&2),
        "{:?}",
        digests(&s)
    );
    assert_eq!(s.get("psprobe_auth_failures_total", &[]), 0.0);
}

/// MariaDB's own plugin (MySQL has none by that name).
#[test]
fn ed25519_plain_and_tls_10_11() {
    ed25519_plain_and_tls(Flavor::MariaDb1011);
}

#[test]
fn ed25519_plain_and_tls_11_8() {
    ed25519_plain_and_tls(Flavor::MariaDb118);
}

/// MDEV-31855: 11.4+ clients verify the server by default. Without a CA they accept a
/// certificate when a fingerprint the server puts in its OK packet (made from *its*
/// certificate) matches the one they see; through a terminating psprobe it cannot. They skip
/// all this for localhost / 127.0.0.1, so the check shows on another loopback address.
#[test]
fn mariadb_11_8_client_needs_psprobe_ca_or_no_verification() {
    let db = start(Flavor::MariaDb118, &["--bind-address=127.0.0.1,127.0.0.2"]);
    let chroot = &db;
    let port = db.addr().rsplit_once(':').expect("port").1.to_string();
    // Directly, the fingerprint check passes with no CA at all.
    let direct = chroot.client(&format!("127.0.0.2:{port}"), &["-e", "status"]);
    assert!(direct.status.success(), "{}", text(&direct));
    assert!(text(&direct).contains("cert is OK"), "{}", text(&direct));

    let state = tempfile::tempdir().expect("state dir");
    let other = Probe::start_on(
        "127.0.0.2:0",
        &db.addr(),
        &["--state-dir", state.path().to_str().expect("utf-8")],
        &[],
    );
    let addr = other.proxy_addr().to_string();
    let default = chroot.client(&addr, &["-e", "SELECT 1"]);
    assert!(
        !default.status.success(),
        "11.8 client accepted psprobe unverified"
    );
    assert!(text(&default).contains("NOT trusted"), "{}", text(&default));

    let ca = chroot.copy_in(Path::new(&psprobe_ca(&state)), "psprobe-ca.pem");
    let with_ca = chroot.client(&addr, &[&format!("--ssl-ca={ca}"), "-e", "status"]);
    assert!(with_ca.status.success(), "{}", text(&with_ca));
    assert!(text(&with_ca).contains("cert is OK"), "{}", text(&with_ca));
    let no_verify = chroot.client(
        &addr,
        &[
            "--disable-ssl-verify-server-cert",
            "-e",
            "SELECT 'no-verify'",
        ],
    );
    assert!(no_verify.status.success(), "{}", text(&no_verify));
    // On 127.0.0.1 the same client does not check at all.
    let (local, _state) = probe(&db.addr(), &[]);
    let out = chroot.client(local.proxy_addr(), &["-e", "SELECT 'local'"]);
    assert!(out.status.success(), "{}", text(&out));
    let s = wait_for(&other, "observed", |s| {
        observed::commands(s)
            .get("query/rows")
            .copied()
            .unwrap_or(0)
            >= 2
    });
    assert_eq!(unobserved(&s), 0.0);
}
