//! Driving the real sysbench 1.0.20 from psprobe (demo, experiment).

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::{bail, Context};

use psprobe_harness::sysbench::{parse_summary, Connection};

use super::throwaway::{DATABASE, PASSWORD, USER};

pub(crate) struct Tables {
    pub count: u32,
    pub size: u32,
}

fn base(addr: &str, workload: &str, tables: &Tables) -> anyhow::Result<Command> {
    let (host, port) = addr
        .rsplit_once(':')
        .and_then(|(h, p)| Some((h, p.parse().ok()?)))
        .with_context(|| format!("{addr} is not HOST:PORT"))?;
    let connection = Connection {
        host,
        port,
        user: USER,
        password: PASSWORD,
        database: DATABASE,
    };
    let mut cmd = Command::new("sysbench");
    cmd.arg(workload)
        .args(connection.args())
        .arg(format!("--tables={}", tables.count))
        .arg(format!("--table-size={}", tables.size));
    Ok(cmd)
}

pub(crate) fn prepare(addr: &str, tables: &Tables) -> anyhow::Result<()> {
    let out = base(addr, "oltp_read_write", tables)?
        .arg("prepare")
        .output()
        .context("cannot run sysbench (install it: scripts/setup.sh)")?;
    if !out.status.success() {
        bail!(
            "sysbench prepare failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

/// Runs sysbench for `seconds` against `addr` and returns its queries per second (the
/// "queries: N (Q per sec.)" line of its summary).
pub(crate) fn run_for(
    addr: &str,
    workload: &str,
    tables: &Tables,
    threads: u32,
    seconds: u64,
) -> anyhow::Result<f64> {
    let out = base(addr, workload, tables)?
        .arg(format!("--threads={threads}"))
        .arg(format!("--time={seconds}"))
        .arg("run")
        .output()
        .context("cannot run sysbench (install it: scripts/setup.sh)")?;
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        bail!(
            "sysbench {workload} failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    parse_summary(&text)
        .qps
        .with_context(|| format!("no queries-per-second line in sysbench's output:\n{text}"))
}

/// sysbench in the background for as long as the schedule runs. A server restart (pfsoff)
/// drops every connection and sysbench 1.0.20 then stops with a fatal error (with
/// `--mysql-ignore-errors=all` it keeps its dead prepared statements and stalls instead), so
/// the load is a loop that starts sysbench again whenever it exits, until stopped.
pub(crate) struct Load {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    child: std::sync::Arc<std::sync::Mutex<Option<Child>>>,
    thread: Option<std::thread::JoinHandle<u32>>,
}

impl Load {
    pub(crate) fn start_workload(
        addr: &str,
        workload: &str,
        tables: &Tables,
        threads: u32,
        time: Duration,
        output: &Path,
    ) -> anyhow::Result<Self> {
        Self::start_pinned(addr, workload, tables, threads, time, output, None)
    }

    /// As [`Load::start_workload`], sysbench on `cpus` only (`taskset -c`) when given.
    pub(crate) fn start_pinned(
        addr: &str,
        workload: &str,
        tables: &Tables,
        threads: u32,
        time: Duration,
        output: &Path,
        cpus: Option<String>,
    ) -> anyhow::Result<Self> {
        use std::sync::atomic::{AtomicBool, Ordering};
        use std::sync::{Arc, Mutex};
        let file = std::fs::File::create(output)
            .with_context(|| format!("cannot create {}", output.display()))?;
        let mut template = base(addr, workload, tables)?;
        template
            .arg(format!("--threads={threads}"))
            .args(["--report-interval=1", "--percentile=99"]);
        // Probe once that sysbench runs at all, so a missing binary is an error here.
        Command::new("sysbench")
            .arg("--version")
            .output()
            .context("cannot run sysbench (install it: scripts/setup.sh)")?;
        let stop = Arc::new(AtomicBool::new(false));
        let child: Arc<Mutex<Option<Child>>> = Arc::new(Mutex::new(None));
        let deadline = std::time::Instant::now() + time;
        let args: Vec<std::ffi::OsString> = template.get_args().map(|a| a.to_os_string()).collect();
        let (stop_flag, slot) = (Arc::clone(&stop), Arc::clone(&child));
        let thread = std::thread::spawn(move || {
            let mut runs = 0;
            while !stop_flag.load(Ordering::SeqCst) {
                let left = deadline.saturating_duration_since(std::time::Instant::now());
                if left.is_zero() {
                    break;
                }
                let (Ok(out), Ok(err)) = (file.try_clone(), file.try_clone()) else {
                    break;
                };
                let mut command = match &cpus {
                    Some(cpus) => {
                        let mut c = Command::new("taskset");
                        c.args(["-c", cpus, "sysbench"]);
                        c
                    }
                    None => Command::new("sysbench"),
                };
                let spawned = command
                    .args(&args)
                    .arg(format!("--time={}", left.as_secs().max(1)))
                    .arg("run")
                    .stdin(Stdio::null())
                    .stdout(out)
                    .stderr(err)
                    .spawn();
                let Ok(c) = spawned else { break };
                runs += 1;
                if !hand_over(&slot, &stop_flag, c) {
                    break;
                }
                loop {
                    let mut guard = slot.lock().unwrap_or_else(|e| e.into_inner());
                    match guard.as_mut().map(|c| c.try_wait()) {
                        Some(Ok(None)) => {}
                        _ => break,
                    }
                    drop(guard);
                    std::thread::sleep(Duration::from_millis(100));
                }
                // Give a restarting server a moment before reconnecting.
                // Again at once (a server restart ends sysbench: it cannot reconnect): the
                // restart profile measures how soon the load is back.
                std::thread::sleep(Duration::from_millis(100));
            }
            runs
        });
        Ok(Load {
            stop,
            child,
            thread: Some(thread),
        })
    }

    /// Ends the load (the schedule it was measured under is over).
    pub(crate) fn stop(mut self) {
        self.halt();
    }

    fn halt(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        if let Some(c) = self
            .child
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_mut()
        {
            let _ = c.kill();
            let _ = c.wait();
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Puts a freshly spawned sysbench where `halt` finds it, unless the load was stopped while it
/// was being spawned: then it is killed here (false). Checked under the lock that `halt` takes
/// after setting `stop`, so a respawn racing the end of the schedule (a restart that ended the
/// previous sysbench just before) cannot outlive the load: seen once, a whole study waited
/// out such a sysbench's 10 minutes.
fn hand_over(
    slot: &std::sync::Mutex<Option<Child>>,
    stop: &std::sync::atomic::AtomicBool,
    mut child: Child,
) -> bool {
    let mut held = slot.lock().unwrap_or_else(|e| e.into_inner());
    if stop.load(std::sync::atomic::Ordering::SeqCst) {
        drop(held);
        let _ = child.kill();
        let _ = child.wait();
        return false;
    }
    *held = Some(child);
    true
}

impl Drop for Load {
    fn drop(&mut self) {
        self.halt();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Mutex;

    use super::hand_over;

    fn long_child() -> std::process::Child {
        std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .expect("spawn sleep")
    }

    #[test]
    fn a_respawn_after_the_stop_is_killed_not_kept() {
        let slot = Mutex::new(None);
        let stop = AtomicBool::new(true);
        let child = long_child();
        let pid = child.id();
        assert!(!hand_over(&slot, &stop, child));
        assert!(slot.lock().unwrap().is_none());
        // Killed and reaped: no such process any more.
        assert!(!std::path::Path::new(&format!("/proc/{pid}")).exists());

        stop.store(false, Ordering::SeqCst);
        assert!(hand_over(&slot, &stop, long_child()));
        let mut kept = slot.lock().unwrap().take().expect("kept for halt");
        assert!(kept.try_wait().unwrap().is_none(), "still running");
        kept.kill().unwrap();
        kept.wait().unwrap();
    }
}
