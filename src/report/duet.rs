//! A duet run's report: the duet's estimate of every scenario against the reference, beside
//! what the same phases say as sequential restart pairs on each server alone, the pairs'
//! spread both ways (the noise the duet took out), the servers' difference, the CPU each side
//! got, and the restarts. Markdown, and the numbers as JSON beside it.

use std::fmt::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::analysis::duet::{analyze_duet, Change, DuetComparison};
use crate::phase_log::{read_log, LogContents, PhaseRecord};

const LEVEL: f64 = 0.95;
/// Half-width a comparison without an interval is told how far it is from.
const DEFAULT_TARGET: f64 = 1.0;

/// Reads both sides' logs (side a's, side b's), writes the report to `output` (and STEM.json)
/// and returns it. `placement`: where each side ran, one sentence (empty: not known).
pub(crate) fn write(logs: &[PathBuf; 2], placement: &str, output: &Path) -> anyhow::Result<String> {
    let read = |p: &Path| read_log(p).with_context(|| format!("cannot read {}", p.display()));
    let (a, b) = (read(&logs[0])?, read(&logs[1])?);
    let (doc, comparisons) = render([&a, &b], placement);
    std::fs::write(output, &doc).with_context(|| format!("cannot write {}", output.display()))?;
    let json = output.with_extension("json");
    let text = serde_json::to_string_pretty(&comparisons).context("cannot encode the duet")?;
    std::fs::write(&json, text).with_context(|| format!("cannot write {}", json.display()))?;
    Ok(doc)
}

/// The scenario a duet compares the others with: its sides' first slow scenario.
pub(crate) fn reference(log: &LogContents) -> Option<&str> {
    log.runs
        .first()
        .and_then(|r| r.slow_scenarios.first())
        .map(String::as_str)
}

/// The report of a duet's two sides (side a's log, side b's) as markdown, and its numbers.
pub(crate) fn render(logs: [&LogContents; 2], placement: &str) -> (String, Vec<DuetComparison>) {
    let comparisons = match reference(logs[0]) {
        Some(reference) => analyze_duet(&logs[0].phases, &logs[1].phases, reference, LEVEL),
        None => Vec::new(),
    };
    let target = logs[0]
        .runs
        .first()
        .and_then(|r| r.target_halfwidth_pct)
        .unwrap_or(DEFAULT_TARGET);
    (markdown(&comparisons, logs, target, placement), comparisons)
}

fn change(c: &Change, target: f64) -> String {
    match (c.low, c.high) {
        (Some(lo), Some(hi)) => format!(
            "{:+.2}% ({lo:+.2}..{hi:+.2}), ±{:.2}",
            c.percent,
            (hi - lo) / 2.0
        ),
        _ => format!(
            "{:+.2}%, no interval from {} pairs: about {} more for ±{target}",
            c.percent,
            c.pairs,
            c.pairs_for(target, LEVEL)
                .saturating_sub(c.pairs as u64)
                .max(1)
        ),
    }
}

fn percent(x: Option<f64>) -> String {
    x.map_or("-".into(), |v| format!("{:.1}%", v * 100.0))
}

fn sd(c: &Option<Change>) -> String {
    c.as_ref()
        .and_then(|c| c.pair_sd)
        .map_or("-".into(), |s| format!("{:.2}%", s * 100.0))
}

/// Median of the slow phases' restarts to the first query, seconds.
fn restart_median(records: &[PhaseRecord]) -> Option<f64> {
    let mut ms: Vec<u64> = records
        .iter()
        .filter_map(|r| r.restart.as_ref().map(|x| x.first_query_ms))
        .collect();
    ms.sort_unstable();
    ms.get(ms.len() / 2).map(|m| *m as f64 / 1000.0)
}

fn markdown(
    comparisons: &[DuetComparison],
    logs: [&LogContents; 2],
    target: f64,
    placement: &str,
) -> String {
    let mut doc = String::from("# Duet run\n\n");
    let started: usize = logs[0]
        .phases
        .iter()
        .filter(|r| r.restart.is_some())
        .count()
        / 2;
    let _ = writeln!(
        doc,
        "Two servers of the same version with the same data, each loaded through its own psprobe, restarted at the same moments into the two scenarios of every pair and measured over the same seconds, the roles swapped from one phase to the next. A pair counts when its phases ran together on both sides ({started} pairs started). 95% intervals around the 20% trimmed mean (Yuen's); the pair is the sample. {placement}\n"
    );
    if comparisons.is_empty() {
        doc.push_str("No pair ran on both sides: nothing to compare.\n");
        return doc;
    }
    doc.push_str("| scenario | against | pairs | throughput, duet | mean latency, duet | throughput, sequential pairs on server a | on server b |\n|---|---|---:|---|---|---|---|\n");
    for c in comparisons {
        let seq = |s: &Option<Change>| s.as_ref().map_or("-".into(), |s| change(s, target));
        let _ = writeln!(
            doc,
            "| {} | {} | {} | {} | {} | {} | {} |",
            c.scenario,
            c.reference,
            c.pairs(),
            change(&c.throughput, target),
            c.latency.as_ref().map_or("-".into(), |l| change(l, target)),
            seq(&c.sequential[0]),
            seq(&c.sequential[1]),
        );
    }
    doc.push_str("\n## The noise the duet took out, and the two sides\n\n| scenario | pairs' spread (SD of the log-ratios): duet | sequential, server a | server b | server a against server b | CPU share of server a | of the scenario's side |\n|---|---:|---:|---:|---:|---:|---:|\n");
    for c in comparisons {
        let _ = writeln!(
            doc,
            "| {} | {} | {} | {} | {} | {} | {} |",
            c.scenario,
            sd(&Some(c.throughput.clone())),
            sd(&c.sequential[0]),
            sd(&c.sequential[1]),
            c.side_difference
                .map_or("-".into(), |d| format!("{d:+.1}%")),
            percent(c.cpu_share_a),
            percent(c.cpu_share_scenario),
        );
    }
    doc.push_str("\nThe servers' difference (the same scenario on server a against server b, in the same seconds) cancels in the duet's estimate, since every pair runs each scenario once on each server; the CPU shares are the two servers' CPU time in the counted windows.\n");
    let restarts: Vec<String> = logs
        .iter()
        .zip(["a", "b"])
        .filter_map(|(l, side)| {
            restart_median(&l.phases).map(|s| format!("server {side} {s:.1} s"))
        })
        .collect();
    if !restarts.is_empty() {
        let _ = writeln!(
            doc,
            "\nRestarts to the first query (median): {}.",
            restarts.join(", ")
        );
    }
    doc
}
