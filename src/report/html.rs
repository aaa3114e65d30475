//! The self-contained HTML report: the report's sections as HTML elements (doc.rs) plus
//! inline SVG charts, no scripts, no external assets.
//!
//! Must not: parse markdown (the sections are rendered from the report's document).

use super::doc;
use super::doc::level_percent;
use super::model::Report;
use super::sections::{document, TITLE};
use super::svg::{bars_with_whiskers, lines, Axes, Band, Bar, Series};

// Long unbroken texts (a recommendation's SQL, design-point names such as
// `g:statements+stages+...` in the timeline) wrap inside their box instead of widening the page.
pub(crate) const STYLE: &str = "body{font-family:system-ui,sans-serif;margin:2em;max-width:1240px;color:#222}\
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}\
td:first-child,th:first-child{text-align:left}code{font-size:90%}.chart{display:block;margin:1em 0}\
pre{white-space:pre-wrap;overflow-wrap:anywhere}td{overflow-wrap:anywhere}\
.title{font-weight:600;font-size:14px}.label,.value,.axis,.legend{font-size:12px}";

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
            level_percent(r.analysis.level)
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
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">{head}<style>{STYLE}</style></head><body>{top}<h1>{TITLE}</h1>{groups}{charts}{body}{carryover}{distribution}{throughput}</body></html>\n",
        body = doc::html(&document(r)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::phase_log::{parse_log, ClaimRecord};

    /// The v1 sample's report, with a torn line and a setting someone else changed whose
    /// name holds what HTML and markdown tables must escape.
    fn report() -> Report {
        let log = parse_log(include_str!("../../tests/data/phases-v1.jsonl"));
        let mut r = super::super::report_of(&log.phases, None).unwrap();
        r.torn = vec![("logs/a&b.jsonl".into(), vec![7])];
        r.claims = vec![ClaimRecord::new(
            1_700_000_000_000,
            "setup_instruments 'wait/io/<file>|sql&binlog'".into(),
            "ENABLED=YES TIMED=NO".into(),
            "ENABLED=NO".into(),
            "while_stopped",
        )];
        r
    }

    /// The page holds the markdown's sections as elements: a heading for each heading, a
    /// table with as many rows for each table, a note for each note; no markdown syntax.
    #[test]
    fn the_page_has_the_markdown_sections_as_elements() {
        let r = report();
        let md = super::super::text::markdown(&r);
        let page = html(&r);
        let count = |prefix: &str| md.lines().filter(|l| l.starts_with(prefix)).count();
        assert_eq!(page.matches("<h2>").count(), count("## "), "{md}");
        assert_eq!(page.matches("<h1>").count(), count("# "));
        assert_eq!(page.matches("<em>").count(), count("> "));
        // A markdown table's lines, but its alignment line, are the HTML table's rows.
        assert_eq!(
            page.matches("<tr>").count(),
            count("| ") - md.matches("\n| ---").count()
        );
        assert_eq!(
            page.matches("<table>").count(),
            md.matches("\n| ---").count()
        );
        assert_eq!(
            page.matches("<h2>").count(),
            3,
            "digests, settings, timeline: {page}"
        );
        for syntax in ["`", "**", "\\|", "| ---", "\n#"] {
            assert!(!page.contains(syntax), "{syntax:?} in the page");
        }
    }

    /// Every text is escaped once: a name with `<`, `&` and `|` reads as it is.
    #[test]
    fn every_text_is_escaped() {
        let page = html(&report());
        assert!(
            page.contains("<td>setup_instruments 'wait/io/&lt;file&gt;|sql&amp;binlog'</td>"),
            "{page}"
        );
        assert!(page.contains("logs/a&amp;b.jsonl"), "{page}");
        assert!(!page.contains("<file>") && !page.contains("&amp;amp;"));
        let md = super::super::text::markdown(&report());
        assert!(
            md.contains("| setup_instruments 'wait/io/<file>\\|sql&binlog' |"),
            "{md}"
        );
    }
}
