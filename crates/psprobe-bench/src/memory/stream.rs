//! `memory stream`: `SELECT REPEAT('x', 17 MiB) FROM seq_1_to_64` (1088 MiB, each row two
//! physical packets) through a proxy with the mariadb client in --quick mode (it prints rows
//! as they arrive, so only the proxy could buffer); counts what the client received and reads
//! the proxy's RSS growth (VmHWM during the stream, reset just before, minus VmRSS before).

use std::io::Read;
use std::process::{Command, Stdio};
use std::thread;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use serde::Serialize;

use super::{append, mib, proxy_kib, Args};
use crate::{metrics, procfs, pyfmt};

const ROW_BYTES: u64 = 17 * 1024 * 1024;
const ROWS: u64 = 64;
const SERVER_TO_CLIENT: &str = "direction=\"server_to_client\"";

/// One line of memory.jsonl for a stream test.
#[derive(Debug, Serialize)]
struct StreamRow {
    test: &'static str,
    target: String,
    rows: u64,
    client_bytes: u64,
    seconds: f64,
    mib_per_s: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    rss_before_mib: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    peak_rss_mib: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    rss_after_mib: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    rss_growth_mib: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    proxy_server_to_client_bytes: Option<f64>,
}

pub fn run(args: &Args) -> Result<()> {
    let port = args.port()?;
    let pid = args.pid;
    let rss_before = if pid != 0 {
        procfs::reset_peak_rss(pid);
        Some(proxy_kib(pid, "VmRSS")?)
    } else {
        None
    };
    let bytes_before = match &args.metrics {
        Some(m) => Some(metrics::scrape(
            m,
            "psprobe_bytes_total",
            Some(SERVER_TO_CLIENT),
        )?),
        None => None,
    };

    let started = Instant::now();
    let mut child = Command::new("mariadb")
        .args(["--no-defaults", "--protocol=TCP", "-h127.0.0.1"])
        .arg(format!("-P{port}"))
        .arg(format!("-u{}", args.user))
        .arg(format!("-p{}", args.password))
        .args([
            "--database=sbtest",
            "--max-allowed-packet=1G",
            "--quick",
            "-N",
            "-B",
            "-e",
        ])
        .arg(format!(
            "SELECT REPEAT('x', {ROW_BYTES}) FROM seq_1_to_{ROWS}"
        ))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .context("cannot run the mariadb client (is it installed and on PATH?)")?;
    let mut stderr = child.stderr.take().context("mariadb's stderr")?;
    let errors = thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    let mut stdout = child.stdout.take().context("mariadb's stdout")?;
    let (mut received, mut rows) = (0u64, 0u64);
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = stdout
            .read(&mut buf)
            .context("reading the mariadb client's output")?;
        if n == 0 {
            break;
        }
        received += n as u64;
        rows += buf[..n].iter().filter(|b| **b == b'\n').count() as u64;
    }
    let status = child.wait()?;
    let elapsed = started.elapsed().as_secs_f64();
    let err = errors.join().unwrap_or_default();
    if !status.success() {
        bail!("mariadb client failed ({status}): {}", err.trim());
    }

    let hwm = if pid != 0 {
        Some(proxy_kib(pid, "VmHWM")?)
    } else {
        None
    };
    let rss_after = if pid != 0 {
        Some(proxy_kib(pid, "VmRSS")?)
    } else {
        None
    };
    let proxy_bytes = match (&args.metrics, bytes_before) {
        (Some(m), Some(before)) => {
            Some(metrics::scrape(m, "psprobe_bytes_total", Some(SERVER_TO_CLIENT))? - before)
        }
        _ => None,
    };
    let row = StreamRow {
        test: "stream",
        target: args.target.clone(),
        rows,
        client_bytes: received,
        seconds: pyfmt::round(elapsed, 2),
        mib_per_s: pyfmt::round(received as f64 / 1048576.0 / elapsed, 1),
        rss_before_mib: rss_before.map(|k| mib(k as f64)),
        peak_rss_mib: hwm.map(|k| mib(k as f64)),
        rss_after_mib: rss_after.map(|k| mib(k as f64)),
        rss_growth_mib: hwm.zip(rss_before).map(|(h, b)| mib(h as f64 - b as f64)),
        proxy_server_to_client_bytes: proxy_bytes,
    };
    append(&args.results, &row)?;
    let mut line = format!(
        "bench:   {}: {rows} rows, {:.0} MiB in {elapsed:.1} s",
        args.target,
        received as f64 / 1048576.0
    );
    if let (Some(growth), Some(peak)) = (row.rss_growth_mib, row.peak_rss_mib) {
        line += &format!(
            ", RSS growth {} MiB (peak {} MiB)",
            pyfmt::repr(growth),
            pyfmt::repr(peak)
        );
    }
    eprintln!("{line}");
    if rows != ROWS || received < ROWS * ROW_BYTES {
        bail!("expected {ROWS} rows of {ROW_BYTES} bytes, got {rows} rows, {received} bytes");
    }
    Ok(())
}
