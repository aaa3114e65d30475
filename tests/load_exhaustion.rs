//! psprobe under load and resource exhaustion, against a real mariadbd: a burst of 3,000
//! simultaneous connects, `--max-connections` (ERR 1040), 1,000 slowloris connections, a
//! file-descriptor limit of 256 with 400 clients, connect/close churn, deep pipelines.
//!
//! CI runs the sizes below; `scripts/stress.sh` runs the same code at full size
//! (PSPROBE_STRESS=1) and collects the `FIGURE` lines each case prints.

mod common;

use std::io::{Read, Write};
use std::process::Command;
use std::sync::mpsc;
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use common::cli::{mariadb, DATABASE, PASSWORD, USER};
use common::mariadb::{MariaDb, Options};
use common::observed::{commands, wait_for};
use common::probe::Probe;
use common::procfs::{cpu_seconds, open_fds, raise_own_fd_limit, rss_kib};
use common::prom::Scrape;
use common::wire::{self, packet, parse_err, read_packet};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const BURST: usize = 3000;

fn stress() -> bool {
    std::env::var_os("PSPROBE_STRESS").is_some()
}

/// One server for every case; the cases run one at a time (they measure the machine).
fn server() -> &'static MariaDb {
    static SERVER: OnceLock<MariaDb> = OnceLock::new();
    SERVER.get_or_init(|| {
        raise_own_fd_limit();
        MariaDb::start(Options {
            performance_schema: false,
            extra_args: [
                "--max-connections=5000",
                "--back-log=4096",
                // Connections closed before their handshake would block 127.0.0.1 otherwise.
                "--max-connect-errors=1000000000",
                "--skip-name-resolve",
                // psprobe's handshake timeout is what the slowloris case measures.
                "--connect-timeout=60",
            ]
            .map(String::from)
            .to_vec(),
        })
    })
}

fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime")
}

fn active(s: &Scrape) -> f64 {
    s.get("psprobe_connections_active", &[])
}

fn figure(text: String) {
    println!("FIGURE {text}");
}

/// The first packet a client receives: its payload, or why there is none.
#[derive(Debug)]
enum First {
    Greeting,
    TooMany(String),
    Other(#[allow(dead_code)] Vec<u8>),
    Closed,
    TimedOut,
}

async fn first_packet(s: &mut tokio::net::TcpStream, limit: Duration) -> First {
    let read = async {
        let mut h = [0u8; 4];
        s.read_exact(&mut h).await?;
        let len = usize::from(h[0]) | usize::from(h[1]) << 8 | usize::from(h[2]) << 16;
        let mut p = vec![0; len];
        s.read_exact(&mut p).await?;
        Ok::<_, std::io::Error>((h[3], p))
    };
    match tokio::time::timeout(limit, read).await {
        Err(_) => First::TimedOut,
        Ok(Err(_)) => First::Closed,
        Ok(Ok((0, p))) if p.first() == Some(&10) => First::Greeting,
        Ok(Ok((0, p))) => match parse_err(&p) {
            Some((1040, state, message)) if state == "08004" => First::TooMany(message),
            _ => First::Other(p),
        },
        Ok(Ok((_, p))) => First::Other(p),
    }
}

/// The listen backlog of the socket listening on `port`, as the kernel applied it (the
/// Send-Q column of `ss` for a listener).
fn listen_backlog(port: u16) -> u32 {
    let out = Command::new("ss")
        .args(["-ltnH", &format!("sport = :{port}")])
        .output()
        .expect("run ss");
    let text = String::from_utf8_lossy(&out.stdout);
    let fields: Vec<&str> = text.split_whitespace().collect();
    fields
        .get(2)
        .and_then(|q| q.parse().ok())
        .unwrap_or_else(|| panic!("no listener on port {port} in ss output: {text:?}"))
}

fn somaxconn() -> u32 {
    std::fs::read_to_string("/proc/sys/net/core/somaxconn")
        .expect("read somaxconn")
        .trim()
        .parse()
        .expect("somaxconn is a number")
}

// ---------------------------------------------------------------- burst

/// Connects `n` clients at once; each waits up to 20 s for its greeting. Returns the streams
/// (all held open) and the time each greeting took.
fn burst(addr: &str, n: usize) -> (Vec<std::net::TcpStream>, Vec<Duration>) {
    let rt = runtime();
    let addr = addr.to_string();
    rt.block_on(async move {
        let start = Instant::now();
        let tasks: Vec<_> = (0..n)
            .map(|_| {
                let addr = addr.clone();
                tokio::spawn(async move {
                    let mut s = tokio::net::TcpStream::connect(&addr).await.ok()?;
                    match first_packet(&mut s, Duration::from_secs(20)).await {
                        First::Greeting => Some((s.into_std().ok()?, start.elapsed())),
                        _ => None,
                    }
                })
            })
            .collect();
        let mut held = Vec::new();
        let mut took = Vec::new();
        for t in tasks {
            if let Ok(Some((s, d))) = t.await {
                held.push(s);
                took.push(d);
            }
        }
        (held, took)
    })
}

#[test]
fn a_burst_of_3000_connects_loses_no_greeting() {
    let _serial = serial();
    let db = server();
    let probe = Probe::start(&db.addr(), &[]);
    assert_eq!(
        listen_backlog(probe.proxy_port()),
        4096.min(somaxconn()),
        "the default --listen-backlog is applied"
    );
    let runs = if stress() { 6 } else { 1 };
    for run in 1..=runs {
        let (held, mut took) = burst(probe.proxy_addr(), BURST);
        took.sort();
        figure(format!(
            "burst run {run}: {}/{BURST} greetings; slowest {:?}, median {:?}",
            held.len(),
            took.last().copied().unwrap_or_default(),
            took.get(took.len() / 2).copied().unwrap_or_default()
        ));
        assert_eq!(held.len(), BURST, "clients without a greeting");
        let s = probe.scrape();
        assert_eq!(active(&s), BURST as f64, "all held open at once");
        drop(held);
        wait_for(&probe, "active gauge back to 0", |s| active(s) == 0.0);
    }
}

// ---------------------------------------------------------------- max connections

#[test]
fn past_max_connections_clients_get_err_1040() {
    let _serial = serial();
    let db = server();
    let probe = Probe::start(&db.addr(), &["--max-connections", "3"]);
    let rt = runtime();
    let addr = probe.proxy_addr().to_string();
    let mut held: Vec<tokio::net::TcpStream> = rt.block_on(async {
        let mut held = Vec::new();
        for _ in 0..3 {
            let mut s = tokio::net::TcpStream::connect(&addr)
                .await
                .expect("connect");
            let first = first_packet(&mut s, Duration::from_secs(10)).await;
            assert!(matches!(first, First::Greeting), "{first:?}");
            held.push(s);
        }
        held
    });
    wait_for(&probe, "3 open", |s| active(s) == 3.0);

    // The fourth: ERR 1040 in place of the greeting, sequence id 0, then the end.
    let mut fourth = std::net::TcpStream::connect(&addr).expect("connect");
    fourth
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let (seq, payload) = wire::read_packet_seq(&mut fourth).expect("an answer");
    assert_eq!(seq, 0);
    assert_eq!(
        parse_err(&payload),
        Some((1040, "08004".into(), "Too many connections".into()))
    );
    let mut rest = Vec::new();
    assert_eq!(fourth.read_to_end(&mut rest).expect("closed"), 0);

    // The real client shows it as mysqld's own refusal.
    let out = mariadb(&addr, &["-e", "SELECT 1"], None);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && stderr.contains("1040") && stderr.contains("Too many connections"),
        "{stderr}"
    );

    let s = probe.scrape();
    let refused = |s: &Scrape| {
        s.get(
            "psprobe_connections_refused_total",
            &[("reason", "max_connections")],
        )
    };
    assert_eq!(refused(&s), 2.0);
    assert_eq!(s.get("psprobe_connections_limit", &[]), 3.0);
    assert_eq!(active(&s), 3.0, "refused clients are not counted as open");

    // A slot frees: the next client is served.
    drop(held.pop());
    wait_for(&probe, "2 open", |s| active(s) == 2.0);
    let mut s = wire::login(&addr, USER, PASSWORD, DATABASE);
    s.write_all(&packet(0, &[0x0e])).expect("ping");
    assert_eq!(read_packet(&mut s).first(), Some(&0));
    drop(s);
    drop(held);
    wait_for(&probe, "all closed", |s| active(s) == 0.0);
    assert!(
        probe.stderr_text().contains("--max-connections reached"),
        "refusals are logged"
    );
}

// ---------------------------------------------------------------- slowloris

#[test]
fn slowloris_clients_do_not_starve_others_and_are_closed_at_the_timeout() {
    let _serial = serial();
    let db = server();
    let timeout = Duration::from_secs(3);
    let probe = Probe::start(&db.addr(), &["--client-handshake-timeout", "3s"]);
    let (silent, trickling) = (1000, 20);
    let rt = runtime();
    let addr = probe.proxy_addr().to_string();
    // Each reports how long after connecting psprobe closed it.
    let (tx, rx) = mpsc::channel::<Option<Duration>>();
    for i in 0..silent + trickling {
        let (addr, tx) = (addr.clone(), tx.clone());
        rt.spawn(async move {
            let Ok(mut s) = tokio::net::TcpStream::connect(&addr).await else {
                let _ = tx.send(None);
                return;
            };
            let start = Instant::now();
            let mut sink = Vec::new();
            if i >= silent {
                // The greeting, then a 100-byte handshake response, one byte every 200 ms:
                // never a whole packet. (A client that speaks before the greeting is not
                // MySQL; psprobe relays it verbatim and the server decides.)
                if !matches!(
                    first_packet(&mut s, Duration::from_secs(20)).await,
                    First::Greeting
                ) {
                    let _ = tx.send(None);
                    return;
                }
                let mut junk = [100u8, 0, 0, 1].into_iter().chain([0x41u8; 100]);
                loop {
                    tokio::select! {
                        n = s.read_buf(&mut sink) => if matches!(n, Ok(0) | Err(_)) { break },
                        _ = tokio::time::sleep(Duration::from_millis(200)) => {
                            let Some(b) = junk.next() else { break };
                            if s.write_all(&[b]).await.is_err() {
                                break;
                            }
                        }
                    }
                }
            } else {
                let until_closed =
                    async { while s.read_buf(&mut sink).await.is_ok_and(|n| n > 0) {} };
                let _ = tokio::time::timeout(Duration::from_secs(20), until_closed).await;
            }
            let _ = tx.send(Some(start.elapsed()));
        });
    }
    drop(tx);
    wait_for(&probe, "all slowloris connections open", |s| {
        active(s) == (silent + trickling) as f64
    });

    // A normal client, meanwhile: login and a query.
    let start = Instant::now();
    let mut normal = wire::login(&addr, USER, PASSWORD, DATABASE);
    let mut query = vec![0x03];
    query.extend_from_slice(b"SELECT 1");
    normal.write_all(&packet(0, &query)).expect("query");
    // Column count, column definition, EOF, row, EOF.
    let answer: Vec<Vec<u8>> = (0..5).map(|_| read_packet(&mut normal)).collect();
    let latency = start.elapsed();
    assert_eq!((answer[3].as_slice(), answer[4][0]), (&[1, b'1'][..], 0xFE));
    figure(format!(
        "slowloris: {silent} silent + {trickling} trickling held; a normal login + SELECT 1 took {latency:?}"
    ));
    assert!(
        latency < Duration::from_secs(1),
        "normal client starved: {latency:?}"
    );

    let mut closed_after = Vec::new();
    for _ in 0..silent + trickling {
        let got = rx
            .recv_timeout(Duration::from_secs(20))
            .expect("every slowloris connection ends");
        closed_after.push(got.expect("slowloris client connected"));
    }
    closed_after.sort();
    let (first, last) = (closed_after[0], closed_after[closed_after.len() - 1]);
    figure(format!(
        "slowloris: closed by psprobe between {first:?} and {last:?} after connecting (timeout {timeout:?})"
    ));
    assert!(
        // The clients' clocks start when their task runs after the connect: up to a second
        // late on a loaded machine with 1,020 of them.
        first >= timeout - Duration::from_secs(1) && last < timeout + Duration::from_secs(3),
        "closed between {first:?} and {last:?}"
    );
    let s = wait_for(&probe, "only the normal client left", |s| active(s) == 1.0);
    assert_eq!(
        s.get("psprobe_client_handshake_timeouts_total", &[]),
        (silent + trickling) as f64
    );
    let warned = probe
        .stderr_text()
        .lines()
        .filter(|l| l.contains("--client-handshake-timeout"))
        .count();
    assert!(
        (1..=5).contains(&warned),
        "{warned} timeout lines: rate-limited"
    );
    drop(normal);
    wait_for(&probe, "all closed", |s| active(s) == 0.0);
}

// ---------------------------------------------------------------- fd exhaustion

#[test]
fn out_of_file_descriptors_psprobe_waits_quietly_and_serves_again() {
    let _serial = serial();
    let db = server();
    let clients = 400;
    let probe = Probe::start_with_fd_limit(
        &db.addr(),
        // No limit (so that descriptors run out), and no handshake timeout freeing them.
        &["--max-connections", "0", "--client-handshake-timeout", "0"],
        256,
    );
    let pid = probe.pid();
    let rt = runtime();
    let addr = probe.proxy_addr().to_string();
    let (tx, rx) = mpsc::channel::<(usize, First)>();
    let mut release = Vec::new();
    for id in 0..clients {
        let (addr, tx) = (addr.clone(), tx.clone());
        let (go, gone) = tokio::sync::oneshot::channel::<()>();
        release.push(Some(go));
        rt.spawn(async move {
            let first = match tokio::net::TcpStream::connect(&addr).await {
                Ok(mut s) => {
                    let first = first_packet(&mut s, Duration::from_secs(60)).await;
                    let _ = tx.send((id, first));
                    let _ = gone.await;
                    return;
                }
                Err(_) => First::Closed,
            };
            let _ = tx.send((id, first));
        });
    }
    drop(tx);

    // Exhausted: accept fails. Then a window where nothing frees up.
    let deadline = Instant::now() + Duration::from_secs(20);
    while !probe.stderr_text().contains("accept failed") {
        assert!(
            Instant::now() < deadline,
            "psprobe never ran out of descriptors"
        );
        std::thread::sleep(Duration::from_millis(20)); // poll interval
    }
    let window = Duration::from_secs(if stress() { 10 } else { 3 });
    let lines = |p: &Probe| p.stderr_text().matches("accept failed").count();
    let (cpu0, lines0) = (cpu_seconds(pid), lines(&probe));
    std::thread::sleep(window); // the measurement window itself
    let (cpu, logged) = (cpu_seconds(pid) - cpu0, lines(&probe) - lines0);
    let fds = open_fds(pid);
    let mut reports: Vec<(usize, First)> = rx.try_iter().collect();
    figure(format!(
        "fd exhaustion (ulimit -n 256, {clients} clients): {} answered before the window; \
         over {window:?} psprobe used {cpu:.3} s CPU and wrote {logged} accept-error lines; {fds} fds open",
        reports.len()
    ));
    assert!(
        cpu < 0.05 * window.as_secs_f64(),
        "busy while out of descriptors: {cpu} s CPU in {window:?}"
    );
    assert!(
        logged as u64 <= window.as_secs() + 1,
        "{logged} accept-error lines in {window:?}"
    );
    assert!(
        probe
            .stderr_text()
            .contains("more like it since the last line"),
        "the left-out lines are counted"
    );

    // Descriptors free up (served clients leave, one at a time as they are served): every
    // client waiting in the backlog is served, or told ERR 1040, none hangs.
    let mut done = 0;
    let mut greeted = 0;
    let mut refused = 0;
    loop {
        for (id, first) in reports.drain(..) {
            done += 1;
            match first {
                First::Greeting => greeted += 1,
                First::TooMany(m) => {
                    assert!(m.contains("file descriptor"), "{m}");
                    refused += 1;
                }
                other => panic!("client {id}: {other:?}"),
            }
            if let Some(go) = release[id].take() {
                let _ = go.send(());
            }
        }
        if done == clients {
            break;
        }
        let next = rx
            .recv_timeout(Duration::from_secs(15))
            .unwrap_or_else(|_| {
                panic!("{} clients hang after descriptors freed up", clients - done)
            });
        reports.push(next);
    }
    figure(format!(
        "fd exhaustion: after release {greeted} greeted, {refused} told ERR 1040, 0 hung"
    ));
    assert!(greeted > 256 / 2, "most clients served: {greeted}");
    let s = wait_for(&probe, "all closed", |s| active(s) == 0.0);
    assert!(s.get("psprobe_accept_errors_total", &[]) > 0.0);
    let mut c = wire::login(&addr, USER, PASSWORD, DATABASE);
    c.write_all(&packet(0, &[0x0e])).expect("ping");
    assert_eq!(read_packet(&mut c).first(), Some(&0), "served again");
}

// ---------------------------------------------------------------- churn

#[test]
fn connect_close_churn_leaks_nothing() {
    let _serial = serial();
    let db = server();
    let probe = Probe::start(&db.addr(), &[]);
    let pid = probe.pid();
    let rt = runtime();
    let addr = probe.proxy_addr().to_string();
    let churn = |duration: Duration| -> (usize, usize) {
        let addr = addr.clone();
        rt.block_on(async move {
            let end = Instant::now() + duration;
            let tasks: Vec<_> = (0..32)
                .map(|i| {
                    let addr = addr.clone();
                    tokio::spawn(async move {
                        let (mut made, mut failed) = (0, 0);
                        while Instant::now() < end {
                            match tokio::net::TcpStream::connect(&addr).await {
                                // Half close at once, half after their greeting.
                                Ok(mut s) if i % 2 == 1 => {
                                    let _ = first_packet(&mut s, Duration::from_secs(5)).await;
                                    made += 1;
                                }
                                Ok(_) => made += 1,
                                Err(_) => failed += 1,
                            }
                        }
                        (made, failed)
                    })
                })
                .collect();
            let mut total = (0, 0);
            for t in tasks {
                let (m, f) = t.await.unwrap_or((0, 0));
                total = (total.0 + m, total.1 + f);
            }
            total
        })
    };
    // A first churn of the same length sets the high-water mark of the allocator (freed
    // memory it keeps); the second must not grow beyond it: a leak would.
    let seconds = if stress() { 10 } else { 2 };
    let rss_start = rss_kib(pid);
    churn(Duration::from_secs(seconds));
    wait_for(&probe, "warm-up closed", |s| active(s) == 0.0);
    let (fds0, rss0) = (open_fds(pid), rss_kib(pid));
    let start = Instant::now();
    let (made, failed) = churn(Duration::from_secs(seconds));
    let rate = made as f64 / start.elapsed().as_secs_f64();
    let s = wait_for(&probe, "churn closed", |s| active(s) == 0.0);
    let deadline = Instant::now() + Duration::from_secs(5);
    // At most as many as after the first churn (one of whose sockets may still have been
    // closing when counted): more would be a leak.
    while open_fds(pid) > fds0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20)); // poll interval
    }
    let (fds, rss) = (open_fds(pid), rss_kib(pid));
    figure(format!(
        "churn: {made} connect/close in {seconds} s ({rate:.0}/s, {failed} connects failed); \
         fds {fds0} -> {fds}; RSS {rss_start} KiB at start, {rss0} KiB after a first churn, \
         {rss} KiB after the second; connections_total {}",
        s.get("psprobe_connections_total", &[])
    ));
    assert!(fds <= fds0, "descriptors leaked: {fds0} -> {fds}");
    assert!(
        rss < rss0 + 8 * 1024,
        "RSS grew from {rss0} KiB to {rss} KiB"
    );
    assert!(made > 1000, "churn too slow to mean anything: {made}");
    let mut c = wire::login(&addr, USER, PASSWORD, DATABASE);
    c.write_all(&packet(0, &[0x0e])).expect("ping");
    assert_eq!(read_packet(&mut c).first(), Some(&0), "still serving");
}

// ---------------------------------------------------------------- pipelining

#[test]
fn deep_pipelines_are_counted_exactly() {
    let _serial = serial();
    let db = server();
    let probe = Probe::start(&db.addr(), &[]);
    let (pings, queries) = (300, 250);
    let mut s = wire::login(probe.proxy_addr(), USER, PASSWORD, DATABASE);
    let all: Vec<u8> = (0..pings).flat_map(|_| packet(0, &[0x0e])).collect();
    s.write_all(&all).expect("pipelined pings");
    for i in 0..pings {
        let ok = read_packet(&mut s);
        assert_eq!(ok.first(), Some(&0), "ping {i}: {ok:?}");
    }
    let mut query = vec![0x03];
    query.extend_from_slice(b"SELECT 1");
    let all: Vec<u8> = (0..queries).flat_map(|_| packet(0, &query)).collect();
    s.write_all(&all).expect("pipelined queries");
    // Each: column count, column definition, EOF, row, EOF.
    for i in 0..queries * 5 {
        let p = read_packet(&mut s);
        assert_ne!(p.first(), Some(&0xFF), "packet {i}: {p:?}");
    }
    s.write_all(&packet(0, &[0x01])).expect("quit");
    let mut rest = Vec::new();
    let _ = s.read_to_end(&mut rest);
    let scrape = wait_for(&probe, "closed", |s| active(s) == 0.0);
    let seen = commands(&scrape);
    figure(format!(
        "pipelining: {pings} pings + {queries} queries in flight at once: {seen:?}"
    ));
    assert_eq!(seen.get("ping/ok"), Some(&(pings as u64)), "{seen:?}");
    assert_eq!(seen.get("query/rows"), Some(&(queries as u64)), "{seen:?}");
    assert!(
        !seen
            .keys()
            .any(|k| k.ends_with("/aborted") || k.ends_with("/unobserved")),
        "{seen:?}"
    );
    assert_eq!(
        scrape.get("psprobe_unobserved_connections_total", &[]),
        0.0,
        "{}",
        scrape.text
    );
}
