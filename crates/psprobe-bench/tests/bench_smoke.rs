//! CI variant of the end-to-end benchmark (issue 6): `scripts/bench.sh --quick` (one round,
//! oltp_point_select at 1 and 16 threads, 3 s per run, against direct / HAProxy / psprobe)
//! must run to the end and print its tables, with the bare io_uring relay (`--bare-relay`) as a
//! fourth target where the kernel allows io_uring. Speed is never asserted: CI machines are
//! shared and small; the point is that the benchmark keeps working.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use psprobe_harness::child::spawn_tied_with;

/// The quick run takes ~30 s; the margin covers installing the `haproxy` package on a fresh
/// machine (the script does that when it is missing) and a busy CI host.
const TIMEOUT: Duration = Duration::from_secs(240);
const RATIO_HEADER: &str = "| workload | threads | q/s psprobe/HAProxy | q/s psprobe/direct | p99 psprobe/HAProxy | p99 psprobe/direct | CPU µs/query psprobe | CPU µs/query HAProxy | CPU psprobe/HAProxy | peak RSS MiB psprobe | peak RSS MiB HAProxy |";

struct Finished {
    success: bool,
    stdout: String,
    stderr: String,
}

/// Runs the script; on timeout sends SIGTERM (the script's trap stops what it started), then
/// SIGKILL. The script also gets SIGTERM if this test process dies.
fn run_script(out_dir: &Path) -> Finished {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let bench = Path::new(env!("CARGO_BIN_EXE_psprobe-bench"));
    let mut cmd = Command::new("bash");
    cmd.arg(repo.join("scripts/bench.sh"))
        .arg("--quick")
        .arg("--bare-relay")
        // Built by this test run with the workspace's features: building either again inside
        // the test (the script's fallback) would compile a second variant of their
        // dependencies.
        .env("PSPROBE_BENCH_BIN", bench)
        .env("BENCH_OUT", out_dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // `cargo test --workspace` has built psprobe beside this binary for psprobe's own tests.
    let psprobe = bench.with_file_name("psprobe");
    if psprobe.exists() {
        cmd.env("PSPROBE_BIN", &psprobe);
    }
    let mut child = spawn_tied_with(cmd, libc::SIGTERM).expect("spawn scripts/bench.sh");
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = r.read_to_end(&mut buf);
            String::from_utf8_lossy(&buf).into_owned()
        })
    };
    let out = drain(Box::new(child.stdout.take().expect("stdout piped")));
    let err = drain(Box::new(child.stderr.take().expect("stderr piped")));
    let deadline = Instant::now() + TIMEOUT;
    let status = loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            break status;
        }
        if Instant::now() >= deadline {
            // SAFETY: plain kill(2) of our own child.
            unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
            let grace = Instant::now() + Duration::from_secs(20);
            while child.try_wait().expect("try_wait").is_none() && Instant::now() < grace {
                std::thread::sleep(Duration::from_millis(100));
            }
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "scripts/bench.sh --quick took longer than {TIMEOUT:?}\n{}",
                err.join().unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    Finished {
        success: status.success(),
        stdout: out.join().expect("stdout reader"),
        stderr: err.join().expect("stderr reader"),
    }
}

#[test]
fn quick_benchmark_runs_and_prints_the_table() {
    let dir = tempfile::tempdir().expect("tempdir");
    let run = run_script(dir.path());
    let context = format!(
        "--- stdout ---\n{}\n--- stderr ---\n{}",
        run.stdout, run.stderr
    );
    assert!(run.success, "scripts/bench.sh --quick failed\n{context}");

    let lines: Vec<&str> = run.stdout.lines().collect();
    let header = lines
        .iter()
        .position(|l| *l == RATIO_HEADER)
        .unwrap_or_else(|| panic!("no ratio table header\n{context}"));
    // The ratio table: one row per thread count, every column filled with a number.
    for (i, threads) in ["1", "16"].iter().enumerate() {
        let row = lines.get(header + 2 + i).copied().unwrap_or("");
        let cells: Vec<&str> = row.trim_matches('|').split('|').map(str::trim).collect();
        assert_eq!(
            cells.len(),
            11,
            "ratio row for {threads} threads: {row}\n{context}"
        );
        assert_eq!(
            cells[..2],
            ["oltp_point_select", threads],
            "{row}\n{context}"
        );
        for cell in &cells[2..] {
            let number = cell.split_whitespace().next().unwrap_or("");
            assert!(
                number.parse::<f64>().is_ok_and(|v| v > 0.0),
                "ratio row for {threads} threads has {cell:?}: {row}\n{context}"
            );
        }
    }
    // The per-target table: a row for each target at each thread count.
    for threads in ["1", "16"] {
        for target in ["direct", "haproxy", "psprobe"] {
            let prefix = format!("| oltp_point_select | {threads} | {target} | ");
            assert!(
                lines.iter().any(|l| l.starts_with(&prefix)),
                "no row {prefix}\n{context}"
            );
        }
    }
    assert!(
        run.stdout.contains("### Issue 6 targets"),
        "no targets table\n{context}"
    );

    // The bare relay: a row per thread count among the other targets, unless the script
    // said why it was left out (a kernel without io_uring).
    let bare_left_out = run.stderr.contains("bench: bare relay unavailable (");
    if !bare_left_out {
        assert!(
            run.stdout.contains("### Other targets"),
            "no table of other targets\n{context}"
        );
        for threads in ["1", "16"] {
            let prefix = format!("| oltp_point_select | {threads} | bare-relay | ");
            let row = lines.iter().find(|l| l.starts_with(&prefix));
            let row = row.unwrap_or_else(|| panic!("no row {prefix}\n{context}"));
            assert!(
                !row.contains("n/a"),
                "bare-relay row has gaps: {row}\n{context}"
            );
        }
    }

    // Raw numbers next to it: 2 thread counts x 3 or 4 targets.
    let out_dir = dir.path();
    let csv = std::fs::read_to_string(out_dir.join("results.csv")).expect("results.csv");
    let targets = if bare_left_out { 3 } else { 4 };
    assert_eq!(csv.lines().count(), 1 + 2 * targets, "{csv}");
    assert!(out_dir.join("summary.json").exists());
    assert!(
        run.stdout
            .contains(&format!("{}", out_dir.join("results.csv").display())),
        "the path of the raw numbers is printed\n{context}"
    );
}
