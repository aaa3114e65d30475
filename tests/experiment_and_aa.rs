//! `psprobe experiment` gives tables shaped like the seed study's, and the probe's per-phase
//! throughput change agrees with sysbench's own. (The A/A test is in aa_real_traffic.rs.)

mod common;

use std::process::Command;

use common::cli::psprobe;
use common::mariadb::MariaDb;
use common::probe::Probe;
use common::sysbench;

#[test]
fn experiment_two_concurrencies_two_scenarios() {
    let dir = tempfile::tempdir().expect("tempdir");
    let md = dir.path().join("exp.md");
    // A small published table: the seed study's read-only rates at 1 and 2 threads, and a
    // level this study does not run.
    let published = dir.path().join("published.csv");
    std::fs::write(
        &published,
        "workload,concurrency,scenario,qps\noltp_read_only,1,pfson_conoff_insoff,3209\noltp_read_only,1,pfson_conon_inson,3116\noltp_read_only,2,pfson_conoff_insoff,8668\noltp_read_only,2,pfson_conon_inson,8313\noltp_read_only,4,pfson_conon_inson,14053\n",
    )
    .expect("write the published table");
    let out = psprobe(&[
        "experiment",
        "--workloads",
        "oltp_read_only",
        "--threads",
        "1,2",
        "--scenarios",
        "pfson_conoff_insoff,pfson_conon_inson",
        "--duration",
        "12s",
        "--compare",
        published.to_str().unwrap(),
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
    let rows = seed_table_rows(&doc);
    assert!(
        rows[1].contains("baseline (pfson_conoff_insoff)") && rows[1].contains('%'),
        "{}",
        rows[1]
    );
    // Every cell as CSV and JSON beside the report, the same figures as its tables.
    let csv = std::fs::read_to_string(dir.path().join("exp.cells.csv")).expect("cells.csv");
    let lines: Vec<&str> = csv.lines().collect();
    assert!(lines[0].starts_with("workload,threads,scenario,"), "{csv}");
    assert_eq!(lines.len(), 1 + 2 * 2, "two levels x two scenarios: {csv}");
    let json: Vec<serde_json::Value> = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("exp.cells.json")).expect("cells.json"),
    )
    .expect("cells.json parses");
    assert_eq!(json.len(), 4);
    for (qps_row, threads) in [(rows[0], 1), (rows[2], 2)] {
        let table: Vec<f64> = qps_row
            .split('|')
            .filter_map(|c| c.trim().parse().ok())
            .collect();
        for (k, scenario) in ["pfson_conoff_insoff", "pfson_conon_inson"]
            .iter()
            .enumerate()
        {
            let cell = json
                .iter()
                .find(|c| c["threads"] == threads && c["scenario"] == *scenario)
                .unwrap_or_else(|| panic!("{scenario} at {threads}: {json:?}"));
            let qps = cell["qps"].as_f64().unwrap();
            assert!((qps - table[k + 1]).abs() <= 0.5, "{qps} vs {qps_row}");
            assert_eq!(cell["change_percent"].is_null(), k == 0, "{cell}");
        }
    }
    published_beside(&doc, &json);
    chart_in_chromium(&dir.path().join("exp.html"), &json);
}

/// The comparison with the published table: per level psprobe's change, the published one
/// re-based (3116/3209 and 8313/8668), their difference, and the rank agreement.
fn published_beside(doc: &str, json: &[serde_json::Value]) {
    assert!(
        doc.contains("## oltp_read_only beside the published table"),
        "{doc}"
    );
    assert!(
        doc.contains("| threads | pfson_conon_inson vs pfson_conoff_insoff | rank agreement |"),
        "{doc}"
    );
    for (threads, published) in [(1, 3116.0 / 3209.0), (2, 8313.0 / 8668.0)] {
        let published = (published - 1.0) * 100.0;
        let ours = json
            .iter()
            .find(|c| c["threads"] == threads && c["scenario"] == "pfson_conon_inson")
            .and_then(|c| c["change_percent"].as_f64())
            .expect("psprobe's change");
        let row = doc
            .lines()
            .find(|l| l.starts_with(&format!("| {threads} | {ours:+.2}%")))
            .unwrap_or_else(|| panic!("no comparison row for {threads}: {doc}"));
        assert!(
            row.contains(&format!(" / {published:+.2}% ({:+.2}", ours - published)),
            "{row}"
        );
        // Two scenarios: the same order gives tau +1, the other -1; p is 1 either way.
        assert!(
            row.contains("tau +1.00, p 1.000 (2)") || row.contains("tau -1.00, p 1.000 (2)"),
            "{row}"
        );
    }
    assert!(doc.contains("did not run (not compared): 4."), "{doc}");
}

/// The study's page in headless Chromium at 1300 px: its one chart under the title, a point
/// per level whose cell has an interval (a 12 s cell may have none: it is listed under the
/// chart with what it needs instead) and a published point per level, no text over another,
/// no console message.
fn chart_in_chromium(html: &std::path::Path, cells: &[serde_json::Value]) {
    let page = std::fs::read_to_string(html).expect("the study's page");
    assert!(!page.contains("<script"), "self-contained, no scripts");
    let (found, shot) = common::page_layout::report_layout(html, "experiment-study.png");
    assert_eq!(found["problems"], serde_json::json!([]), "{found}");
    assert_eq!(found["console"], serde_json::json!([]), "{found}");
    assert_eq!(found["charts"], 1, "one chart per workload: {found}");
    assert_eq!(found["firstUnderTitle"], true, "{found}");
    assert!(
        found["titles"]
            .to_string()
            .contains("oltp_read_only: change in statements/s by client threads"),
        "{found}"
    );
    let compared: Vec<&serde_json::Value> = cells
        .iter()
        .filter(|c| c["scenario"] == "pfson_conon_inson")
        .collect();
    assert_eq!(compared.len(), 2);
    let drawn = compared.iter().filter(|c| c["needs"].is_null()).count();
    assert_eq!(
        found["points"], drawn,
        "one point per level with an interval: {found}"
    );
    for c in compared.iter().filter(|c| !c["needs"].is_null()) {
        assert!(
            page.contains(&format!(
                "<li>{} threads, pfson_conon_inson vs",
                c["threads"]
            )),
            "a cell without an interval is listed under the chart: {c}"
        );
    }
    assert_eq!(
        found["published"], 2,
        "a published point per level: {found}"
    );
    assert!(
        drawn == 0 || found["bands"].as_u64() >= Some(1),
        "interval bands: {found}"
    );
    assert!(found["width"].as_u64() <= Some(1300), "{found}");
    eprintln!("study page layout {found}; screenshot: {}", shot.display());
}

/// The oltp_read_only table of a study over 1 and 2 threads and two scenarios, shaped like
/// the seed's tables: per concurrency a QPS row (every figure above 0), then a change row.
/// Returns its four rows.
fn seed_table_rows(doc: &str) -> Vec<&str> {
    assert!(doc.contains("## oltp_read_only"), "{doc}");
    let header = "| threads | pfson_conoff_insoff | pfson_conon_inson | sysbench QPS |";
    assert!(doc.contains(header), "{doc}");
    // The workload's own table only (a comparison with a published table follows it).
    let section = doc
        .split("## oltp_read_only\n")
        .nth(1)
        .and_then(|rest| rest.split("\n## ").next())
        .unwrap_or("");
    let rows: Vec<&str> = section
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
    rows
}

/// sysbench's QPS over `[from, to]` (seconds since it started), from its 1-second interval
/// lines, each weighted by how much of it falls in the window.
fn sysbench_qps_in(intervals: &[(f64, f64)], from: f64, to: f64) -> f64 {
    let (mut sum, mut weight) = (0.0, 0.0);
    for &(end, qps) in intervals {
        let overlap = (end.min(to) - (end - 1.0).max(from)).max(0.0);
        sum += qps * overlap;
        weight += overlap;
    }
    sum / weight.max(1e-9)
}

#[test]
fn throughput_change_agrees_with_sysbench_per_phase_qps() {
    let db = MariaDb::start_default();
    let tables = ["--tables=2", "--table-size=2000"];
    sysbench::run(&db.addr(), "oltp_read_only", "prepare", &tables);
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("phases.jsonl");
    let args = [
        "--scenarios",
        "pfson_conoff_insoff,pfson_conon_inson",
        "--phase",
        "6s",
        "--settle",
        "2s",
        "--blocks",
        "3",
        "--seed",
        "9",
        "--phase-log",
        log.to_str().unwrap(),
        "--state-dir",
        dir.path().to_str().unwrap(),
    ];
    let dsn = db.dsn();
    let probe = Probe::start_with_env(&db.addr(), &args, &[("PSPROBE_CONTROLLER_DSN", &dsn)]);
    // sysbench's interval lines are stamped with the wall clock as they arrive (sysbench
    // flushes each one), so they line up with the phase log's windows.
    let now_ms = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("clock")
            .as_millis() as f64
    };
    let (host, port) = common::cli::split_addr(probe.proxy_addr());
    let mut child = Command::new("sysbench")
        .arg("oltp_read_only")
        .args([
            format!("--mysql-host={host}"),
            format!("--mysql-port={port}"),
        ])
        .args([
            "--mysql-user=psprobe",
            "--mysql-password=psprobe-pass",
            "--mysql-db=psprobe_test",
        ])
        .args(tables)
        // Longer than the schedule (3 blocks of two 6 s phases: 36 s, then the restore), which
        // must end while sysbench still runs (checked below).
        .args(["--threads=2", "--time=42", "--report-interval=1", "run"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("run sysbench");
    let stdout = child.stdout.take().expect("piped");
    let mut intervals: Vec<(f64, f64)> = Vec::new();
    for line in std::io::BufRead::lines(std::io::BufReader::new(stdout)).map_while(Result::ok) {
        let at = now_ms();
        if let Some(qps) = line
            .strip_prefix('[')
            .and_then(|l| l.split("qps: ").nth(1))
            .and_then(|q| q.split_whitespace().next())
            .and_then(|q| q.parse::<f64>().ok())
        {
            intervals.push((at / 1000.0, qps));
        }
    }
    assert!(child.wait().expect("sysbench").success());
    assert!(intervals.len() >= 30, "{intervals:?}");
    assert_eq!(
        probe.scrape().get("psprobe_controller_leader", &[]),
        0.0,
        "the schedule was still running when sysbench stopped:\n{}",
        probe.stderr_text()
    );
    let phases: Vec<serde_json::Value> = std::fs::read_to_string(&log)
        .expect("phase log")
        .lines()
        .map(|l| serde_json::from_str(l).expect("json"))
        .filter(|v: &serde_json::Value| v["kind"] == "phase")
        .collect();
    assert_eq!(phases.len(), 6);
    // sysbench's interval lines cover every measured window (the QPS compared below is theirs).
    let ms = |p: &serde_json::Value, key: &str| p[key].as_f64().expect(key) / 1000.0;
    let first = intervals[0].0 - 1.0;
    let last = intervals[intervals.len() - 1].0;
    let from = phases
        .iter()
        .map(|p| ms(p, "measure_from_ms"))
        .fold(f64::MAX, f64::min);
    let to = phases
        .iter()
        .map(|p| ms(p, "measure_to_ms"))
        .fold(f64::MIN, f64::max);
    eprintln!(
        "sysbench from {:.1} s before the first window to {:.1} s after the last",
        from - first,
        last - to
    );
    assert!(
        first <= from && to <= last,
        "sysbench's intervals {first:.1}..{last:.1} do not cover the windows {from:.1}..{to:.1}"
    );
    // Per block: sysbench's QPS ratio of pfson_conon_inson to pfson_conoff_insoff.
    let mut log_ratios = Vec::new();
    for block in 0..3u64 {
        let qps = |scenario: &str| {
            let p = phases
                .iter()
                .find(|p| p["block"] == block && p["scenario"] == scenario)
                .expect("phase of the block");
            let rel = |key: &str| p[key].as_f64().unwrap() / 1000.0;
            let sb = sysbench_qps_in(&intervals, rel("measure_from_ms"), rel("measure_to_ms"));
            let statements: f64 = p["commands"]
                .as_array()
                .expect("commands")
                .iter()
                .filter(|c| c["command"] == "query" || c["command"] == "stmt_execute")
                .map(|c| c["count"].as_f64().unwrap_or(0.0))
                .sum();
            let seconds = rel("measure_to_ms") - rel("measure_from_ms");
            eprintln!(
                "block {block} {scenario}: {:.2} s, psprobe {:.0} qps, sysbench {sb:.0} qps",
                seconds,
                statements / seconds
            );
            sb
        };
        log_ratios.push((qps("pfson_conon_inson") / qps("pfson_conoff_insoff")).ln());
    }
    let sysbench_change = (log_ratios.iter().sum::<f64>() / 3.0).exp() - 1.0;

    let out = psprobe(&["report", log.to_str().unwrap(), "--format", "json"]);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let probe_change = report["analysis"]["fast"]["estimates"]
        .as_array()
        .expect("estimates")
        .iter()
        .find(|e| e["scenario"] == "pfson_conon_inson" && e["metric"] == "throughput")
        .and_then(|e| e["ratio"].as_f64())
        .expect("throughput estimate");
    let gap = (probe_change - sysbench_change).abs() * 100.0;
    eprintln!(
        "throughput change: psprobe {:+.2}%, sysbench {:+.2}%",
        probe_change * 100.0,
        sysbench_change * 100.0
    );
    assert!(
        gap <= 2.0,
        "psprobe {probe_change:+.4} vs sysbench {sysbench_change:+.4}: {gap:.2} points apart"
    );
}

/// Each mistake in a study's thread list or budget is one line, before any server starts
/// (issue 21): nothing is written beside the report either.
#[test]
fn experiment_bad_threads_and_budget_are_one_line_before_anything_starts() {
    let dir = tempfile::tempdir().expect("tempdir");
    let md = dir.path().join("study.md");
    let md = md.to_str().unwrap();
    // Published tables with a mistake each, kept apart from the report's directory.
    let tables = tempfile::tempdir().expect("tempdir");
    let table = |name: &str, text: &str| {
        let path = tables.path().join(name);
        std::fs::write(&path, text).expect("write a table");
        path.to_str().unwrap().to_string()
    };
    let no_value = table(
        "no-value.csv",
        "workload,threads,scenario\noltp_read_only,1,pfsoff\n",
    );
    let no_scenario = table(
        "no-scenario.csv",
        "workload,threads,qps\noltp_read_only,1,5\n",
    );
    let unknown = table(
        "unknown.csv",
        "workload,threads,scenario,qps\noltp_read_only,1,pfs_everything,5\n",
    );
    for (args, says) in [
        (vec!["--threads", ""], "--threads is empty"),
        (
            vec!["--threads", "1,0,8"],
            "0 client threads measure nothing",
        ),
        (
            vec!["--threads", "1,-8"],
            "\"-8\" is not a number of client threads",
        ),
        (vec!["--threads", "1,8,1"], "1 is listed twice"),
        (vec!["--threads", "1,2,...,1000"], "names 1000 levels"),
        (
            vec!["--threads", "2,6,...,20"],
            "2,6,...,20 does not reach 20",
        ),
        (
            vec!["--threads", "1,8,100000"],
            "100000 client threads are more than",
        ),
        (
            vec!["--threads", "1,2,4,...,1024", "--budget", "10m"],
            "--budget 10m is too short for 33 cells",
        ),
        (
            vec!["--budget", "10m", "--duration", "60s"],
            "cannot be used with",
        ),
        (
            vec!["--compare", "/nonexistent/published.csv"],
            "cannot read --compare /nonexistent/published.csv",
        ),
        (
            vec!["--compare", no_value.as_str()],
            "has neither a qps nor a change_percent column",
        ),
        (
            vec!["--compare", no_scenario.as_str()],
            "has no scenario column",
        ),
        (
            vec!["--compare", unknown.as_str()],
            "line 2: unknown scenario \"pfs_everything\"",
        ),
    ] {
        let mut all = vec!["experiment", "-o", md];
        all.extend(args.iter().copied());
        let out = psprobe(&all);
        let err = String::from_utf8_lossy(&out.stderr);
        let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
        assert!(!out.status.success(), "{args:?} was accepted");
        assert!(
            lines.first().is_some_and(|l| l.contains(says)),
            "{args:?}: {err}"
        );
        if !says.contains("cannot be used with") {
            // clap's own conflict message has a usage block; ours are one line.
            assert_eq!(lines.len(), 1, "{args:?}: one clear line: {err}");
        }
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            !stdout.contains("throwaway"),
            "{args:?} started a server: {stdout}"
        );
    }
    // The page goes to STEM.html: a report named so would be overwritten.
    let html = dir.path().join("study.html");
    let out = psprobe(&["experiment", "-o", html.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "-o study.html was accepted");
    assert!(
        err.contains("would be overwritten by the study's HTML page")
            && err.trim().lines().count() == 1,
        "{err}"
    );
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

/// Stops the server a killed study left, whatever the test's outcome.
struct LeftServer(Option<std::path::PathBuf>);

impl Drop for LeftServer {
    fn drop(&mut self) {
        if let Some(dir) = &self.0 {
            let script = dir.join("server.sh");
            if script.exists() {
                let _ = Command::new("sh").arg(&script).arg("stop").status();
            }
        }
    }
}

/// True when some process's command line names `dir` (the left server's datadir is in it).
fn process_in(dir: &str) -> bool {
    common::procfs::any_process_with(dir)
}

/// A study killed (SIGKILL) during its second run goes on there with `--resume`: the first
/// run's cells are kept as they were, the server the killed study left running is stopped,
/// and the report has the tables of a study never interrupted; without `--resume` the study
/// is not overwritten (issue 21).
#[test]
fn experiment_killed_in_its_second_run_resumes_there() {
    use std::time::{Duration, Instant};
    let dir = tempfile::tempdir().expect("tempdir");
    let md = dir.path().join("study.md");
    let args = |resume: bool| {
        let mut a = vec![
            "experiment",
            "--workloads",
            "oltp_read_only",
            "--threads",
            "1,2",
            "--scenarios",
            "pfson_conoff_insoff,pfson_conon_inson",
            "--duration",
            "12s",
            "-o",
            md.to_str().unwrap(),
        ];
        if resume {
            a.push("--resume");
        }
        a
    };
    let mut study = Command::new(env!("CARGO_BIN_EXE_psprobe"))
        .args(args(false))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start the study");
    // The second run is under way once its phase log holds a phase.
    let second = dir.path().join("study-oltp_read_only-2.phases.jsonl");
    let deadline = Instant::now() + Duration::from_secs(240);
    while !std::fs::read_to_string(&second).is_ok_and(|t| t.contains("\"kind\":\"phase\"")) {
        assert!(Instant::now() < deadline, "the second run never began");
        assert!(
            study.try_wait().expect("poll the study").is_none(),
            "the study ended before its second run"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    study.kill().expect("SIGKILL the study");
    study.wait().expect("reap the study");

    let state: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("study.study.json")).expect("study.json"),
    )
    .expect("study.json parses");
    let left = state["server_dir"]
        .as_str()
        .expect("the running server is recorded")
        .to_string();
    let _guard = LeftServer(Some(left.clone().into()));
    assert!(process_in(&left), "the killed study's server runs on");
    let cells = || -> Vec<serde_json::Value> {
        serde_json::from_str(
            &std::fs::read_to_string(dir.path().join("study.cells.json")).expect("cells.json"),
        )
        .expect("cells.json parses")
    };
    let before = cells();
    assert_eq!(before.len(), 2, "the first run's two scenarios: {before:?}");
    assert!(before.iter().all(|c| c["threads"] == 1), "{before:?}");

    // Not overwritten without --resume.
    let out = psprobe(&args(false));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("add --resume"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "one clear line: {err}");

    let out = psprobe(&args(true));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("stopping the server the interrupted study left running"),
        "{stdout}"
    );
    assert!(
        stdout.contains("run 1/2: oltp_read_only, 1 threads: finished before, kept"),
        "{stdout}"
    );
    assert!(!process_in(&left), "the left server is stopped");
    assert!(
        !std::path::Path::new(&left).exists(),
        "and its directory removed"
    );
    let after = cells();
    assert_eq!(after.len(), 4, "{after:?}");
    assert_eq!(after[..2], before[..], "the first run's cells as they were");
    assert!(after[2..].iter().all(|c| c["threads"] == 2), "{after:?}");
    // The tables of a study never interrupted: a QPS row and a change row per level.
    let doc = std::fs::read_to_string(&md).expect("report");
    seed_table_rows(&doc);
    // The server the resumed part started is gone with it.
    let state: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("study.study.json")).expect("study.json"),
    )
    .expect("study.json parses");
    assert!(state["server_dir"].is_null(), "{state}");
}

/// `psprobe experiment --server` on MySQL 9.7 (the Debian sid tree, run with chroot): the
/// study's throwaway server is MySQL, the tables are filled, and the server is gone afterwards
/// (issue 33, item 5). A `--server` that cannot serve is one line before anything starts.
#[test]
fn experiment_runs_on_mysql_and_a_bad_server_is_one_line() {
    let tree = common::server::Flavor::MySql97
        .tree(std::path::Path::new(env!("CARGO_MANIFEST_DIR")))
        .expect("MySQL runs in a tree");
    let dir = tempfile::tempdir().expect("tempdir");
    // A dot in the report's stem stays in its neighbours' names (study-9.7.html, not study-9.html).
    let md = dir.path().join("mysql-9.7.md");
    let out = psprobe(&[
        "experiment",
        "--server",
        tree.to_str().unwrap(),
        "--workloads",
        "oltp_read_only",
        "--threads",
        "2",
        "--scenarios",
        "pfson_conoff_insoff,pfson_conon_inson",
        "--duration",
        "12s",
        "-o",
        md.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("starting a throwaway MySQL server") && stdout.contains("Ver 9."),
        "{stdout}"
    );
    let json: Vec<serde_json::Value> = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("mysql-9.7.cells.json")).expect("cells.json"),
    )
    .expect("cells.json parses");
    assert_eq!(json.len(), 2, "{json:?}");
    assert!(
        dir.path().join("mysql-9.7.html").exists(),
        "the page beside it"
    );
    assert!(
        json.iter().all(|c| c["qps"].as_f64().unwrap() > 0.0),
        "{json:?}"
    );
    // The throwaway's folder was in the tree's /tmp: it is gone, and no server runs on it (its
    // command line names the folder as seen inside the tree).
    let data = stdout
        .lines()
        .find_map(|l| l.split("(data in ").nth(1))
        .map(|d| std::path::PathBuf::from(d.trim_end_matches(')')))
        .unwrap_or_else(|| panic!("no data folder in {stdout}"));
    let tree = std::fs::canonicalize(&tree).expect("the tree");
    let seen = std::path::Path::new("/").join(data.strip_prefix(&tree).expect("inside the tree"));
    assert!(!data.exists(), "{} left", data.display());
    assert!(
        !process_in(&seen.display().to_string()),
        "a server was left"
    );

    for (server, said) in [
        ("postgres", "--server postgres: not mariadb, mysql"),
        ("/bin/echo", "/bin/echo is not a MySQL or MariaDB server"),
    ] {
        let out = psprobe(&["experiment", "--server", server, "-o", md.to_str().unwrap()]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{err}");
        let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
        assert_eq!(lines.len(), 1, "{err}");
        assert!(lines[0].contains(said), "{err}");
    }
}
