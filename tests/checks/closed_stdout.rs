//! `psprobe report` and `psprobe digest` into a pipe whose reader has gone (`| head` closing
//! early): the process ends as `cat` does (SIGPIPE, nothing on stderr), never with a panic.

use std::io::Write;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Stdio};

/// Runs psprobe with `args` and `stdin`, its stdout a pipe closed before it writes; its exit
/// status and stderr.
fn into_closed_pipe(args: &[&str], stdin: &[u8]) -> (std::process::ExitStatus, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_psprobe"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run psprobe");
    drop(child.stdout.take());
    let mut input = child.stdin.take().expect("stdin");
    let _ = input.write_all(stdin);
    drop(input);
    let out = child.wait_with_output().expect("psprobe ends");
    (
        out.status,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn report_and_digest_end_quietly_when_their_reader_is_gone() {
    let log = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/phases-v1.jsonl");
    let queries = "SELECT 1\n".repeat(20_000);
    for (args, stdin) in [
        (vec!["report", log.to_str().unwrap()], &b""[..]),
        (vec!["digest"], queries.as_bytes()),
    ] {
        let (status, stderr) = into_closed_pipe(&args, stdin);
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert!(
            status.signal() == Some(libc::SIGPIPE) || status.success(),
            "{args:?}: {status:?}\n{stderr}"
        );
        assert!(stderr.trim().is_empty(), "{args:?}: {stderr}");
    }
}
