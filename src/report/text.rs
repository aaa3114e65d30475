//! Markdown, CSV and JSON renderings of the report.

use std::fmt::Write;

use super::model::{Interval, Report};

fn opt(i: &Option<Interval>) -> String {
    i.as_ref()
        .map_or_else(|| "baseline".to_string(), Interval::text)
}

/// A confidence level as people write it: 0.95 → "95", 0.999 → "99.9".
pub fn level_percent(level: f64) -> String {
    let p = format!("{:.3}", level * 100.0);
    p.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// The headline table alone (printed by `psprobe demo`).
pub fn headline_markdown(r: &Report) -> String {
    let cpu = r
        .headline
        .iter()
        .any(|h| h.server_cpu_us_per_statement.is_some());
    let mut s = String::new();
    let _ = writeln!(
        s,
        "| scenario | QPS | QPS change vs {b} ({l}% CI) | p99 ms | p99 change ({l}% CI) | mean latency change ({l}% CI) |{}\n| --- | ---: | --- | ---: | --- | --- |{}",
        if cpu { " server CPU µs/statement |" } else { "" },
        if cpu { " ---: |" } else { "" },
        b = r.analysis.baseline,
        l = level_percent(r.analysis.level)
    );
    for h in &r.headline {
        let _ = write!(
            s,
            "| {} | {:.0} | {} | {:.3} | {} | {} |",
            h.scenario,
            h.qps,
            opt(&h.qps_change),
            h.p99_ms,
            opt(&h.p99_change),
            opt(&h.mean_change)
        );
        if cpu {
            let _ = write!(
                s,
                " {} |",
                h.server_cpu_us_per_statement
                    .map_or_else(|| "-".to_string(), |v| format!("{v:.1}"))
            );
        }
        s.push('\n');
    }
    s
}

pub fn markdown(r: &Report) -> String {
    let a = &r.analysis;
    let mut s = String::new();
    let _ = writeln!(s, "# performance_schema overhead\n");
    let _ = writeln!(
        s,
        "Baseline: **{}** ({:?}). {} blocks ({} complete), {}% intervals; `*` marks a significant change (the interval excludes 0). Latency changes are mix-adjusted.\n",
        a.baseline, a.baseline_rule, a.blocks, a.complete_blocks, (a.level * 100.0).round()
    );
    s.push_str(&headline_markdown(r));
    for w in &a.warnings {
        let _ = writeln!(s, "\n> warning: {w}");
    }
    for d in a.flagged_drift() {
        let _ = writeln!(
            s,
            "\n> drift: {} {}: the paired difference moves {:+.2}% per block (p = {:.3}); the average hides a trend.",
            d.scenario,
            d.metric.label(),
            d.slope_per_block * 100.0,
            d.p_value
        );
    }
    let _ = writeln!(s, "\n## Digests hurt most\n\n| scenario | digest | statement | baseline mean ms | mean ms | change | added ms/s |\n| --- | --- | --- | ---: | ---: | ---: | ---: |");
    for d in &r.digests {
        let text: String = d.text.chars().take(80).collect();
        let _ = writeln!(
            s,
            "| {} | {} | `{}` | {:.3} | {:.3} | {:+.1}% | {:.2} |",
            d.scenario,
            d.digest,
            text.replace('|', "\\|").replace('`', "'"),
            d.baseline_mean_ms,
            d.scenario_mean_ms,
            d.change_percent,
            d.added_ms_per_s
        );
    }
    let _ = writeln!(s, "\n## Timeline\n\n| phase | block | scenario | from s | to s | QPS | mean ms | restarted |\n| ---: | ---: | --- | ---: | ---: | ---: | ---: | --- |");
    for t in &r.timeline {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {:.1} | {:.1} | {:.0} | {:.3} | {} |",
            t.phase, t.block, t.scenario, t.from_s, t.to_s, t.qps, t.mean_ms, t.restarted
        );
    }
    s
}

pub fn csv(r: &Report) -> String {
    let mut s = String::from("scenario,metric,baseline,ratio,ci_low,ci_high,significant,n_blocks,baseline_value,scenario_value\n");
    for e in &r.analysis.estimates {
        let f = |v: Option<f64>| v.map_or(String::new(), |v| format!("{v}"));
        let _ = writeln!(
            s,
            "{},{},{},{},{},{},{},{},{},{}",
            e.scenario,
            e.metric.label(),
            e.baseline,
            e.ratio,
            f(e.ci_low),
            f(e.ci_high),
            e.significant,
            e.n_blocks,
            e.baseline_value,
            e.scenario_value
        );
    }
    s
}

pub fn json(r: &Report) -> anyhow::Result<String> {
    Ok(serde_json::to_string_pretty(r)?)
}
