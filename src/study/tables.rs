//! The blocks of `psprobe experiment`'s document: per workload a table in the seed study's
//! layout (a row of statements/s per concurrency, a column per scenario, then the change
//! against the baseline with its interval, then the runs' warnings), and the direct checks
//! beside psprobe's slow estimates.
//!
//! Must not: compute anything (every figure comes from the runs' reports), or write markdown
//! or HTML itself (`crate::report::doc` renders the blocks).

use super::duet_column::DuetCell;
use super::state::DirectLine;
use crate::report::doc::{column, text, Align, Block, Cell, Table};
use crate::report::Report;

/// One workload's table: per concurrency, `(threads, its report, sysbench's own QPS)`; with
/// `--duet`, pfsoff's figures per concurrency come from `duets` instead.
pub(super) fn workload_table(
    workload: &str,
    scenarios: &[String],
    rows: &[(u32, Report, f64)],
    duets: &[(u32, DuetCell)],
) -> Vec<Block> {
    let columns = std::iter::once("threads")
        .chain(scenarios.iter().map(String::as_str))
        .chain(std::iter::once("sysbench QPS"))
        .map(|title| column(title, Align::Right))
        .collect();
    let mut table = Table::new(columns);
    for (threads, report, sysbench_qps) in rows {
        let duet = duets.iter().find(|(t, _)| t == threads).map(|(_, d)| d);
        let mut qps_row: Vec<Cell> = vec![threads.to_string().into()];
        let mut change_row: Vec<Cell> = vec![threads.to_string().into()];
        for s in scenarios {
            let qps = match duet {
                Some(d) if s == "pfsoff" => d.pfsoff_qps,
                _ => report.row(s).map_or(0.0, |h| h.qps),
            };
            qps_row.push(format!("{qps:.0}").into());
            change_row.push(
                match duet {
                    Some(d) if s == "pfsoff" => {
                        format!("baseline (pfsoff, duet of {} pairs)", d.pairs)
                    }
                    Some(d) if *s == d.reference => {
                        format!("{} vs pfsoff (duet)", d.change.text())
                    }
                    _ => report
                        .row(s)
                        .map_or_else(String::new, |h| match &h.qps_change {
                            Some(c) => format!("{} vs {}", c.text(), h.baseline),
                            None => format!("baseline ({})", h.baseline),
                        }),
                }
                .into(),
            );
        }
        qps_row.push(format!("{sysbench_qps:.0}").into());
        change_row.push("".into());
        table.row(qps_row);
        table.row(change_row);
    }
    let mut blocks = vec![Block::Heading(workload.to_string()), Block::Table(table)];
    // What a run's analysis warns of (switching that eats the slots, a comparison that could
    // not be made) stands under the table, by concurrency: a cell alone does not say it.
    for (threads, report, _) in rows {
        for w in &report.analysis.warnings {
            blocks.push(Block::Note(format!("warning, {threads} threads: {w}")));
        }
    }
    blocks
}

/// The direct checks, one line per run (nothing when there were none).
pub(super) fn direct_section(direct: &[DirectLine]) -> Vec<Block> {
    if direct.is_empty() {
        return Vec::new();
    }
    vec![
        Block::Heading(
            "pfsoff: psprobe's slow blocks against a direct sequential measurement".into(),
        ),
        Block::para(
            "On the same server after each run, without psprobe: restart with performance_schema OFF, sysbench directly; restart ON with the reference's settings, sysbench directly; in random order per repetition, each after the same restart settle as the slow phases. The change is the reference against pfsoff (statements/s), a t interval over the repetitions.",
        ),
        Block::List(
            direct
                .iter()
                .map(|d| vec![text(format!("{}, {} threads: {}", d.workload, d.threads, d.line))])
                .collect(),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::switch_load::with_test_switches;
    use crate::phase_log::{test_aggregate, PhaseRecord};

    const SCENARIOS: [&str; 2] = ["pfson_conoff_insoff", "pfson_conon_inson"];

    /// Four 250 ms slots of `scenario` in `block` whose switches took `switch_ms` each.
    fn slots(scenario: &str, block: u64, switch_ms: f64) -> PhaseRecord {
        let at = block * 2_000 + if scenario == SCENARIOS[0] { 0 } else { 1_000 };
        let mut p = PhaseRecord {
            version: 2,
            kind: "phase".into(),
            scenario: scenario.into(),
            block,
            phase: at / 250,
            switched_at_ms: at,
            measure_from_ms: at + 50,
            measure_to_ms: at + 1_000,
            verified: true,
            commands: vec![test_aggregate(Some("query"), None, 900 + block * 7)],
            schedule: Some("fast".into()),
            ..PhaseRecord::default()
        };
        with_test_switches(&mut p, switch_ms);
        p
    }

    fn report(switch_ms: f64) -> Report {
        let records: Vec<PhaseRecord> = (0..6)
            .flat_map(|b| SCENARIOS.map(|s| slots(s, b, switch_ms)))
            .collect();
        crate::report::report_of(&records, None).expect("a report")
    }

    /// The run whose switches ate its slots is named under the table, by concurrency; the
    /// other is not.
    #[test]
    fn a_runs_warnings_stand_under_the_table() {
        let scenarios: Vec<String> = SCENARIOS.map(String::from).to_vec();
        let rows = vec![(8, report(20.0), 1000.0), (512, report(180.0), 900.0)];
        let doc =
            crate::report::doc::markdown(&workload_table("oltp_read_only", &scenarios, &rows, &[]));
        let warnings: Vec<&str> = doc.lines().filter(|l| l.starts_with("> warning")).collect();
        assert_eq!(warnings.len(), 1, "{doc}");
        assert!(
            warnings[0].starts_with("> warning, 512 threads: switching took 180 ms on average"),
            "{doc}"
        );
        // Under the table, not inside it.
        let table_end = doc.rfind("| 512 |").expect("the 512 rows");
        assert!(
            doc.find("> warning").expect("a warning") > table_end,
            "{doc}"
        );
    }
}
