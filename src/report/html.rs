//! The self-contained HTML report: tables plus inline SVG charts, no scripts, no external
//! assets.

use std::fmt::Write;

use super::model::Report;
use super::svg::{bars_with_whiskers, escape, lines, Axes, Band, Bar, Series};
use super::text::markdown;

pub(crate) const STYLE: &str = "body{font-family:system-ui,sans-serif;margin:2em;max-width:1240px;color:#222}\
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}\
td:first-child,th:first-child{text-align:left}code{font-size:90%}.chart{display:block;margin:1em 0}\
.title{font-weight:600;font-size:14px}.label,.value,.axis,.legend{font-size:12px}";

/// Markdown tables → HTML tables (the report's own markdown only: pipes, headers, rows).
pub(crate) fn tables_from_markdown(md: &str) -> String {
    let mut out = String::new();
    let mut in_table = false;
    let mut header = true;
    let mut in_code = false;
    for line in md.lines() {
        if line.starts_with("```") {
            out.push_str(if in_code { "</pre>" } else { "<pre>" });
            in_code = !in_code;
            continue;
        }
        if in_code {
            let _ = writeln!(out, "{}", escape(line));
            continue;
        }
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

fn overhead_chart(r: &Report, schedule: &str, baseline: &str) -> String {
    // One bar per scenario; the baseline's is zero by definition and has no whisker.
    let bars: Vec<Bar> = r
        .headline
        .iter()
        .filter(|h| h.schedule == schedule)
        .map(|h| {
            let c = h.qps_change.as_ref();
            Bar {
                label: if h.is_baseline {
                    format!("{} (baseline)", h.scenario)
                } else {
                    h.scenario.clone()
                },
                value: c.map_or(0.0, |c| c.percent),
                low: c.and_then(|c| c.low),
                high: c.and_then(|c| c.high),
                note: c.and_then(|c| c.needs.clone()),
            }
        })
        .collect();
    let design = if schedule == "slow" {
        "entered by restart"
    } else {
        "switched at runtime"
    };
    bars_with_whiskers(
        &format!(
            "Statements/s change vs {baseline}, scenarios {design} ({}% interval)",
            super::text::level_percent(r.analysis.level)
        ),
        "%",
        &bars,
    )
}

fn carryover_chart(r: &Report) -> Option<String> {
    let p = r.analysis.carryover.as_ref()?;
    let series: Vec<Series> = p
        .scenarios
        .iter()
        .filter(|s| s.scenario != p.baseline)
        .map(|s| Series {
            label: format!("{} vs {}", s.scenario, p.baseline),
            points: s
                .points
                .iter()
                .filter_map(|b| {
                    Some((
                        b.from_ms as f64 + p.bin_ms as f64 / 2.0,
                        b.vs_baseline?.change * 100.0,
                    ))
                })
                .collect(),
        })
        .filter(|s| !s.points.is_empty())
        .collect();
    (!series.is_empty()).then(|| {
        lines(
            "Carryover: mean latency change vs the baseline by time since the switch",
            &Axes {
                x_label: "time since the switch (ms, middle of each 50 ms bin)",
                y_label: "latency change (%)",
                log_x: false,
                y_from_zero: true,
                markers: true,
                y_cap: None,
            },
            &series,
            &[],
        )
    })
}

fn throughput_chart(r: &Report) -> String {
    let scenarios = r.scenarios();
    let series: Vec<Series> = scenarios
        .iter()
        .map(|name| Series {
            label: name.clone(),
            points: r
                .timeline
                .iter()
                .filter(|t| &t.scenario == name)
                .map(|t| ((t.from_s + t.to_s) / 2.0, t.qps))
                .collect(),
        })
        .collect();
    // Slow phases are long and few: shade them (fast segments would be thousands of bands).
    let color = |s: &str| scenarios.iter().position(|x| x == s).unwrap_or(0);
    let bands: Vec<Band> = r
        .timeline
        .iter()
        .filter(|t| t.schedule == "slow")
        .map(|t| Band {
            from: t.from_s,
            to: t.to_s,
            label: format!("{} (slow block {})", t.scenario, t.block),
            color: color(&t.scenario),
        })
        .collect();
    lines(
        "Throughput over time (statements/s in each scenario's measured windows, per segment)",
        &Axes {
            x_label: "time since the first switch (s)",
            y_label: "statements/s (QPS)",
            log_x: false,
            y_from_zero: true,
            markers: true,
            y_cap: None,
        },
        &series,
        &bands,
    )
}

pub(super) fn html(r: &Report) -> String {
    page(r, "<title>psprobe report</title>", "")
}

/// The report's page with `head` in its head (a title at least) and `top` first in its body:
/// the live page's title, refresh script and status line.
pub(super) fn page(r: &Report, head: &str, top: &str) -> String {
    let charts: String = r
        .analysis
        .analyses()
        .map(|a| overhead_chart(r, &a.schedule, &a.baseline))
        .collect();
    let has_lines = !r.scenarios().is_empty();
    let distribution = if !has_lines {
        String::new()
    } else {
        lines(
            "Latency distribution per scenario (cumulative share of statements)",
            &Axes {
                x_label: "latency (ms, log scale)",
                y_label: "share of statements",
                log_x: true,
                y_from_zero: true,
                markers: false,
                y_cap: Some(1.0),
            },
            &r.distributions
                .iter()
                .map(|(name, points)| Series {
                    label: name.clone(),
                    points: points.clone(),
                })
                .collect::<Vec<_>>(),
            &[],
        )
    };
    let groups = r
        .analysis
        .attribution
        .as_ref()
        .map(super::attribution::chart)
        .unwrap_or_default();
    let carryover = carryover_chart(r).unwrap_or_default();
    // An attribution without a confirmation compares no scenario: no lines to draw.
    let throughput = if has_lines {
        throughput_chart(r)
    } else {
        String::new()
    };
    format!(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">{head}<style>{STYLE}</style></head><body>{top}<h1>performance_schema overhead</h1>{groups}{charts}{body}{carryover}{distribution}{throughput}</body></html>\n",
        body = tables_from_markdown(&markdown(r).replacen("# performance_schema overhead\n", "", 1)),
    )
}
