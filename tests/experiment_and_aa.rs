//! `psprobe experiment` gives tables shaped like the seed study's, and an A/A schedule (one
//! scenario under two names) on real traffic reports no significant difference.

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::mariadb::MariaDb;
use common::probe::Probe;
use common::sysbench;

fn psprobe(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_psprobe"))
        .args(args)
        .output()
        .expect("run psprobe")
}

#[test]
fn experiment_two_concurrencies_two_scenarios() {
    let dir = tempfile::tempdir().expect("tempdir");
    let md = dir.path().join("exp.md");
    let out = psprobe(&[
        "experiment",
        "--workloads",
        "oltp_read_only",
        "--threads",
        "1,2",
        "--scenarios",
        "pfson_conoff_insoff,pfson_conon_inson",
        "--phase",
        "3s",
        "--settle",
        "1s",
        "--blocks",
        "2",
        "-o",
        md.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc = std::fs::read_to_string(&md).expect("report written");
    assert!(doc.contains("## oltp_read_only"), "{doc}");
    let header = "| threads | pfson_conoff_insoff | pfson_conon_inson | sysbench QPS |";
    assert!(doc.contains(header), "{doc}");
    // Like the seed's tables: per concurrency a QPS row, then a change row.
    let rows: Vec<&str> = doc
        .lines()
        .filter(|l| l.starts_with("| 1 |") || l.starts_with("| 2 |"))
        .collect();
    assert_eq!(rows.len(), 4, "{doc}");
    for qps_row in [rows[0], rows[2]] {
        let cells: Vec<f64> = qps_row
            .split('|')
            .filter_map(|c| c.trim().parse().ok())
            .collect();
        assert_eq!(
            cells.len(),
            4,
            "threads, two scenarios, sysbench: {qps_row}"
        );
        assert!(cells[1..].iter().all(|&q| q > 0.0), "{qps_row}");
    }
    assert!(
        rows[1].contains("baseline (pfson_conoff_insoff)") && rows[1].contains('%'),
        "{}",
        rows[1]
    );
}

#[test]
fn aa_schedule_reports_no_significant_difference() {
    let db = MariaDb::start_default();
    let tables = ["--tables=2", "--table-size=2000"];
    sysbench::run(&db.addr(), "oltp_read_only", "prepare", &tables);
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("psprobe.toml");
    // The same settings as pfson_conoff_insoff under another name.
    std::fs::write(
        &config,
        "[[scenario]]\nname = \"aa_twin\"\ndescription = \"pfson_conoff_insoff again\"\n\
         consumers = { enable = [] }\ninstruments = { enable = [] }\n",
    )
    .expect("config");
    let log = dir.path().join("phases.jsonl");
    let args = [
        "--config",
        config.to_str().unwrap(),
        "--scenarios",
        "pfson_conoff_insoff,aa_twin",
        "--phase",
        "3s",
        "--settle",
        "1s",
        "--blocks",
        "5",
        "--seed",
        "5",
        "--phase-log",
        log.to_str().unwrap(),
        "--state-dir",
        dir.path().to_str().unwrap(),
    ];
    let dsn = db.dsn();
    let probe = Probe::start_with_env(&db.addr(), &args, &[("PSPROBE_CONTROLLER_DSN", &dsn)]);
    let mut opts = vec!["--threads=2", "--time=36"];
    opts.extend(tables);
    sysbench::run(probe.proxy_addr(), "oltp_read_only", "run", &opts);
    let deadline = Instant::now() + Duration::from_secs(30);
    while probe.scrape().get("psprobe_controller_leader", &[]) != 0.0 {
        assert!(
            Instant::now() < deadline,
            "schedule did not finish:\n{}",
            probe.stderr_text()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let out = psprobe(&["report", log.to_str().unwrap(), "--format", "json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(report["analysis"]["baseline"], "pfson_conoff_insoff");
    assert!(
        report["analysis"]["complete_blocks"].as_u64() >= Some(4),
        "{}",
        report["analysis"]
    );
    let throughput = report["analysis"]["estimates"]
        .as_array()
        .expect("estimates")
        .iter()
        .find(|e| e["scenario"] == "aa_twin" && e["metric"] == "throughput")
        .expect("an aa_twin throughput estimate")
        .clone();
    assert_eq!(
        throughput["significant"], false,
        "A/A called significant: {throughput}"
    );
    assert!(
        throughput["ratio"].as_f64().unwrap().abs() < 0.10,
        "{throughput}"
    );
}
