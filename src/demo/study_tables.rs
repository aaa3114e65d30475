//! The markdown of `psprobe experiment`: per workload a table in the seed study's layout (a
//! row of statements/s per concurrency, a column per scenario, then the change against the
//! baseline with its interval), and the direct checks beside psprobe's slow estimates.
//!
//! Must not: compute anything; every figure comes from the runs' reports.

use std::fmt::Write;

use super::study::DirectLine;
use crate::report::Report;

/// One workload's table: per concurrency, `(threads, its report, sysbench's own QPS)`.
pub(super) fn workload_table(
    doc: &mut String,
    workload: &str,
    scenarios: &[String],
    rows: &[(u32, Report, f64)],
) {
    let _ = writeln!(doc, "## {workload}\n");
    let _ = write!(doc, "| threads |");
    for s in scenarios {
        let _ = write!(doc, " {s} |");
    }
    let _ = writeln!(doc, " sysbench QPS |");
    let _ = writeln!(doc, "|{}", " ---: |".repeat(scenarios.len() + 2));
    for (threads, report, sysbench_qps) in rows {
        let _ = write!(doc, "| {threads} |");
        for s in scenarios {
            let qps = report.row(s).map_or(0.0, |h| h.qps);
            let _ = write!(doc, " {qps:.0} |");
        }
        let _ = writeln!(doc, " {sysbench_qps:.0} |");
        let _ = write!(doc, "| {threads} |");
        for s in scenarios {
            let cell = report
                .row(s)
                .map_or_else(String::new, |h| match &h.qps_change {
                    Some(c) => format!("{} vs {}", c.text(), h.baseline),
                    None => format!("baseline ({})", h.baseline),
                });
            let _ = write!(doc, " {cell} |");
        }
        let _ = writeln!(doc, " |");
    }
    let _ = writeln!(doc);
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
