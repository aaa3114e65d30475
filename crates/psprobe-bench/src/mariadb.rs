//! `mariadb`: the benchmark's throwaway server, started from the harness's layout and command
//! line (the same files and options as the tests' and the demo's servers): performance_schema
//! OFF (the proxies are measured, not the server's instrumentation), no binary log, no name
//! resolution, a 48 MiB redo log; the caller's options come last and win. Prints `PORT PID` and
//! leaves the server running: the calling script stops it by its pid.

use std::fs::File;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use psprobe_harness::mariadb::{root_cli_args, MARIADBD};
use psprobe_harness::server::{ping_args, Layout, ADMIN};

/// Redo log size for the installer and the server alike (the first start need not resize it).
const LOG_FILE_SIZE: &str = "--innodb-log-file-size=48M";
/// How long a fresh server may take to answer.
const READY_TIMEOUT: Duration = Duration::from_secs(60);

#[derive(clap::Args)]
pub struct Args {
    /// Directory for the server's files (created; its datadir is DIR/data, its log
    /// DIR/error.log).
    #[arg(long, value_name = "DIR")]
    pub dir: PathBuf,
    /// Account created with every privilege (the benchmark's clients use it).
    #[arg(long, default_value = "bench")]
    pub user: String,
    /// Its password.
    #[arg(long, default_value = "bench")]
    pub password: String,
    /// More mariadbd options (sizing, TLS), after `--`.
    #[arg(last = true, value_name = "MARIADBD_OPTION")]
    pub options: Vec<String>,
}

pub fn run(args: &Args) -> Result<()> {
    let layout = Layout::new(&args.dir);
    std::fs::create_dir_all(layout.root())
        .with_context(|| format!("cannot create {}", layout.root().display()))?;
    install(&layout)?;
    let port = psprobe_harness::ports::free_port().context("no free port on 127.0.0.1")?;
    let console = File::create(layout.console_log())
        .with_context(|| format!("cannot create {}", layout.console_log().display()))?;
    let mut server = Command::new(MARIADBD)
        .args(layout.mariadbd_args(port, "127.0.0.1"))
        .args([
            "--performance-schema=OFF",
            "--skip-name-resolve",
            LOG_FILE_SIZE,
        ])
        .args(&args.options)
        .stdin(Stdio::null())
        .stdout(
            console
                .try_clone()
                .context("cannot share the console log")?,
        )
        .stderr(console)
        .spawn()
        .with_context(|| format!("cannot start {MARIADBD}"))?;
    let deadline = Instant::now() + READY_TIMEOUT;
    while !answers(port) {
        if let Some(status) = server.try_wait().context("cannot watch mariadbd")? {
            bail!(
                "mariadbd exited ({status}); the end of {}:\n{}",
                layout.error_log().display(),
                tail(&layout.error_log())
            );
        }
        if Instant::now() >= deadline {
            let _ = server.kill();
            bail!(
                "mariadbd did not answer within {READY_TIMEOUT:?}; see {}",
                layout.error_log().display()
            );
        }
        std::thread::sleep(Duration::from_millis(100)); // poll interval
    }
    let account = format!("{}@'%'", args.user);
    let sql = format!(
        "CREATE DATABASE sbtest; CREATE USER {account} IDENTIFIED BY '{}'; \
         GRANT ALL ON *.* TO {account}",
        args.password.replace('\'', "''")
    );
    let out = Command::new("mariadb")
        .args(root_cli_args(port))
        .args(["-e", &sql])
        .output()
        .context("cannot run the mariadb CLI")?;
    if !out.status.success() {
        let _ = server.kill();
        bail!(
            "cannot create the benchmark's account: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    println!("{port} {}", server.id());
    Ok(())
}

fn install(layout: &Layout) -> Result<()> {
    let log = layout.root().join("install.log");
    let out = layout
        .install_db(&[LOG_FILE_SIZE])
        .and_then(|mut cmd| cmd.output())
        .context("cannot run mariadb-install-db (is mariadb-server installed?)")?;
    let _ = std::fs::write(&log, [out.stdout.as_slice(), &out.stderr].concat());
    if !out.status.success() {
        bail!(
            "mariadb-install-db failed ({}); see {}",
            out.status,
            log.display()
        );
    }
    Ok(())
}

fn answers(port: u16) -> bool {
    Command::new(ADMIN)
        .args(ping_args(port))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The last 20 lines of a log, for an error message.
fn tail(path: &std::path::Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(20)..].join("\n")
}
