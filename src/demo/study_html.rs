//! The study's picture: per workload, every scenario's change against its baseline by
//! concurrency (log2 axis, intervals as bands, a published table's values as hollow points),
//! then the markdown report's tables, as one self-contained HTML page (STEM.html) beside the
//! markdown.
//!
//! Must not: compute a figure of its own; every value comes from the study's cells and the
//! published table (re-based as in the markdown comparison).

use super::cells::CellRow;
use super::compare;
use super::published::Published;
use crate::report::curves::{overhead_curves, Curve, CurvePoint};
use crate::report::svg::escape;
use crate::report::{tables_from_markdown, STYLE};

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
            let points = mine
                .iter()
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
    overhead_curves(
        &format!("{workload}: change in statements/s by client threads (95% intervals shaded)"),
        "change vs the baseline (%)",
        &curves,
    )
}

/// The page: the title, every workload's chart, then the markdown report below its title.
pub(super) fn page(markdown: &str, charts: &[String]) -> String {
    let (title, body) = match markdown.split_once('\n') {
        Some((first, rest)) if first.starts_with("# ") => (&first[2..], rest),
        _ => ("psprobe experiment", markdown),
    };
    format!(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{t}</title><style>{STYLE}</style></head><body><h1>{t}</h1>{}{}</body></html>\n",
        charts.concat(),
        tables_from_markdown(body),
        t = escape(title)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_has_the_title_then_the_charts_then_the_tables() {
        let page = page(
            "# A & B\n\n## w\n\n| a | b |\n| ---: | ---: |\n| 1 | 2 |\n",
            &["<svg class=\"chart\"></svg>".into()],
        );
        assert!(
            page.contains("<h1>A &amp; B</h1><svg class=\"chart\"></svg><h2>w</h2><table>"),
            "{page}"
        );
        assert!(!page.contains("<script"));
    }
}
