//! `psprobe demo --quick --duet` end to end (throwaway mariadbd, the five runtime scenarios
//! switched fast, pfsoff as a duet on the server and a copy of its data, every instrument
//! group's cost with the advice, sysbench through psprobe), then the report in every format
//! and both HTML pages rendered by headless Chromium; no WARN line on the way, and progress on
//! stderr (a pipe) as one plain line per tenth of a stage.

mod common;

use common::cli::psprobe;

const SCENARIOS: [&str; 5] = [
    "pfson_conoff_insoff",
    "pfson_conon_insoff",
    "pfson_conon_ins_sqlon",
    "pfson_conoff_inson",
    "pfson_conon_inson",
];

#[test]
fn demo_quick_then_reports_and_html_in_chromium() {
    let dir = tempfile::tempdir().expect("tempdir");
    let html = dir.path().join("report.html");
    let out = psprobe(&[
        "demo",
        "--quick",
        "--duet",
        "--duet-time",
        "70s",
        "-o",
        html.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "demo failed\n{stdout}\n{stderr}");
    for s in SCENARIOS {
        assert!(
            stdout.contains(&format!("| {s} |")),
            "headline row for {s}:\n{stdout}"
        );
    }
    assert!(
        stdout.contains("statements/s change vs pfson_conoff_insoff"),
        "the runtime table: {stdout}"
    );
    // pfsoff as a duet (--duet, held to 70 s by --duet-time): the demo's server and a copy
    // of its data, one CPU and 2 clients each; its report beside the demo's, both sides'
    // logs holding only the pair's two scenarios, and the instrument groups measured after
    // it on the demo's server (below).
    assert!(
        stdout.contains(&format!(
            "demo: pfsoff in a duet: report {}",
            dir.path().join("report.pfsoff-duet.md").display()
        )),
        "{stdout}"
    );
    duet_report_beside(dir.path());
    // The instrument groups: each one's cost, the precision, the advice for the sample budget.
    for g in [
        "statements",
        "stages",
        "sync_waits",
        "memory",
        "transactions",
        "base",
    ] {
        assert!(stdout.contains(&format!("| {g}")), "{g}: {stdout}");
    }
    assert!(
        stdout.contains("Precision: every group within +-"),
        "{stdout}"
    );
    assert!(
        stdout.contains("Advice within 5% of statements/s"),
        "{stdout}"
    );
    // Planned restarts and switches never warn. (A long carryover is the machine's own: a
    // loaded one has it, and says so; the report's carryover profile shows it either way.)
    let warned: Vec<&str> = stdout
        .lines()
        .chain(stderr.lines())
        .filter(|l| l.contains("WARN") && !l.contains("the effect of a switch lasts past"))
        .collect();
    assert!(warned.is_empty(), "{warned:#?}");
    // stderr is a pipe here: progress comes as the quiet fallback, one plain line per tenth
    // of a stage (no bar redrawn in place), the first at 10%.
    let progress: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("demo: [") && l.ends_with("s left"))
        .collect();
    assert!(
        progress.iter().any(|l| l.contains("]  10%  ")),
        "no 10% progress line: {stderr}"
    );
    let stages = stdout
        .lines()
        .filter(|l| l.contains("; live page http://"))
        .count();
    assert!(
        stages >= 2 && progress.len() <= 10 * stages,
        "{stages} stages, {} progress lines: {progress:#?}",
        progress.len()
    );
    assert!(
        !stderr.contains('\r') && !stderr.contains('\u{1b}'),
        "a bar was drawn off a terminal: {stderr:?}"
    );
    // The throwaway server runs here, so each window recorded mysqld's CPU time: the CPU
    // column (second to last) holds a number on every row.
    assert!(stdout.contains("server CPU µs/statement"), "{stdout}");
    let rows: Vec<&str> = stdout
        .lines()
        .filter(|l| SCENARIOS.iter().any(|s| l.starts_with(&format!("| {s} |"))))
        .collect();
    assert_eq!(rows.len(), 5, "5 fast rows:\n{stdout}");
    for row in &rows {
        let cells: Vec<&str> = row.trim_end_matches(" |").split(" | ").collect();
        let cpu = cells[cells.len() - 2];
        assert!(cpu.parse::<f64>().is_ok(), "server CPU in {row}");
    }
    // The main job answers: the most instrumented runtime scenario's cost shows (server CPU
    // per statement, the most precise figure, moves whether or not the server is saturated).
    let inson = rows
        .iter()
        .find(|r| r.starts_with("| pfson_conon_inson |"))
        .expect("pfson_conon_inson row");
    assert!(
        inson.trim_end_matches(" |").ends_with('*'),
        "significant: {inson}"
    );

    // The phase log kept beside the report: segments of the fast schedule, one record per
    // scenario each.
    let log = dir.path().join("report.phases.jsonl");
    let text = std::fs::read_to_string(&log).expect("phase log kept");
    let records: Vec<serde_json::Value> = text
        .lines()
        .filter(|l| l.contains("\"kind\":\"phase\""))
        .map(|l| serde_json::from_str(l).expect("json"))
        .collect();
    assert!(records.iter().all(|r| r["schedule"] == "fast"));
    assert!(records.len() >= 5 * 8, "{} fast records", records.len());

    let log = log.to_str().unwrap();
    let md = psprobe(&["report", log]);
    let md_text = String::from_utf8_lossy(&md.stdout);
    assert!(
        md.status.success(),
        "{}",
        String::from_utf8_lossy(&md.stderr)
    );
    for section in [
        "## Digests hurt most",
        "## Timeline",
        "## Carryover after a switch",
        "## What the switches cost",
    ] {
        assert!(md_text.contains(section), "{section}: {md_text}");
    }
    let csv = psprobe(&["report", log, "--format", "csv"]);
    let csv_text = String::from_utf8_lossy(&csv.stdout);
    assert!(csv_text.starts_with("schedule,scenario,metric,baseline,ratio"));
    let count = |pattern: &str| csv_text.lines().filter(|l| l.contains(pattern)).count();
    assert_eq!(count(",throughput,pfson_conoff_insoff,"), 4, "{csv_text}");
    let json = psprobe(&["report", log, "--format", "json"]);
    let value: serde_json::Value = serde_json::from_slice(&json.stdout).expect("report JSON");
    assert_eq!(value["analysis"]["fast"]["baseline"], "pfson_conoff_insoff");
    assert!(value["analysis"]["slow"].is_null());
    assert_eq!(
        value["timeline"].as_array().map(Vec::len),
        Some(records.len())
    );
    let bad = psprobe(&["report", log, "--baseline", "nope"]);
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("nope"));
    let md99 = psprobe(&["report", log, "--confidence", "0.99"]);
    assert!(
        String::from_utf8_lossy(&md99.stdout).contains("change vs pfson_conoff_insoff (99% CI)")
    );
    let percent = psprobe(&["report", log, "--confidence", "95"]);
    assert!(!percent.status.success());
    assert!(String::from_utf8_lossy(&percent.stderr).contains("not 95"));

    let page = std::fs::read_to_string(&html).expect("html written");
    assert!(!page.contains("<script"), "self-contained, no scripts");
    // Layout at 1300 px, measured in the rendered page; the full-page screenshot is kept as
    // an artifact.
    let (found, shot) = common::page_layout::report_layout(&html, "demo-report.png");
    assert_eq!(found["problems"], serde_json::json!([]), "{found}");
    assert_eq!(
        found["firstUnderTitle"], true,
        "headline chart under the title: {found}"
    );
    assert!(found["charts"].as_u64() >= Some(4), "{found}");
    assert!(
        found["width"].as_u64() <= Some(1300),
        "no horizontal scroll: {found}"
    );
    assert_eq!(
        found["console"],
        serde_json::json!([]),
        "console messages: {found}"
    );
    assert_eq!(found["bars"], 5, "one bar per scenario: {found}");
    let titles = found["titles"].to_string();
    assert!(titles.contains("Throughput over time"), "{titles}");
    assert!(std::fs::metadata(&shot)
        .map(|m| m.len() > 10_000)
        .unwrap_or(false));
    eprintln!("layout {found}; screenshot: {}", shot.display());

    // The instrument groups' page: its chart first, a bar per group, the base and all groups.
    let groups_html = dir.path().join("report.groups.html");
    let (found, shot) = common::page_layout::report_layout(&groups_html, "demo-groups.png");
    assert_eq!(found["problems"], serde_json::json!([]), "{found}");
    assert_eq!(found["console"], serde_json::json!([]), "{found}");
    assert_eq!(found["firstUnderTitle"], true, "{found}");
    // The recommendation's SQL is one long line: it wraps instead of widening the page.
    assert!(
        found["width"].as_u64() <= Some(1300),
        "no horizontal scroll: {found}"
    );
    assert_eq!(
        found["bars"], 12,
        "MariaDB's ten groups (not MySQL's errors and statement_cpu), the base, all groups: \
         {found}"
    );
    assert!(found["titles"]
        .to_string()
        .contains("Cost by instrument group"));
    eprintln!("groups layout {found}; screenshot: {}", shot.display());
}

/// A `--duet-time` the duet cannot use is one line before anything starts: too short for an
/// interval, not a duration, or without `--duet`.
#[test]
fn demo_duet_time_mistakes_are_one_line_before_anything_starts() {
    for (args, says) in [
        (
            vec!["--duet", "--duet-time", "30s"],
            "--duet-time 30s is too short for a duet's interval: give at least 60s",
        ),
        (vec!["--duet", "--duet-time", "soon"], "not a duration"),
        // clap's own message: the missing flag on the lines after the first.
        (
            vec!["--duet-time", "2m"],
            "required arguments were not provided",
        ),
    ] {
        let mut all = vec!["demo", "--quick"];
        all.extend(args.iter().copied());
        let out = psprobe(&all);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?} was accepted");
        let first = err.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
        assert!(first.contains(says), "{args:?}: {err}");
        assert!(err.contains("--duet"), "{args:?}: {err}");
        assert!(
            !String::from_utf8_lossy(&out.stdout).contains("throwaway"),
            "{args:?} started a server"
        );
    }
}

/// The demo's pfsoff duet: its report names the pair with a pair count and an interval or
/// what more pairs would give one, says where each side ran, and both sides' logs alternate
/// the pair's two scenarios in the same phases.
fn duet_report_beside(dir: &std::path::Path) {
    let md = std::fs::read_to_string(dir.join("report.pfsoff-duet.md")).expect("duet report");
    let row = md
        .lines()
        .find(|l| l.starts_with("| pfsoff | pfson_conoff_insoff | "))
        .unwrap_or_else(|| panic!("the pair's row: {md}"));
    let cells: Vec<&str> = row.split(" | ").collect();
    let pairs: u32 = cells[2].trim().parse().unwrap_or(0);
    assert!(pairs >= 3, "pairs in 70 s: {row}");
    assert!(
        cells[3].contains('±'),
        "an interval, or how many more pairs give one: {row}"
    );
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cpus >= 2 {
        assert!(md.contains("ran on CPUs"), "{md}");
    }
    assert!(md.contains("2 clients each"), "half the demo's 4: {md}");
    // Each side's phases by number: (phase, scenario).
    let scenarios = |side: &str| -> std::collections::BTreeMap<u64, String> {
        std::fs::read_to_string(dir.join(format!("report.pfsoff-duet.{side}.phases.jsonl")))
            .expect("a side's log")
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter(|r| r["kind"] == "phase")
            .filter_map(|r| Some((r["phase"].as_u64()?, r["scenario"].as_str()?.to_string())))
            .collect()
    };
    let (a, b) = (scenarios("a"), scenarios("b"));
    let together: Vec<(&String, &String)> = a
        .iter()
        .filter_map(|(phase, x)| Some((x, b.get(phase)?)))
        .collect();
    assert!(together.len() >= 2 * pairs as usize, "{a:?} / {b:?}");
    for (x, y) in together {
        assert!(
            x != y
                && [x, y]
                    .iter()
                    .all(|s| *s == "pfsoff" || *s == "pfson_conoff_insoff"),
            "every phase runs the pair's two scenarios, one a side: {a:?} / {b:?}"
        );
    }
}

/// SIGTERM while the demo's schedule runs: one error line that says it was interrupted, and
/// the throwaway server (in a session of its own, so a signal to psprobe does not reach it)
/// stopped with its folder removed.
#[test]
fn a_demo_stopped_by_sigterm_leaves_no_server_behind() {
    use common::signalled::{assert_interrupted, assert_servers_gone, Signalled};

    let dir = tempfile::tempdir().expect("tempdir");
    let html = dir.path().join("report.html");
    let mut demo = Signalled::start(&[
        "demo".as_ref(),
        "--quick".as_ref(),
        "-o".as_ref(),
        html.as_os_str(),
    ]);
    demo.wait_for_line("threads through psprobe", 120);
    let (status, err, seen) = demo.terminate();
    assert_interrupted(status, &err);
    assert_eq!(
        assert_servers_gone(seen.iter().map(String::as_str)),
        1,
        "{seen:?}"
    );
}
