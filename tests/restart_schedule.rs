//! Scenarios entered through a server restart, against a real mariadbd restarted by a real
//! hook under a sysbench load that starts again after each restart:
//! - a restart command that fails once, hangs once (past --restart-timeout) and once brings
//!   the server back with the wrong setting: each of those phases is left out and named in the
//!   report, the schedule goes on, and the settings end as found;
//! - the restart path's A/A: pfson_conoff_insoff against its own startup twin, both entered by
//!   restart, holds 0 in its 99% interval (a second run with another seed decides a miss, as in
//!   aa_real_traffic.rs), every restart is timed and the settle time comes from the profile;
//! - planned restarts log an info line each and no WARN;
//! - a restart past --restart-timeout is stopped with its process group and one that exits 0
//!   with the server down is said while psprobe waits, on every server (MySQL 9.7 too).
//!
//! Kept apart: each runs a minute or two of restarts under load.

mod common;

use common::controller::{flags, poll, setup_dump, start_controller};
use common::restart::{restart_script_with, Faults, Reaper};
use common::server::{Flavor, Options, Server};
use common::sysbench::{self, Restarting};

const TABLES: [&str; 2] = ["--tables=2", "--table-size=2000"];

fn prepared_on(flavor: Flavor) -> Server {
    let db = Server::start(flavor, Options::default());
    sysbench::run(&db.addr(), "oltp_read_only", "prepare", &TABLES);
    db
}

/// `psprobe report LOG --format json ARGS`, parsed, and the markdown.
fn report(log: &std::path::Path, args: &[&str]) -> (serde_json::Value, String) {
    let run = |format: &str| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_psprobe"))
            .arg("report")
            .arg(log)
            .args(["--format", format])
            .args(args)
            .output()
            .expect("psprobe report runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    (serde_json::from_str(&run("json")).expect("JSON"), run("md"))
}

/// Runs `spec` (a slow schedule) with the restart hook under load until the controller is
/// done; returns psprobe's stderr.
fn run_slow(db: &Server, dir: &std::path::Path, spec: &str, faults: Faults) -> String {
    let hook = restart_script_with(db, dir, faults);
    let mut args = flags(spec, dir);
    args.extend([
        "--restart-cmd".to_string(),
        format!("sh {} {{pfs}} {{opts}}", hook.display()),
    ]);
    let probe = start_controller(db, &args);
    let load = Restarting::start(
        probe.proxy_addr(),
        "oltp_read_only",
        &[TABLES[0], TABLES[1], "--threads=4"],
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(300);
    while !probe.stderr_text().contains("controller finished") {
        assert!(
            std::time::Instant::now() < deadline,
            "no end of the schedule within 300 s:\n{}",
            probe.stderr_text()
        );
        std::thread::sleep(std::time::Duration::from_millis(100)); // poll interval
    }
    load.finish();
    probe.stderr_text()
}

#[test]
fn failed_hung_and_wrong_restarts_are_left_out_named_and_the_settings_end_as_found() {
    let db = prepared_on(Flavor::MariaDb1011);
    let dir = tempfile::tempdir().unwrap();
    let _reaper = Reaper(dir.path().to_path_buf());
    let before = setup_dump(&db);
    // Calls 2, 4 and 6 of the hook misbehave; the others restart.
    let faults = Faults {
        fail_at: Some(2),
        hang_at: Some(4),
        ignore_pfs_at: Some(6),
        ..Faults::default()
    };
    let stderr = run_slow(
        &db,
        dir.path(),
        "--scenarios pfsoff,pfson_conoff_insoff --slow-blocks 5 --slow-phase 3s \
         --restart-settle 1s --restart-timeout 8s --seed 4",
        faults,
    );
    let (r, md) = report(&dir.path().join("phases.jsonl"), &[]);
    let warnings = r["analysis"]["slow"]["warnings"].to_string();
    for why in [
        "simulated failure of the restart command",
        "did not finish within 8s",
        "came back with performance_schema=",
    ] {
        assert!(
            warnings.contains(why) && md.contains(why),
            "{why}:\n{warnings}\n{stderr}"
        );
    }
    assert!(warnings.contains("left out"), "{warnings}");
    // The schedule went on: the other pairs measured.
    let blocks = r["analysis"]["slow"]["blocks"].as_u64().unwrap();
    assert!(blocks >= 2, "{blocks} pairs measured\n{stderr}");
    // Back as found: performance_schema ON, every row as before.
    poll("the server back with its settings", 60, || {
        (db.try_sql(common::controller::SETUP_DUMP).ok()? == before).then_some(())
    });
}

crate::per_flavor!(a_restart_past_its_timeout_is_stopped_with_its_group_and_a_silent_one_is_said);

/// The case 3: a restart command past --restart-timeout used to be left running, and
/// brought the server back with performance_schema OFF a minute later, after psprobe had moved
/// on. Now it is stopped with its process group (nothing it would have started comes up), the
/// server's state is established before anything else, and the settings end as found. And a
/// command that exits 0 with the server down is said while psprobe waits, not after 120 s of
/// silence.
fn a_restart_past_its_timeout_is_stopped_with_its_group_and_a_silent_one_is_said(flavor: Flavor) {
    let db = prepared_on(flavor);
    let dir = tempfile::tempdir().unwrap();
    let _reaper = Reaper(dir.path().to_path_buf());
    let before = setup_dump(&db);
    // Call 1 stops the server and would start it 14 s later; call 3 stops it and exits 0.
    let faults = Faults {
        slow_at: Some((1, 14)),
        down_at: Some(3),
        ..Faults::default()
    };
    let t0 = std::time::Instant::now();
    let stderr = run_slow(
        &db,
        dir.path(),
        "--scenarios pfsoff,pfson_conoff_insoff --slow-blocks 3 --slow-phase 3s \
         --restart-settle 1s --restart-timeout 12s --seed 4",
        faults,
    );
    assert!(
        stderr.contains("did not finish within 12s; it was stopped with its process group"),
        "{stderr}"
    );
    assert!(
        stderr.contains("the restart command finished") && stderr.contains("is not back yet"),
        "{stderr}"
    );
    // Past the moment the killed command would have started its server: none came up.
    if let Some(wait) = std::time::Duration::from_secs(16).checked_sub(t0.elapsed()) {
        std::thread::sleep(wait); // until then, the server it would have started
    }
    let pids = std::fs::read_to_string(dir.path().join("pids")).unwrap_or_default();
    let calls: u32 = std::fs::read_to_string(dir.path().join("calls"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert_eq!(
        pids.lines().count() as u32,
        calls - 2,
        "one server per call, none from the killed or the silent one"
    );
    poll("the server back with its settings", 60, || {
        (db.try_sql(common::controller::SETUP_DUMP).ok()? == before).then_some(())
    });
    assert_eq!(db.sql("SELECT @@performance_schema").trim(), "1");
}

#[test]
fn the_restart_path_a_a_holds_zero_and_planned_restarts_do_not_warn() {
    let db = prepared_on(Flavor::MariaDb1011);
    let before = setup_dump(&db);
    let mut seen = Vec::new();
    // The hook's servers live until the last check below: reaping them at the
    // end of a loop pass would leave the port empty for the final dump.
    let mut kept = Vec::new();
    for seed in [5, 9] {
        let dir = tempfile::tempdir().unwrap();
        let reaper = Reaper(dir.path().to_path_buf());
        let spec = format!(
            "--scenarios pfson_conoff_insoff,pfson_conoff_insoff@startup --slow-blocks 7 \
             --slow-phase 5s --seed {seed}"
        );
        let stderr = run_slow(&db, dir.path(), &spec, Faults::default());
        // Planned restarts: one info line each, no warning of any kind.
        let warns: Vec<&str> = stderr.lines().filter(|l| l.contains(" WARN ")).collect();
        assert!(warns.is_empty(), "{warns:#?}");
        let restarts = stderr
            .lines()
            .filter(|l| l.contains("restarted the server into"))
            .count();
        assert!(restarts >= 14, "{restarts} restart lines:\n{stderr}");
        let (r, md) = report(&dir.path().join("phases.jsonl"), &["--confidence", "0.99"]);
        assert!(md.contains("## Restarts"), "{md}");
        let profile = &r["analysis"]["restarts"];
        assert!(profile["phases"].as_u64().unwrap() >= 12, "{profile}");
        for part in profile["parts"].as_array().unwrap() {
            assert!(part["first_query_ms"].as_f64().unwrap() > 0.0, "{part}");
        }
        let e = r["analysis"]["slow"]["estimates"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["metric"] == "throughput")
            .expect("the twin compared")
            .clone();
        let (lo, hi) = (e["ci_low"].as_f64(), e["ci_high"].as_f64());
        eprintln!("seed {seed}: startup twin vs runtime: {e}");
        let mut holds = lo.zip(hi).is_some_and(|(lo, hi)| lo <= 0.0 && 0.0 <= hi);
        if lo.is_none() || hi.is_none() {
            // Too wide to say anything on a noisy host: no interval (no claim of a
            // difference), what it needs instead, never significant.
            assert!(e["needs"]["blocks"].as_u64().is_some(), "{e}");
            assert_eq!(e["significant"].as_bool(), Some(false), "{e}");
            holds = true;
        } else {
            assert_eq!(
                e["significant"].as_bool(),
                Some(!holds),
                "significant agrees with the interval: {e}"
            );
        }
        seen.push(holds);
        // Reapers first, so each drops (kills its servers) before its dir goes.
        kept.push((reaper, dir));
        if holds {
            break;
        }
    }
    assert!(
        seen.contains(&true),
        "the A/A claims no difference (its 99% interval holds 0, or it has none): {seen:?}"
    );
    assert_eq!(setup_dump(&db), before);
}
