//! `psprobe demo --quick` end to end (throwaway mariadbd, six scenarios with a pfsoff restart,
//! sysbench through psprobe), then the report in every format and the HTML page rendered by
//! headless Chromium.

mod common;

use std::path::Path;
use std::process::Command;

use common::cli::psprobe;

const SCENARIOS: [&str; 6] = [
    "pfsoff",
    "pfson_conoff_insoff",
    "pfson_conon_insoff",
    "pfson_conon_ins_sqlon",
    "pfson_conoff_inson",
    "pfson_conon_inson",
];

fn chromium() -> Option<&'static str> {
    ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .into_iter()
        .find(|p| Path::new(p).exists())
}

#[test]
fn demo_quick_then_reports_and_html_in_chromium() {
    let dir = tempfile::tempdir().expect("tempdir");
    let html = dir.path().join("report.html");
    let out = psprobe(&["demo", "--quick", "-o", html.to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "demo failed\n{stdout}\n{stderr}");
    for s in SCENARIOS {
        assert!(
            stdout.contains(&format!("| {s} |")),
            "headline row for {s}:\n{stdout}"
        );
    }
    assert!(stdout.contains("QPS change vs pfsoff"), "{stdout}");
    // The throwaway server runs here, so each phase recorded mysqld's CPU time.
    assert!(stdout.contains("server CPU µs/statement"), "{stdout}");
    let with_cpu = stdout
        .lines()
        .filter(|l| SCENARIOS.iter().any(|s| l.starts_with(&format!("| {s} |"))))
        .filter(|l| {
            l.trim_end_matches(" |")
                .rsplit(" | ")
                .next()
                .is_some_and(|c| c.parse::<f64>().is_ok())
        })
        .count();
    assert_eq!(
        with_cpu, 6,
        "server CPU per statement for every scenario:\n{stdout}"
    );

    // The phase log kept beside the report: 6 scenarios x 3 blocks.
    let log = dir.path().join("report.phases.jsonl");
    let text = std::fs::read_to_string(&log).expect("phase log kept");
    let phases = text
        .lines()
        .filter(|l| l.contains("\"kind\":\"phase\""))
        .count();
    assert_eq!(phases, 18, "{text}");
    assert!(text.contains("\"scenario\":\"pfsoff\"") && text.contains("\"restarted\":true"));

    let log = log.to_str().unwrap();
    let md = psprobe(&["report", log]);
    let md_text = String::from_utf8_lossy(&md.stdout);
    assert!(
        md.status.success(),
        "{}",
        String::from_utf8_lossy(&md.stderr)
    );
    assert!(md_text.contains("## Digests hurt most") && md_text.contains("## Timeline"));
    let csv = psprobe(&["report", log, "--format", "csv"]);
    let csv_text = String::from_utf8_lossy(&csv.stdout);
    assert!(csv_text.starts_with("scenario,metric,baseline,ratio"));
    assert_eq!(
        csv_text
            .lines()
            .filter(|l| l.contains(",throughput,pfsoff,"))
            .count(),
        5
    );
    let json = psprobe(&["report", log, "--format", "json"]);
    let value: serde_json::Value = serde_json::from_slice(&json.stdout).expect("report JSON");
    assert_eq!(
        value["analysis"]["baseline"], "pfsoff",
        "pfsoff is the baseline when present"
    );
    assert_eq!(value["timeline"].as_array().map(Vec::len), Some(18));
    let bad = psprobe(&["report", log, "--baseline", "nope"]);
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("nope"));
    let md99 = psprobe(&["report", log, "--confidence", "0.99"]);
    assert!(String::from_utf8_lossy(&md99.stdout).contains("QPS change vs pfsoff (99% CI)"));
    let percent = psprobe(&["report", log, "--confidence", "95"]);
    assert!(!percent.status.success());
    assert!(String::from_utf8_lossy(&percent.stderr).contains("not 95"));

    let page = std::fs::read_to_string(&html).expect("html written");
    assert!(!page.contains("<script"), "self-contained, no scripts");
    let Some(browser) = chromium() else {
        panic!("chromium is not installed: scripts/setup.sh installs it");
    };
    let profile = tempfile::tempdir().expect("profile dir");
    let common = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--enable-logging=stderr",
        "--v=0",
    ];
    let url = format!("file://{}", html.display());
    let dom = Command::new(browser)
        .args(common)
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(["--dump-dom", &url])
        .output()
        .expect("run chromium");
    let rendered = String::from_utf8_lossy(&dom.stdout);
    let log = String::from_utf8_lossy(&dom.stderr);
    assert!(dom.status.success(), "chromium failed: {log}");
    assert!(!log.contains("CONSOLE"), "console messages: {log}");
    assert_eq!(
        rendered.matches("class=\"bar\"").count(),
        6,
        "one bar per scenario"
    );
    assert!(rendered.contains("Throughput over time"));

    // The screenshot is kept for CI as an artifact.
    let artifacts = Path::new(env!("CARGO_TARGET_TMPDIR")).join("artifacts");
    std::fs::create_dir_all(&artifacts).expect("artifacts dir");
    let shot = artifacts.join("demo-report.png");
    let status = Command::new(browser)
        .args(common)
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args([
            "--window-size=1200,2600",
            &format!("--screenshot={}", shot.display()),
            &url,
        ])
        .output()
        .expect("run chromium");
    assert!(
        status.status.success(),
        "{}",
        String::from_utf8_lossy(&status.stderr)
    );
    assert!(std::fs::metadata(&shot)
        .map(|m| m.len() > 10_000)
        .unwrap_or(false));
    eprintln!("screenshot: {}", shot.display());
}
