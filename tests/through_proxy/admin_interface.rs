//! The admin interface against the real `mariadb` CLI (and mysql_async for column types):
//! exact rows for every table, ORDER BY / LIMIT, GROUP BY / JOIN / aggregates on the SQL engine,
//! SHOW STATUS LIKE, DESCRIBE, the statements clients send on connect, clear errors for a wrong
//! password, for writes and for unknown names, and the limits (query size, time, rows).

use crate::common;

use std::net::SocketAddr;
use std::process::{Command, Output};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use psprobe::white_box::admin::{
    self, overhead_row, status_row, AdminAuth, AdminData, Limits, ObserverData, OverheadRow, Row,
    Table, Value,
};
use psprobe::white_box::{
    Aggregate, ConnectionRecorder, DigestStore, Observer, PhaseRecord, ProxyMetrics, Scenarios,
    Totals,
};
use psprobe_core::digest::FingerprintOptions;
use psprobe_core::protocol::CommandKind;
use psprobe_core::session::{CommandFinished, CommandStarted, EventSink, Outcome, Statement};

use common::cli::run_with_timeout;

const SECRET: &str = "s3cret-admin";
const TIMEOUT: Duration = Duration::from_secs(30);

/// An admin server on a free port, on its own runtime (dropped with it).
struct Admin {
    addr: SocketAddr,
    _runtime: tokio::runtime::Runtime,
}

impl Admin {
    fn start(data: Arc<dyn AdminData>) -> Admin {
        Admin::start_with(data, Limits::default())
    }

    fn start_with(data: Arc<dyn AdminData>, limits: Limits) -> Admin {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .expect("bind");
        let addr = listener.local_addr().expect("address");
        runtime.spawn(admin::serve_with(
            listener,
            data,
            AdminAuth::new("admin", SECRET),
            limits,
        ));
        Admin {
            addr,
            _runtime: runtime,
        }
    }

    /// `mariadb --no-defaults -h 127.0.0.1 -P PORT -u USER -pPASSWORD ARGS`.
    fn client(&self, user: &str, password: &str, args: &[&str], stdin: Option<&[u8]>) -> Output {
        let mut cmd = Command::new("/usr/bin/mariadb");
        cmd.arg("--no-defaults")
            .arg("--protocol=TCP")
            .args(["-h", "127.0.0.1", "-P", &self.addr.port().to_string()])
            .args(["-u", user])
            .arg(format!("-p{password}"))
            .args(args);
        run_with_timeout(cmd, stdin, TIMEOUT)
    }

    /// Batch output (`-B`: tab-separated, header line first) of `sql`; panics on failure.
    fn query(&self, sql: &str) -> String {
        let out = self.client("admin", SECRET, &["-B", "-e", sql], None);
        assert!(
            out.status.success(),
            "{sql:?} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).expect("UTF-8 output")
    }

    /// stderr of `sql`, which must fail.
    fn error(&self, sql: &str) -> String {
        let out = self.client("admin", SECRET, &["-B", "-e", sql], None);
        assert!(
            !out.status.success(),
            "{sql:?} unexpectedly succeeded: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        String::from_utf8_lossy(&out.stderr).into_owned()
    }
}

/// Expected `-B` output: one line per row, columns separated by tabs.
fn lines(rows: &[&str]) -> String {
    rows.iter()
        .map(|r| format!("{}\n", r.split('|').collect::<Vec<_>>().join("\t")))
        .collect()
}

/// Known rows, independent of psprobe's statistics.
struct Fake;

fn fake_digests() -> Vec<Row> {
    let row = |scenario: &str, digest: &str, text: &str, count: u64, mean: Option<f64>| {
        vec![
            Value::from(scenario),
            digest.into(),
            text.into(),
            count.into(),
            Value::UInt(count / 10),
            Value::UInt(count * 2),
            Value::UInt(0),
            mean.into(),
            mean.into(),
            mean.map(|m| m * 2.0).into(),
            mean.map(|m| m * 3.0).into(),
            mean.map(|m| m * 4.0).into(),
        ]
    };
    vec![
        row(
            "pfs_off",
            "00000000000000A1",
            "select c from sbtest1 where id = ?",
            100,
            Some(0.25),
        ),
        row(
            "pfs_on",
            "00000000000000A1",
            "select c from sbtest1 where id = ?",
            120,
            Some(0.3125),
        ),
        row("pfs_on", "00000000000000B2", "commit", 30, None),
    ]
}

impl AdminData for Fake {
    fn snapshot(&self, tables: &[Table]) -> Vec<Vec<Row>> {
        tables
            .iter()
            .map(|table| match table {
                Table::Digests => fake_digests(),
                Table::Phases => vec![vec![
                    Value::UInt(0),
                    Value::UInt(1),
                    "pfs_off".into(),
                    "fast".into(),
                    Value::UInt(1),
                    "2025-11-29T18:34:56Z".into(),
                    Value::Float(60.0),
                    Value::UInt(6000),
                    Value::Float(100.0),
                    Value::Float(1.5),
                    Value::UInt(0),
                    false.into(),
                    true.into(),
                ]],
                Table::Overhead => vec![overhead_row(&OverheadRow {
                    schedule: "fast".into(),
                    scenario: "pfs_on".into(),
                    baseline: "pfs_off".into(),
                    metric: "mean_latency".into(),
                    change_pct: 4.25,
                    ci_low_pct: 1.5,
                    ci_high_pct: 7.0,
                    significant: true,
                    blocks: 6,
                })],
                Table::Status => vec![
                    status_row("uptime_seconds", Value::UInt(42)),
                    status_row("connections_active", Value::Int(3)),
                    status_row("connections_total", Value::UInt(17)),
                    status_row("current_scenario", "pfs_on"),
                ],
                _ => Vec::new(),
            })
            .collect()
    }
}

const DIGEST_HEADER: &str =
    "scenario|digest|digest_text|count|errors|rows_sent|rows_affected|mean_ms|p50_ms|p95_ms|p99_ms|max_ms";
const DIGEST_OFF: &str =
    "pfs_off|00000000000000A1|select c from sbtest1 where id = ?|100|10|200|0|0.250|0.250|0.500|0.750|1.000";
const DIGEST_ON: &str =
    "pfs_on|00000000000000A1|select c from sbtest1 where id = ?|120|12|240|0|0.312|0.312|0.625|0.938|1.250";
const DIGEST_COMMIT: &str = "pfs_on|00000000000000B2|commit|30|3|60|0|NULL|NULL|NULL|NULL|NULL";

#[test]
fn select_each_table() {
    let admin = Admin::start(Arc::new(Fake));
    assert_eq!(
        admin.query("SELECT * FROM digests"),
        lines(&[DIGEST_HEADER, DIGEST_OFF, DIGEST_ON, DIGEST_COMMIT])
    );
    assert_eq!(
        admin.query("select * from phases;"),
        lines(&[
            "phase|block|scenario|schedule|slots|measure_from|seconds|statements|qps|mean_ms|errors|restarted|verified",
            "0|1|pfs_off|fast|1|2025-11-29T18:34:56Z|60.000|6000|100.000|1.500|0|0|1",
        ])
    );
    assert_eq!(
        admin.query("  Select *  From  psprobe.OVERHEAD  "),
        lines(&[
            "schedule|scenario|baseline|metric|change_pct|ci_low_pct|ci_high_pct|halfwidth_pct|significant|blocks",
            "fast|pfs_on|pfs_off|mean_latency|4.250|1.500|7.000|2.750|1|6",
        ])
    );
}

#[test]
fn order_by_limit_where_and_columns() {
    let admin = Admin::start(Arc::new(Fake));
    assert_eq!(
        admin.query("SELECT * FROM digests ORDER BY count DESC LIMIT 2"),
        lines(&[DIGEST_HEADER, DIGEST_ON, DIGEST_OFF])
    );
    assert_eq!(
        admin.query("SELECT * FROM digests ORDER BY mean_ms LIMIT 1, 5"),
        lines(&[DIGEST_HEADER, DIGEST_OFF, DIGEST_ON])
    );
    assert_eq!(
        admin.query("SELECT scenario, count FROM digests WHERE digest = '00000000000000a1' ORDER BY scenario DESC"),
        lines(&["scenario|count", "pfs_on|120", "pfs_off|100"])
    );
    // The CLI prints nothing at all (not even the header) for an empty result in batch mode.
    assert_eq!(
        admin.query("SELECT * FROM digests ORDER BY count LIMIT 0"),
        ""
    );
}

#[test]
fn show_status_like() {
    let admin = Admin::start(Arc::new(Fake));
    assert_eq!(
        admin.query("SHOW STATUS LIKE 'conn%'"),
        lines(&[
            "Variable_name|Value",
            "connections_active|3",
            "connections_total|17",
        ])
    );
    assert_eq!(
        admin.query("show global status"),
        lines(&[
            "Variable_name|Value",
            "uptime_seconds|42",
            "connections_active|3",
            "connections_total|17",
            "current_scenario|pfs_on",
        ])
    );
}

#[test]
fn what_clients_send_on_connect() {
    let admin = Admin::start(Arc::new(Fake));
    assert_eq!(
        admin.query("SELECT @@version_comment LIMIT 1"),
        lines(&["@@version_comment", "psprobe admin"])
    );
    assert_eq!(
        admin.query("SET NAMES utf8mb4; SELECT DATABASE(); USE psprobe; SELECT DATABASE()"),
        lines(&["DATABASE()", "NULL", "DATABASE()", "psprobe"])
    );
    assert_eq!(
        admin.query("SHOW DATABASES"),
        lines(&["Database", "psprobe"])
    );
    assert_eq!(
        admin.query("SHOW TABLES"),
        lines(&[
            "Tables_in_psprobe",
            "digests",
            "commands",
            "phases",
            "overhead",
            "attribution",
            "connections",
            "scenarios",
            "setting_changes",
            "status"
        ])
    );
    // Database on the command line, statements on stdin (batch mode), table output.
    let out = admin.client(
        "admin",
        SECRET,
        &["-t", "psprobe"],
        Some(b"select database();\nselect scenario from digests where scenario = 'pfs_off';\n"),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "+------------+\n| database() |\n+------------+\n| psprobe    |\n+------------+\n\
         +----------+\n| scenario |\n+----------+\n| pfs_off  |\n+----------+\n"
    );
}

#[test]
fn wrong_password_and_user_get_1045() {
    let admin = Admin::start(Arc::new(Fake));
    let out = admin.client(
        "admin",
        "not-the-secret",
        &["-e", "SELECT * FROM digests"],
        None,
    );
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "ERROR 1045 (28000): Access denied for user 'admin'@'127.0.0.1' (using password: YES)"
        ),
        "{stderr}"
    );
    assert!(out.stdout.is_empty());

    let out = admin.client("root", SECRET, &["-e", "SHOW STATUS"], None);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("ERROR 1045 (28000): Access denied for user 'root'"),
        "{stderr}"
    );

    let mut cmd = Command::new("/usr/bin/mariadb");
    cmd.args(["--no-defaults", "--protocol=TCP", "-h", "127.0.0.1"])
        .args([
            "-P",
            &admin.addr.port().to_string(),
            "-u",
            "admin",
            "-e",
            "SHOW STATUS",
        ]);
    let out = run_with_timeout(cmd, None, TIMEOUT);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("(using password: NO)"), "{stderr}");

    // The server keeps serving after refusals.
    assert_eq!(
        admin.query("SHOW STATUS LIKE 'uptime%'"),
        lines(&["Variable_name|Value", "uptime_seconds|42"])
    );
}

/// The messages here are the SQL engine's (they were the hand-written subset's before).
#[test]
fn unsupported_statements_get_a_clear_error() {
    let admin = Admin::start(Arc::new(Fake));
    let stderr = admin.error("DROP TABLE digests");
    assert!(
        stderr.contains(
            "ERROR 1290 (HY000) at line 1: psprobe admin is read-only: DROP is refused (SELECT, \
             SHOW, DESCRIBE and USE work)"
        ),
        "{stderr}"
    );
    let stderr = admin.error("SELECT * FROM mysql.user");
    assert!(
        stderr.contains(
            "ERROR 1146 (42S02) at line 1: Table 'mysql.user' doesn't exist: psprobe admin has \
             the tables digests, commands, phases, overhead, attribution, connections, scenarios, \
             setting_changes, status"
        ),
        "{stderr}"
    );
    let stderr = admin.error("SELECT * FROM digests ORDER BY latency DESC");
    assert!(
        stderr.contains(
            "ERROR 1054 (42S22) at line 1: Unknown column 'latency' (DESCRIBE <table> lists a \
             table's columns)"
        ),
        "{stderr}"
    );
    let stderr = admin.error("SELECT * FROM digests LIMIT ten");
    assert!(stderr.contains("ERROR 1054 (42S22)"), "{stderr}");
    assert!(stderr.contains("Unknown column 'ten'"), "{stderr}");
    let stderr = admin.error("SELECT * FROM digests WHERE");
    assert!(stderr.contains("ERROR 1064 (42000)"), "{stderr}");
    assert!(stderr.contains("SQLite's dialect"), "{stderr}");

    let out = admin.client("admin", SECRET, &["-B", "-e", "SELECT 1", "mysql"], None);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("ERROR 1049 (42000): Unknown database 'mysql'"),
        "{stderr}"
    );

    // An error does not end the session: later statements still run (--force).
    let out = admin.client(
        "admin",
        SECRET,
        &["-B", "--force"],
        Some(b"DELETE FROM digests;\nSHOW STATUS LIKE 'uptime_seconds';\n"),
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("ERROR 1290"));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        lines(&["Variable_name|Value", "uptime_seconds|42"])
    );
}

#[test]
fn concurrent_clients() {
    let admin = Arc::new(Admin::start(Arc::new(Fake)));
    let clients: Vec<_> = (0..8)
        .map(|_| {
            let admin = Arc::clone(&admin);
            std::thread::spawn(move || {
                admin.query("SELECT * FROM digests ORDER BY count DESC LIMIT 1")
            })
        })
        .collect();
    for client in clients {
        assert_eq!(
            client.join().expect("client thread"),
            lines(&[DIGEST_HEADER, DIGEST_ON])
        );
    }
}

fn record(
    recorder: &mut ConnectionRecorder<'_>,
    seq: u64,
    sql: &str,
    latency_ms: u64,
    outcome: Outcome,
) {
    let at = Instant::now();
    recorder.command_started(&CommandStarted {
        seq,
        kind: CommandKind::Query,
        statement: Statement::Text {
            sql: sql.as_bytes(),
            truncated: false,
        },
        at,
    });
    recorder.command_finished(&CommandFinished {
        seq,
        kind: CommandKind::Query,
        outcome,
        rows: if outcome == Outcome::Rows { 1 } else { 0 },
        affected_rows: 0,
        request_bytes: 0,
        response_bytes: 0,
        latency: Some(Duration::from_millis(latency_ms)),
    });
}

/// [`ObserverData`] over a real observer that recorded a few commands, a phase and an overhead
/// row.
#[test]
fn observer_data_serves_recorded_statistics() {
    let scenarios = Arc::new(Scenarios::default());
    let observer = Arc::new(Observer {
        metrics: ProxyMetrics::new(Arc::clone(&scenarios)).expect("metrics"),
        digests: Arc::new(DigestStore::new(100)),
        scenarios: Arc::clone(&scenarios),
        fingerprint: FingerprintOptions::default(),
        connections: Default::default(),
        setting_changes: Default::default(),
    });
    let pfs_on = scenarios.intern("pfs_on").expect("scenario");
    scenarios.set_current(pfs_on);
    {
        let mut recorder = ConnectionRecorder::new(&observer);
        record(
            &mut recorder,
            0,
            "SELECT c FROM sbtest1 WHERE id = 5",
            1,
            Outcome::Rows,
        );
        record(
            &mut recorder,
            1,
            "select c from sbtest1 where id = 77",
            3,
            Outcome::Rows,
        );
        record(&mut recorder, 2, "SELECT nope", 2, Outcome::Error(1054));
    }
    observer.metrics.connections_total.inc();
    let phases = Arc::new(RwLock::new(Vec::new()));
    let overhead = Arc::new(RwLock::new(Vec::new()));
    let data = ObserverData::new(
        Arc::clone(&observer),
        Arc::clone(&phases),
        Arc::clone(&overhead),
    );
    let admin = Admin::start(Arc::new(data));

    let digests = admin.query("SELECT scenario, digest_text, count, errors, rows_sent, mean_ms, max_ms FROM digests ORDER BY count DESC");
    assert_eq!(
        digests,
        lines(&[
            "scenario|digest_text|count|errors|rows_sent|mean_ms|max_ms",
            "pfs_on|select c from sbtest1 where id = ?|2|0|2|2.000|3.000",
            "pfs_on|select nope|1|1|0|2.000|2.000",
        ]),
    );
    // Quantiles come from log buckets (within 2.5%).
    let p99 = admin.query("SELECT p99_ms FROM digests ORDER BY count DESC LIMIT 1");
    let p99: f64 = p99
        .lines()
        .nth(1)
        .expect("a row")
        .parse()
        .expect("a number");
    assert!((p99 / 3.0 - 1.0).abs() <= 0.025, "{p99}");

    assert_eq!(
        admin.query("SHOW STATUS LIKE '%s_total'"),
        lines(&[
            "Variable_name|Value",
            "connections_total|1",
            "commands_total|3",
        ])
    );
    assert_eq!(
        admin.query(
            "SHOW STATUS LIKE 'current_scenario'; SHOW STATUS LIKE 'digests_tracked'; \
             SHOW STATUS LIKE 'version'"
        ),
        lines(&[
            "Variable_name|Value",
            "current_scenario|pfs_on",
            "Variable_name|Value",
            "digests_tracked|2",
            "Variable_name|Value",
            &format!("version|{}", env!("CARGO_PKG_VERSION")),
        ])
    );

    // Phases and overhead rows appear as soon as they are published.
    assert_eq!(admin.query("SELECT * FROM phases"), "");
    let aggregate = |command: &str, count, latency_sum_ns| Aggregate {
        command: Some(command.to_string()),
        digest: None,
        text: None,
        totals: Totals {
            count,
            errors: 2,
            timed: count,
            latency_sum_ns,
            ..Totals::default()
        },
        histogram: vec![],
    };
    phases.write().unwrap().push(PhaseRecord {
        version: 1,
        kind: "phase".into(),
        scenario: "pfs_on".into(),
        block: 0,
        phase: 1,
        switched_at_ms: 1_764_441_290_000,
        measure_from_ms: 1_764_441_296_000,
        measure_to_ms: 1_764_441_326_000,
        restarted: false,
        verified: true,
        commands: vec![
            aggregate("query", 2400, 2_400_000_000),
            aggregate("stmt_execute", 600, 1_800_000_000),
            aggregate("ping", 50, 1_000),
        ],
        digests: vec![],
        server_cpu_ms: None,
        ..PhaseRecord::default()
    });
    overhead.write().unwrap().push(OverheadRow {
        schedule: "slow".into(),
        scenario: "pfs_on".into(),
        baseline: "pfs_off".into(),
        metric: "throughput".into(),
        change_pct: -3.456,
        ci_low_pct: -5.0,
        ci_high_pct: -1.25,
        significant: true,
        blocks: 4,
    });
    assert_eq!(
        admin.query("SELECT * FROM phases"),
        lines(&[
            "phase|block|scenario|schedule|slots|measure_from|seconds|statements|qps|mean_ms|errors|restarted|verified",
            "1|0|pfs_on|fast|1|2025-11-29T18:34:56Z|30.000|3000|100.000|1.400|4|0|1",
        ])
    );
    assert_eq!(
        admin.query("SELECT * FROM overhead WHERE significant = 1"),
        lines(&[
            "schedule|scenario|baseline|metric|change_pct|ci_low_pct|ci_high_pct|halfwidth_pct|significant|blocks",
            "slow|pfs_on|pfs_off|throughput|-3.456|-5.000|-1.250|1.875|1|4",
        ])
    );
}

/// Interactive session on a terminal (`script` provides one): on `USE psprobe` the CLI reads
/// table and column names for completion (SHOW DATABASES, SHOW TABLES, COM_FIELD_LIST per
/// table), and `status` asks for several server variables; neither may hang or fail.
#[test]
fn interactive_cli_on_a_terminal() {
    let admin = Admin::start(Arc::new(Fake));
    let client = format!(
        "/usr/bin/mariadb --no-defaults --protocol=TCP -h 127.0.0.1 -P {} -u admin -p{SECRET}",
        admin.addr.port()
    );
    let mut cmd = Command::new("script");
    cmd.args(["-q", "-e", "-c", &client, "/dev/null"]);
    let out = run_with_timeout(
        cmd,
        Some(b"use psprobe\nselect database();\nstatus\nselect * from overhead;\nquit\n"),
        TIMEOUT,
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(!text.contains("ERROR"), "{text}");
    for expected in [
        "Server version: 5.7.99-psprobe-admin-0.1.0 psprobe admin",
        "Database changed",
        "| psprobe    |",
        "Current user:\t\tadmin@127.0.0.1",
        "| pfs_on   | pfs_off  | mean_latency |      4.250 |",
        "Bye",
    ] {
        let expected = expected.replace("0.1.0", env!("CARGO_PKG_VERSION"));
        assert!(
            text.contains(&expected),
            "{expected:?} missing from:\n{text}"
        );
    }
}

/// The SQL engine: aggregates, GROUP BY, JOIN, subqueries, ORDER BY expressions, MySQL
/// spellings (`@@var`, backticks, `'it\'s'`), DESCRIBE and SHOW, over the fake tables.
#[test]
fn sql_over_the_tables() {
    let admin = Admin::start(Arc::new(Fake));
    assert_eq!(
        admin.query(
            "SELECT digest_text, sum(count) AS n, count(*) AS scenarios FROM digests \
             GROUP BY digest_text ORDER BY n DESC"
        ),
        lines(&[
            "digest_text|n|scenarios",
            "select c from sbtest1 where id = ?|220|2",
            "commit|30|1",
        ])
    );
    // JOIN and an ORDER BY expression: latency against the baseline's, per digest.
    assert_eq!(
        admin.query(
            "SELECT `on`.digest, round(`on`.mean_ms / off.mean_ms, 2) AS ratio \
             FROM digests `on` JOIN psprobe.digests off ON off.digest = `on`.digest \
             WHERE `on`.scenario = 'pfs_on' AND off.scenario = 'pfs_off' \
             ORDER BY `on`.count * `on`.mean_ms DESC"
        ),
        lines(&["digest|ratio", "00000000000000A1|1.25"])
    );
    assert_eq!(
        admin.query(
            "SELECT o.scenario, o.change_pct, (SELECT max(count) FROM digests d \
             WHERE d.scenario = o.scenario) AS busiest FROM overhead o"
        ),
        lines(&["scenario|change_pct|busiest", "pfs_on|4.250|120"])
    );
    assert_eq!(
        admin.query("SELECT count(*), sum(errors), avg(count), max(p99_ms) FROM digests"),
        lines(&[
            "count(*)|sum(errors)|avg(count)|max(p99_ms)",
            "3|25|83.33333333333333|0.9375",
        ])
    );
    // Text compares like MySQL's default collation: case-insensitively.
    assert_eq!(
        admin.query(
            "SELECT count FROM digests WHERE scenario = 'PFS_OFF' AND digest_text LIKE 'SELECT%'"
        ),
        lines(&["count", "100"])
    );
    assert_eq!(
        admin.query("SELECT @@version_comment, @@session.autocommit, 'it\\'s' AS s"),
        lines(&[
            "@@version_comment|@@session.autocommit|s",
            "psprobe admin|1|it's"
        ])
    );
    assert_eq!(
        admin.query("SHOW VARIABLES LIKE 'version%'"),
        lines(&[
            "Variable_name|Value",
            &format!("version|5.7.99-psprobe-admin-{}", env!("CARGO_PKG_VERSION")),
            "version_comment|psprobe admin",
            &format!("version_compile_machine|{}", std::env::consts::ARCH),
            &format!("version_compile_os|{}", std::env::consts::OS),
        ])
    );
    let describe = admin.query("DESCRIBE overhead");
    assert!(
        describe.starts_with(&lines(&[
            "Field|Type|Null|Key|Default|Extra",
            "schedule|text|YES||NULL|",
            "scenario|text|YES||NULL|",
            "baseline|text|YES||NULL|",
            "metric|text|YES||NULL|",
            "change_pct|double|YES||NULL|",
        ])),
        "{describe}"
    );
    assert_eq!(describe.lines().count(), 11, "{describe}");
    let full = admin.query("SHOW FULL COLUMNS FROM digests LIKE 'p9%'");
    assert!(full.contains("p95_ms\tdouble"), "{full}");
    assert!(full.contains("95th percentile"), "{full}");
    assert_eq!(full.lines().count(), 3, "{full}");
    assert_eq!(
        admin.query("SHOW STATUS WHERE Value > 10 AND Value < 100"),
        lines(&[
            "Variable_name|Value",
            "uptime_seconds|42",
            "connections_total|17",
        ])
    );
    assert!(admin
        .query("SHOW CREATE TABLE status")
        .contains("CREATE TABLE"));
}

/// Statements that write, attach files, load extensions or change settings are refused, and
/// the data is as before afterwards.
#[test]
fn writes_are_refused() {
    let admin = Admin::start(Arc::new(Fake));
    for (sql, refused) in [
        ("INSERT INTO digests (scenario) VALUES ('x')", "INSERT"),
        ("UPDATE overhead SET change_pct = 0", "UPDATE"),
        ("REPLACE INTO status VALUES ('a', 1)", "REPLACE"),
        ("CREATE TABLE t (a INT)", "CREATE"),
        (
            "ATTACH DATABASE '/tmp/psprobe-admin-test.db' AS x",
            "ATTACH",
        ),
        (
            "SELECT load_extension('/tmp/x.so')",
            "the function load_extension()",
        ),
        ("PRAGMA writable_schema = ON", "PRAGMA writable_schema = ON"),
        (
            "WITH d AS (SELECT 1) DELETE FROM digests",
            "DELETE from digests",
        ),
        ("SET GLOBAL max_connections = 1", "SET GLOBAL"),
        ("VACUUM", "VACUUM"),
    ] {
        let stderr = admin.error(sql);
        assert!(
            stderr.contains(&format!(
                "ERROR 1290 (HY000) at line 1: psprobe admin is read-only: {refused} is refused"
            )),
            "{sql}: {stderr}"
        );
    }
    assert!(!std::path::Path::new("/tmp/psprobe-admin-test.db").exists());
    assert_eq!(
        admin.query("SELECT count(*) FROM digests"),
        lines(&["count(*)", "3"])
    );
    // Session settings clients send are accepted (without effect).
    assert_eq!(
        admin.query("SET NAMES utf8mb4; SET autocommit = 0; BEGIN; COMMIT; SELECT 1"),
        lines(&["1", "1"])
    );
}

/// Many rows, for queries that would take long.
struct Big;

impl AdminData for Big {
    fn snapshot(&self, tables: &[Table]) -> Vec<Vec<Row>> {
        tables
            .iter()
            .map(|table| match table {
                Table::Status => (0..2000u64)
                    .map(|i| status_row(&format!("v{i}"), Value::UInt(i)))
                    .collect(),
                _ => Vec::new(),
            })
            .collect()
    }
}

/// Query size cap, time limit, row limit, LIKE patterns: each gets a clear error quickly, and
/// other clients are served meanwhile.
#[test]
fn limits_hold() {
    let admin = Arc::new(Admin::start_with(
        Arc::new(Big),
        Limits {
            timeout: Duration::from_secs(1),
            max_rows: 10_000,
            ..Limits::default()
        },
    ));
    // A cross join of 2000^3 rows is stopped at the time limit.
    let slow = {
        let admin = Arc::clone(&admin);
        std::thread::spawn(move || {
            let started = Instant::now();
            let stderr =
                admin.error("SELECT count(*) FROM status a, status b, status c WHERE a.value + b.value + c.value < 0");
            (started.elapsed(), stderr)
        })
    };
    // Meanwhile another client is answered.
    assert_eq!(
        admin.query("SELECT value FROM status WHERE variable_name = 'v7'"),
        lines(&["value", "7"])
    );
    let (elapsed, stderr) = slow.join().expect("slow query thread");
    assert!(stderr.contains("ERROR 1317 (70100)"), "{stderr}");
    assert!(stderr.contains("stops a query after 1 s"), "{stderr}");
    assert!(elapsed < Duration::from_secs(10), "{elapsed:?}");

    let stderr = admin.error("SELECT a.value FROM status a, status b");
    assert!(stderr.contains("ERROR 1104 (42000)"), "{stderr}");
    assert!(stderr.contains("more than 10000 rows"), "{stderr}");

    // Issue 11's pattern, and one far longer: answered at once.
    let started = Instant::now();
    assert_eq!(admin.query("SHOW STATUS LIKE '%%%%%%%%%%%%#'"), "");
    let stderr = admin.error(&format!("SHOW STATUS LIKE '{}#'", "%".repeat(30_000)));
    assert!(
        stderr.contains("LIKE or GLOB pattern too complex"),
        "{stderr}"
    );
    assert!(started.elapsed() < Duration::from_secs(10));

    // 2 MiB of query: refused, and the connection goes on.
    let mut big = b"SELECT '".to_vec();
    big.extend(std::iter::repeat_n(b'x', 2 << 20));
    big.extend_from_slice(b"';\nSELECT 'after';\n");
    let out = admin.client("admin", SECRET, &["-B", "--force"], Some(&big));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("ERROR 1153 (08S01)"), "{stderr}");
    assert!(stderr.contains("accepts at most 1048576"), "{stderr}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        lines(&["after", "after"])
    );
}

/// Column types and typed values as a driver sees them (mysql_async).
#[test]
fn result_types_through_mysql_async() {
    use mysql_async::consts::ColumnType;
    use mysql_async::prelude::Queryable;

    let admin = Admin::start(Arc::new(Fake));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let url = format!(
            "mysql://admin:{SECRET}@127.0.0.1:{}/psprobe",
            admin.addr.port()
        );
        let mut conn = mysql_async::Conn::from_url(url).await.expect("connect");
        let result: Vec<mysql_async::Row> = conn
            .query(
                "SELECT count, mean_ms, digest_text, sum(count) OVER () AS total, \
                 avg(count) OVER () AS mean, NULL AS empty FROM digests ORDER BY count DESC",
            )
            .await
            .expect("query");
        let types: Vec<ColumnType> = result[0]
            .columns_ref()
            .iter()
            .map(|c| c.column_type())
            .collect();
        assert_eq!(
            types,
            [
                ColumnType::MYSQL_TYPE_LONGLONG,
                ColumnType::MYSQL_TYPE_DOUBLE,
                ColumnType::MYSQL_TYPE_VAR_STRING,
                ColumnType::MYSQL_TYPE_LONGLONG,
                ColumnType::MYSQL_TYPE_DOUBLE,
                ColumnType::MYSQL_TYPE_VAR_STRING,
            ]
        );
        let first: (i64, f64, String, i64, f64, Option<String>) =
            mysql_async::from_row(result[0].clone());
        assert_eq!(
            first,
            (
                120,
                0.312,
                "select c from sbtest1 where id = ?".to_string(),
                250,
                250.0 / 3.0,
                None
            )
        );
        let err = conn
            .query_drop("DELETE FROM digests")
            .await
            .expect_err("refused");
        assert!(err.to_string().contains("1290"), "{err}");
        conn.disconnect().await.expect("disconnect");
    });
}
