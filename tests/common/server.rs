//! A throwaway server per test, of any flavor (MariaDB 10.11 from the host, MariaDB 11.8 or
//! MySQL 9.7 from their Debian trees with chroot): own datadir (a copy of the flavor's
//! template), own TCP port, the test user `USER` with `PASSWORD` (MySQL: caching_sha2_password,
//! its default) and database `DATABASE`, TLS on, killed on drop (and by the kernel if the test
//! process dies, see `child.rs`).
//!
//! TLS: MariaDB gets a certificate made here (a CA and a leaf for localhost and 127.0.0.1);
//! MySQL uses the one `mysqld --initialize` generated in its datadir. Root SQL runs over TCP
//! with the flavor's own client, as root without a password.

use super::certs::Certs;
use super::cli::{self, run_with_timeout, split_addr, DATABASE, PASSWORD, USER};
use super::datadir::{copy_dir, inside, tempdir_in, template, tmp_of};
use super::netns::Netns;
use std::fs::{self, OpenOptions};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tempfile::TempDir;

use psprobe_harness::child::spawn_tied;
use psprobe_harness::mariadb::root_cli_args;
use psprobe_harness::server::{ping_args, Layout, ADMIN};

pub use psprobe_harness::flavor::Flavor;

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

pub struct Server {
    flavor: Flavor,
    child: Option<Child>,
    port: u16,
    opts: Options,
    /// The tree it runs in with chroot; None: the host's server.
    tree: Option<PathBuf>,
    /// The host (network namespace) it runs on; None: this one, on 127.0.0.1.
    netns: Option<Arc<Netns>>,
    /// MariaDB's certificate (MySQL's is in its datadir).
    certs: Option<Certs>,
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

fn project() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

impl Server {
    /// A server of `flavor` with TLS on.
    pub fn start(flavor: Flavor, opts: Options) -> Self {
        Self::start_with(flavor, None, opts, true)
    }

    /// A server on another host: it runs inside `netns`, listening on all of its addresses
    /// (its links to other hosts, and the management veth that [`Server::addr`] names). The
    /// root SQL of [`Server::sql`] runs inside the namespace, over loopback.
    pub fn start_in(flavor: Flavor, netns: Arc<Netns>, opts: Options) -> Self {
        Self::start_with(flavor, Some(netns), opts, true)
    }

    /// With `tls` false a MariaDB server offers no TLS (MySQL always does).
    pub fn start_with(flavor: Flavor, netns: Option<Arc<Netns>>, opts: Options, tls: bool) -> Self {
        // Canonical, so that paths below it read back the same way from the server.
        let tree = flavor
            .tree(project())
            .map(|t| fs::canonicalize(&t).unwrap_or(t));
        let template = template(flavor, tree.as_deref());
        let dir = tempdir_in(&tmp_of(tree.as_deref()), "server");
        let host = Layout::new(dir.path());
        copy_dir(&Layout::new(template.dir.path()).datadir(), &host.datadir());
        fs::create_dir_all(host.tmpdir()).expect("mkdir the server's tmp");
        let certs = (tls && !flavor.is_mysql()).then(|| {
            Certs::make(
                &dir.path().join("certs"),
                "test server CA",
                &["localhost", "127.0.0.1"],
            )
        });
        let mut db = Server {
            flavor,
            child: None,
            port: 0,
            opts,
            tree,
            netns,
            certs,
            dir,
        };
        for attempt in 1..=PORT_ATTEMPTS {
            db.port = free_port();
            match db.launch() {
                Ok(()) => break,
                Err(LaunchError::PortTaken(_)) if attempt < PORT_ATTEMPTS => continue,
                Err(LaunchError::PortTaken(log) | LaunchError::Failed(log)) => {
                    panic!("{} failed to start (attempt {attempt}):\n{log}", db.name())
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

    pub fn flavor(&self) -> Flavor {
        self.flavor
    }

    /// "MySQL 9.7 :PORT", for messages.
    pub fn name(&self) -> String {
        format!("{} :{}", self.flavor.name(), self.port)
    }

    /// The folder as the server sees it (inside its tree).
    fn seen(&self, path: &Path) -> PathBuf {
        match &self.tree {
            Some(tree) => inside(tree, path),
            None => path.to_path_buf(),
        }
    }

    /// Where its files are (host paths).
    fn layout(&self) -> Layout {
        Layout::new(self.dir.path())
    }

    /// `program` of the server's tree, run on the server's host.
    fn command(&self, program: &str) -> Command {
        let mut cmd = match &self.tree {
            Some(tree) => {
                let mut cmd = Command::new("chroot");
                cmd.arg(tree).arg(program);
                cmd
            }
            None => Command::new(program),
        };
        if let Some(ns) = &self.netns {
            ns.enter(&mut cmd);
        }
        cmd
    }

    /// A program of this host's (not the tree's), run on the server's host.
    fn host_command(&self, program: &str) -> Command {
        match &self.netns {
            Some(ns) => ns.command(program),
            None => Command::new(program),
        }
    }

    /// Spawns the server on `self.port` and waits until it answers as *this* server. On
    /// failure the child is killed and the new log lines returned.
    fn launch(&mut self) -> Result<(), LaunchError> {
        let layout = self.layout();
        let seen = Layout::new(self.seen(self.dir.path()));
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
        let mut cmd = self.command(self.flavor.server_program());
        cmd.args(self.flavor.server_args(&seen, self.port, bind))
            .arg(format!("--performance-schema={ps}"))
            .args([
                "--local-infile=1",
                "--innodb-buffer-pool-size=64M",
                self.flavor.redo_log_option(),
            ]);
        if let Some(c) = &self.certs {
            let (ca, cert, key) = (self.seen(&c.ca), self.seen(&c.cert), self.seen(&c.key));
            cmd.arg(format!("--ssl-ca={}", ca.display()))
                .arg(format!("--ssl-cert={}", cert.display()))
                .arg(format!("--ssl-key={}", key.display()));
        }
        cmd.args(&self.opts.extra_args)
            .stdin(Stdio::null())
            .stdout(console.try_clone().expect("dup console.log"))
            .stderr(console);
        let what = self.name();
        self.child = Some(spawn_tied(cmd).unwrap_or_else(|e| panic!("spawn {what}: {e}")));

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
        let host_datadir = self.datadir();
        let want = self.seen(&fs::canonicalize(host_datadir).expect("canonicalize datadir"));
        loop {
            let child = self.child.as_mut().expect("child just spawned");
            if let Some(status) = child.try_wait().expect("try_wait on the server") {
                return Err(format!("{} exited early: {status}", self.flavor.name()));
            }
            if self.ping() {
                // Another test's server may own this port (lost race); only
                // our own datadir counts as ready.
                if let Ok(dir) = self.try_sql("SELECT @@datadir") {
                    if Path::new(dir.trim()) == want {
                        return Ok(());
                    }
                }
            }
            if Instant::now() >= deadline {
                return Err(format!(
                    "{} not ready after {READY_TIMEOUT:?}",
                    self.flavor.name()
                ));
            }
            std::thread::sleep(POLL); // poll interval, not synchronization
        }
    }

    fn ping(&self) -> bool {
        // The host's mariadb-admin pings every flavor (MySQL's root has no password).
        let mut cmd = self.host_command(ADMIN);
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

    /// The data directory (a host path).
    pub fn datadir(&self) -> PathBuf {
        self.layout().datadir()
    }

    /// The server's pid file (a host path).
    pub fn pid_file(&self) -> PathBuf {
        self.layout().pid_file()
    }

    /// The tree the server runs in with chroot (None: the host's server).
    pub fn tree(&self) -> Option<&Path> {
        self.tree.as_deref()
    }

    /// The CA that signed the server's certificate (a host path).
    pub fn ca(&self) -> PathBuf {
        match &self.certs {
            Some(c) => c.ca.clone(),
            None => self.datadir().join("ca.pem"),
        }
    }

    pub fn dsn(&self) -> String {
        self.dsn_via(&self.addr())
    }

    /// Same credentials and database, but against `addr` (e.g. the proxy).
    pub fn dsn_via(&self, addr: &str) -> String {
        format!("mysql://{USER}:{PASSWORD}@{addr}/{DATABASE}")
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("the server is not running").id()
    }

    /// `SELECT VERSION()`.
    pub fn version(&self) -> String {
        self.sql("SELECT VERSION()").trim().to_string()
    }

    /// Run SQL as root over TCP (MariaDB: the host's client; MySQL: its own, from its tree);
    /// Err carries the client's stderr.
    pub fn try_sql(&self, query: &str) -> Result<String, String> {
        let mut cmd = if self.flavor.is_mysql() {
            let mut cmd = self.command(self.flavor.client_program());
            // Its default TLS (PREFERRED): a server with require_secure_transport takes no
            // other connection, root's included.
            cmd.args(root_cli_args(self.port));
            cmd
        } else {
            let mut cmd = self.host_command("mariadb");
            cmd.args(root_cli_args(self.port));
            cmd
        };
        cmd.args(["-e", query]);
        let out = run_with_timeout(cmd, None, cli::CLI_TIMEOUT);
        if out.status.success() {
            Ok(String::from_utf8(out.stdout).expect("client output is not UTF-8"))
        } else {
            Err(String::from_utf8_lossy(&out.stderr).into_owned())
        }
    }

    /// Run SQL as root; returns stdout (tab-separated, no header).
    pub fn sql(&self, query: &str) -> String {
        self.try_sql(query)
            .unwrap_or_else(|e| panic!("SQL failed on {}: {query}\n{e}", self.name()))
    }

    /// Runs the flavor's own command-line client (from its tree) as the test user against
    /// `addr`, with `args` after the database.
    pub fn client(&self, addr: &str, args: &[&str]) -> Output {
        self.client_with_input(addr, args, None)
    }

    /// [`Server::client`], feeding `stdin`.
    pub fn client_with_input(&self, addr: &str, args: &[&str], stdin: Option<&[u8]>) -> Output {
        let mut cmd = self.client_command(addr);
        cmd.args(args);
        run_with_timeout(cmd, stdin, cli::CLI_TIMEOUT)
    }

    /// The flavor's own client as the test user against `addr`, up to the database: for a
    /// session a test keeps open (its stdin piped by the caller).
    pub fn client_command(&self, addr: &str) -> Command {
        let (host, port) = split_addr(addr);
        let mut cmd = self.command(self.flavor.client_program());
        cmd.args(["--no-defaults", "--protocol=TCP", "-h", host, "-P", port])
            .arg(format!("-u{USER}"))
            .arg(format!("-p{PASSWORD}"))
            .arg(DATABASE);
        cmd
    }

    /// A host file as a path the server's tree sees (copied into this server's folder).
    pub fn copy_in(&self, file: &Path, name: &str) -> String {
        let to = self.dir.path().join(name);
        fs::copy(file, &to).unwrap_or_else(|e| panic!("copy {}: {e}", file.display()));
        self.seen(&to).display().to_string()
    }

    /// The words that start the server's program on its host as `launch` does (`chroot TREE`
    /// for a chroot flavor; nothing for the host's), for scripts that start it again.
    pub fn program_prefix(&self) -> Vec<String> {
        match &self.tree {
            Some(tree) => vec!["chroot".into(), tree.display().to_string()],
            None => Vec::new(),
        }
    }

    /// SIGKILL the server and reap it. Idempotent.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Sends `sig` to the server (SIGSTOP / SIGCONT to freeze and thaw it).
    pub fn signal(&self, sig: libc::c_int) {
        // SAFETY: plain syscall on our own (not yet reaped) child's pid.
        let rc = unsafe { libc::kill(self.pid() as libc::pid_t, sig) };
        assert_eq!(
            rc,
            0,
            "kill({}, {sig}): {}",
            self.name(),
            std::io::Error::last_os_error()
        );
    }

    /// A clean restart, as `systemctl restart` does it: SIGTERM, wait for the server to
    /// shut down (it ends its client sessions), start it again on the same port and datadir.
    pub fn restart_clean(&mut self) {
        self.signal(libc::SIGTERM);
        let deadline = Instant::now() + READY_TIMEOUT;
        let name = self.name();
        let child = self.child.as_mut().expect("the server is not running");
        while child.try_wait().expect("try_wait on the server").is_none() {
            assert!(
                Instant::now() < deadline,
                "{name} ignored SIGTERM for {READY_TIMEOUT:?}"
            );
            std::thread::sleep(POLL); // poll interval
        }
        self.child = None;
        if let Err(LaunchError::PortTaken(log) | LaunchError::Failed(log)) = self.launch() {
            panic!("{name} failed to restart:\n{log}");
        }
    }

    /// A clean restart (as [`Server::restart_clean`]) with other options: a DBA's restart
    /// with `extra` options and performance_schema `ps`.
    ///
    /// The server has run at least 3 s first: psprobe tells a restart from a reconnect by the
    /// server's start time, which `Uptime` gives in whole seconds (2 s of slack), and a test's
    /// server can otherwise be restarted within a second of its start, which no DBA does.
    pub fn restart_clean_with(&mut self, ps: bool, extra: &[&str]) {
        let deadline = Instant::now() + READY_TIMEOUT;
        while self
            .sql("SHOW GLOBAL STATUS LIKE 'Uptime'")
            .split_whitespace()
            .nth(1)
            .and_then(|v| v.parse::<u64>().ok())
            .is_none_or(|up| up < 3)
        {
            assert!(Instant::now() < deadline, "Uptime never reached 3 s");
            std::thread::sleep(POLL); // poll interval
        }
        self.opts.performance_schema = ps;
        self.opts.extra_args = extra.iter().map(|s| s.to_string()).collect();
        self.restart_clean();
    }

    /// Start again on the same port and datadir (after `kill`).
    pub fn restart(&mut self) {
        self.kill();
        if let Err(LaunchError::PortTaken(log) | LaunchError::Failed(log)) = self.launch() {
            panic!("{} failed to restart:\n{log}", self.name());
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let log = fs::read_to_string(self.layout().error_log()).unwrap_or_default();
            eprintln!(
                "--- {} error.log ---\n{}",
                self.name(),
                log_excerpt(&log, 20)
            );
        }
        self.kill();
        // `dir` (TempDir) is dropped after this, removing the datadir.
    }
}

/// One server per flavor, started on first use, for the tests of one suite to share (a static
/// of the suite's module).
pub struct PerFlavor([std::sync::OnceLock<Server>; 3]);

impl PerFlavor {
    pub const fn new() -> Self {
        use std::sync::OnceLock;
        PerFlavor([OnceLock::new(), OnceLock::new(), OnceLock::new()])
    }

    /// The suite's server of `flavor`, started by `start` the first time.
    pub fn get(&'static self, flavor: Flavor, start: impl FnOnce() -> Server) -> &'static Server {
        let i = Flavor::ALL
            .iter()
            .position(|f| *f == flavor)
            .expect("a flavor");
        self.0[i].get_or_init(start)
    }
}

impl Default for PerFlavor {
    fn default() -> Self {
        Self::new()
    }
}

/// Instantiates test bodies that take a [`Flavor`] once per flavor, as `#[test]`s in modules
/// `mariadb_10_11`, `mariadb_11_8` and `mysql_9_7` (so `cargo test mysql_9_7` runs a suite's
/// MySQL half): `per_flavor!(simple_query, blob_of_40_mib);` in the suite's module.
#[macro_export]
macro_rules! per_flavor {
    ($($test:ident),+ $(,)?) => {
        $crate::per_flavor!(@in mariadb_10_11, MariaDb1011, $($test),+);
        $crate::per_flavor!(@in mariadb_11_8, MariaDb118, $($test),+);
        $crate::per_flavor!(@in mysql_9_7, MySql97, $($test),+);
    };
    (@in $module:ident, $flavor:ident, $($test:ident),+) => {
        mod $module {
            $(
                #[test]
                fn $test() {
                    super::$test($crate::common::server::Flavor::$flavor);
                }
            )+
        }
    };
}
