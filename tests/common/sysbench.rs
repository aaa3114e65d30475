//! Running the real sysbench 1.0.20 (`oltp_*` Lua workloads) and reading its summary.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use super::cli::{run_with_timeout, split_addr, DATABASE, PASSWORD, USER};

const SYSBENCH_TIMEOUT: Duration = Duration::from_secs(600);

/// The numbers of sysbench's final report that tests compare against.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Summary {
    pub read: u64,
    pub write: u64,
    pub other: u64,
    pub total: u64,
    pub transactions: u64,
    pub ignored_errors: u64,
    pub reconnects: u64,
    /// The whole stdout, for assertion messages and per-interval lines.
    pub text: String,
}

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
pub fn run_cmd(
    mut cmd: Command,
    addr: &str,
    workload: &str,
    command: &str,
    extra: &[&str],
) -> Summary {
    let (host, port) = split_addr(addr);
    cmd.arg(workload)
        .arg(format!("--mysql-host={host}"))
        .arg(format!("--mysql-port={port}"))
        .arg(format!("--mysql-user={USER}"))
        .arg(format!("--mysql-password={PASSWORD}"))
        .arg(format!("--mysql-db={DATABASE}"))
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

/// Reads the "SQL statistics" block of `sysbench ... run`.
pub fn parse_summary(text: &str) -> Summary {
    let field = |label: &str| -> u64 {
        text.lines()
            .find_map(|line| {
                let rest = line.trim().strip_prefix(label)?;
                rest.split_whitespace().next()?.parse().ok()
            })
            .unwrap_or(0)
    };
    Summary {
        read: field("read:"),
        write: field("write:"),
        other: field("other:"),
        total: field("total:"),
        transactions: field("transactions:"),
        ignored_errors: field("ignored errors:"),
        reconnects: field("reconnects:"),
        text: text.to_string(),
    }
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
