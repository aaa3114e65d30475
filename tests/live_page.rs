//! The live page of the metrics port against a real schedule: psprobe in front of a real
//! mariadbd under sysbench, its controller switching two scenarios. In headless Chromium the
//! page has the report's charts, laid out right, with no console message and nothing asked of
//! any other host; its headline figures are the admin's `overhead` table's at the same moment
//! (and `/report.json`'s, to the table's three decimals); it refreshes itself when a segment
//! finishes. Before the first estimate it says it waits; `--no-live-page` takes it away. Kept
//! apart from the short suites: it runs a schedule under load.

mod common;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::cli::{run_with_timeout, split_addr};
use common::controller::{flags, poll, DSN_ENV};
use common::mariadb::MariaDb;
use common::probe::Probe;
use common::sysbench;
use serde_json::Value;

const SECRET: &str = "live-page-admin-secret";
const TABLES: [&str; 2] = ["--tables=2", "--table-size=2000"];
const BASELINE: &str = "pfson_conoff_insoff";

/// One row of the admin's `overhead` table: scenario, metric, change and interval (percent,
/// as the table has them: three decimals; `None` for no interval).
type Row = (String, String, f64, Option<f64>, Option<f64>);

fn admin_overhead(probe: &Probe) -> Vec<Row> {
    let (host, port) = split_addr(probe.admin_addr());
    let mut cmd = Command::new("/usr/bin/mariadb");
    cmd.args(["--no-defaults", "--protocol=TCP", "-h", host, "-P", port])
        .args(["-u", "admin", &format!("-p{SECRET}"), "-N", "-B", "-e"])
        .arg(
            "SELECT scenario, metric, change_pct, ci_low_pct, ci_high_pct FROM overhead \
             ORDER BY scenario, metric",
        );
    let out = run_with_timeout(cmd, None, Duration::from_secs(30));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let number = |v: &str| v.parse::<f64>().ok();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            let change = number(f[2]).unwrap_or_else(|| panic!("change in {l:?}"));
            (f[0].into(), f[1].into(), change, number(f[3]), number(f[4]))
        })
        .collect()
}

/// `node live_page.js URL SHOT [WAIT_MS]`, its JSON.
fn live_page(url: &str, shot: Option<&Path>, wait_ms: Option<u64>) -> Value {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut cmd = Command::new("node");
    cmd.env("NODE_PATH", root.join("target/clients/node/node_modules"))
        .env("PSPROBE_CHROMIUM", common::page_layout::chromium())
        .arg(root.join("tests/clients/live_page.js"))
        .arg(url)
        .arg(shot.map_or(String::new(), |p| p.display().to_string()));
    if let Some(ms) = wait_ms {
        cmd.arg(ms.to_string());
    }
    let out = run_with_timeout(cmd, None, Duration::from_secs(120));
    assert!(
        out.status.success(),
        "live_page.js failed (scripts/setup.sh installs node and playwright-core): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("live_page.js prints JSON")
}

/// A change as the report writes it: `+1.2% (-0.4..+2.8)`, ` *` when significant.
fn shown(change: f64, low: Option<f64>, high: Option<f64>) -> String {
    match (low, high) {
        (Some(lo), Some(hi)) => format!("{change:+.1}% ({lo:+.1}..{hi:+.1})"),
        _ => format!("{change:+.1}%"),
    }
}

/// Whether the page's cell (one decimal) shows the admin's numbers (two decimals): each within
/// half a unit of the page's last digit plus half of the admin's (-3.2549 is "-3.3" on the page
/// and -3.25 in the admin, which rounds again to "-3.2").
fn same_at_their_precisions(cell: &str, change: f64, low: Option<f64>, high: Option<f64>) -> bool {
    let numbers: Vec<f64> = cell
        .split(['%', '(', ')', ' '])
        .flat_map(|w| w.split(".."))
        .filter_map(|w| w.parse().ok())
        .collect();
    let admin: Vec<f64> = [Some(change), low, high].into_iter().flatten().collect();
    numbers.len() >= admin.len()
        && numbers
            .iter()
            .zip(&admin)
            .all(|(page, admin)| (page - admin).abs() <= 0.05 + 0.005 + 1e-9)
}

/// The page's headline cells against the admin's rows: every compared scenario's throughput,
/// p99 and mean latency changes, with their intervals, as the admin has them.
fn compare_page(rows: &Value, admin: &[Row]) -> Result<usize, String> {
    let rows = rows.as_array().expect("rows");
    let mut compared = 0;
    for row in rows {
        let scenario = row["scenario"].as_str().expect("a scenario cell");
        if scenario == BASELINE {
            continue;
        }
        for (column, metric) in [
            ("statements/s change", "throughput"),
            ("p99 change", "p99_latency"),
            ("mean latency change", "mean_latency"),
        ] {
            let cell = row
                .as_object()
                .unwrap()
                .iter()
                .find(|(h, _)| h.starts_with(column))
                .and_then(|(_, v)| v.as_str())
                .unwrap_or_else(|| panic!("no {column} column: {row}"));
            let (_, _, change, low, high) = admin
                .iter()
                .find(|r| r.0 == scenario && r.1 == metric)
                .ok_or_else(|| format!("no admin row for {scenario} {metric}: {admin:?}"))?;
            let expected = shown(*change, *low, *high);
            if !cell.starts_with(&expected) && !same_at_their_precisions(cell, *change, *low, *high)
            {
                return Err(format!(
                    "{scenario} {metric}: the page shows {cell:?}, the admin table {expected:?}"
                ));
            }
            compared += 1;
        }
    }
    Ok(compared)
}

/// `/report.json`'s estimates against the admin's rows, to the table's three decimals.
fn compare_json(report: &Value, admin: &[Row]) {
    let estimates: Vec<&Value> = ["fast", "slow"]
        .iter()
        .filter_map(|d| report["analysis"][d]["estimates"].as_array())
        .flatten()
        .collect();
    assert_eq!(estimates.len(), admin.len(), "{admin:?}");
    for (scenario, metric, change, low, high) in admin {
        let e = estimates
            .iter()
            .find(|e| e["scenario"] == scenario.as_str() && e["metric"] == metric.as_str())
            .unwrap_or_else(|| panic!("{scenario} {metric} not in /report.json"));
        let pct = |v: &Value| v.as_f64().map(|r| r * 100.0);
        let close = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(a), Some(b)) => (a - b).abs() < 0.0006,
            (a, b) => a.is_none() && b.is_none(),
        };
        assert!(
            close(pct(&e["ratio"]), Some(*change))
                && close(pct(&e["ci_low"]), *low)
                && close(pct(&e["ci_high"]), *high),
            "{scenario} {metric}: /report.json {e}, admin {change} ({low:?}..{high:?})"
        );
    }
}

#[test]
fn the_live_page_follows_the_run_with_the_admin_tables_numbers() {
    let db = MariaDb::start_default();
    sysbench::run(&db.addr(), "oltp_read_only", "prepare", &TABLES);
    let dir = tempfile::tempdir().expect("tempdir");
    let spec = format!(
        "--scenarios {BASELINE},pfson_conon_inson --duration 120s --segment 8s --admin 127.0.0.1:0"
    );
    let args = flags(&spec, dir.path());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let probe = Probe::start_with_env(
        &db.addr(),
        &args,
        &[(DSN_ENV, &db.dsn()), ("PSPROBE_ADMIN_PASSWORD", SECRET)],
    );
    let url = format!("http://{}/", probe.metrics_addr());
    let (status, page) = probe.http_get("/");
    assert_eq!(status, 200);
    assert!(page.contains("id=\"live-waiting\""), "{page}");
    // Load for as long as the checks below take (stopped once they are done); its --time only
    // bounds it.
    let mut load = sysbench::Background::start(
        probe.proxy_addr(),
        "oltp_read_only",
        &[TABLES[0], TABLES[1], "--threads=4", "--time=600"],
    );

    poll("a JSON report", 60, || {
        (probe.http_get("/report.json").0 == 200).then_some(())
    });
    // It refreshes itself as segments finish (first, while the schedule has segments to
    // come), its charts still in place.
    let found = live_page(&url, None, Some(30_000));
    let refreshed = &found["refreshed"];
    assert_ne!(refreshed["etag"], found["first"]["etag"], "{found}");
    assert!(!refreshed["rows"].as_array().unwrap().is_empty(), "{found}");
    assert_eq!(
        refreshed["layout"]["problems"],
        serde_json::json!([]),
        "{found}"
    );
    assert_eq!(refreshed["layout"]["bars"], 2, "{found}");
    assert_eq!(found["console"], serde_json::json!([]), "{found}");
    let artifacts = Path::new(env!("CARGO_TARGET_TMPDIR")).join("artifacts");
    std::fs::create_dir_all(&artifacts).expect("artifacts dir");
    let shot = artifacts.join("live-page.png");
    // The same moment: /report.json is read between two admin reads that agree (no segment
    // finished in between). The page takes a browser's start to read, during which a segment
    // may finish: its numbers must be those of the admin table just before or just after it.
    let mut seen = None;
    let mut last = String::new();
    for _ in 0..8 {
        let before = admin_overhead(&probe);
        let (status, json) = probe.http_get("/report.json");
        let between = admin_overhead(&probe);
        let found = live_page(&url, Some(&shot), None);
        let after = admin_overhead(&probe);
        if before.is_empty() || status != 200 || between != before {
            continue;
        }
        let report: Value = serde_json::from_str(&json).expect("/report.json is JSON");
        compare_json(&report, &before);
        let rows = &found["first"]["rows"];
        let compared = match compare_page(rows, &before) {
            Ok(n) => n,
            Err(e) if after != before => {
                // A segment finished while the browser read the page.
                match compare_page(rows, &after) {
                    Ok(n) => n,
                    Err(e2) => {
                        last = format!("{e}; after: {e2}");
                        continue;
                    }
                }
            }
            Err(e) => panic!("{e}"),
        };
        assert_eq!(compared, 3, "one compared scenario, three columns: {found}");
        seen = Some((found, before, report));
        break;
    }
    let (found, admin, report) =
        seen.unwrap_or_else(|| panic!("no quiet moment in 8 tries: {last}"));
    eprintln!("live page {found}\nadmin overhead {admin:?}");
    let layout = &found["layout"];
    assert_eq!(layout["problems"], serde_json::json!([]), "{found}");
    assert_eq!(layout["firstUnderTitle"], true, "{found}");
    assert!(layout["charts"].as_u64() >= Some(3), "{found}");
    assert_eq!(layout["bars"], 2, "a bar per scenario: {found}");
    assert!(layout["width"].as_u64() <= Some(1300), "{found}");
    assert_eq!(found["console"], serde_json::json!([]), "{found}");
    assert_eq!(found["elsewhere"], serde_json::json!([]), "{found}");
    // The report's charts: carryover once the run has its profile (after a few segments).
    let titles = layout["titles"].to_string();
    let profile = &report["analysis"]["carryover"];
    let carryover = profile["scenarios"].as_array().is_some_and(|all| {
        all.iter().any(|s| {
            s["scenario"] != profile["baseline"]
                && s["points"]
                    .as_array()
                    .is_some_and(|ps| ps.iter().any(|p| !p["vs_baseline"].is_null()))
        })
    });
    assert!(
        titles.contains("Carryover") == carryover && titles.contains("Throughput over time"),
        "carryover in the report: {carryover}; {titles}"
    );

    eprintln!("screenshot: {}", shot.display());
    // Under load until here (sysbench ends at a statement's error), through psprobe.
    load.assert_running("the page's checks were done");
    let m = probe.scrape();
    let answered: f64 = ["query", "stmt_execute"]
        .iter()
        .flat_map(|c| ["ok", "rows"].map(|o| (*c, o)))
        .map(|(c, o)| m.get("psprobe_commands_total", &[("command", c), ("outcome", o)]))
        .sum();
    assert!(
        answered > 0.0,
        "no statement answered through psprobe:\n{}",
        m.text
    );
    load.stop();
}

#[test]
fn without_a_schedule_the_page_says_so_and_the_flag_takes_it_away() {
    let probe = Probe::start("127.0.0.1:1", &[]);
    let (status, page) = probe.http_get("/");
    assert_eq!(status, 200);
    assert!(page.contains("No schedule runs in this psprobe"), "{page}");
    let (status, json) = probe.http_get("/report.json");
    assert_eq!(status, 404, "{json}");
    assert!(json.contains("no schedule runs"), "{json}");
    let off = Probe::start("127.0.0.1:1", &["--no-live-page"]);
    assert_eq!(off.http_get("/").0, 404);
    assert_eq!(off.http_get("/report.json").0, 404);
    assert_eq!(off.healthz(), 200);
}
