//! Running short-lived command-line clients (the real `mariadb` CLI) with a
//! hard timeout, so a hung client fails the test instead of hanging CI.

use std::io::{Read, Write};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

pub const USER: &str = "psprobe";
pub const PASSWORD: &str = "psprobe-pass";
pub const DATABASE: &str = "psprobe_test";

/// Generous: bulk loads through the proxy can legitimately take a while.
pub const CLI_TIMEOUT: Duration = Duration::from_secs(120);

/// Run the psprobe binary under test to completion (for subcommands that end by themselves:
/// `report`, `demo`, `experiment`).
pub fn psprobe(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_psprobe"))
        .args(args)
        .output()
        .expect("run psprobe")
}

/// Split "host:port" (IPv4 or hostname) for the CLI's -h / -P flags.
pub fn split_addr(addr: &str) -> (&str, &str) {
    addr.rsplit_once(':')
        .unwrap_or_else(|| panic!("address {addr:?} is not HOST:PORT"))
}

/// Run `cmd` to completion, feeding `stdin`, capturing stdout/stderr.
/// Kills the process and panics if it runs longer than `timeout`.
pub fn run_with_timeout(mut cmd: Command, stdin: Option<&[u8]>, timeout: Duration) -> Output {
    let what = format!("{cmd:?}");
    cmd.stdin(if stdin.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap_or_else(|e| panic!("spawn {what}: {e}"));
    // Readers and writer run on threads so that no pipe can fill up and
    // deadlock the child while we wait for it.
    let feeder = stdin.map(|data| {
        let mut pipe = child.stdin.take().expect("stdin was piped");
        let data = data.to_vec();
        // A write error just means the client exited early; its status says why.
        std::thread::spawn(move || drop(pipe.write_all(&data)))
    });
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = r.read_to_end(&mut buf);
            buf
        })
    };
    let out = drain(Box::new(child.stdout.take().expect("stdout was piped")));
    let err = drain(Box::new(child.stderr.take().expect("stderr was piped")));

    let deadline = Instant::now() + timeout;
    let status = loop {
        if let Some(status) = child.try_wait().expect("try_wait on client") {
            break status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            let stderr = err.join().unwrap_or_default();
            panic!(
                "{what} did not finish within {timeout:?}; stderr:\n{}",
                String::from_utf8_lossy(&stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(10)); // poll interval
    };
    if let Some(f) = feeder {
        let _ = f.join();
    }
    Output {
        status,
        stdout: out.join().expect("stdout reader thread panicked"),
        stderr: err.join().expect("stderr reader thread panicked"),
    }
}

/// `mariadb --no-defaults -h HOST -P PORT -upsprobe -p... psprobe_test ARGS`.
/// Returns the raw output; callers decide whether failure is expected.
pub fn mariadb(addr: &str, args: &[&str], stdin: Option<&[u8]>) -> Output {
    let (host, port) = split_addr(addr);
    let mut cmd = Command::new("mariadb");
    // --protocol=TCP: never fall back to a unix socket, even for "localhost".
    cmd.arg("--no-defaults")
        .arg("--protocol=TCP")
        .args(["-h", host, "-P", port])
        .arg(format!("-u{USER}"))
        .arg(format!("-p{PASSWORD}"))
        .arg(DATABASE)
        .args(args);
    run_with_timeout(cmd, stdin, CLI_TIMEOUT)
}

/// Like [`mariadb`] but panics (with stderr) unless the client succeeded;
/// returns stdout.
pub fn mariadb_ok(addr: &str, args: &[&str], stdin: Option<&[u8]>) -> String {
    let out = mariadb(addr, args, stdin);
    assert!(
        out.status.success(),
        "mariadb {args:?} against {addr} failed ({}):\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("mariadb output is not UTF-8")
}
