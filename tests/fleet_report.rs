//! Three probes in front of one server, one schedule: exactly one leads, the others follow;
//! every follower's phase log names the leader's scenario for every slot it shares with it;
//! `psprobe report` merges the three logs (files, a directory, or `-`) into one analysis whose
//! per-slot rates are the sums of the probes' rates; and a log of another run is refused with a
//! message that says so. The merged report's traffic section (every statement each probe
//! relayed during the run, measured or not) equals, per digest, the server's own count.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::cli::{psprobe, run_with_timeout, PASSWORD, USER};
use common::controller::poll;
use common::digest_text::comparable;
use common::mariadb::MariaDb;
use common::probe::Probe;
use common::sysbench;
use serde_json::Value;

fn records(log: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    text.lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// (block, scenario) -> (first slot, statements, measured ms) of a log's phase records (one per
/// scenario and segment).
fn slots(log: &Path) -> BTreeMap<(u64, String), (u64, u64, u64)> {
    records(log)
        .into_iter()
        .filter(|r| r["kind"] == "phase")
        .map(|r| {
            let n: u64 = r["commands"]
                .as_array()
                .expect("commands")
                .iter()
                .map(|c| c["count"].as_u64().unwrap_or(0))
                .sum();
            let key = (
                r["block"].as_u64().unwrap(),
                r["scenario"].as_str().unwrap().to_string(),
            );
            let value = (
                r["phase"].as_u64().unwrap(),
                n,
                r["measured_ms"].as_u64().unwrap(),
            );
            (key, value)
        })
        .collect()
}

fn report_json(args: &[&str]) -> Value {
    let mut all = vec!["report", "--format", "json"];
    all.extend_from_slice(args);
    let out = psprobe(&all);
    assert!(
        out.status.success(),
        "psprobe {all:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON report")
}

/// Three probes in front of `db`, one schedule of `scenarios` (500 ms slots, 100 ms settle),
/// each with its own phase log in one directory and its own state directory.
struct Fleet {
    probes: Vec<Probe>,
    logs: Vec<PathBuf>,
    dir: tempfile::TempDir,
    _states: Vec<tempfile::TempDir>,
}

impl Fleet {
    fn start(db: &MariaDb, dsn: &str, scenarios: &str, duration: &str, seed: &str) -> Fleet {
        let dir = tempfile::tempdir().expect("tempdir");
        let states: Vec<_> = (0..3)
            .map(|_| tempfile::tempdir().expect("tempdir"))
            .collect();
        let logs: Vec<PathBuf> = (0..3)
            .map(|i| dir.path().join(format!("probe{i}.jsonl")))
            .collect();
        let probes = (0..3)
            .map(|i| {
                let args = [
                    "--scenarios",
                    scenarios,
                    "--phase",
                    "500ms",
                    "--settle",
                    "100ms",
                    "--duration",
                    duration,
                    "--seed",
                    seed,
                    "--phase-log",
                    logs[i].to_str().unwrap(),
                    "--state-dir",
                    states[i].path().to_str().unwrap(),
                ];
                Probe::start_with_env(&db.addr(), &args, &[("PSPROBE_CONTROLLER_DSN", dsn)])
            })
            .collect();
        Fleet {
            probes,
            logs,
            dir,
            _states: states,
        }
    }
}

#[test]
fn three_probes_one_schedule_one_merged_report() {
    let db = MariaDb::start_default();
    sysbench::run(
        &db.addr(),
        "oltp_read_only",
        "prepare",
        &["--tables=1", "--table-size=1000"],
    );
    let fleet = Fleet::start(
        &db,
        &db.dsn(),
        "pfson_conoff_insoff,pfson_conon_inson",
        "8s",
        "3",
    );
    let (probes, logs, logs_dir) = (&fleet.probes[..], &fleet.logs[..], &fleet.dir);
    let leader = poll("exactly one leader", 15, || {
        let leading: Vec<usize> = (0..3)
            .filter(|&i| probes[i].scrape().get("psprobe_controller_leader", &[]) == 1.0)
            .collect();
        (leading.len() == 1).then(|| leading[0])
    });

    // Load through every probe at once, longer than the schedule.
    std::thread::scope(|s| {
        for p in probes {
            let addr = p.proxy_addr().to_string();
            s.spawn(move || {
                let summary = sysbench::run(
                    &addr,
                    "oltp_read_only",
                    "run",
                    &[
                        "--tables=1",
                        "--table-size=1000",
                        "--threads=2",
                        "--time=12",
                    ],
                );
                assert_eq!(summary.ignored_errors, 0, "{}", summary.text);
            });
        }
    });
    for p in probes {
        poll("the schedule to end", 30, || {
            (p.scrape().get("psprobe_controller_schedule_active", &[]) == 0.0).then_some(())
        });
    }

    // One leader, two followers, the same scenario in every shared slot.
    let roles: Vec<Vec<String>> = logs
        .iter()
        .map(|l| {
            records(l)
                .iter()
                .filter(|r| r["kind"] == "run")
                .map(|r| r["role"].as_str().unwrap().to_string())
                .collect()
        })
        .collect();
    for (i, r) in roles.iter().enumerate() {
        let want = if i == leader { "leader" } else { "follower" };
        assert_eq!(r, &[want], "probe {i}: {}", probes[i].stderr_text());
    }
    let per_probe: Vec<_> = logs.iter().map(|l| slots(l)).collect();
    let led = &per_probe[leader];
    assert!(led.len() >= 4, "2 segments of 2 scenarios: {led:?}");
    // Where a record of each probe starts, the leader had that record's scenario in effect (a
    // follower that joined a segment late starts its record at a later slot).
    for (i, followed) in per_probe.iter().enumerate() {
        let shared = followed.keys().filter(|k| led.contains_key(k)).count();
        assert!(
            shared + 1 >= led.len(),
            "probe {i} shares {shared} of {}",
            led.len()
        );
        for ((block, scenario), (first, ..)) in followed {
            let other = led
                .iter()
                .find(|((b, s), (f, ..))| b == block && f == first && s != scenario);
            assert!(
                other.is_none(),
                "probe {i}: {block}/{first} is {scenario} and {other:?}"
            );
        }
    }

    // The merged report: each slot's rate is the sum of the probes' rates.
    let paths: Vec<&str> = logs.iter().map(|l| l.to_str().unwrap()).collect();
    let merged = report_json(&paths);
    assert_eq!(merged["probes"], 3);
    let timeline = merged["timeline"].as_array().expect("timeline");
    let mut checked = 0;
    for row in timeline {
        let k = (
            row["block"].as_u64().unwrap(),
            row["scenario"].as_str().unwrap().to_string(),
        );
        let seen: Vec<_> = per_probe.iter().filter_map(|p| p.get(&k)).collect();
        if seen.len() < 3 {
            continue;
        }
        let count: u64 = seen.iter().map(|s| s.1).sum();
        let mean_ms = seen.iter().map(|s| s.2).sum::<u64>() / 3;
        let want = count as f64 / (mean_ms as f64 / 1000.0);
        let qps = row["qps"].as_f64().unwrap();
        assert!(
            (qps - want).abs() <= want * 0.01,
            "slot {k:?}: {qps} vs {want}"
        );
        checked += 1;
    }
    assert!(checked >= 3, "{checked} records seen by all three");
    let one = report_json(&[paths[leader]]);
    assert_eq!(one["probes"], 1);
    // A directory and stdin give the same merge.
    let via_dir = report_json(&[logs_dir.path().to_str().unwrap()]);
    assert_eq!(via_dir["timeline"], merged["timeline"]);
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_psprobe"));
    let others: Vec<&str> = (0..3).filter(|&i| i != leader).map(|i| paths[i]).collect();
    cmd.args(["report", "--format", "json", "-"]).args(&others);
    let leader_log = std::fs::read(&logs[leader]).expect("read");
    let out = run_with_timeout(cmd, Some(&leader_log), Duration::from_secs(30));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let via_stdin: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(via_stdin["timeline"], merged["timeline"]);

    // A log of another run (another schedule, later) is refused.
    let other = logs_dir.path().join("other-run.log");
    let shifted: String = records(&logs[leader])
        .into_iter()
        .map(|mut r| {
            if r["kind"] == "phase" {
                let at = r["switched_at_ms"].as_u64().unwrap();
                r["switched_at_ms"] = (at + 3_600_000).into();
            }
            format!("{r}\n")
        })
        .collect();
    std::fs::write(&other, shifted).expect("write");
    let out = psprobe(&["report", paths[0], other.to_str().unwrap()]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("not from the same schedule"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "one clear line: {err}");
}

/// Three probes through a schedule that keeps the server's digest table on in every scenario
/// (statement instruments and the statements_digest consumer stay enabled): one client at a
/// time through each probe while scenarios switch every half second. The merged report's
/// traffic section, per digest, equals the server's COUNT_STAR, though most of those statements
/// ran outside any measured window (in settle time) or past the 20 digests a phase record
/// lists. (One client at a time: under concurrency the server itself loses an occasional
/// count.)
#[test]
fn merged_traffic_of_three_probes_equals_the_server_per_digest() {
    let db = MariaDb::start_default();
    // Three tables: 30 shapes, more than the 20 a phase record lists one by one.
    let tables = ["--tables=3", "--table-size=1000"];
    sysbench::run(&db.addr(), "oltp_read_write", "prepare", &tables);
    // No default database: the controllers' own statements stay out of the compared schema.
    let dsn = format!("mysql://{USER}:{PASSWORD}@{}/", db.addr());
    let mut fleet = Fleet::start(
        &db,
        &dsn,
        "pfson_conon_ins_sqlon,pfson_conon_inson",
        "10m",
        "5",
    );
    let logs = fleet.logs.clone();
    // Every probe is in the schedule (a segment recorded) before the counting starts.
    for log in &logs {
        poll("a phase record in every log", 30, || {
            slots(log).keys().next().map(|_| ())
        });
    }
    db.sql("TRUNCATE TABLE performance_schema.events_statements_summary_by_digest");
    let addrs: Vec<&str> = fleet.probes.iter().map(Probe::proxy_addr).collect();
    let sent = sysbench::read_write_in_turn(&addrs, &tables);
    // Stopped, each probe ends its run: the leader restores the server, every one writes its
    // traffic record.
    for p in &mut fleet.probes {
        p.signal(libc::SIGTERM);
        let status = p.wait_exit(Duration::from_secs(60)).expect("probe exits");
        assert!(status.success(), "{status:?}: {}", p.stderr_text());
    }
    let lost = db.sql("SHOW GLOBAL STATUS LIKE 'Performance_schema_digest_lost'");
    assert_eq!(lost.trim(), "Performance_schema_digest_lost\t0");
    let server: BTreeMap<String, u64> = db
        .sql(
            "SELECT DIGEST_TEXT, COUNT_STAR FROM performance_schema.events_statements_summary_by_digest \
             WHERE SCHEMA_NAME = 'psprobe_test' AND DIGEST_TEXT IS NOT NULL",
        )
        .lines()
        .map(|line| {
            let (text, count) = line.rsplit_once('\t').expect("two columns");
            (comparable(text), count.parse().expect("COUNT_STAR"))
        })
        .collect();

    let paths: Vec<&str> = logs.iter().map(|l| l.to_str().unwrap()).collect();
    let merged = report_json(&paths);
    let traffic = &merged["traffic"];
    assert_eq!(traffic["probes"], 3, "{traffic}");
    assert_eq!(traffic["missing"], serde_json::json!([]));
    let mut fleet: BTreeMap<String, u64> = BTreeMap::new();
    for d in traffic["digests"].as_array().expect("digests") {
        *fleet
            .entry(comparable(d["text"].as_str().unwrap()))
            .or_default() += d["count"].as_u64().unwrap();
    }
    assert!(server.len() >= 10, "{server:?}");
    assert!(
        fleet.len() > 20,
        "more shapes than a phase record lists: {}",
        fleet.len()
    );
    assert_eq!(fleet, server, "per shape: the merged report vs the server");
    assert_eq!(traffic["statements"].as_u64(), Some(sent));
    // The phase records alone hold only part of it (the measured windows).
    let measured: u64 = logs
        .iter()
        .flat_map(|l| slots(l).into_values())
        .map(|s| s.1)
        .sum();
    assert!(measured < sent, "measured {measured} of {sent}");
    println!(
        "merged traffic: {} shapes, {sent} statements = server; phase records measured {measured}",
        fleet.len()
    );
}
