//! One run, two readers of its statement counts: the admin tables of the live psprobe
//! (`phases`, `scenarios`) and `psprobe report --format json` of the phase log the same psprobe
//! wrote count the same statements, with MariaDB's COM_STMT_BULK_EXECUTE in the traffic next to
//! text queries and prepared executes (tests/clients/bulk_workload.js: Node's `mariadb`
//! connector sends one bulk execute per `conn.batch()`, which /metrics must show, or the test
//! would pass without any). Phase records are written only under a schedule, so psprobe runs a
//! short fast one of two runtime scenarios in front of a MariaDB 10.11 of its own; the client
//! runs inside that run only, so the run's traffic record holds every statement the admin
//! counted since psprobe started.
//!
//! Must not: compare with a tolerance what both sides hold as integers; only the per-phase
//! rates, which the admin shows with 3 decimals, are compared to that rounding.

use crate::common;

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::Duration;

use psprobe_harness::child::spawn_tied;
use serde_json::Value as Json;

use common::cli::{psprobe, run_with_timeout, split_addr, DATABASE, PASSWORD, USER};
use common::controller::{poll, DSN_ENV};
use common::mariadb::MariaDb;
use common::observed::wait_for;
use common::probe::Probe;

const SECRET: &str = "admin-secret";
const TIMEOUT: Duration = Duration::from_secs(30);
/// The kinds `CommandKind::is_statement` calls statements, as /metrics and the phase log label
/// them.
const STATEMENT_KINDS: [&str; 3] = ["query", "stmt_execute", "stmt_bulk_execute"];
/// Two runtime scenarios in slots of 400 ms, 12 blocks (9.6 s), each block a segment of its own
/// (800 ms: one slot of each scenario), so a record per scenario every 0.8 s.
const SCHEDULE: [&str; 12] = [
    "--scenarios",
    "pfson_conoff_insoff,pfson_conon_insoff",
    "--phase",
    "400ms",
    "--settle",
    "100ms",
    "--segment",
    "800ms",
    "--blocks",
    "12",
    "--seed",
    "7",
];
/// Phase records written before the client is told to stop: the first three segments' (2.4 s
/// in), leaving 7 s of the run (a loaded CI machine included) for it to finish its round and close its connection.
const RECORDS_BEFORE_STOP: usize = 6;

/// `bulk_workload.js` through the proxy; killed if the test ends before it exits.
struct Workload {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    stderr: std::path::PathBuf,
}

impl Workload {
    /// Started, with its table made (it has printed `ready`).
    fn start(proxy: &str, dir: &Path) -> Workload {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let modules = root.join("target/clients/node/node_modules");
        assert!(
            modules.join("mariadb/package.json").is_file(),
            "{} has no `mariadb` package: run scripts/setup.sh (scripts/setup-clients.sh \
             installs it)",
            modules.display()
        );
        let stderr = dir.join("bulk_workload.stderr");
        let (host, port) = split_addr(proxy);
        let mut cmd = Command::new("node");
        cmd.env("NODE_PATH", &modules)
            .arg(root.join("tests/clients/bulk_workload.js"))
            .args([host, port, USER, PASSWORD, DATABASE, "bulk_counts"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(File::create(&stderr).expect("client stderr file"));
        let mut child = spawn_tied(cmd).expect("run node (scripts/setup.sh installs nodejs)");
        let stdout = child.stdout.take().expect("stdout piped");
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let workload = Workload {
            stdin: child.stdin.take(),
            child,
            lines,
            stderr,
        };
        let first = workload.next_line("ready");
        assert_eq!(first, "ready");
        workload
    }

    fn next_line(&self, what: &str) -> String {
        self.lines.recv_timeout(TIMEOUT).unwrap_or_else(|e| {
            panic!(
                "bulk_workload.js printed no {what} line ({e}); stderr:\n{}",
                std::fs::read_to_string(&self.stderr).unwrap_or_default()
            )
        })
    }

    /// Closes its stdin (it finishes the round under way) and returns what it says it sent.
    fn stop(mut self) -> Json {
        drop(self.stdin.take());
        let summary = self.next_line("summary");
        let status = self.child.wait().expect("wait for node");
        assert!(status.success(), "bulk_workload.js: {status}");
        serde_json::from_str(&summary).expect("the summary is JSON")
    }
}

impl Drop for Workload {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The records of `kind` in the phase log (a line still being written is left out).
fn records(log: &Path, kind: &str) -> Vec<Json> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    text.lines()
        .filter_map(|l| serde_json::from_str::<Json>(l).ok())
        .filter(|r| r["kind"] == kind)
        .collect()
}

/// Commands of `kinds` in a record's `commands` aggregates.
fn count_of(record: &Json, kinds: &[&str]) -> u64 {
    record["commands"]
        .as_array()
        .expect("commands")
        .iter()
        .filter(|a| a["command"].as_str().is_some_and(|c| kinds.contains(&c)))
        .map(|a| a["count"].as_u64().expect("count"))
        .sum()
}

/// The rows of `sql` on the admin interface as `mariadb -B` prints them, each a map from column
/// name to value.
fn admin_rows(admin: &str, sql: &str) -> Vec<BTreeMap<String, String>> {
    let (host, port) = split_addr(admin);
    let mut cmd = Command::new("mariadb");
    cmd.args(["--no-defaults", "--protocol=TCP", "-h", host, "-P", port])
        .args(["-u", "admin", &format!("-p{SECRET}"), "-B", "-e", sql]);
    let out = run_with_timeout(cmd, None, TIMEOUT);
    assert!(
        out.status.success(),
        "{sql}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).expect("UTF-8");
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap_or_default().split('\t').collect();
    lines
        .map(|l| {
            let cells = l.split('\t').map(String::from);
            header.iter().map(|h| h.to_string()).zip(cells).collect()
        })
        .collect()
}

fn int(row: &BTreeMap<String, String>, column: &str) -> u64 {
    row[column]
        .parse()
        .unwrap_or_else(|e| panic!("{column} {row:?}: {e}"))
}

fn float(row: &BTreeMap<String, String>, column: &str) -> Option<f64> {
    (row[column] != "NULL").then(|| {
        row[column]
            .parse()
            .unwrap_or_else(|e| panic!("{column} {row:?}: {e}"))
    })
}

#[test]
fn bulk_executes_count_the_same_in_the_admin_tables_and_the_report() {
    let db = MariaDb::start_default();
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("phases.jsonl");
    let (log_arg, dir_arg) = (log.to_str().expect("UTF-8"), dir.path().to_str().unwrap());
    let mut args = vec!["--admin", "127.0.0.1:0"];
    args.extend(SCHEDULE);
    args.extend(["--phase-log", log_arg, "--state-dir", dir_arg]);
    let dsn = db.dsn();
    let probe = Probe::start_with_env(
        &db.addr(),
        &args,
        &[(DSN_ENV, &dsn), ("PSPROBE_ADMIN_PASSWORD", SECRET)],
    );
    let active = |p: &Probe| p.scrape().get("psprobe_controller_schedule_active", &[]);
    poll("the schedule running", 20, || {
        (active(&probe) == 1.0).then_some(())
    });

    // The traffic, inside the run: from after its start until a few records are written.
    let workload = Workload::start(probe.proxy_addr(), dir.path());
    poll("phase records", 30, || {
        (records(&log, "phase").len() >= RECORDS_BEFORE_STOP).then_some(())
    });
    let sent = workload.stop();
    // A connection's counts are complete once psprobe has seen it close.
    let seen = wait_for(&probe, "the client's connection closed", |s| {
        s.get("psprobe_connections_active", &[]) == 0.0
            && s.get("psprobe_connections_total", &[]) >= 1.0
    });
    assert!(
        records(&log, "traffic").is_empty(),
        "the run ended before the client's connection did, so its traffic record leaves some \
         of the admin's statements out: lengthen SCHEDULE"
    );
    poll("the run's end (its traffic record)", 30, || {
        (!records(&log, "traffic").is_empty()).then_some(())
    });

    // The client's statements reached psprobe as the kinds it sent, bulk executes included.
    let sent_n = |key: &str| {
        sent[key]
            .as_u64()
            .unwrap_or_else(|| panic!("{key}: {sent}"))
    };
    let seen_n = |kind: &str| seen.get("psprobe_commands_total", &[("command", kind)]) as u64;
    assert!(
        seen_n("stmt_bulk_execute") > 0,
        "no COM_STMT_BULK_EXECUTE reached psprobe: conn.batch() went out another way\n{}",
        seen.text
    );
    assert_eq!(seen_n("stmt_bulk_execute"), sent_n("batches"), "{sent}");
    assert_eq!(seen_n("stmt_execute"), sent_n("executes"), "{sent}");
    assert!(
        seen_n("query") >= sent_n("queries"),
        "{sent}\n{}",
        seen.text
    );
    assert_eq!(
        sent_n("rows"),
        sent_n("batches") * sent_n("batch_rows"),
        "every row of every batch inserted: {sent}"
    );
    let seen_statements: u64 = STATEMENT_KINDS.iter().map(|k| seen_n(k)).sum();

    let phases_log = records(&log, "phase");
    let traffic_log = &records(&log, "traffic")[0];
    let admin = probe.admin_addr();
    let phases = admin_rows(
        admin,
        "SELECT phase, block, scenario, schedule, seconds, statements, qps FROM phases \
         ORDER BY phase, scenario",
    );
    let scenarios = admin_rows(
        admin,
        "SELECT scenario, commands, statements, phases FROM scenarios",
    );
    let out = psprobe(&["report", log_arg, "--format", "json"]);
    assert!(
        out.status.success(),
        "psprobe report: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Json = serde_json::from_slice(&out.stdout).expect("the report is JSON");

    // The whole run: the admin's statements since start (every scenario), the report's traffic
    // section and /metrics count the same, and the report's count holds the bulk executes.
    let admin_statements: u64 = scenarios.iter().map(|r| int(r, "statements")).sum();
    let admin_commands: u64 = scenarios.iter().map(|r| int(r, "commands")).sum();
    let traffic = &report["traffic"];
    assert_eq!(
        traffic["statements"].as_u64(),
        Some(admin_statements),
        "statements: the report's traffic section vs the admin's scenarios table {scenarios:?}"
    );
    assert_eq!(traffic["commands"].as_u64(), Some(admin_commands));
    assert_eq!(admin_statements, seen_statements, "admin vs /metrics");
    assert_eq!(
        count_of(traffic_log, &["stmt_bulk_execute"]),
        seen_n("stmt_bulk_execute"),
        "the traffic record's bulk executes: {traffic_log}"
    );
    assert_eq!(count_of(traffic_log, &STATEMENT_KINDS), admin_statements);

    // Phase by phase: the same phases, the same statements, the same rates.
    let timeline = report["timeline"].as_array().expect("timeline");
    assert!(phases.len() >= RECORDS_BEFORE_STOP, "{phases:?}");
    assert_eq!(phases.len(), phases_log.len(), "admin phases vs the log");
    assert_eq!(
        timeline.len(),
        phases_log.len(),
        "report timeline vs the log"
    );
    let mut with_bulk = 0;
    for row in &phases {
        let key = (
            int(row, "phase"),
            int(row, "block"),
            row["scenario"].as_str(),
        );
        let same = |r: &Json| {
            (
                r["phase"].as_u64(),
                r["block"].as_u64(),
                r["scenario"].as_str(),
            ) == (Some(key.0), Some(key.1), Some(key.2))
        };
        let record = phases_log.iter().find(|r| same(r)).expect("in the log");
        let line = timeline
            .iter()
            .find(|r| same(r))
            .unwrap_or_else(|| panic!("phase {key:?} is not in the report's timeline"));
        assert_eq!(line["schedule"].as_str(), Some(row["schedule"].as_str()));
        let statements = int(row, "statements");
        let bulk = count_of(record, &["stmt_bulk_execute"]);
        with_bulk += usize::from(bulk > 0);
        assert_eq!(
            statements,
            count_of(record, &STATEMENT_KINDS),
            "phase {key:?}: the admin's statements vs its record's query, stmt_execute and \
             stmt_bulk_execute ({bulk} of them bulk)"
        );
        // The report gives a phase's rate, not its count: the count is the rate times the
        // measured seconds (whole milliseconds, so the admin's 3 decimals hold them exactly).
        let seconds = float(row, "seconds").expect("seconds");
        let report_qps = line["qps"].as_f64().expect("qps");
        match float(row, "qps") {
            None => assert_eq!((seconds, statements, report_qps), (0.0, 0, 0.0), "{row:?}"),
            Some(admin_qps) => {
                assert_eq!(
                    (report_qps * seconds).round() as u64,
                    statements,
                    "phase {key:?}: statements, the report's rate x the measured seconds"
                );
                // The admin shows DOUBLEs with 3 decimals, rounded: half a unit of the last.
                assert!(
                    (admin_qps - report_qps).abs() <= 0.0005 + report_qps * 1e-12,
                    "phase {key:?}: qps {admin_qps} (admin) vs {report_qps} (report)"
                );
            }
        }
    }
    assert!(
        with_bulk >= 2,
        "bulk executes measured in {with_bulk} phases: {phases_log:?}"
    );
    // Per scenario: the phases each side lists.
    for row in &scenarios {
        let name = row["scenario"].as_str();
        let listed = timeline.iter().filter(|r| r["scenario"] == name).count();
        assert_eq!(int(row, "phases"), listed as u64, "{name}: phases");
    }
    assert_eq!(active(&probe), 0.0, "the schedule is over");
}
