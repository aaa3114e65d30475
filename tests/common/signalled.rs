//! A psprobe command that starts throwaway servers (`demo`, `duet`), run to be stopped by a
//! signal: both pipes drained all along (a closed or full pipe would stop psprobe, not the
//! signal), its stdout lines seen as they come, and the servers it named checked gone.

use std::io::BufRead;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::Receiver;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

pub struct Signalled {
    child: StoppedOnDrop,
    lines: Receiver<String>,
    out: JoinHandle<()>,
    err: JoinHandle<String>,
    /// The stdout lines seen so far.
    pub seen: Vec<String>,
}

impl Signalled {
    /// `psprobe ARGS`, its pipes drained.
    pub fn start(args: &[&std::ffi::OsStr]) -> Signalled {
        let mut child = Command::new(env!("CARGO_BIN_EXE_psprobe"))
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start psprobe");
        let stdout = child.stdout.take().expect("stdout");
        let (lines_tx, lines) = std::sync::mpsc::channel();
        let out = std::thread::spawn(move || {
            for line in std::io::BufReader::new(stdout)
                .lines()
                .map_while(Result::ok)
            {
                let _ = lines_tx.send(line);
            }
        });
        let stderr = child.stderr.take().expect("stderr");
        let err = std::thread::spawn(move || {
            let mut err = String::new();
            let _ = std::io::Read::read_to_string(&mut { stderr }, &mut err);
            err
        });
        Signalled {
            child: StoppedOnDrop(child),
            lines,
            out,
            err,
            seen: Vec::new(),
        }
    }

    /// Waits (at most `secs`) until a stdout line contains `what`.
    pub fn wait_for_line(&mut self, what: &str, secs: u64) {
        while !self.seen.iter().any(|l| l.contains(what)) {
            let line = self
                .lines
                .recv_timeout(Duration::from_secs(secs))
                .unwrap_or_else(|e| panic!("no line with {what:?} ({e}): {:?}", self.seen));
            self.seen.push(line);
        }
    }

    /// SIGTERM, then waits (at most 60 s) for the exit: its status and stderr.
    pub fn terminate(mut self) -> (ExitStatus, String, Vec<String>) {
        // SAFETY: a plain kill(2) of our own child.
        unsafe { libc::kill(self.child.0.id() as i32, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(60);
        let status = loop {
            if let Some(status) = self.child.0.try_wait().expect("wait") {
                break status;
            }
            assert!(
                Instant::now() < deadline,
                "psprobe did not end within 60 s of SIGTERM"
            );
            std::thread::sleep(Duration::from_millis(100)); // poll interval
        };
        let err = self.err.join().expect("stderr read");
        self.out.join().expect("stdout read");
        self.seen.extend(self.lines.try_iter());
        (status, err, self.seen)
    }
}

/// The psprobe process, stopped if a test fails before it signals it: SIGTERM (psprobe then
/// stops the servers it started), SIGKILL if it is still there a minute later.
struct StoppedOnDrop(Child);

impl Drop for StoppedOnDrop {
    fn drop(&mut self) {
        if !matches!(self.0.try_wait(), Ok(None)) {
            return;
        }
        // SAFETY: a plain kill(2) of our own child, still running.
        unsafe { libc::kill(self.0.id() as i32, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(60);
        while matches!(self.0.try_wait(), Ok(None)) {
            if Instant::now() > deadline {
                let _ = self.0.kill();
                let _ = self.0.wait();
                return;
            }
            std::thread::sleep(Duration::from_millis(100)); // poll interval
        }
    }
}

/// The throwaway servers the lines name ("... on ADDR (data in DIR)") are gone, and their
/// folders with them; how many were named.
pub fn assert_servers_gone<'a>(lines: impl IntoIterator<Item = &'a str>) -> usize {
    let mut named = 0;
    for line in lines.into_iter().filter(|l| l.contains("(data in ")) {
        named += 1;
        let data = line
            .split("(data in ")
            .nth(1)
            .unwrap()
            .trim_end_matches(')');
        assert!(!Path::new(data).exists(), "{data} left");
        let port = line
            .split(" on ")
            .nth(1)
            .and_then(|s| s.split_whitespace().next())
            .and_then(|a| a.rsplit(':').next())
            .unwrap_or_else(|| panic!("no port in {line}"));
        assert!(
            !super::procfs::any_process_with(&format!("--port={port}\u{0}")),
            "a server on {port} was left"
        );
    }
    named
}

/// The one error line a stopped command printed says it was interrupted.
pub fn assert_interrupted(status: ExitStatus, stderr: &str) {
    assert!(!status.success());
    let said: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("psprobe: error"))
        .collect();
    assert_eq!(said.len(), 1, "{stderr}");
    assert!(said[0].contains("interrupted"), "{stderr}");
}
