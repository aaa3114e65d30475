//! The self-contained HTML report: tables plus inline SVG charts, no scripts, no external
//! assets.

use std::fmt::Write;

use super::model::Report;
use super::svg::{bars_with_whiskers, escape, lines, Band, Bar, Series};
use super::text::markdown;

const STYLE: &str = "body{font-family:system-ui,sans-serif;margin:2em;max-width:1100px;color:#222}\
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}\
td:first-child,th:first-child{text-align:left}code{font-size:90%}.chart{display:block;margin:1em 0}\
.title{font-weight:600;font-size:14px}.label,.value,.axis,.legend{font-size:12px}";

/// Markdown tables → HTML tables (the report's own markdown only: pipes, headers, rows).
fn tables_from_markdown(md: &str) -> String {
    let mut out = String::new();
    let mut in_table = false;
    let mut header = true;
    for line in md.lines() {
        if let Some(row) = line.strip_prefix('|') {
            if line.starts_with("| ---") || line.starts_with("| :") {
                continue;
            }
            if !in_table {
                out.push_str("<table>");
                in_table = true;
                header = true;
            }
            let cells: Vec<&str> = row.trim_end_matches('|').split(" | ").collect();
            let tag = if header { "th" } else { "td" };
            out.push_str("<tr>");
            for c in cells {
                let _ = write!(out, "<{tag}>{}</{tag}>", escape(c.trim()).replace('`', ""));
            }
            out.push_str("</tr>");
            header = false;
            continue;
        }
        if in_table {
            out.push_str("</table>");
            in_table = false;
        }
        if let Some(h) = line.strip_prefix("## ") {
            let _ = write!(out, "<h2>{}</h2>", escape(h));
        } else if let Some(h) = line.strip_prefix("# ") {
            let _ = write!(out, "<h1>{}</h1>", escape(h));
        } else if let Some(q) = line.strip_prefix("> ") {
            let _ = write!(out, "<p><em>{}</em></p>", escape(q));
        } else if !line.trim().is_empty() {
            let _ = write!(out, "<p>{}</p>", escape(line).replace("**", ""));
        }
    }
    if in_table {
        out.push_str("</table>");
    }
    out
}

pub fn html(r: &Report) -> String {
    // One bar per scenario; the baseline's is zero by definition and has no whisker.
    let first = r.analysis.analyses().next();
    let (baseline, schedule) =
        first.map_or(("", ""), |a| (a.baseline.as_str(), a.schedule.as_str()));
    let bars: Vec<Bar> = r
        .headline
        .iter()
        .filter(|h| h.schedule == schedule)
        .map(|h| {
            let c = h.qps_change;
            Bar {
                label: if h.is_baseline {
                    format!("{} (baseline)", h.scenario)
                } else {
                    h.scenario.clone()
                },
                value: c.map_or(0.0, |c| c.percent),
                low: c.and_then(|c| c.low),
                high: c.and_then(|c| c.high),
            }
        })
        .collect();
    let overhead = bars_with_whiskers(
        &format!(
            "Throughput change vs {} ({}% interval)",
            baseline,
            super::text::level_percent(r.analysis.level)
        ),
        "%",
        &bars,
    );
    let distribution = lines(
        "Latency distribution per scenario (cumulative share of statements)",
        "latency (ms, log scale)",
        "share",
        &r.distributions
            .iter()
            .map(|(name, points)| Series {
                label: name.clone(),
                points: points.clone(),
            })
            .collect::<Vec<_>>(),
        &[],
        true,
    );
    let scenarios = r.scenarios();
    let color = |s: &str| scenarios.iter().position(|x| x == s).unwrap_or(0);
    let throughput = lines(
        "Throughput over time (statements/s per phase; phases shaded by scenario)",
        "seconds since start",
        "statements/s",
        &[Series {
            label: "QPS".into(),
            points: r
                .timeline
                .iter()
                .flat_map(|t| [(t.from_s, t.qps), (t.to_s, t.qps)])
                .collect(),
        }],
        &r.timeline
            .iter()
            .map(|t| Band {
                from: t.from_s,
                to: t.to_s,
                label: format!("{} (block {})", t.scenario, t.block),
                color: color(&t.scenario),
            })
            .collect::<Vec<_>>(),
        false,
    );
    format!(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>psprobe report</title><style>{STYLE}</style></head><body>{overhead}{body}{distribution}{throughput}</body></html>\n",
        body = tables_from_markdown(&markdown(r)),
    )
}
