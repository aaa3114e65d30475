//! A throwaway MariaDB server per test: own datadir, own TCP port, killed on
//! drop (and by the kernel if the test process dies, see `child.rs`).

use super::cli::{self, run_with_timeout, DATABASE, PASSWORD, USER};
use super::datadir::{copy_dir, tempdir, template_datadir, LOG_FILE_SIZE};
use super::netns::Netns;
use std::fs::{self, OpenOptions};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tempfile::TempDir;

use psprobe_harness::child::spawn_tied;
use psprobe_harness::mariadb::{root_cli_args, MARIADBD};
use psprobe_harness::server::{ping_args, Layout, ADMIN};
const READY_TIMEOUT: Duration = Duration::from_secs(60);
const POLL: Duration = Duration::from_millis(50);
const PORT_ATTEMPTS: usize = 3;

pub struct Options {
    pub performance_schema: bool,
    pub extra_args: Vec<String>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            performance_schema: true,
            extra_args: Vec::new(),
        }
    }
}

pub struct MariaDb {
    child: Option<Child>,
    port: u16,
    opts: Options,
    /// The host (network namespace) it runs on; None: this one, on 127.0.0.1.
    netns: Option<Arc<Netns>>,
    /// Declared last: removed only after `Drop::drop` has killed the server.
    dir: TempDir,
}

enum LaunchError {
    PortTaken(String),
    Failed(String),
}

/// A free loopback port (racy by nature: starting a server retries with another).
fn free_port() -> u16 {
    psprobe_harness::ports::free_port().expect("a free port on 127.0.0.1")
}

fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// What of a server's error log a failing test shows: from the crash report when the server
/// crashed (its signal, query and backtrace come before the long tail of settings), else the
/// last `lines`.
fn log_excerpt(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    match all.iter().position(|l| l.contains("got signal")) {
        Some(crash) => all[crash..all.len().min(crash + 60)].join("\n"),
        None => tail(text, lines),
    }
}

impl MariaDb {
    pub fn start_default() -> Self {
        Self::start(Options::default())
    }

    pub fn start(opts: Options) -> Self {
        Self::start_on(None, opts)
    }

    /// A server on another host: mariadbd runs inside `netns`, listening on all of its
    /// addresses (its links to other hosts, and the management veth that [`MariaDb::addr`]
    /// names). The root SQL of [`MariaDb::sql`] runs inside the namespace, over loopback.
    pub fn start_in(netns: Arc<Netns>, opts: Options) -> Self {
        Self::start_on(Some(netns), opts)
    }

    fn start_on(netns: Option<Arc<Netns>>, opts: Options) -> Self {
        let dir = tempdir("server");
        copy_dir(&template_datadir(), &Layout::new(dir.path()).datadir());
        let mut db = MariaDb {
            child: None,
            port: 0,
            opts,
            netns,
            dir,
        };
        for attempt in 1..=PORT_ATTEMPTS {
            db.port = free_port();
            match db.launch() {
                Ok(()) => break,
                Err(LaunchError::PortTaken(_)) if attempt < PORT_ATTEMPTS => continue,
                Err(LaunchError::PortTaken(log) | LaunchError::Failed(log)) => {
                    panic!("mariadbd failed to start (attempt {attempt}):\n{log}")
                }
            }
        }
        db.sql(&format!(
            "CREATE USER '{USER}'@'%' IDENTIFIED BY '{PASSWORD}'; \
             GRANT ALL PRIVILEGES ON *.* TO '{USER}'@'%' WITH GRANT OPTION; \
             CREATE DATABASE {DATABASE};"
        ));
        db
    }

    /// Spawn mariadbd on `self.port` and wait until it answers as *this*
    /// server. On failure the child is killed and the new log lines returned.
    fn launch(&mut self) -> Result<(), LaunchError> {
        let layout = self.layout();
        let ps = if self.opts.performance_schema {
            "ON"
        } else {
            "OFF"
        };
        let log_path = layout.error_log();
        let log_start = fs::metadata(&log_path)
            .map(|m| m.len() as usize)
            .unwrap_or(0);
        let console = OpenOptions::new()
            .create(true)
            .append(true)
            .open(layout.console_log())
            .expect("open console.log");
        let bind = if self.netns.is_some() {
            "0.0.0.0"
        } else {
            "127.0.0.1"
        };
        let mut cmd = self.command(MARIADBD);
        cmd.args(layout.mariadbd_args(self.port, bind))
            .arg(format!("--performance-schema={ps}"))
            .args([
                "--local-infile=1",
                "--innodb-buffer-pool-size=64M",
                LOG_FILE_SIZE,
            ])
            .args(&self.opts.extra_args)
            .stdin(Stdio::null())
            .stdout(console.try_clone().expect("dup console.log"))
            .stderr(console);
        self.child = Some(spawn_tied(cmd).expect("spawn /usr/sbin/mariadbd"));

        let result = self.wait_ready();
        if let Err(why) = result {
            self.kill();
            let log = fs::read_to_string(&log_path).unwrap_or_default();
            let new = tail(log.get(log_start..).unwrap_or(&log), 40);
            let console = fs::read_to_string(layout.console_log()).unwrap_or_default();
            let msg = format!(
                "{why}\n--- error.log ---\n{new}\n--- console ---\n{}",
                tail(&console, 20)
            );
            return Err(if new.contains("Address already in use") {
                LaunchError::PortTaken(msg)
            } else {
                LaunchError::Failed(msg)
            });
        }
        Ok(())
    }

    fn wait_ready(&mut self) -> Result<(), String> {
        let deadline = Instant::now() + READY_TIMEOUT;
        let want = fs::canonicalize(self.datadir()).expect("canonicalize datadir");
        loop {
            let child = self.child.as_mut().expect("child just spawned");
            if let Some(status) = child.try_wait().expect("try_wait on mariadbd") {
                return Err(format!("mariadbd exited early: {status}"));
            }
            if self.ping() {
                // Another test's server may own this port (lost race); only
                // our own datadir counts as ready.
                if let Ok(dir) = self.try_sql("SELECT @@datadir") {
                    if fs::canonicalize(dir.trim()).ok().as_ref() == Some(&want) {
                        return Ok(());
                    }
                }
            }
            if Instant::now() >= deadline {
                return Err(format!("mariadbd not ready after {READY_TIMEOUT:?}"));
            }
            std::thread::sleep(POLL); // poll interval, not synchronization
        }
    }

    /// Where its files are (below the tempdir).
    fn layout(&self) -> Layout {
        Layout::new(self.dir.path())
    }

    /// `program` run on the server's host.
    fn command(&self, program: &str) -> Command {
        match &self.netns {
            Some(ns) => ns.command(program),
            None => Command::new(program),
        }
    }

    fn ping(&self) -> bool {
        let mut cmd = self.command(ADMIN);
        cmd.args(ping_args(self.port));
        run_with_timeout(cmd, None, Duration::from_secs(10))
            .status
            .success()
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// Where the test process reaches the server (its management address on another host).
    pub fn addr(&self) -> String {
        match &self.netns {
            Some(ns) => format!("{}:{}", ns.mgmt_ip(), self.port),
            None => format!("127.0.0.1:{}", self.port),
        }
    }

    pub fn datadir(&self) -> PathBuf {
        self.layout().datadir()
    }

    pub fn dsn(&self) -> String {
        self.dsn_via(&self.addr())
    }

    /// Same credentials and database, but against `addr` (e.g. the proxy).
    pub fn dsn_via(&self, addr: &str) -> String {
        format!("mysql://{USER}:{PASSWORD}@{addr}/{DATABASE}")
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("mariadbd is not running").id()
    }

    /// Run SQL as root over TCP; Err carries the client's stderr.
    pub fn try_sql(&self, query: &str) -> Result<String, String> {
        let mut cmd = self.command("mariadb");
        cmd.args(root_cli_args(self.port)).args(["-e", query]);
        let out = run_with_timeout(cmd, None, cli::CLI_TIMEOUT);
        if out.status.success() {
            Ok(String::from_utf8(out.stdout).expect("mariadb output is not UTF-8"))
        } else {
            Err(String::from_utf8_lossy(&out.stderr).into_owned())
        }
    }

    /// Run SQL as root; returns stdout (tab-separated, no header).
    pub fn sql(&self, query: &str) -> String {
        self.try_sql(query)
            .unwrap_or_else(|e| panic!("SQL failed on port {}: {query}\n{e}", self.port))
    }

    /// SIGKILL the server and reap it. Idempotent.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Sends `sig` to mariadbd (SIGSTOP / SIGCONT to freeze and thaw it).
    pub fn signal(&self, sig: libc::c_int) {
        // SAFETY: plain syscall on our own (not yet reaped) child's pid.
        let rc = unsafe { libc::kill(self.pid() as libc::pid_t, sig) };
        assert_eq!(
            rc,
            0,
            "kill(mariadbd, {sig}): {}",
            std::io::Error::last_os_error()
        );
    }

    /// A clean restart, as `systemctl restart` does it: SIGTERM, wait for the server to
    /// shut down (it ends its client sessions), start it again on the same port and datadir.
    pub fn restart_clean(&mut self) {
        self.signal(libc::SIGTERM);
        let deadline = Instant::now() + READY_TIMEOUT;
        let child = self.child.as_mut().expect("mariadbd is not running");
        while child.try_wait().expect("try_wait on mariadbd").is_none() {
            assert!(
                Instant::now() < deadline,
                "mariadbd ignored SIGTERM for {READY_TIMEOUT:?}"
            );
            std::thread::sleep(POLL); // poll interval
        }
        self.child = None;
        if let Err(LaunchError::PortTaken(log) | LaunchError::Failed(log)) = self.launch() {
            panic!("mariadbd failed to restart on port {}:\n{log}", self.port);
        }
    }

    /// A clean restart (as [`MariaDb::restart_clean`]) with other options: a DBA's restart
    /// with `extra` options and performance_schema `ps`.
    pub fn restart_clean_with(&mut self, ps: bool, extra: &[&str]) {
        self.opts.performance_schema = ps;
        self.opts.extra_args = extra.iter().map(|s| s.to_string()).collect();
        self.restart_clean();
    }

    /// Start again on the same port and datadir (after `kill`).
    pub fn restart(&mut self) {
        self.kill();
        if let Err(LaunchError::PortTaken(log) | LaunchError::Failed(log)) = self.launch() {
            panic!("mariadbd failed to restart on port {}:\n{log}", self.port);
        }
    }
}

impl Drop for MariaDb {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let log = fs::read_to_string(self.layout().error_log()).unwrap_or_default();
            eprintln!(
                "--- mariadbd :{} error.log ---\n{}",
                self.port,
                log_excerpt(&log, 20)
            );
        }
        self.kill();
        // `dir` (TempDir) is dropped after this, removing the datadir.
    }
}
