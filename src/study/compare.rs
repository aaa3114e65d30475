//! psprobe's cells beside a published table (`--compare`): per workload and concurrency, each
//! scenario's change as psprobe measured it (against its own baseline) beside the published
//! one re-based onto the same baseline, their difference, whether the published value lies in
//! psprobe's interval; and how far the two order the scenarios alike (Kendall's tau-b over
//! every scenario both have, with its p-value).
//!
//! Must not: compare a change against a different baseline than psprobe measured it against,
//! or rank scenarios psprobe's changes do not link to one another.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::cells::CellRow;
use super::published::Published;
use crate::analysis::kendall::{kendall, Kendall};
use crate::report::doc::{code, column, text, Align, Block, Cell, Table};

/// One scenario at one concurrency, both sides.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Beside {
    pub(crate) ours: f64,
    pub(crate) low: Option<f64>,
    pub(crate) high: Option<f64>,
    pub(crate) published: f64,
}

impl Beside {
    pub(crate) fn difference(&self) -> f64 {
        self.ours - self.published
    }

    pub(crate) fn inside(&self) -> Option<bool> {
        Some(self.low? <= self.published && self.published <= self.high?)
    }
}

/// One concurrency: a cell per column (scenario vs baseline) and the rank agreement.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CompareRow {
    pub(crate) threads: u32,
    pub(crate) cells: Vec<Option<Beside>>,
    pub(crate) rank: Option<Kendall>,
}

/// Each scenario's level relative to one root, through the changes psprobe measured (a
/// runtime scenario against the least instrumented one, which is itself measured against
/// pfsoff when the study has it): the scenarios linked to the first baseline.
pub(crate) fn our_levels(rows: &[&CellRow]) -> BTreeMap<String, f64> {
    let mut levels = BTreeMap::new();
    if let Some(root) = rows.iter().find(|r| r.change_percent.is_none()) {
        levels.insert(root.scenario.clone(), 1.0);
    }
    loop {
        let before = levels.len();
        for r in rows {
            if let (Some(c), Some(base)) = (r.change_percent, levels.get(&r.baseline).copied()) {
                levels
                    .entry(r.scenario.clone())
                    .or_insert(base * (1.0 + c / 100.0));
            }
        }
        if levels.len() == before {
            return levels;
        }
    }
}

/// The columns of a workload's comparison: every scenario measured against a baseline, as
/// `(scenario, baseline)`, in the order of `scenarios`.
pub(crate) fn columns(cells: &[&CellRow], scenarios: &[String]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for s in scenarios {
        if let Some(c) = cells
            .iter()
            .find(|c| &c.scenario == s && c.change_percent.is_some())
        {
            out.push((c.scenario.clone(), c.baseline.clone()));
        }
    }
    out
}

/// The comparison of one workload's cells (every concurrency the study ran).
pub(crate) fn compare_workload(
    published: &Published,
    workload: &str,
    cells: &[&CellRow],
    scenarios: &[String],
) -> (Vec<(String, String)>, Vec<CompareRow>) {
    let columns = columns(cells, scenarios);
    let mut threads: Vec<u32> = cells.iter().map(|c| c.threads).collect();
    threads.sort_unstable();
    threads.dedup();
    let rows = threads
        .into_iter()
        .map(|t| {
            let here: Vec<&CellRow> = cells.iter().copied().filter(|c| c.threads == t).collect();
            let beside = columns
                .iter()
                .map(|(s, b)| {
                    let ours = here.iter().find(|c| &c.scenario == s)?;
                    Some(Beside {
                        ours: ours.change_percent?,
                        low: ours.ci_low_percent,
                        high: ours.ci_high_percent,
                        published: published.change(workload, t, s, b)?,
                    })
                })
                .collect();
            let ours = our_levels(&here);
            let theirs = published.levels(workload, t);
            let (x, y): (Vec<f64>, Vec<f64>) = ours
                .iter()
                .filter_map(|(s, level)| Some((*level, *theirs.get(s)?)))
                .unzip();
            CompareRow {
                threads: t,
                cells: beside,
                rank: kendall(&x, &y),
            }
        })
        .collect();
    (columns, rows)
}

fn cell_text(b: &Beside) -> String {
    let interval = match (b.low, b.high) {
        (Some(l), Some(h)) => format!(" ({l:+.2}..{h:+.2})"),
        _ => String::new(),
    };
    format!(
        "{:+.2}%{interval} / {:+.2}% ({:+.2}{})",
        b.ours,
        b.published,
        b.difference(),
        if b.inside() == Some(true) {
            ", inside"
        } else {
            ""
        }
    )
}

/// One workload's comparison as document blocks: a table in the study's layout and what it
/// adds up to.
pub(crate) fn section(
    workload: &str,
    published: &Published,
    columns: &[(String, String)],
    rows: &[CompareRow],
) -> Vec<Block> {
    let mut intro = vec![text("Published: ")];
    for (k, f) in published.files.iter().enumerate() {
        if k > 0 {
            intro.push(text(", "));
        }
        intro.push(code(f.display().to_string()));
    }
    intro.extend([
        text(". Each cell: psprobe's change with its 95% interval / the published change re-based onto psprobe's baseline (psprobe minus published, points; "),
        code("inside"),
        text(" when the published value lies in psprobe's interval). Rank agreement: Kendall's tau-b of the scenarios' order by statements/s, psprobe's against the published, its two-sided p-value and how many scenarios."),
    ]);
    let titles = std::iter::once("threads".to_string())
        .chain(columns.iter().map(|(s, b)| format!("{s} vs {b}")))
        .chain(std::iter::once("rank agreement".to_string()));
    let mut table = Table::new(titles.map(|t| column(t, Align::Right)).collect());
    for r in rows {
        let mut cells: Vec<Cell> = vec![r.threads.to_string().into()];
        cells.extend(
            r.cells
                .iter()
                .map(|c| Cell::from(c.as_ref().map_or("-".into(), cell_text))),
        );
        cells.push(
            r.rank
                .map_or("-".into(), |k| {
                    format!("tau {:+.2}, p {:.3} ({})", k.tau, k.p, k.n)
                })
                .into(),
        );
        table.row(cells);
    }
    vec![
        Block::Heading(format!("{workload} beside the published table")),
        Block::Paragraph(intro),
        Block::Table(table),
        Block::para(summary(rows, &published.threads(workload))),
    ]
}

/// What the comparison adds up to, in one paragraph.
fn summary(rows: &[CompareRow], published_levels: &[u32]) -> String {
    let cells: Vec<&Beside> = rows.iter().flat_map(|r| r.cells.iter().flatten()).collect();
    if cells.is_empty() {
        return "No concurrency and scenario is both in the study and in the published table."
            .into();
    }
    let with_interval: Vec<&&Beside> = cells.iter().filter(|b| b.inside().is_some()).collect();
    let inside = with_interval
        .iter()
        .filter(|b| b.inside() == Some(true))
        .count();
    let mut differences: Vec<f64> = cells.iter().map(|b| b.difference()).collect();
    differences.sort_by(f64::total_cmp);
    let median = differences[differences.len() / 2];
    let ranks: Vec<Kendall> = rows.iter().filter_map(|r| r.rank).collect();
    let agreeing = ranks.iter().filter(|k| k.tau > 0.0 && k.p < 0.05).count();
    let ran: Vec<u32> = rows.iter().map(|r| r.threads).collect();
    let not_run: Vec<String> = published_levels
        .iter()
        .filter(|t| !ran.contains(t))
        .map(u32::to_string)
        .collect();
    let mut text = format!(
        "The published value lies inside psprobe's interval in {inside} of {} cells with an interval; psprobe minus published: median {median:+.2} points (from {:+.2} to {:+.2}). Scenarios ranked alike (tau > 0, p < 0.05) at {agreeing} of {} concurrencies.",
        with_interval.len(),
        differences[0],
        differences[differences.len() - 1],
        ranks.len()
    );
    if !not_run.is_empty() {
        let _ = write!(
            text,
            " Published at concurrencies this study did not run (not compared): {}.",
            not_run.join(", ")
        );
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(threads: u32, scenario: &str, baseline: &str, change: Option<f64>) -> CellRow {
        CellRow {
            workload: "oltp_read_only".into(),
            threads,
            scenario: scenario.into(),
            schedule: if scenario == "pfsoff" || baseline == "pfsoff" {
                "slow".into()
            } else {
                "fast".into()
            },
            baseline: baseline.into(),
            qps: 1000.0,
            change_percent: change,
            ci_low_percent: change.map(|c| c - 1.0),
            ci_high_percent: change.map(|c| c + 1.0),
            significant: change.map(|c| c.abs() > 1.0),
            sysbench_qps: 1000.0,
            needs: None,
        }
    }

    #[test]
    fn levels_chain_through_pfsoff_and_the_runtime_baseline() {
        let rows = [
            cell(1, "pfsoff", "pfsoff", None),
            cell(1, "pfson_conoff_insoff", "pfsoff", Some(-10.0)),
            cell(1, "pfson_conon_inson", "pfson_conoff_insoff", Some(-20.0)),
        ];
        let refs: Vec<&CellRow> = rows.iter().collect();
        let levels = our_levels(&refs);
        assert_eq!(levels["pfsoff"], 1.0);
        assert!((levels["pfson_conoff_insoff"] - 0.9).abs() < 1e-12);
        assert!((levels["pfson_conon_inson"] - 0.72).abs() < 1e-12);
    }

    #[test]
    fn published_rebased_onto_psprobe_s_baseline_with_rank_agreement() {
        let text = "workload,threads,scenario,qps\noltp_read_only,1,pfsoff,1000\noltp_read_only,1,pfson_conoff_insoff,900\noltp_read_only,1,pfson_conon_inson,810\noltp_read_only,1,pfson_conon_insoff,880\noltp_read_only,4,pfsoff,2000\n";
        let path = std::env::temp_dir().join(format!("psprobe-compare-{}.csv", std::process::id()));
        std::fs::write(&path, text).unwrap();
        let published = Published::load(std::slice::from_ref(&path), &["oltp_read_only"], |_| true)
            .expect("parses");
        let _ = std::fs::remove_file(&path);
        let rows = [
            cell(1, "pfsoff", "pfsoff", None),
            cell(1, "pfson_conoff_insoff", "pfsoff", Some(-9.5)),
            cell(1, "pfson_conon_insoff", "pfson_conoff_insoff", Some(-2.0)),
            cell(1, "pfson_conon_inson", "pfson_conoff_insoff", Some(-12.0)),
        ];
        let refs: Vec<&CellRow> = rows.iter().collect();
        let scenarios: Vec<String> = [
            "pfsoff",
            "pfson_conoff_insoff",
            "pfson_conon_insoff",
            "pfson_conon_inson",
        ]
        .map(String::from)
        .to_vec();
        let (columns, compared) = compare_workload(&published, "oltp_read_only", &refs, &scenarios);
        assert_eq!(columns.len(), 3);
        assert_eq!(
            columns[2],
            ("pfson_conon_inson".into(), "pfson_conoff_insoff".into())
        );
        let b = compared[0].cells[2].clone().unwrap();
        // Published 810 / 900: -10%; psprobe -12% (-13..-11): 2 points below, outside.
        assert!((b.published + 10.0).abs() < 1e-9 && (b.difference() + 2.0).abs() < 1e-9);
        assert_eq!(b.inside(), Some(false));
        let b = compared[0].cells[0].clone().unwrap();
        assert_eq!(
            b.inside(),
            Some(true),
            "-9.5 (-10.5..-8.5) holds -10: {b:?}"
        );
        // Same order of the four scenarios on both sides.
        let rank = compared[0].rank.unwrap();
        assert_eq!((rank.tau, rank.n), (1.0, 4));
        let doc = crate::report::doc::markdown(&section(
            "oltp_read_only",
            &published,
            &columns,
            &compared,
        ));
        assert!(
            doc.contains("| 1 | -9.50% (-10.50..-8.50) / -10.00% (+0.50, inside) |"),
            "{doc}"
        );
        assert!(doc.contains("tau +1.00, p 0.083 (4)"), "{doc}");
        assert!(
            doc.contains("inside psprobe's interval in 2 of 3 cells"),
            "{doc}"
        );
        assert!(doc.contains("did not run (not compared): 4."), "{doc}");
    }
}
