//! `endpoint-abuse`: figures for docs/reliability.md on how psprobe's admin port and metrics
//! endpoint hold up against abuse. Starts the given psprobe binary (no upstream server is
//! needed) and measures:
//!
//! - password guessing: T threads loop on logins with a wrong password for S seconds; prints
//!   password checks per second (answers 1045), refusals without a check (1129), attempts per
//!   second, and the WARN lines the storm wrote;
//! - a 10 MB admin query: the answer, and psprobe's peak RSS (VmHWM) before and after;
//! - a metrics request that never completes: the answer and the time to it.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use crate::mysql::{ClientError, Conn};
use crate::procfs;

const PASSWORD: &str = "bench-admin-secret";
const TIMEOUT: Duration = Duration::from_secs(5);

#[derive(clap::Args)]
pub struct Args {
    /// The psprobe binary to start.
    #[arg(long, default_value = "target/release/psprobe")]
    psprobe: PathBuf,
    /// Threads guessing passwords at once.
    #[arg(long, default_value_t = 8)]
    threads: usize,
    /// Seconds of guessing.
    #[arg(long, default_value_t = 5.0)]
    seconds: f64,
    /// Size of the admin query, in MB (10^6 bytes).
    #[arg(long, default_value_t = 10)]
    query_mb: usize,
}

/// A running psprobe, stopped (SIGTERM, then SIGKILL after 30 s) when dropped, whatever
/// failed in between.
struct Psprobe {
    child: Child,
    fields: BTreeMap<String, String>,
    stderr: Arc<Mutex<Vec<String>>>,
}

impl Psprobe {
    fn start(binary: &PathBuf) -> Result<Psprobe> {
        let mut child = Command::new(binary)
            .args([
                "proxy",
                "--listen",
                "127.0.0.1:0",
                "--upstream",
                "127.0.0.1:1",
            ])
            .args(["--metrics", "127.0.0.1:0", "--admin", "127.0.0.1:0"])
            .env("PSPROBE_ADMIN_PASSWORD", PASSWORD)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .with_context(|| {
                format!(
                    "cannot start {} (build it: cargo build --release --bin psprobe)",
                    binary.display()
                )
            })?;
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let lines = Arc::clone(&stderr);
        let err = child.stderr.take().context("psprobe's stderr")?;
        thread::spawn(move || {
            for line in BufReader::new(err).lines().map_while(Result::ok) {
                lines.lock().unwrap_or_else(|e| e.into_inner()).push(line);
            }
        });
        let mut out = BufReader::new(child.stdout.take().context("psprobe's stdout")?);
        let mut first = String::new();
        out.read_line(&mut first)
            .context("reading psprobe's first line")?;
        // Keep draining, so psprobe never blocks on a full pipe.
        thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
        let fields = parse_fields(&first);
        let mut p = Psprobe {
            child,
            fields,
            stderr,
        };
        if !p.fields.contains_key("admin") || !p.fields.contains_key("metrics") {
            thread::sleep(Duration::from_millis(200));
            let log = p.stderr_lines().join("\n");
            bail!("psprobe did not print its addresses (first line {first:?}):\n{log}");
        }
        if let Ok(Some(status)) = p.child.try_wait() {
            bail!("psprobe exited at once ({status})");
        }
        Ok(p)
    }

    fn addr(&self, key: &str) -> Result<SocketAddr> {
        let value = self
            .fields
            .get(key)
            .with_context(|| format!("psprobe printed no {key}="))?;
        value
            .parse()
            .with_context(|| format!("psprobe's {key}={value}"))
    }

    fn stderr_lines(&self) -> Vec<String> {
        self.stderr
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

impl Drop for Psprobe {
    fn drop(&mut self) {
        // SAFETY: kill(2) of our own child, which has not been waited for yet.
        unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// "psprobe listening proxy=A metrics=B admin=C" -> {proxy: A, metrics: B, admin: C}.
fn parse_fields(line: &str) -> BTreeMap<String, String> {
    line.split_whitespace()
        .filter_map(|f| f.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

pub fn run(args: &Args) -> Result<()> {
    let p = Psprobe::start(&args.psprobe)?;
    let admin = p.addr("admin")?;

    let started = Instant::now();
    let counts = guessing(
        admin,
        args.threads,
        Duration::from_secs_f64(args.seconds.max(0.0)),
    );
    let elapsed = started.elapsed().as_secs_f64();
    let total: u64 = counts.values().sum();
    thread::sleep(Duration::from_millis(500));
    let warns = p
        .stderr_lines()
        .iter()
        .filter(|l| l.contains("WARN") && l.contains("login"))
        .count();
    println!(
        "{}",
        guessing_line(args.threads, elapsed, total, &counts, warns)
    );

    // Let the peer's bucket refill before logging in with the right password.
    thread::sleep(Duration::from_secs(6));
    let pid = p.child.id();
    let hwm = || procfs::status_kib(pid, "VmHWM").unwrap_or(0) as f64 / 1024.0;
    let before = hwm();
    let mut conn = Conn::connect(admin, "admin", PASSWORD, TIMEOUT).with_context(|| {
        format!("cannot log in to the admin port {admin} with the right password")
    })?;
    let query = format!("SELECT '{}'", "x".repeat(args.query_mb * 1_000_000));
    let t0 = Instant::now();
    let answer = match conn.query(&query) {
        Ok(_) => "rows".to_string(),
        Err(e) => format!("ERROR {}", e.code()),
    };
    let took = t0.elapsed().as_secs_f64();
    let after = match conn.query("SELECT 'after'") {
        Ok(rows) => rows
            .first()
            .and_then(|r| r.first())
            .map_or("(no row)".to_string(), |v| {
                String::from_utf8_lossy(v.as_deref().unwrap_or(b"NULL")).into_owned()
            }),
        Err(e @ ClientError::Server { .. }) | Err(e @ ClientError::Protocol(_)) => {
            format!("ERROR ({}, {:?})", e.code(), e.to_string())
        }
        Err(e) => format!("connection lost ({e})"),
    };
    println!(
        "{} MB admin query: {answer} in {took:.2} s; next query: {after}; peak RSS {before:.1} MiB before, {:.1} MiB after",
        args.query_mb,
        hwm()
    );

    let (status, took) = never_completes(p.addr("metrics")?)?;
    // Quoted as Python's repr() did in the figures of docs/reliability.md.
    println!("metrics request that never completes: '{status}' after {took:.2} s");
    Ok(())
}

/// Error code (0: logged in) -> attempts, over `threads` threads looping for `length`.
fn guessing(admin: SocketAddr, threads: usize, length: Duration) -> BTreeMap<u16, u64> {
    let counts = Mutex::new(BTreeMap::new());
    let stop = Instant::now() + length;
    thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                while Instant::now() < stop {
                    let code = match Conn::connect(admin, "admin", "wrong", TIMEOUT) {
                        Ok(c) => {
                            c.quit();
                            0
                        }
                        Err(e) => e.code(),
                    };
                    *counts
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .entry(code)
                        .or_insert(0) += 1;
                }
            });
        }
    });
    counts.into_inner().unwrap_or_else(|e| e.into_inner())
}

fn guessing_line(
    threads: usize,
    elapsed: f64,
    total: u64,
    counts: &BTreeMap<u16, u64>,
    warns: usize,
) -> String {
    let checks = counts.get(&1045).copied().unwrap_or(0);
    let unchecked = counts.get(&1129).copied().unwrap_or(0);
    let other: Vec<String> = counts
        .iter()
        .filter(|(code, _)| **code != 1045 && **code != 1129)
        .map(|(code, n)| format!("{code}: {n}"))
        .collect();
    format!(
        "guessing: {threads} threads x {elapsed:.1} s: {total} attempts ({:.0}/s); password checks (1045): {checks} \
         ({:.1}/s); refused unchecked (1129): {unchecked}; other: {{{}}}; WARN lines: {warns}",
        total as f64 / elapsed,
        checks as f64 / elapsed,
        other.join(", ")
    )
}

/// Sends a request line and one header, never the blank line, and waits (up to 60 s) for the
/// answer: its status line, and the seconds it took.
fn never_completes(metrics: SocketAddr) -> Result<(String, f64)> {
    let mut s = TcpStream::connect(metrics)
        .with_context(|| format!("cannot connect to the metrics endpoint {metrics}"))?;
    s.set_read_timeout(Some(Duration::from_secs(60)))?;
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")?;
    let t0 = Instant::now();
    let mut data = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => data.extend_from_slice(&buf[..n]),
            Err(e) => {
                data.extend_from_slice(format!("<{e}>").as_bytes());
                break;
            }
        }
    }
    let took = t0.elapsed().as_secs_f64();
    let text = String::from_utf8_lossy(&data);
    let status = text.split("\r\n").next().unwrap_or("");
    let status = if status.is_empty() {
        "(closed without an answer)"
    } else {
        status
    };
    Ok((status.to_string(), took))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_of_the_listening_line() {
        let f = parse_fields(
            "psprobe listening proxy=127.0.0.1:6033 metrics=127.0.0.1:9898 admin=127.0.0.1:6034\n",
        );
        assert_eq!(f["admin"], "127.0.0.1:6034");
        assert_eq!(f["metrics"], "127.0.0.1:9898");
        assert!(!f.contains_key("listening"));
    }

    #[test]
    fn the_guessing_line_splits_checks_refusals_and_others() {
        let counts = BTreeMap::from([(1045, 40), (1129, 950), (2013, 10)]);
        assert_eq!(
            guessing_line(8, 5.0, 1000, &counts, 3),
            "guessing: 8 threads x 5.0 s: 1000 attempts (200/s); password checks (1045): 40 (8.0/s); refused \
             unchecked (1129): 950; other: {2013: 10}; WARN lines: 3"
        );
        assert!(guessing_line(1, 1.0, 0, &BTreeMap::new(), 0).contains("other: {};"));
    }
}
