//! `memory idle`: N logged-in connections held idle through a proxy, and what they cost it.
//! 16 threads open them (as the script this replaces did), each connection a plain std
//! socket that completed the MySQL handshake, so the proxy holds its client and upstream side.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::thread;
use std::time::{Duration, Instant};

use anyhow::Result;
use serde::Serialize;

use super::{append, mib, proxy_kib, server_status, Args};
use crate::mysql::Conn;
use crate::{metrics, procfs, pyfmt};

const OPENERS: usize = 16;

/// One line of memory.jsonl for an idle test, keys in the order the report expects.
#[derive(Debug, Serialize)]
struct IdleRow {
    test: &'static str,
    target: String,
    connections: usize,
    opened: usize,
    failed: usize,
    first_error: Option<String>,
    open_s: f64,
    close_s: f64,
    upstream_threads_connected: i64,
    connections_active_metric: Option<f64>,
    rss_before_mib: f64,
    rss_held_mib: f64,
    rss_held_later_mib: f64,
    peak_rss_mib: f64,
    rss_after_close_mib: f64,
    kib_per_connection: f64,
    target_connections: usize,
    rss_at_target_mib: f64,
}

pub fn run(args: &Args) -> Result<()> {
    let addr = SocketAddr::from(([127, 0, 0, 1], args.port()?));
    let pid = args.pid;
    let base_threads = server_status(args, "Threads_connected")?;
    procfs::reset_peak_rss(pid);
    let rss_before = proxy_kib(pid, "VmRSS")?;

    let started = Instant::now();
    let (conns, errors) = open_all(addr, args);
    let open_s = started.elapsed().as_secs_f64();
    thread::sleep(Duration::from_secs(2));
    let rss_held = proxy_kib(pid, "VmRSS")?;
    let hwm = proxy_kib(pid, "VmHWM")?;
    let threads_connected = server_status(args, "Threads_connected")? - base_threads;
    let active = match &args.metrics {
        Some(m) => Some(metrics::scrape(m, "psprobe_connections_active", None)?),
        None => None,
    };
    thread::sleep(Duration::from_secs_f64(args.hold.max(0.0)));
    let rss_held_later = proxy_kib(pid, "VmRSS")?;

    let opened = conns.len();
    let closing = Instant::now();
    for conn in conns {
        conn.quit();
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline && server_status(args, "Threads_connected")? > base_threads {
        thread::sleep(Duration::from_millis(200));
    }
    let close_s = closing.elapsed().as_secs_f64();
    thread::sleep(Duration::from_secs(1));
    let rss_after = proxy_kib(pid, "VmRSS")?;

    let per_conn_kib = (rss_held as f64 - rss_before as f64) / opened.max(1) as f64;
    let goal = args.target_connections.unwrap_or(args.connections);
    let row = IdleRow {
        test: "idle",
        target: args.target.clone(),
        connections: args.connections,
        opened,
        failed: errors.len(),
        first_error: errors.first().cloned(),
        open_s: pyfmt::round(open_s, 1),
        close_s: pyfmt::round(close_s, 1),
        upstream_threads_connected: threads_connected,
        connections_active_metric: active,
        rss_before_mib: mib(rss_before as f64),
        rss_held_mib: mib(rss_held as f64),
        rss_held_later_mib: mib(rss_held_later as f64),
        peak_rss_mib: mib(hwm as f64),
        rss_after_close_mib: mib(rss_after as f64),
        kib_per_connection: pyfmt::round(per_conn_kib, 1),
        target_connections: goal,
        rss_at_target_mib: if opened >= goal {
            mib(rss_held as f64)
        } else {
            mib(rss_before as f64 + per_conn_kib * goal as f64)
        },
    };
    append(&args.results, &row)?;
    eprintln!(
        "bench:   {}: {opened}/{} connections held (server sees {threads_connected}), RSS {} MiB ({} KiB per \
         connection), peak {} MiB, after close {} MiB",
        args.target,
        args.connections,
        pyfmt::repr(row.rss_held_mib),
        pyfmt::repr(row.kib_per_connection),
        pyfmt::repr(row.peak_rss_mib),
        pyfmt::repr(row.rss_after_close_mib),
    );
    if let Some(e) = errors.first() {
        eprintln!("bench:   first error: {e}");
    }
    Ok(())
}

/// Opens `args.connections` logged-in connections from OPENERS threads; the ones that failed
/// are counted by their error.
fn open_all(addr: SocketAddr, args: &Args) -> (Vec<Conn>, Vec<String>) {
    let next = AtomicUsize::new(0);
    let conns = Mutex::new(Vec::with_capacity(args.connections));
    let errors = Mutex::new(Vec::new());
    thread::scope(|s| {
        for _ in 0..OPENERS {
            s.spawn(|| {
                while next.fetch_add(1, Ordering::Relaxed) < args.connections {
                    match Conn::connect(addr, &args.user, &args.password, Duration::from_secs(30)) {
                        Ok(c) => conns.lock().unwrap_or_else(|e| e.into_inner()).push(c),
                        Err(e) => errors
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .push(e.to_string()),
                    }
                }
            });
        }
    });
    (
        conns.into_inner().unwrap_or_else(|e| e.into_inner()),
        errors.into_inner().unwrap_or_else(|e| e.into_inner()),
    )
}
