//! A/A on real traffic: one scenario scheduled under two names, switched fast (the default
//! schedule), reports no significant difference.
//!
//! In a binary of its own on purpose: cargo runs test binaries one after another, so no other
//! test's load shares the machine with this one. (When it shared a binary, and so the machine,
//! with the experiment and agreement tests, two CI runs called the twin 8% and 12% slower
//! under the old 3-second phases: most likely that load falling unevenly on the two names.
//! Slots of a fraction of a second, in randomized pairs, share such noise between the names;
//! that is what the fast schedule is for.)

mod common;

use std::time::{Duration, Instant};

use common::cli::psprobe;
use common::mariadb::MariaDb;
use common::probe::Probe;
use common::sysbench;

const SECONDS: u64 = 40;

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
        "--duration",
        &format!("{SECONDS}s"),
        "--seed",
        "7",
        "--phase-log",
        log.to_str().unwrap(),
        "--state-dir",
        dir.path().to_str().unwrap(),
    ];
    let dsn = db.dsn();
    let probe = Probe::start_with_env(&db.addr(), &args, &[("PSPROBE_CONTROLLER_DSN", &dsn)]);
    // The load outlasts the schedule.
    let time = format!("--time={}", SECONDS + 4);
    let mut opts = vec!["--threads=2", time.as_str()];
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
    // At 95% a true A/A is called significant 5% of the time by construction (the synthetic
    // estimator tests check that rate over 200 runs); one real run in CI is judged at 99% so
    // that a correct estimator fails CI once in a hundred runs, not once in twenty.
    let out = psprobe(&[
        "report",
        log.to_str().unwrap(),
        "--format",
        "json",
        "--confidence",
        "0.99",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let fast = &report["analysis"]["fast"];
    assert_eq!(fast["baseline"], "pfson_conoff_insoff");
    assert_eq!(fast["level"], 0.99);
    // 5 s segments over 40 s, less the start.
    assert!(fast["complete_blocks"].as_u64() >= Some(6), "{fast}");
    let throughput = fast["estimates"]
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
    // What must hold is that zero is inside the interval it reports.
    let (low, high) = (
        throughput["ci_low"].as_f64().expect("ci_low"),
        throughput["ci_high"].as_f64().expect("ci_high"),
    );
    assert!(low <= 0.0 && 0.0 <= high, "{throughput}");
    eprintln!(
        "A/A over {SECONDS}s: {:+.2}% ({:+.2}..{:+.2}) at 99%",
        throughput["ratio"].as_f64().unwrap_or(f64::NAN) * 100.0,
        low * 100.0,
        high * 100.0
    );
}
