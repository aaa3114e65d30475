//! `memory`: the memory targets of issue 6, driven by `bench.sh --memory`.
//!
//! - `idle`: opens N client connections through a proxy, each logged in (so the proxy's
//!   upstream connection exists and the session is in the command phase), holds them idle and
//!   reads the proxy's RSS and peak; checks the server's Threads_connected and, for psprobe,
//!   psprobe_connections_active.
//! - `stream`: 1088 MiB of 17 MiB rows through the proxy with the mariadb client in --quick
//!   mode; counts what the client received and reports the proxy's RSS growth.
//! - `report`: the markdown table of what idle and stream appended to the results file.

mod idle;
mod report;
mod stream;

use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};
use serde::Serialize;

use crate::{procfs, pyfmt};

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Mode {
    /// Hold --connections idle logged-in connections through --port and read the proxy's RSS.
    Idle,
    /// Pull 64 rows of 17 MiB through --port and read the proxy's RSS growth.
    Stream,
    /// Print the table of the results file.
    Report,
}

#[derive(clap::Args)]
pub struct Args {
    /// What to do.
    #[arg(value_enum)]
    mode: Mode,
    /// The JSON-lines file idle and stream append to and report reads.
    #[arg(long)]
    results: PathBuf,
    /// Which path the connections go through (psprobe, haproxy, direct), for the record.
    #[arg(long, default_value = "psprobe")]
    target: String,
    /// The port to connect to on 127.0.0.1 (idle, stream).
    #[arg(long)]
    port: Option<u16>,
    /// The proxy's process id (its RSS is read), or 0 for none.
    #[arg(long, default_value_t = 0)]
    pid: u32,
    /// psprobe's metrics address (HOST:PORT), to read its own counts.
    #[arg(long)]
    metrics: Option<String>,
    /// Connections to open (idle).
    #[arg(long, default_value_t = 10_000)]
    connections: usize,
    /// Connections the target is about; when fewer could be opened (descriptor limit), RSS is
    /// also extrapolated linearly to this many.
    #[arg(long)]
    target_connections: Option<usize>,
    /// Seconds to hold the connections before reading RSS again (idle).
    #[arg(long, default_value_t = 5.0)]
    hold: f64,
    /// MySQL user.
    #[arg(long, default_value = "bench")]
    user: String,
    /// MySQL password.
    #[arg(long, default_value = "bench")]
    password: String,
    /// mariadbd's own port, to read Threads_connected directly (idle).
    #[arg(long)]
    server_port: Option<u16>,
}

pub fn run(args: &Args) -> Result<()> {
    match args.mode {
        Mode::Idle => idle::run(args),
        Mode::Stream => stream::run(args),
        Mode::Report => report::run(&args.results),
    }
}

impl Args {
    fn port(&self) -> Result<u16> {
        self.port
            .context("--port is needed: the port of the proxy (or server) to connect to")
    }
}

/// KiB -> MiB with one decimal, as the tables show it.
fn mib(kib: f64) -> f64 {
    pyfmt::round(kib / 1024.0, 1)
}

/// A /proc/PID/status size of the proxy, which must still be running.
fn proxy_kib(pid: u32, key: &str) -> Result<u64> {
    procfs::status_kib(pid, key).with_context(|| {
        format!("cannot read {key} of process {pid} (is the proxy still running?)")
    })
}

/// A global status variable of the server, read with the mariadb client straight from it.
fn server_status(args: &Args, variable: &str) -> Result<i64> {
    let port = args
        .server_port
        .context("--server-port is needed: mariadbd's own port, for its Threads_connected")?;
    let out = Command::new("mariadb")
        .args(["--no-defaults", "--protocol=TCP", "-h127.0.0.1"])
        .arg(format!("-P{port}"))
        .arg(format!("-u{}", args.user))
        .arg(format!("-p{}", args.password))
        .args(["-N", "-B", "-e"])
        .arg(format!("SHOW GLOBAL STATUS LIKE '{variable}'"))
        .output()
        .context("cannot run the mariadb client (is it installed and on PATH?)")?;
    if !out.status.success() {
        bail!(
            "mariadb on port {port}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    let text = String::from_utf8_lossy(&out.stdout);
    text.split_whitespace()
        .nth(1)
        .and_then(|v| v.parse().ok())
        .with_context(|| format!("SHOW GLOBAL STATUS LIKE '{variable}' gave {text:?}"))
}

fn append<T: Serialize>(path: &Path, row: &T) -> Result<()> {
    let mut file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .with_context(|| format!("cannot append to {}", path.display()))?;
    writeln!(file, "{}", pyfmt::line(row)?)
        .with_context(|| format!("cannot append to {}", path.display()))
}
