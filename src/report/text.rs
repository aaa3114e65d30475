//! Markdown, CSV and JSON renderings of the report.

use std::fmt::Write;

use super::doc::table_markdown;
use super::model::Report;
use super::sections::{design_title, document, headline_rows, headline_table, TITLE};

/// The headline tables alone (what a terminal shows of the report): one per design.
pub(super) fn headline_markdown(r: &Report) -> String {
    let mut s = String::new();
    for a in r.analysis.analyses() {
        if r.analysis.slow.is_some() {
            let _ = writeln!(s, "{}:\n", design_title(&a.schedule));
        }
        let table = headline_table(&headline_rows(r, a), &a.baseline, r.analysis.level);
        let _ = writeln!(s, "{}\n", table_markdown(&table));
    }
    s
}

pub(super) fn markdown(r: &Report) -> String {
    format!("# {TITLE}\n\n{}", super::doc::markdown(&document(r)))
}

pub(super) fn csv(r: &Report) -> String {
    let mut s = String::from("schedule,scenario,metric,baseline,ratio,ci_low,ci_high,significant,n_blocks,baseline_value,scenario_value\n");
    for e in r.analysis.estimates() {
        let f = |v: Option<f64>| v.map_or(String::new(), |v| format!("{v}"));
        let _ = writeln!(
            s,
            "{},{},{},{},{},{},{},{},{},{},{}",
            e.schedule,
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

/// The report as JSON. An attribution's group costs are `analysis.attribution` (a list of
/// objects with `group`, `metric`, `ratio`, `ci_low`, `ci_high`, like the estimates), the rest
/// of it (base, all on, interactions, additivity, digests) `analysis.attribution_details`.
pub(super) fn json(r: &Report) -> anyhow::Result<String> {
    let mut value = serde_json::to_value(r)?;
    if let Some(analysis) = value.get_mut("analysis").and_then(|a| a.as_object_mut()) {
        if let Some(mut details) = analysis.remove("attribution").filter(|d| !d.is_null()) {
            let effects = details
                .as_object_mut()
                .and_then(|d| d.remove("effects"))
                .unwrap_or_default();
            analysis.insert("attribution".into(), effects);
            analysis.insert("attribution_details".into(), details);
        }
    }
    Ok(serde_json::to_string_pretty(&value)?)
}
