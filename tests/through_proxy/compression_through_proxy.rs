//! The compressed protocol through psprobe, live: the mariadb CLI with -C (zlib), plain and
//! over TLS, gives the digests and counts of an uncompressed run, results over 16 MiB
//! included, on MariaDB 10.11, 11.8 and MySQL 9.7; on MySQL the mysql 9.7 CLI with zstd too
//! (MariaDB does not negotiate zstd); and a client at the byte level receives exactly the
//! bytes the server sends.

use crate::common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::ops::ControlFlow;
use std::time::Duration;

use common::cli::{mariadb_ok, DATABASE, PASSWORD, USER};
use common::observed::{commands, digests, transport, unobserved, wait_for};
use common::probe::Probe;
use common::server::{Flavor, Options, Server};
use common::wire::{handshake_response, packet, read_packet, LOGIN_CAPS};
use psprobe_core::protocol::{stored_frame, Algorithm, Decompressor, Deframer};

/// 17 MiB: the row is split into 16 MiB protocol packets, compressed frames carry parts.
const BIG: usize = 17 << 20;

fn workload() -> String {
    let mut sql = String::new();
    for i in 0..5 {
        sql.push_str(&format!("SELECT {i} AS n, REPEAT('abc', 100) AS s;\n"));
    }
    sql.push_str("SELECT 1;\n"); // a response below the compression threshold: stored frames
    sql.push_str(&format!(
        "SELECT LENGTH(REPEAT('x', {BIG})) AS len, REPEAT('x', {BIG}) AS big;\n"
    ));
    sql.push_str("SELECT table_name FROM information_schema.tables WHERE table_schema = 'mysql' ORDER BY 1;\n");
    sql
}

struct Seen {
    output: String,
    digests: std::collections::BTreeMap<String, u64>,
    commands: std::collections::BTreeMap<String, u64>,
}

/// Which command-line client runs the workload.
#[derive(Clone, Copy, PartialEq)]
enum Cli {
    /// The host's mariadb 10.11.
    MariaDb,
    /// The server's own (mysql 9.7 for MySQL), from its tree.
    Own,
}

fn run(db: &Server, cli: Cli, flags: &[&str], carriage: (&str, &str)) -> Seen {
    let state = tempfile::tempdir().expect("state");
    let probe = Probe::start(
        &db.addr(),
        &["--state-dir", state.path().to_str().expect("utf-8")],
    );
    let mut args = vec!["--max-allowed-packet=64M", "-N", "-B"];
    args.extend_from_slice(flags);
    let input = workload();
    let output = match cli {
        Cli::MariaDb => mariadb_ok(probe.proxy_addr(), &args, Some(input.as_bytes())),
        Cli::Own => {
            let out = db.client_with_input(probe.proxy_addr(), &args, Some(input.as_bytes()));
            assert!(
                out.status.success(),
                "{} client {flags:?}: {}",
                db.name(),
                String::from_utf8_lossy(&out.stderr)
            );
            String::from_utf8(out.stdout).expect("UTF-8 output")
        }
    };
    let s = wait_for(&probe, "closed", |s| {
        s.get("psprobe_connections_active", &[]) == 0.0
            && transport(s, carriage.0, carriage.1) >= 1.0
    });
    assert_eq!(unobserved(&s), 0.0, "{}", s.text);
    assert_eq!(s.get("psprobe_parse_errors_total", &[]), 0.0);
    Seen {
        output,
        digests: digests(&s),
        commands: commands(&s),
    }
}

fn start(v: Flavor) -> Server {
    Server::start(
        v,
        Options {
            performance_schema: false,
            extra_args: Vec::new(),
        },
    )
}

fn compressed_like_plain(v: Flavor) {
    let db = start(v);
    let plain = run(&db, Cli::MariaDb, &["--skip-ssl"], ("none", "none"));
    assert!(plain.output.contains(&BIG.to_string()), "big row missing");
    assert_eq!(
        plain.commands.get("query/rows"),
        Some(&8),
        "{:?}",
        plain.commands
    );
    for (flags, carriage) in [
        (&["--skip-ssl", "-C"][..], ("none", "zlib")),
        (&["--ssl", "-C"][..], ("terminated", "zlib")),
    ] {
        let zipped = run(&db, Cli::MariaDb, flags, carriage);
        assert!(zipped.output == plain.output, "{flags:?}: output differs");
        assert_eq!(zipped.digests, plain.digests, "{flags:?} on {v:?}");
        assert_eq!(zipped.commands, plain.commands, "{flags:?} on {v:?}");
    }
    if !v.is_mysql() {
        return;
    }
    // zstd, which only MySQL negotiates, with its own client; against its own plain run.
    let own = run(&db, Cli::Own, &["--ssl-mode=DISABLED"], ("none", "none"));
    assert!(own.output.contains(&BIG.to_string()), "big row missing");
    for (flags, carriage) in [
        (
            &["--ssl-mode=DISABLED", "--compression-algorithms=zstd"][..],
            ("none", "zstd"),
        ),
        (
            &[
                "--ssl-mode=REQUIRED",
                "--compression-algorithms=zstd",
                "--zstd-compression-level=7",
            ][..],
            ("terminated", "zstd"),
        ),
        (
            &["--ssl-mode=REQUIRED", "--compression-algorithms=zlib"][..],
            ("terminated", "zlib"),
        ),
    ] {
        let zipped = run(&db, Cli::Own, flags, carriage);
        assert!(zipped.output == own.output, "{flags:?}: output differs");
        assert_eq!(zipped.digests, own.digests, "{flags:?}");
        assert_eq!(zipped.commands, own.commands, "{flags:?}");
    }
}

#[test]
fn mariadb_compressed_gives_the_counts_of_plain_10_11() {
    compressed_like_plain(Flavor::MariaDb1011);
}

#[test]
fn mariadb_compressed_gives_the_counts_of_plain_11_8() {
    compressed_like_plain(Flavor::MariaDb118);
}

#[test]
fn compressed_zlib_and_zstd_give_the_counts_of_plain_mysql_9_7() {
    compressed_like_plain(Flavor::MySql97);
}

// ---------------------------------------------------------------- byte level

/// Logs in with CLIENT_COMPRESS over plain TCP, sends `sql` and COM_QUIT as compressed
/// packets (stored, as a client does below its threshold), and returns every byte the server
/// sent after authentication, until it closed.
fn compressed_conversation(addr: &str, sql: &str) -> Vec<u8> {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(60)))
        .expect("timeout");
    let greeting = read_packet(&mut s);
    let caps = LOGIN_CAPS | (1 << 5); // CLIENT_COMPRESS
    s.write_all(&handshake_response(
        &greeting, caps, USER, PASSWORD, DATABASE,
    ))
    .expect("hello");
    let ok = read_packet(&mut s);
    assert_eq!(
        ok.first(),
        Some(&0),
        "login refused: {:?}",
        String::from_utf8_lossy(&ok)
    );

    let mut query = vec![0x03];
    query.extend_from_slice(sql.as_bytes());
    s.write_all(&stored_frame(0, &packet(0, &query)))
        .expect("query");
    // Read the whole response before quitting (decoded with psprobe's decoder to find its end).
    let mut received = Vec::new();
    let mut decoder = Decompressor::new(Algorithm::Zlib);
    let mut deframer = Deframer::new(64);
    // One result set without CLIENT_DEPRECATE_EOF: EOF after the columns, EOF after the rows.
    let mut eofs = 0;
    let mut buf = vec![0u8; 1 << 16];
    while eofs < 2 {
        let n = s.read(&mut buf).expect("read response");
        assert!(n > 0, "server closed mid-response");
        received.extend_from_slice(&buf[..n]);
        let flow = decoder
            .feed(&buf[..n], |plain| {
                deframer.feed(plain, |p| {
                    if p.first_byte() == Some(0xFE) && p.len < 9 {
                        eofs += 1;
                    }
                    ControlFlow::Continue(())
                })
            })
            .expect("the server's compressed stream decodes");
        assert!(flow.is_continue());
    }
    s.write_all(&stored_frame(0, &packet(0, &[0x01])))
        .expect("quit");
    s.read_to_end(&mut received).expect("until close");
    received
}

#[test]
fn a_compressed_client_receives_the_servers_bytes_unchanged() {
    let db = start(Flavor::MariaDb1011);
    let state = tempfile::tempdir().expect("state");
    let probe = Probe::start(
        &db.addr(),
        &["--state-dir", state.path().to_str().expect("utf-8")],
    );
    for sql in [
        "SELECT 1".to_string(),
        "SELECT REPEAT('abcdefgh', 2000) AS s, 42 AS n".to_string(),
        format!("SELECT REPEAT('y', {BIG}) AS big"),
    ] {
        let direct = compressed_conversation(&db.addr(), &sql);
        let through = compressed_conversation(probe.proxy_addr(), &sql);
        assert!(direct.len() > 7, "no response to {sql}");
        assert!(
            direct == through,
            "{sql}: {} bytes direct, {} through psprobe, or different bytes",
            direct.len(),
            through.len()
        );
    }
    let s = wait_for(&probe, "three connections closed", |s| {
        s.get("psprobe_connections_active", &[]) == 0.0 && transport(s, "none", "zlib") >= 3.0
    });
    assert_eq!(commands(&s).get("query/rows"), Some(&3), "{}", s.text);
    assert_eq!(commands(&s).get("quit/no_response"), Some(&3), "{}", s.text);
    assert_eq!(unobserved(&s), 0.0);
}
