//! A client that half-closes (sends its query, then shuts down its sending side, as some
//! tools and scripts do) still receives the server's whole answer through psprobe, byte for
//! byte what it receives directly; an INSERT sent that way is executed and its OK delivered.

use crate::common;

use std::io::{Read, Write};
use std::net::Shutdown;

use common::cli::{DATABASE, PASSWORD, USER};
use common::mariadb::MariaDb;
use common::observed::wait_for;
use common::probe::Probe;
use common::tls_server::{TlsServer, Version};
use common::wire::{login, packet};

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

    // Slow (the answer comes after the client's EOF reached psprobe) and large (5 MB).
    let sql = "SELECT SLEEP(1) AS s, REPEAT('x', 5000000) AS big";
    let direct = half_closed_exchange(&db.addr(), sql);
    let through = half_closed_exchange(probe.proxy_addr(), sql);
    assert!(direct.len() > 5_000_000, "{} bytes direct", direct.len());
    assert!(
        direct == through,
        "{} bytes direct, {} through psprobe, or different bytes",
        direct.len(),
        through.len()
    );

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
    let db = TlsServer::start(Version::V10_11, &[]);
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
    let sql = "SELECT SLEEP(1) AS s, REPEAT('x', 5000000) AS big";
    let direct = half_closed_exchange(&db.addr(), sql);
    let through = half_closed_exchange(probe.proxy_addr(), sql);
    assert!(direct.len() > 5_000_000, "{} bytes direct", direct.len());
    assert!(
        direct == through,
        "{} bytes direct, {} through psprobe, or different bytes",
        direct.len(),
        through.len()
    );
    wait_for(
        &probe,
        "the connection closed, its server leg encrypted",
        |s| {
            s.get("psprobe_connections_active", &[]) == 0.0
                && s.get("psprobe_connections_total", &[]) >= 1.0
        },
    );
}
