//! Driving the scheduled controller and `psprobe ps` against a test server: controller flags,
//! starting and stopping psprobe, the setup tables as text, waiting for a condition.

use super::cli::run_with_timeout;
use super::probe::Probe;
use super::server::Server;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

pub const DSN_ENV: &str = "PSPROBE_CONTROLLER_DSN";

/// Both setup tables, sorted, one row a line.
pub const SETUP_DUMP: &str =
    "SELECT NAME, ENABLED FROM performance_schema.setup_consumers ORDER BY NAME; \
     SELECT NAME, ENABLED, TIMED FROM performance_schema.setup_instruments ORDER BY NAME";

/// Polls `f` every 50 ms until it yields a value; panics after `secs` seconds.
#[track_caller]
pub fn poll<T>(what: &str, secs: u64, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "no {what} within {secs}s");
        std::thread::sleep(Duration::from_millis(50)); // poll interval
    }
}

/// The setup tables as the root client sees them.
pub fn setup_dump(db: &Server) -> String {
    db.sql(SETUP_DUMP)
}

/// `spec` (controller flags) plus the phase log and the state file in `dir`.
pub fn flags(spec: &str, dir: &Path) -> Vec<String> {
    let d = dir.display();
    let all = format!("{spec} --phase-log {d}/phases.jsonl --state-dir {d}");
    all.split_whitespace().map(String::from).collect()
}

/// The state file the controller (and `ps --state-dir dir`) uses for `db`.
pub fn state_file(dir: &Path, db: &Server) -> PathBuf {
    dir.join(format!("ps-snapshot-127.0.0.1-{}.json", db.port()))
}

/// `psprobe proxy` in front of `db` with the controller's DSN and `args`.
pub fn start_controller(db: &Server, args: &[String]) -> Probe {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    Probe::start_with_env(&db.addr(), &args, &[(DSN_ENV, &db.dsn())])
}

/// `psprobe proxy` with the controller, expected to refuse to start: its exit status and stderr.
pub fn refused_start(db: &Server, args: &[String]) -> String {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_psprobe"));
    cmd.env(DSN_ENV, db.dsn())
        .args("proxy --listen 127.0.0.1:0 --metrics 127.0.0.1:0 --upstream".split(' '))
        .arg(db.addr())
        .args(args);
    let out = run_with_timeout(cmd, None, Duration::from_secs(60));
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        !out.status.success() && out.stdout.is_empty(),
        "psprobe proxy {args:?} started: {:?}\n{err}",
        out.status
    );
    err
}

/// SIGTERM; psprobe must exit 0. Returns how long that took.
pub fn terminate(probe: &mut Probe) -> Duration {
    let t = Instant::now();
    probe.signal(libc::SIGTERM);
    let status = probe.wait_exit(Duration::from_secs(15));
    let ok = status.is_some_and(|s| s.success());
    assert!(ok, "after SIGTERM: {status:?}\n{}", probe.stderr_text());
    t.elapsed()
}

/// SIGKILL, and wait until the process is gone.
pub fn kill(probe: &mut Probe) {
    probe.signal(libc::SIGKILL);
    assert!(probe.wait_exit(Duration::from_secs(5)).is_some(), "SIGKILL");
}

/// `psprobe_controller_leader` of `p`.
pub fn leader(p: &Probe) -> f64 {
    p.scrape().get("psprobe_controller_leader", &[])
}

/// `psprobe ps ARGS` with `db`'s DSN in the environment (only there).
pub fn ps(db: &Server, args: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_psprobe"));
    cmd.arg("ps")
        .args(args)
        .env(DSN_ENV, db.dsn())
        .env_remove("RUST_LOG");
    run_with_timeout(cmd, None, Duration::from_secs(60))
}

/// Panics unless `now` equals `want` (two [`SETUP_DUMP`] outputs), naming `when` and the first
/// rows that differ as (expected, found).
#[track_caller]
pub fn assert_setup_eq(now: &str, want: &str, when: &str) {
    let diff: Vec<_> = want
        .lines()
        .zip(now.lines())
        .filter(|(a, b)| a != b)
        .take(5)
        .collect();
    assert!(
        now.trim_end() == want.trim_end(),
        "{when}: the setup tables are not as expected; (expected, found): {diff:?}"
    );
}
