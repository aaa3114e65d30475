//! The markdown of `psprobe experiment`: per workload a table in the seed study's layout (a
//! row of statements/s per concurrency, a column per scenario, then the change against the
//! baseline with its interval, then the runs' warnings), and the direct checks beside
//! psprobe's slow estimates.
//!
//! Must not: compute anything; every figure comes from the runs' reports.

use std::fmt::Write;

use super::duet_column::DuetCell;
use super::state::DirectLine;
use crate::report::Report;

/// One workload's table: per concurrency, `(threads, its report, sysbench's own QPS)`; with
/// `--duet`, pfsoff's figures per concurrency come from `duets` instead.
pub(super) fn workload_table(
    doc: &mut String,
    workload: &str,
    scenarios: &[String],
    rows: &[(u32, Report, f64)],
    duets: &[(u32, DuetCell)],
) {
    let _ = writeln!(doc, "## {workload}\n");
    let _ = write!(doc, "| threads |");
    for s in scenarios {
        let _ = write!(doc, " {s} |");
    }
    let _ = writeln!(doc, " sysbench QPS |");
    let _ = writeln!(doc, "|{}", " ---: |".repeat(scenarios.len() + 2));
    for (threads, report, sysbench_qps) in rows {
        let duet = duets.iter().find(|(t, _)| t == threads).map(|(_, d)| d);
        let _ = write!(doc, "| {threads} |");
        for s in scenarios {
            let qps = match duet {
                Some(d) if s == "pfsoff" => d.pfsoff_qps,
                _ => report.row(s).map_or(0.0, |h| h.qps),
            };
            let _ = write!(doc, " {qps:.0} |");
        }
        let _ = writeln!(doc, " {sysbench_qps:.0} |");
        let _ = write!(doc, "| {threads} |");
        for s in scenarios {
            let cell = match duet {
                Some(d) if s == "pfsoff" => format!("baseline (pfsoff, duet of {} pairs)", d.pairs),
                Some(d) if *s == d.reference => format!("{} vs pfsoff (duet)", d.change.text()),
                _ => report
                    .row(s)
                    .map_or_else(String::new, |h| match &h.qps_change {
                        Some(c) => format!("{} vs {}", c.text(), h.baseline),
                        None => format!("baseline ({})", h.baseline),
                    }),
            };
            let _ = write!(doc, " {cell} |");
        }
        let _ = writeln!(doc, " |");
    }
    let _ = writeln!(doc);
    // What a run's analysis warns of (switching that eats the slots, a comparison that could
    // not be made) stands under the table, by concurrency: a cell alone does not say it.
    for (threads, report, _) in rows {
        for w in &report.analysis.warnings {
            let _ = writeln!(doc, "> warning, {threads} threads: {w}\n");
        }
    }
}

/// The direct checks, one line per run (nothing when there were none).
pub(super) fn direct_section(doc: &mut String, direct: &[DirectLine]) {
    if direct.is_empty() {
        return;
    }
    let _ = writeln!(
        doc,
        "## pfsoff: psprobe's slow blocks against a direct sequential measurement\n\nOn the same server after each run, without psprobe: restart with performance_schema OFF, sysbench directly; restart ON with the reference's settings, sysbench directly; in random order per repetition, each after the same restart settle as the slow phases. The change is the reference against pfsoff (statements/s), a t interval over the repetitions.\n"
    );
    for d in direct {
        let _ = writeln!(doc, "- {}, {} threads: {}", d.workload, d.threads, d.line);
    }
    let _ = writeln!(doc);
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
        let mut doc = String::new();
        workload_table(&mut doc, "oltp_read_only", &scenarios, &rows, &[]);
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
