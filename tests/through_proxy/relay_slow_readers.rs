//! Clients that ask for large results and stop reading do not make psprobe buffer them: the
//! relay reads from the server only as fast as the client takes (one buffer per direction at
//! most), so psprobe's resident memory stays flat while gigabytes wait in the server, other
//! clients' queries go on, and a stalled client that reads again gets its whole result. Nor
//! does the kernel queue them for psprobe: each client socket holds at most about
//! `TCP_NOTSENT_LOWAT` unsent bytes, so the server produces about what it would direct.

use crate::common;

use std::io::Write;
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::cli::{DATABASE, PASSWORD, USER};
use common::mariadb::MariaDb;
use common::observed::wait_for;
use common::probe::Probe;
use common::wire::{login, packet, read_packet_seq};

const STALLED: usize = 20;
/// Rows of 1 MB each client asks for: 20 x 50 MB would wait in psprobe if it buffered.
const ROWS: usize = 50;
const ROW: usize = 1_000_000;

fn big_query() -> String {
    format!(
        "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < {ROWS}) \
         SELECT REPEAT('x', {ROW}) FROM r"
    )
}

fn send_query(s: &mut TcpStream, sql: &str) {
    let mut query = vec![0x03]; // COM_QUERY
    query.extend_from_slice(sql.as_bytes());
    s.write_all(&packet(0, &query)).expect("query");
}

/// Reads one text result set (no CLIENT_DEPRECATE_EOF: EOF after the columns and after the
/// rows): the bytes of its rows.
fn read_result(s: &mut TcpStream) -> usize {
    let mut eofs = 0;
    let mut row_bytes = 0;
    while eofs < 2 {
        let (_, p) = read_packet_seq(s).expect("a result packet");
        match p.first() {
            Some(0xFF) => panic!("ERR: {}", String::from_utf8_lossy(&p)),
            Some(0xFE) if p.len() < 9 => eofs += 1,
            _ if eofs == 1 => row_bytes += p.len(),
            _ => {}
        }
    }
    row_bytes
}

fn server_to_client(probe: &Probe) -> f64 {
    probe
        .scrape()
        .get("psprobe_bytes_total", &[("direction", "server_to_client")])
}

#[test]
fn relay_slow_readers_keep_memory_bounded_and_others_served() {
    let db = MariaDb::start_default();
    let probe = Probe::start(&db.addr(), &[]);

    // Warm up: a connection and a result through, so lazily built parts exist.
    let mut warm = login(probe.proxy_addr(), USER, PASSWORD, DATABASE);
    send_query(&mut warm, "SELECT 1");
    read_result(&mut warm);
    let before = probe.rss_bytes();

    let mut stalled: Vec<TcpStream> = (0..STALLED)
        .map(|_| {
            let mut s = login(probe.proxy_addr(), USER, PASSWORD, DATABASE);
            send_query(&mut s, &big_query());
            s
        })
        .collect();

    // Readiness: psprobe has forwarded what the stalled clients' sockets take, and no more
    // moves (checked over 1 s; an unbounded relay would go on reading 1 GB meanwhile).
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut last = (server_to_client(&probe), Instant::now());
    let mut peak = before;
    loop {
        assert!(Instant::now() < deadline, "bytes kept moving for 60 s");
        std::thread::sleep(Duration::from_millis(100)); // poll interval
        peak = peak.max(probe.rss_bytes());
        let now = server_to_client(&probe);
        if now != last.0 {
            last = (now, Instant::now());
        } else if last.1.elapsed() >= Duration::from_secs(1) && now >= (STALLED * 64 * 1024) as f64
        {
            break;
        }
    }
    let forwarded = last.0;
    let after = probe.rss_bytes();
    eprintln!(
        "slow readers: psprobe VmRSS {} KiB before, {} KiB after, {} KiB peak; \
         {:.1} MB forwarded of {} MB asked for",
        before / 1024,
        after / 1024,
        peak / 1024,
        forwarded / 1e6,
        STALLED * ROWS * ROW / 1_000_000
    );
    assert!(
        forwarded < (STALLED * ROWS * ROW / 4) as f64,
        "{forwarded} bytes forwarded to clients that read nothing"
    );
    // One relay buffer per direction (32 KiB) each, and allocator slack: far below the 1 GB
    // the stalled results hold.
    let growth = peak.saturating_sub(before);
    assert!(growth < 48 << 20, "VmRSS grew by {} KiB", growth / 1024);

    // What waits in psprobe's sockets toward the stalled clients: unsent bytes bounded by
    // TCP_NOTSENT_LOWAT (128 KiB, plus one write); the kernel's default let each queue 4 MiB
    // more of the server's work than a direct connection does.
    let proxy_port = probe.proxy_port();
    for client in &stalled {
        let peer = client.local_addr().expect("client address").port();
        let unsent = unsent_bytes(proxy_port, peer).expect("psprobe's socket to the client");
        assert!(
            unsent <= 512 * 1024,
            "{unsent} bytes wait in psprobe's socket to a client that reads nothing"
        );
    }

    // Another client is served meanwhile ("it did not hang": 30 s read timeout).
    let mut other = login(probe.proxy_addr(), USER, PASSWORD, DATABASE);
    send_query(&mut other, "SELECT 42");
    assert!(read_result(&mut other) > 0);

    // A stalled client that reads again gets all of its result.
    let first = stalled.first_mut().expect("a stalled client");
    first
        .set_read_timeout(Some(Duration::from_secs(60)))
        .expect("timeout");
    assert!(read_result(first) >= ROWS * ROW, "rows lost");

    drop(stalled);
    drop(other);
    drop(warm);
    wait_for(&probe, "all closed", |s| {
        s.get("psprobe_connections_active", &[]) == 0.0
    });
}

/// Bytes queued and not yet acknowledged in the socket bound to `local_port` and connected to
/// `peer_port` on this host (the `tx_queue` of /proc/net/tcp{,6}): toward a client whose
/// window is closed, what waits unsent.
fn unsent_bytes(local_port: u16, peer_port: u16) -> Option<usize> {
    let port_of = |addr: &str| {
        addr.rsplit(':')
            .next()
            .and_then(|p| u16::from_str_radix(p, 16).ok())
    };
    ["/proc/net/tcp", "/proc/net/tcp6"]
        .iter()
        .find_map(|table| {
            let text = std::fs::read_to_string(table).ok()?;
            text.lines().skip(1).find_map(|line| {
                let fields: Vec<&str> = line.split_whitespace().collect();
                let (local, remote, queues) = (fields.get(1)?, fields.get(2)?, fields.get(4)?);
                if port_of(local)? != local_port || port_of(remote)? != peer_port {
                    return None;
                }
                let tx = queues.split(':').next()?;
                usize::from_str_radix(tx, 16).ok()
            })
        })
}
