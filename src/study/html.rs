//! The study's picture: per workload, every scenario's change against its baseline by
//! concurrency (log2 axis, intervals as bands, a published table's values as hollow points),
//! then the document of the markdown report (its blocks as HTML), as one self-contained HTML
//! page (STEM.html) beside the markdown.
//!
//! Must not: compute a figure of its own; every value comes from the study's cells and the
//! published table (re-based as in the markdown comparison).

use super::cells::CellRow;
use super::compare;
use super::published::Published;
use crate::report::curves::{overhead_curves, Curve, CurvePoint};
use crate::report::doc::{self, Block};
use crate::report::svg::escape;
use crate::report::STYLE;

/// One workload's chart: a line per scenario measured against a baseline.
pub(super) fn workload_chart(
    workload: &str,
    cells: &[&CellRow],
    scenarios: &[String],
    published: Option<&Published>,
) -> String {
    let curves: Vec<Curve> = compare::columns(cells, scenarios)
        .into_iter()
        .map(|(scenario, baseline)| {
            let mine: Vec<&&CellRow> = cells
                .iter()
                .filter(|c| c.scenario == scenario && c.baseline == baseline)
                .collect();
            // A cell without an interval (it says what it needs) is not drawn: its point
            // alone would stretch the axis (once to +400%) and hide every other cell.
            let points = mine
                .iter()
                .filter(|c| c.needs.is_none())
                .filter_map(|c| {
                    Some(CurvePoint {
                        threads: c.threads,
                        value: c.change_percent?,
                        low: c.ci_low_percent,
                        high: c.ci_high_percent,
                    })
                })
                .collect();
            let published = published.map_or_else(Vec::new, |p| {
                mine.iter()
                    .filter_map(|c| {
                        Some((
                            c.threads,
                            p.change(workload, c.threads, &scenario, &baseline)?,
                        ))
                    })
                    .collect()
            });
            Curve {
                label: format!("{scenario} vs {baseline}"),
                points,
                published,
            }
        })
        .collect();
    let chart = overhead_curves(
        &format!("{workload}: change in statements/s by client threads (95% intervals shaded)"),
        "change vs the baseline (%)",
        &curves,
    );
    chart + &left_out(cells)
}

/// The cells the chart leaves out, each with what it needs (nothing when none is).
fn left_out(cells: &[&CellRow]) -> String {
    let lines: Vec<String> = cells
        .iter()
        .filter_map(|c| {
            let needs = c.needs.as_ref()?;
            Some(format!(
                "<li>{} threads, {} vs {}: {}</li>",
                c.threads,
                escape(&c.scenario),
                escape(&c.baseline),
                escape(needs)
            ))
        })
        .collect();
    if lines.is_empty() {
        return String::new();
    }
    format!(
        "<p class=\"note\">Not drawn (no interval):</p><ul class=\"note\">{}</ul>",
        lines.concat()
    )
}

/// The page: the title, every workload's chart, then the document the markdown report holds
/// below its title.
pub(super) fn page(title: &str, blocks: &[Block], charts: &[String]) -> String {
    format!(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{t}</title><style>{STYLE}</style></head><body><h1>{t}</h1>{}{}</body></html>\n",
        charts.concat(),
        doc::html(blocks),
        t = escape(title)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(threads: u32, change: f64, interval: Option<(f64, f64)>) -> CellRow {
        CellRow {
            workload: "oltp_read_only".into(),
            threads,
            scenario: "pfson_conon_inson".into(),
            schedule: "fast".into(),
            baseline: "pfson_conoff_insoff".into(),
            qps: 1000.0,
            change_percent: Some(change),
            ci_low_percent: interval.map(|i| i.0),
            ci_high_percent: interval.map(|i| i.1),
            significant: Some(false),
            sysbench_qps: 1000.0,
            needs: interval.is_none().then(|| {
                "not enough blocks for an interval: about 900 more blocks (75 minutes) for +-3 points"
                    .to_string()
            }),
        }
    }

    /// The seed study's 512-thread cell at +160% without an interval is listed under the chart
    /// with what it needs, and the axis stays at the scale of the cells drawn.
    #[test]
    fn a_cell_without_an_interval_is_listed_not_drawn() {
        let cells = [
            cell(8, -4.0, Some((-5.0, -3.0))),
            cell(64, -6.0, Some((-8.0, -4.0))),
            cell(512, 160.0, None),
        ];
        let refs: Vec<&CellRow> = cells.iter().collect();
        let scenarios = [
            "pfson_conoff_insoff".to_string(),
            "pfson_conon_inson".into(),
        ];
        let chart = workload_chart("oltp_read_only", &refs, &scenarios, None);
        assert!(
            chart.contains("<li>512 threads, pfson_conon_inson vs pfson_conoff_insoff: not enough blocks for an interval: about 900 more blocks"),
            "{chart}"
        );
        assert!(
            !chart.contains(">160%<") && !chart.contains(">150%<"),
            "{chart}"
        );
        assert!(
            !chart.contains(">100%<"),
            "the axis still stretched: {chart}"
        );
    }

    #[test]
    fn the_page_has_the_title_then_the_charts_then_the_tables() {
        let mut table = doc::Table::new(vec![
            doc::column("a", doc::Align::Right),
            doc::column("b", doc::Align::Right),
        ]);
        table.row(vec!["1".into(), "2".into()]);
        let page = page(
            "A & B",
            &[Block::Heading("w".into()), Block::Table(table)],
            &["<svg class=\"chart\"></svg>".into()],
        );
        assert!(
            page.contains("<h1>A &amp; B</h1><svg class=\"chart\"></svg><h2>w</h2><table>"),
            "{page}"
        );
        assert!(!page.contains("<script"));
    }
}
