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
pub fn run_cmd(
    mut cmd: Command,
    addr: &str,
    workload: &str,
    command: &str,
    extra: &[&str],
) -> Summary {
    let (host, port) = split_addr(addr);
    let connection = Connection {
        host,
        port: port
            .parse()
            .unwrap_or_else(|_| panic!("port of {addr:?} is not a number")),
        user: USER,
        password: PASSWORD,
        database: DATABASE,
    };
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
