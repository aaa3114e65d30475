//! A real Prometheus server (Debian's `/usr/bin/prometheus`, v2.x) scraping given targets,
//! with its own config, TSDB directory and port; killed on drop (and by the kernel if the test
//! process dies, see `child.rs`). Queried over its HTTP API with a bare std TcpStream.

use super::datadir::tempdir;
use psprobe_harness::child::spawn_tied;
use serde_json::Value;
use std::fs::{self, File};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use tempfile::TempDir;

pub const PROMETHEUS: &str = "/usr/bin/prometheus";
const READY_TIMEOUT: Duration = Duration::from_secs(60);
const HTTP_TIMEOUT: Duration = Duration::from_secs(10);
const POLL: Duration = Duration::from_millis(100);
const PORT_ATTEMPTS: usize = 3;

pub struct Prometheus {
    child: Option<Child>,
    port: u16,
    log: PathBuf,
    /// Declared last: removed only after `Drop::drop` has killed the server.
    dir: TempDir,
}

/// A free loopback port (racy by nature: starting a server retries with another).
fn free_port() -> u16 {
    psprobe_harness::ports::free_port().expect("a free port on 127.0.0.1")
}

fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// Percent-encodes everything but RFC 3986 unreserved characters.
pub fn url_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len() * 3);
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// HTTP/1.0 GET; returns (status, body). `None` if nothing is listening (yet).
fn http_get(addr: SocketAddr, path: &str) -> Option<(u16, String)> {
    let mut s = TcpStream::connect_timeout(&addr, HTTP_TIMEOUT).ok()?;
    s.set_read_timeout(Some(HTTP_TIMEOUT))
        .expect("set read timeout");
    write!(s, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").ok()?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).ok()?;
    let raw = String::from_utf8(raw).expect("HTTP response is not UTF-8");
    let (head, body) = raw.split_once("\r\n\r\n")?;
    let status = head.split_whitespace().nth(1)?.parse().ok()?;
    // HTTP/1.0 responses are never chunked: the body runs to the end of the stream.
    Some((status, body.to_owned()))
}

impl Prometheus {
    /// Starts Prometheus scraping `targets` (HOST:PORT, path /metrics) every `interval`
    /// (a Prometheus duration such as "1s") and returns once `/-/ready` answers 200.
    pub fn start(targets: &[&str], interval: &str) -> Prometheus {
        Self::start_with_rules(targets, interval, &[])
    }

    /// Like [`Prometheus::start`], evaluating the rule files `rules` (absolute paths).
    pub fn start_with_rules(targets: &[&str], interval: &str, rules: &[&Path]) -> Prometheus {
        let dir = tempdir("prometheus");
        let rule_files: String = rules
            .iter()
            .map(|r| format!("  - '{}'\n", r.display()))
            .collect();
        let rule_files = if rule_files.is_empty() {
            String::new()
        } else {
            format!("rule_files:\n{rule_files}")
        };
        let list = targets
            .iter()
            .map(|t| format!("'{t}'"))
            .collect::<Vec<_>>()
            .join(", ");
        fs::write(
            dir.path().join("prometheus.yml"),
            format!(
                "global:\n  scrape_interval: {interval}\n  scrape_timeout: {interval}\n  \
                 evaluation_interval: {interval}\n\
                 {rule_files}\
                 scrape_configs:\n  - job_name: psprobe\n    static_configs:\n      \
                 - targets: [{list}]\n"
            ),
        )
        .expect("write prometheus.yml");
        let mut prom = Prometheus {
            child: None,
            port: 0,
            log: dir.path().join("prometheus.log"),
            dir,
        };
        for attempt in 1..=PORT_ATTEMPTS {
            prom.port = free_port();
            match prom.launch() {
                Ok(()) => return prom,
                Err(exited) => {
                    let log = prom.log_text();
                    if exited && log.contains("address already in use") && attempt < PORT_ATTEMPTS {
                        continue;
                    }
                    panic!(
                        "prometheus did not become ready (attempt {attempt}, exited: {exited}):\n{}",
                        tail(&log, 30)
                    );
                }
            }
        }
        unreachable!("the last attempt returns or panics")
    }

    /// Spawns Prometheus on `self.port` and waits until it is ready. On failure the child is
    /// killed; Err(true) means it had exited by itself, Err(false) that it timed out.
    fn launch(&mut self) -> Result<(), bool> {
        let out = File::create(&self.log).expect("create prometheus.log");
        let err = out.try_clone().expect("clone prometheus.log handle");
        let mut cmd = Command::new(PROMETHEUS);
        cmd.arg(format!(
            "--config.file={}",
            self.dir.path().join("prometheus.yml").display()
        ))
        .arg(format!(
            "--storage.tsdb.path={}",
            self.dir.path().join("data").display()
        ))
        .arg(format!("--web.listen-address=127.0.0.1:{}", self.port))
        .arg("--storage.tsdb.retention.time=1d")
        .stdin(Stdio::null())
        .stdout(Stdio::from(out))
        .stderr(Stdio::from(err));
        let child = spawn_tied(cmd).unwrap_or_else(|e| panic!("spawn {PROMETHEUS}: {e}"));
        self.child = Some(child);
        let result = self.wait_ready();
        if result.is_err() {
            self.kill();
        }
        result
    }

    fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Ok once ready; Err(true) if the process exited, Err(false) on timeout.
    fn wait_ready(&mut self) -> Result<(), bool> {
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            if let Some((200, _)) = http_get(self.socket_addr(), "/-/ready") {
                return Ok(());
            }
            let child = self.child.as_mut().expect("prometheus was spawned");
            if child.try_wait().expect("try_wait on prometheus").is_some() {
                return Err(true);
            }
            if Instant::now() >= deadline {
                return Err(false);
            }
            std::thread::sleep(POLL); // poll interval
        }
    }

    fn socket_addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    pub fn addr(&self) -> String {
        self.socket_addr().to_string()
    }

    /// Everything Prometheus has logged so far.
    pub fn log_text(&self) -> String {
        fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// GET `path` (with query string); panics if the server does not answer.
    pub fn get(&self, path: &str) -> (u16, String) {
        http_get(self.socket_addr(), path).unwrap_or_else(|| {
            panic!(
                "no HTTP answer from prometheus at {} for {path}",
                self.addr()
            )
        })
    }

    /// GET an API path and parse the JSON envelope: `Ok(data)` when status is "success",
    /// `Err(errorType: error)` otherwise.
    pub fn api(&self, path: &str) -> Result<Value, String> {
        let (code, body) = self.get(path);
        let v: Value = serde_json::from_str(&body)
            .map_err(|e| format!("HTTP {code}, body is not JSON ({e}): {body}"))?;
        if v["status"] == "success" {
            Ok(v["data"].clone())
        } else {
            Err(format!(
                "HTTP {code}, status {}: {}: {}",
                v["status"], v["errorType"], v["error"]
            ))
        }
    }

    /// Instant query at the current time; returns `data` ({resultType, result}).
    pub fn query(&self, expr: &str) -> Result<Value, String> {
        self.api(&format!("/api/v1/query?query={}", url_encode(expr)))
    }

    /// Instant query at `time` (Unix seconds).
    pub fn query_at(&self, expr: &str, time: f64) -> Result<Value, String> {
        self.api(&format!(
            "/api/v1/query?query={}&time={time:.3}",
            url_encode(expr)
        ))
    }

    /// Values of `label` on the series matching `selector` (what Grafana's
    /// `label_values(selector, label)` lists).
    pub fn label_values(&self, label: &str, selector: &str) -> Result<Vec<String>, String> {
        let data = self.api(&format!(
            "/api/v1/label/{}/values?match[]={}",
            url_encode(label),
            url_encode(selector)
        ))?;
        Ok(data
            .as_array()
            .ok_or_else(|| format!("label values are not an array: {data}"))?
            .iter()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect())
    }
}

/// Number of series (or 1 for a scalar/string) in a query's `data`.
pub fn result_len(data: &Value) -> usize {
    match data["resultType"].as_str() {
        Some("vector") | Some("matrix") => data["result"].as_array().map_or(0, Vec::len),
        Some("scalar") | Some("string") => 1,
        _ => 0,
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!(
                "--- prometheus :{} log tail ---\n{}",
                self.port,
                tail(&self.log_text(), 20)
            );
        }
        self.kill();
        // `dir` (TempDir) is dropped after this, removing config and TSDB.
    }
}
