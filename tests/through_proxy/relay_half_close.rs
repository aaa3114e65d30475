//! A client that half-closes (sends its query, then shuts down its sending side, as some
//! tools and scripts do) still receives the server's whole answer through psprobe, byte for
//! byte what it receives directly; an INSERT sent that way is executed and its OK delivered.
//! The same over a TLS server leg and over a TLS client leg (close_notify, then the TCP
//! half-close).

use crate::common;

use std::io::{Read, Write};
use std::net::Shutdown;
use std::sync::Arc;

use common::cli::{DATABASE, PASSWORD, USER};
use common::mariadb::MariaDb;
use common::observed::wait_for;
use common::probe::Probe;
use common::server::{Flavor, Options, Server};
use common::wire::{login, packet};

/// Slow (the answer comes after the client's EOF reached psprobe) and large (5 MB).
const SLOW_LARGE: &str = "SELECT SLEEP(1) AS s, REPEAT('x', 5000000) AS big";

/// The whole answer came through `how`, byte for byte what came directly.
#[track_caller]
fn assert_same_answer(direct: &[u8], through: &[u8], how: &str) {
    assert!(direct.len() > 5_000_000, "{} bytes direct", direct.len());
    assert!(
        direct == through,
        "{} bytes direct, {} {how}, or different bytes",
        direct.len(),
        through.len()
    );
}

/// Logs in, sends `sql`, shuts down the sending side, and reads until the other side closes.
fn half_closed_exchange(addr: &str, sql: &str) -> Vec<u8> {
    let mut s = login(addr, USER, PASSWORD, DATABASE);
    let mut query = vec![0x03]; // COM_QUERY
    query.extend_from_slice(sql.as_bytes());
    s.write_all(&packet(0, &query)).expect("query");
    s.shutdown(Shutdown::Write).expect("half-close");
    let mut answer = Vec::new();
    s.read_to_end(&mut answer)
        .expect("the answer, until the server closes (30 s read timeout)");
    answer
}

#[test]
fn relay_carries_a_client_half_close_and_delivers_the_answer() {
    let db = MariaDb::start_default();
    let probe = Probe::start(&db.addr(), &[]);

    let direct = half_closed_exchange(&db.addr(), SLOW_LARGE);
    let through = half_closed_exchange(probe.proxy_addr(), SLOW_LARGE);
    assert_same_answer(&direct, &through, "through psprobe");

    db.sql(&format!("CREATE TABLE {DATABASE}.half_close (n INT)"));
    let ok = half_closed_exchange(probe.proxy_addr(), "INSERT INTO half_close VALUES (7)");
    // One OK packet: header (4 bytes), then 0x00.
    assert_eq!(ok.get(4), Some(&0x00), "no OK delivered: {ok:?}");
    let count = db.sql(&format!(
        "SELECT COUNT(*) FROM {DATABASE}.half_close WHERE n = 7"
    ));
    assert_eq!(
        count.trim().lines().last(),
        Some("1"),
        "INSERT not executed: {count}"
    );

    let s = wait_for(&probe, "both connections closed", |s| {
        s.get("psprobe_connections_active", &[]) == 0.0
            && s.get("psprobe_connections_total", &[]) >= 2.0
    });
    assert_eq!(s.get("psprobe_parse_errors_total", &[]), 0.0, "{}", s.text);
}

/// The same over a TLS leg to the server (`--server-tls required`, the client plain): the
/// half-close reaches the server as close_notify, then the TCP half-close.
#[test]
fn relay_carries_a_client_half_close_over_a_tls_server_leg() {
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
        &[
            "--state-dir",
            state.path().to_str().expect("utf-8 path"),
            "--server-tls",
            "required",
        ],
    );
    let direct = half_closed_exchange(&db.addr(), SLOW_LARGE);
    let through = half_closed_exchange(probe.proxy_addr(), SLOW_LARGE);
    assert_same_answer(&direct, &through, "through psprobe");
    wait_for(
        &probe,
        "the connection closed, its server leg encrypted",
        |s| {
            s.get("psprobe_connections_active", &[]) == 0.0
                && s.get("psprobe_connections_total", &[]) >= 1.0
        },
    );
}

/// Accepts any server certificate: the test checks the relay, not psprobe's certificate.
#[derive(Debug)]
struct AnyCertificate(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _: &rustls::pki_types::CertificateDer<'_>,
        _: &[rustls::pki_types::CertificateDer<'_>],
        _: &rustls::pki_types::ServerName<'_>,
        _: &[u8],
        _: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        let algorithms = &self.0.signature_verification_algorithms;
        rustls::crypto::verify_tls12_signature(message, cert, dss, algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        let algorithms = &self.0.signature_verification_algorithms;
        rustls::crypto::verify_tls13_signature(message, cert, dss, algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// [`half_closed_exchange`] over TLS to psprobe (which terminates it): SSLRequest, TLS, login,
/// the query, then close_notify and the TCP half-close; reads until psprobe closes.
fn half_closed_exchange_over_tls(addr: &str, sql: &str) -> Vec<u8> {
    let mut tcp = std::net::TcpStream::connect(addr).expect("connect");
    tcp.set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .expect("read timeout");
    let greeting = common::wire::read_packet(&mut tcp);
    let caps = common::wire::LOGIN_CAPS | common::wire::CLIENT_SSL;
    tcp.write_all(&common::wire::ssl_request(caps))
        .expect("SSLRequest");

    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .expect("TLS versions")
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(AnyCertificate(provider)))
        .with_no_client_auth();
    let name = rustls::pki_types::ServerName::try_from("psprobe").expect("name");
    let conn = rustls::ClientConnection::new(Arc::new(config), name).expect("TLS client");
    let mut tls = rustls::StreamOwned::new(conn, tcp);
    let mut login = common::wire::handshake_response(&greeting, caps, USER, PASSWORD, DATABASE);
    login[3] = 2; // after the SSLRequest
    tls.write_all(&login).expect("login over TLS");
    let ok = common::wire::read_packet(&mut tls);
    assert_eq!(ok.first(), Some(&0), "login refused: {ok:?}");

    let mut query = vec![0x03]; // COM_QUERY
    query.extend_from_slice(sql.as_bytes());
    tls.write_all(&packet(0, &query)).expect("query");
    tls.conn.send_close_notify();
    tls.flush().expect("close_notify");
    tls.sock.shutdown(Shutdown::Write).expect("half-close");
    let mut answer = Vec::new();
    match tls.read_to_end(&mut answer) {
        Ok(_) => {}
        // psprobe closed the TCP connection without a close_notify of its own: the answer
        // is still whole (compared below).
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {}
        Err(e) => panic!(
            "reading the answer over TLS: {e} ({} bytes read)",
            answer.len()
        ),
    }
    answer
}

/// The same with TLS on the client leg, terminated by psprobe: the client's close_notify and
/// TCP half-close reach the server as a half-close, and the answer comes back over TLS.
#[test]
fn relay_carries_a_tls_client_half_close() {
    // A server that offers TLS: psprobe offers it to the client only then.
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
    let direct = half_closed_exchange(&db.addr(), SLOW_LARGE);
    let through = half_closed_exchange_over_tls(probe.proxy_addr(), SLOW_LARGE);
    assert_same_answer(&direct, &through, "through psprobe over TLS");
}
