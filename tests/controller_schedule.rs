//! The scheduled controller under real traffic: a 4-scenario, 2-block schedule of 2 s slots
//! while sysbench runs through psprobe gives 8 records in the phase log (a block of 8 s is one
//! segment: one record per scenario), metrics per scenario, and the server's
//! performance_schema settings are restored at the end; a change made by another session under
//! the schedule is counted and left out. On MariaDB 10.11, 11.8 and MySQL 9.7, both runs one
//! after another on one server per flavor (each ends with the settings as found).

mod common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use common::probe::Probe;
use common::server::{Flavor, Options, Server};
use common::sysbench;

const SETUP_DUMP: &str =
    "SELECT NAME, ENABLED FROM performance_schema.setup_consumers ORDER BY NAME; \
     SELECT NAME, ENABLED, TIMED FROM performance_schema.setup_instruments ORDER BY NAME";

crate::per_flavor!(both_schedules_on_one_server);

fn both_schedules_on_one_server(flavor: Flavor) {
    let db = Server::start(flavor, Options::default());
    four_scenarios_two_blocks_under_sysbench(&db);
    // The leader's liveness does not wait for the redo log: the heartbeat is a MEMORY table,
    // and psprobe's InnoDB tables keep no persistent statistics (whose recalculation commits).
    let tables = psprobe_tables(&db);
    assert_eq!(tables["heartbeat"].0, "MEMORY", "{tables:?}");
    for t in ["phase", "snapshot", "switch_intent"] {
        assert_eq!(tables[t].0, "InnoDB", "{tables:?}");
        assert!(tables[t].1.contains("stats_persistent=0"), "{tables:?}");
    }
    // The second run meets a heartbeat table it cannot make MEMORY: on MariaDB the engine is
    // refused (enforce_storage_engine), so it falls back to InnoDB; on MySQL an older
    // psprobe's InnoDB table is there, kept and named in one line. The run works on both.
    let expected_hint = match flavor {
        Flavor::MySql97 => {
            db.sql("ALTER TABLE psprobe.heartbeat ENGINE=InnoDB");
            true
        }
        _ => {
            db.sql("DROP TABLE psprobe.heartbeat; SET GLOBAL enforce_storage_engine = InnoDB");
            false
        }
    };
    let stderr = settings_changed_under_the_schedule_are_counted_and_left_out(&db);
    if flavor != Flavor::MySql97 {
        db.sql("SET GLOBAL enforce_storage_engine = NULL");
    }
    let tables = psprobe_tables(&db);
    assert_eq!(tables["heartbeat"].0, "InnoDB", "{tables:?}");
    assert_eq!(
        stderr.contains("made by an older psprobe"),
        expected_hint,
        "{stderr}"
    );
    if !expected_hint {
        // The fallback's table is psprobe's own: the next start keeps it and says nothing.
        assert!(
            tables["heartbeat"].1.contains("stats_persistent=0"),
            "{tables:?}"
        );
        let stderr = a_short_schedule(&db);
        assert!(!stderr.contains("made by an older psprobe"), "{stderr}");
        assert_eq!(psprobe_tables(&db)["heartbeat"].0, "InnoDB");
    }
}

/// psprobe running two scenarios in 500 ms slots for `duration`, its state (and phase log,
/// if named) in `dir`.
fn two_scenarios(db: &Server, duration: &str, dir: &std::path::Path, log: Option<&str>) -> Probe {
    let mut args = vec![
        "--scenarios",
        "pfson_conoff_insoff,pfson_conon_inson",
        "--phase",
        "500ms",
        "--settle",
        "100ms",
        "--duration",
        duration,
        "--state-dir",
        dir.to_str().unwrap(),
    ];
    if let Some(log) = log {
        args.extend(["--phase-log", log]);
    }
    let dsn = db.dsn();
    Probe::start_with_env(&db.addr(), &args, &[("PSPROBE_CONTROLLER_DSN", &dsn)])
}

/// A schedule of two slots, run to its end; returns psprobe's log.
fn a_short_schedule(db: &Server) -> String {
    let dir = tempfile::tempdir().expect("tempdir");
    let probe = two_scenarios(db, "1s", dir.path(), None);
    let deadline = Instant::now() + Duration::from_secs(30);
    while !probe.stderr_text().contains("controller finished") {
        assert!(Instant::now() < deadline, "{}", probe.stderr_text());
        std::thread::sleep(Duration::from_millis(50));
    }
    probe.stderr_text()
}

/// psprobe's tables: engine and lower-cased create options by name.
fn psprobe_tables(db: &Server) -> BTreeMap<String, (String, String)> {
    db.sql(
        "SELECT TABLE_NAME, ENGINE, LOWER(IFNULL(CREATE_OPTIONS, '')) FROM information_schema.TABLES \
         WHERE TABLE_SCHEMA = 'psprobe'",
    )
    .lines()
    .filter_map(|l| {
        let mut f = l.split('\t');
        let name = f.next()?.to_string();
        let engine = f.next()?.to_string();
        Some((name, (engine, f.next().unwrap_or("").to_string())))
    })
    .collect()
}

fn four_scenarios_two_blocks_under_sysbench(db: &Server) {
    let before = db.sql(SETUP_DUMP);
    sysbench::run(
        &db.addr(),
        "oltp_read_only",
        "prepare",
        &["--tables=2", "--table-size=2000"],
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("phases.jsonl");
    let scenarios = "pfson_conoff_insoff,pfson_conon_insoff,pfson_conoff_inson,pfson_conon_inson";
    let args = [
        "--scenarios",
        scenarios,
        "--phase",
        "2s",
        "--settle",
        "500ms",
        "--blocks",
        "2",
        "--seed",
        "11",
        "--phase-log",
        log.to_str().unwrap(),
        "--state-dir",
        dir.path().to_str().unwrap(),
    ];
    let dsn = db.dsn();
    let probe = Probe::start_with_env(&db.addr(), &args, &[("PSPROBE_CONTROLLER_DSN", &dsn)]);

    // The schedule is announced as active as soon as the controller runs.
    let deadline = Instant::now() + Duration::from_secs(10);
    while probe
        .scrape()
        .get("psprobe_controller_schedule_active", &[])
        != 1.0
    {
        assert!(Instant::now() < deadline, "{}", probe.stderr_text());
        std::thread::sleep(Duration::from_millis(50));
    }

    // 8 phases of 2 s: sysbench runs a little longer than the schedule.
    let summary = sysbench::run(
        probe.proxy_addr(),
        "oltp_read_only",
        "run",
        &[
            "--tables=2",
            "--table-size=2000",
            "--threads=2",
            "--time=20",
        ],
    );
    assert_eq!(summary.ignored_errors, 0, "{}", summary.text);

    // The schedule ends by itself; wait for the restore it does then.
    let deadline = Instant::now() + Duration::from_secs(30);
    while probe.scrape().get("psprobe_controller_leader", &[]) != 0.0
        || db.sql(SETUP_DUMP) != before
    {
        assert!(
            Instant::now() < deadline,
            "settings not restored:\n{}",
            probe.stderr_text()
        );
        std::thread::sleep(Duration::from_millis(100));
    }

    let text = std::fs::read_to_string(&log).expect("phase log written");
    let phases: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("each line is JSON"))
        .filter(|v: &serde_json::Value| v["kind"] == "phase")
        .collect();
    assert_eq!(phases.len(), 8, "phase log:\n{text}");
    let mut per_scenario: BTreeMap<String, usize> = BTreeMap::new();
    for (i, p) in phases.iter().enumerate() {
        assert_eq!(p["version"], 2);
        assert_eq!(p["schedule"], "fast");
        assert_eq!(p["slots"], 1, "one slot per scenario and segment: {p}");
        assert_eq!(p["phase"], i as u64);
        assert_eq!(p["block"], (i / 4) as u64);
        assert_eq!(p["verified"], true);
        let statements: u64 = p["commands"]
            .as_array()
            .expect("commands")
            .iter()
            .map(|c| c["count"].as_u64().unwrap_or(0))
            .sum();
        assert!(statements > 0, "phase {i} measured nothing: {p}");
        let (from, to) = (p["measure_from_ms"].as_u64(), p["measure_to_ms"].as_u64());
        assert!(to > from);
        // Measured: the slot less the switch, the settle (500ms) and the guard before the next.
        let measured = p["measured_ms"].as_u64().unwrap();
        assert!(
            measured <= to.unwrap() - from.unwrap() && (1000..1500).contains(&measured),
            "{p}"
        );
        *per_scenario
            .entry(p["scenario"].as_str().unwrap().to_string())
            .or_default() += 1;
    }
    assert_eq!(per_scenario.len(), 4, "{per_scenario:?}");
    assert!(
        per_scenario.values().all(|&n| n == 2),
        "each scenario once per block: {per_scenario:?}"
    );
    // Each block runs every scenario once.
    for block in phases.chunks(4) {
        let mut names: Vec<_> = block
            .iter()
            .map(|p| p["scenario"].as_str().unwrap())
            .collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), 4);
    }

    let m = probe.scrape();
    assert_eq!(
        m.get("psprobe_controller_schedule_active", &[]),
        0.0,
        "done"
    );
    assert_eq!(m.get("psprobe_controller_restore_failures_total", &[]), 0.0);
    assert_eq!(
        m.get("psprobe_controller_verification_failures_total", &[]),
        0.0
    );
    for scenario in scenarios.split(',') {
        let n = m.get("psprobe_commands_total", &[("scenario", scenario)]);
        assert!(n > 0.0, "no commands labelled {scenario}\n{}", m.text);
        assert_eq!(
            m.get("psprobe_phases_total", &[("scenario", scenario)]),
            2.0
        );
    }
    assert!(
        !dir.path()
            .join(format!("ps-snapshot-127.0.0.1-{}.json", db.port()))
            .exists(),
        "state file removed"
    );
}

/// Another session changes a consumer while the schedule runs: the slot whose settings did not
/// hold is left out (verified false in the phase log) and counted in
/// psprobe_controller_verification_failures_total, the schedule goes on, and the change is the
/// DBA's: kept through every later switch and at the end (the server ends as found but for
/// it), logged once, counted, and in the phase log.
/// Returns psprobe's log.
fn settings_changed_under_the_schedule_are_counted_and_left_out(db: &Server) -> String {
    let before = db.sql(SETUP_DUMP);
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("phases.jsonl");
    let probe = two_scenarios(db, "6s", dir.path(), log.to_str());
    let deadline = Instant::now() + Duration::from_secs(10);
    while probe
        .scrape()
        .get("psprobe_controller_schedule_active", &[])
        != 1.0
    {
        assert!(Instant::now() < deadline, "{}", probe.stderr_text());
        std::thread::sleep(Duration::from_millis(50));
    }
    // Once each scenario has been entered (and checked row by row) the switches are batches
    // with a checksum: a change then is caught at the next switch. The change sets a value no
    // scheduled scenario has (a change to the value psprobe has there at that moment leaves
    // nothing to tell it from psprobe's own).
    let deadline = Instant::now() + Duration::from_secs(10);
    while !["pfson_conoff_insoff", "pfson_conon_inson"]
        .iter()
        .all(|s| {
            probe
                .stderr_text()
                .contains(&format!("applied scenario {s} "))
        })
    {
        assert!(Instant::now() < deadline, "{}", probe.stderr_text());
        std::thread::sleep(Duration::from_millis(50));
    }
    const ROW: &str = "performance_schema.setup_instruments WHERE NAME = 'wait/io/file/sql/binlog'";
    db.sql(&format!(
        "UPDATE {} SET ENABLED = 'YES', TIMED = 'NO' WHERE NAME = 'wait/io/file/sql/binlog'",
        "performance_schema.setup_instruments"
    ));
    assert_eq!(
        probe
            .scrape()
            .get("psprobe_controller_schedule_active", &[]),
        1.0,
        "the schedule ended before the change:\n{}",
        probe.stderr_text()
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    while probe
        .scrape()
        .get("psprobe_controller_schedule_active", &[])
        != 0.0
    {
        assert!(Instant::now() < deadline, "{}", probe.stderr_text());
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        !probe.stderr_text().contains("controller stopped"),
        "{}",
        probe.stderr_text()
    );

    let failures = probe
        .scrape()
        .get("psprobe_controller_verification_failures_total", &[]);
    let text = std::fs::read_to_string(&log).expect("phase log written");
    let unverified = text
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["kind"] == "phase" && v["verified"] == false)
        .count();
    assert!(unverified >= 1, "no phase left out:\n{text}");
    assert_eq!(failures, unverified as f64, "metric vs phase log");
    // Kept: never switched back, not restored at the end.
    let now = db.sql(&format!("SELECT ENABLED, TIMED FROM {ROW}"));
    assert_eq!(
        now.trim(),
        "YES\tNO",
        "the DBA's change was reverted:\n{}",
        probe.stderr_text()
    );
    // The row as found, whatever psprobe had in it when the DBA changed it.
    let found_row = before
        .lines()
        .find(|l| l.starts_with("wait/io/file/sql/binlog\t"))
        .expect("the row in the dump");
    let want = before.replace(found_row, "wait/io/file/sql/binlog\tYES\tNO");
    assert_eq!(db.sql(SETUP_DUMP), want, "every other row as found");
    let claims: Vec<serde_json::Value> = text
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["kind"] == "claim")
        .collect();
    assert_eq!(claims.len(), 1, "{text}");
    assert_eq!(
        claims[0]["setting"],
        "setup_instruments 'wait/io/file/sql/binlog'"
    );
    let stderr = probe.stderr_text();
    assert_eq!(
        stderr
            .matches("setup_instruments 'wait/io/file/sql/binlog' is now")
            .count(),
        1,
        "logged once:\n{stderr}"
    );
    assert_eq!(
        probe
            .scrape()
            .get("psprobe_controller_settings_claimed_total", &[]),
        1.0
    );
    // The DBA's change is the test's: put back as found, for the next suite on this server.
    let mut found = found_row.split('\t').skip(1);
    let (was_e, was_t) = (found.next().expect("ENABLED"), found.next().expect("TIMED"));
    db.sql(&format!(
        "UPDATE performance_schema.setup_instruments SET ENABLED = '{was_e}', TIMED = '{was_t}' \
         WHERE NAME = 'wait/io/file/sql/binlog'"
    ));
    assert_eq!(db.sql(SETUP_DUMP), before);
    stderr
}
