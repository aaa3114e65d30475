//! Running the real sysbench 1.0.20 (`oltp_*` Lua workloads) and reading its summary.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use super::cli::{run_with_timeout, split_addr, DATABASE, PASSWORD, USER};
use psprobe_harness::sysbench::Connection;

const SYSBENCH_TIMEOUT: Duration = Duration::from_secs(600);

pub use psprobe_harness::sysbench::{parse_summary, Summary};

/// Runs `sysbench WORKLOAD COMMAND` against `addr` with the harness user, plus `extra` options.
pub fn run(addr: &str, workload: &str, command: &str, extra: &[&str]) -> Summary {
    run_in(Path::new("."), addr, workload, command, extra)
}

/// Like [`run`], in directory `dir`. sysbench 1.0.20's `--mysql-ssl=on` reads
/// `client-key.pem`, `client-cert.pem` and `cacert.pem` (the CA it verifies the server with)
/// from its working directory.
pub fn run_in(dir: &Path, addr: &str, workload: &str, command: &str, extra: &[&str]) -> Summary {
    let mut cmd = Command::new("sysbench");
    cmd.current_dir(dir);
    run_cmd(cmd, addr, workload, command, extra)
}

/// Like [`run`], with `cmd` (a `sysbench` command prepared by the caller, e.g. to run on
/// another host with `Netns::command`).
/// sysbench's connection options for `addr` (HOST:PORT) with the tests' account.
fn connection_to(addr: &str) -> Connection<'_> {
    let (host, port) = split_addr(addr);
    Connection {
        host,
        port: port
            .parse()
            .unwrap_or_else(|_| panic!("port of {addr:?} is not a number")),
        user: USER,
        password: PASSWORD,
        database: DATABASE,
    }
}

pub fn run_cmd(
    mut cmd: Command,
    addr: &str,
    workload: &str,
    command: &str,
    extra: &[&str],
) -> Summary {
    let connection = connection_to(addr);
    cmd.arg(workload)
        .args(connection.args())
        .args(extra)
        .arg(command);
    let out = run_with_timeout(cmd, None, SYSBENCH_TIMEOUT);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "sysbench {workload} {command} failed: {}\n{text}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    parse_summary(&text)
}

/// oltp_read_write through each address in turn (60, 120, 180, ... transactions), one client
/// thread, text protocol: the load a server's digest table counts exactly (under concurrency
/// performance_schema itself loses an occasional count; MariaDB records no digest for
/// COM_STMT_EXECUTE). Returns the statements sysbench counted.
pub fn read_write_in_turn(addrs: &[&str], tables: &[&str]) -> u64 {
    let mut sent = 0;
    for (i, addr) in addrs.iter().enumerate() {
        let events = format!("--events={}", 60 * (i + 1));
        let mut opts = vec!["--threads=1", events.as_str(), "--time=0"];
        opts.push("--db-ps-mode=disable");
        opts.extend(tables);
        let summary = run(addr, "oltp_read_write", "run", &opts);
        assert_eq!(summary.ignored_errors, 0, "{}", summary.text);
        sent += summary.total;
    }
    sent
}

/// sysbench `WORKLOAD run` through `addr` as a child process, for as long as the caller needs
/// load: give it a `--time` (in `extra`) longer than that, check [`Background::assert_running`]
/// when the load must still be there, then stop it (or let it drop). sysbench ends at a
/// statement's first error other than the ones it ignores (deadlocks and lock waits, counted
/// in its summary), so "still running" also means no such error so far. Killed when stopped or
/// dropped, and by the kernel if the test process dies.
pub struct Background {
    child: std::process::Child,
    /// sysbench's stdout and stderr, shown if it ended too soon.
    output: tempfile::NamedTempFile,
}

impl Background {
    pub fn start(addr: &str, workload: &str, extra: &[&str]) -> Background {
        let connection = connection_to(addr);
        let output = tempfile::NamedTempFile::new().expect("a file for sysbench's output");
        let file = |f: &std::fs::File| f.try_clone().expect("sysbench's output file");
        let mut cmd = Command::new("sysbench");
        cmd.arg(workload)
            .args(connection.args())
            .args(extra)
            .arg("run")
            .stdin(std::process::Stdio::null())
            .stdout(file(output.as_file()))
            .stderr(file(output.as_file()));
        let child = psprobe_harness::child::spawn_tied(cmd).expect("start sysbench");
        Background { child, output }
    }

    /// Whether sysbench still runs (it has neither failed nor used up its `--time`).
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Panics, with sysbench's output, if it is no longer running: the load did not last
    /// until `until`.
    pub fn assert_running(&mut self, until: &str) {
        if let Ok(Some(status)) = self.child.try_wait() {
            let text = std::fs::read_to_string(self.output.path()).unwrap_or_default();
            panic!("sysbench ended ({status}) before {until}:\n{text}");
        }
    }

    /// Stops the load: kills sysbench and reaps it (as dropping it does).
    pub fn stop(self) {
        drop(self);
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// sysbench `WORKLOAD run` through `addr` again and again until stopped: sysbench 1.0.20
/// cannot reconnect (it ends, or crashes with `--mysql-ignore-errors`, akopytov/sysbench#527),
/// so a server restart ends each run and the next starts at once, as psprobe's demo does.
pub struct Restarting {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<u32>>,
}

impl Restarting {
    pub fn start(addr: &str, workload: &str, extra: &[&str]) -> Restarting {
        use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let halt = std::sync::Arc::clone(&stop);
        let (host, port) = split_addr(addr);
        let args: Vec<String> = Connection {
            host,
            port: port.parse().expect("a port"),
            user: USER,
            password: PASSWORD,
            database: DATABASE,
        }
        .args()
        .into_iter()
        .chain(extra.iter().map(|s| s.to_string()))
        .collect();
        let workload = workload.to_string();
        let thread = std::thread::spawn(move || {
            let mut runs = 0;
            while !halt.load(Relaxed) {
                runs += 1;
                let mut child = match Command::new("sysbench")
                    .arg(&workload)
                    .args(&args)
                    .args(["--time=3600", "run"])
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::null())
                    .spawn()
                {
                    Ok(c) => c,
                    Err(_) => break,
                };
                loop {
                    if halt.load(Relaxed) {
                        let _ = child.kill();
                    }
                    match child.try_wait() {
                        Ok(None) => std::thread::sleep(Duration::from_millis(50)), // poll
                        _ => break,
                    }
                }
                let _ = child.wait();
            }
            runs
        });
        Restarting {
            stop,
            thread: Some(thread),
        }
    }

    /// Stops the load; how many sysbench runs it took.
    pub fn finish(mut self) -> u32 {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        self.thread.take().map_or(0, |t| t.join().unwrap_or(0))
    }
}

impl Drop for Restarting {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
