//! grafana/prometheus/psprobe.rules.yml: Prometheus accepts the rules (`promtool check rules`),
//! every alert fires on the series that should fire it and stays quiet on the ones that should
//! not (`promtool test rules` on psprobe.rules.test.yml, which this test also checks has both
//! kinds of case for every alert), and every psprobe metric the rules read is one a running
//! psprobe exports, so a renamed metric cannot silently turn an alert off.

use crate::common;

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Command;

use common::probe::Probe;
use yaml_rust2::{Yaml, YamlLoader};

fn rules_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("grafana/prometheus")
}

fn load(name: &str) -> Yaml {
    let path = rules_dir().join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    YamlLoader::load_from_str(&text)
        .unwrap_or_else(|e| panic!("{name}: {e}"))
        .remove(0)
}

fn promtool(args: &[&str]) {
    let out = Command::new("promtool")
        .args(args)
        .current_dir(rules_dir())
        .output()
        .unwrap_or_else(|e| panic!("promtool ({e}): scripts/setup.sh installs prometheus"));
    assert!(
        out.status.success(),
        "promtool {args:?} failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// (alert names, recording rule names, every expression) of the rules file.
fn rules() -> (Vec<String>, Vec<String>, Vec<String>) {
    let doc = load("psprobe.rules.yml");
    let (mut alerts, mut records, mut exprs) = (Vec::new(), Vec::new(), Vec::new());
    for group in doc["groups"].as_vec().expect("groups") {
        for rule in group["rules"].as_vec().expect("rules") {
            if let Some(a) = rule["alert"].as_str() {
                alerts.push(a.to_string());
            }
            if let Some(r) = rule["record"].as_str() {
                records.push(r.to_string());
            }
            exprs.push(rule["expr"].as_str().expect("expr").to_string());
        }
    }
    (alerts, records, exprs)
}

#[test]
fn promtool_accepts_the_rules_and_their_tests_pass() {
    promtool(&["check", "rules", "psprobe.rules.yml"]);
    promtool(&["test", "rules", "psprobe.rules.test.yml"]);
}

#[test]
fn every_alert_is_tested_firing_and_quiet() {
    let (alerts, _, _) = rules();
    assert!(alerts.len() >= 6, "{alerts:?}");
    let tests = load("psprobe.rules.test.yml");
    let (mut fires, mut quiet) = (BTreeSet::new(), BTreeSet::new());
    for case in tests["tests"].as_vec().expect("tests") {
        for check in case["alert_rule_test"].as_vec().into_iter().flatten() {
            let name = check["alertname"].as_str().expect("alertname").to_string();
            let expected = check["exp_alerts"].as_vec().map_or(0, Vec::len);
            if expected == 0 {
                quiet.insert(name);
            } else {
                fires.insert(name);
            }
        }
    }
    for alert in &alerts {
        assert!(
            fires.contains(alert),
            "{alert}: no test case where it fires"
        );
        assert!(
            quiet.contains(alert),
            "{alert}: no test case where it stays quiet"
        );
    }
}

/// psprobe metric names an expression reads (`psprobe_x_total`, not recorded `psprobe:` or
/// `psprobe_fleet:` series), with histogram suffixes taken off.
fn metric_names(expr: &str) -> Vec<String> {
    let bytes = expr.as_bytes();
    let mut names = Vec::new();
    let mut i = 0;
    while let Some(at) = expr[i..].find("psprobe_").map(|p| p + i) {
        let end = expr[at..]
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .map_or(expr.len(), |p| p + at);
        let boundary = at == 0 || !(bytes[at - 1].is_ascii_alphanumeric() || bytes[at - 1] == b'_');
        if boundary && bytes.get(end) != Some(&b':') {
            let name = &expr[at..end];
            let base = ["_bucket", "_sum", "_count"]
                .iter()
                .find_map(|s| name.strip_suffix(s))
                .unwrap_or(name);
            names.push(base.to_string());
        }
        i = end;
    }
    names
}

#[test]
fn the_rules_read_metrics_psprobe_exports() {
    let (_, records, exprs) = rules();
    let read: BTreeSet<String> = exprs.iter().flat_map(|e| metric_names(e)).collect();
    assert!(read.contains("psprobe_controller_leader"), "{read:?}");
    // Recorded series are used under their own names: each one read must be recorded here.
    for expr in &exprs {
        for word in expr.split(|c: char| c.is_whitespace() || "(){}[],".contains(c)) {
            if word.starts_with("psprobe:") || word.starts_with("psprobe_fleet:") {
                assert!(
                    records.iter().any(|r| r == word),
                    "{word} is read but not recorded"
                );
            }
        }
    }

    // Nothing listens upstream: the metrics endpoint answers all the same.
    let probe = Probe::start("127.0.0.1:9", &[]);
    let (status, text) = probe.http_get("/metrics");
    assert_eq!(status, 200);
    for name in &read {
        assert!(
            text.contains(&format!("# TYPE {name} ")),
            "the rules read {name}, which psprobe does not export"
        );
    }
}
