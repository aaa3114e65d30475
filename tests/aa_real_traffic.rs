//! A/A on real traffic: one scenario scheduled under two names reports no significant
//! difference.
//!
//! In a binary of its own on purpose: cargo runs test binaries one after another, so no other
//! test's load shares the machine with this one. When it shared a binary (and, with
//! --test-threads=2, the machine) with the experiment and agreement tests, whose schedules
//! alternate light and heavy scenarios on a similar clock, two CI runs in a row called the
//! twin 8% and 12% slower: most likely that load falling unevenly on the two names, helped by
//! a fixed seed that put the twin second in four blocks of five. Now the order is balanced too.

mod common;

use std::time::{Duration, Instant};

use common::cli::psprobe;
use common::mariadb::MariaDb;
use common::probe::Probe;
use common::sysbench;
use psprobe::controller::schedule::block_order;

const BLOCKS: u64 = 6;

/// The first seed whose block orders put each of the two names first in half the blocks, so
/// a within-block position effect (or a trend over the run) cancels out of the paired ratios.
fn balanced_seed() -> u64 {
    (1..10_000)
        .find(|&seed| {
            let first = (0..BLOCKS)
                .filter(|&b| block_order(2, b, seed)[0] == 0)
                .count() as u64;
            first * 2 == BLOCKS
        })
        .expect("a balanced seed among the first 10,000")
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
        &BLOCKS.to_string(),
        "--seed",
        &balanced_seed().to_string(),
        "--phase-log",
        log.to_str().unwrap(),
        "--state-dir",
        dir.path().to_str().unwrap(),
    ];
    let dsn = db.dsn();
    let probe = Probe::start_with_env(&db.addr(), &args, &[("PSPROBE_CONTROLLER_DSN", &dsn)]);
    // The schedule takes BLOCKS x 2 x 3 s; the load outlasts it.
    let mut opts = vec!["--threads=2", "--time=44"];
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
    assert_eq!(report["analysis"]["baseline"], "pfson_conoff_insoff");
    assert_eq!(report["analysis"]["level"], 0.99);
    assert!(
        report["analysis"]["complete_blocks"].as_u64() >= Some(BLOCKS - 1),
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
    // The point estimate's size is noise on a shared machine (-12% was seen with a -31..+12%
    // interval); what must hold is that zero is inside the interval it reports.
    let (low, high) = (
        throughput["ci_low"].as_f64().expect("ci_low"),
        throughput["ci_high"].as_f64().expect("ci_high"),
    );
    assert!(low <= 0.0 && 0.0 <= high, "{throughput}");
}
