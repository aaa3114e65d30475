//! A study's cells as data: one row per workload, concurrency and scenario (its statements/s
//! through psprobe, its change against the baseline with the interval, sysbench's own rate
//! for the run), written as CSV and JSON beside the markdown report after every finished run,
//! so a study cut short keeps what it measured.
//!
//! Must not: round away what a reader compares (statements/s to 0.1, percents to 0.01), or
//! write a number where there is none (an empty CSV field, a JSON null).

use std::fmt::Write;
use std::path::Path;

use anyhow::Context;
use serde::{Deserialize, Serialize};

use crate::report::Report;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct CellRow {
    pub workload: String,
    pub threads: u32,
    pub scenario: String,
    /// `fast` (switched at runtime) or `slow` (entered by restart).
    pub schedule: String,
    pub baseline: String,
    /// Statements/s in the scenario's measured windows.
    pub qps: f64,
    /// Change against the baseline, percent (`None` for the baseline itself).
    pub change_percent: Option<f64>,
    pub ci_low_percent: Option<f64>,
    pub ci_high_percent: Option<f64>,
    pub significant: Option<bool>,
    /// sysbench's own mean rate over the whole run (all scenarios).
    pub sysbench_qps: f64,
    /// Why a compared cell has no interval (too few pairs, or one too wide to say anything):
    /// what more it needs. Such a cell is not drawn in the study's chart.
    #[serde(default)]
    pub needs: Option<String>,
}

/// The rows of one run, in the order of `scenarios`; a scenario the report has no row for is
/// left out.
pub(crate) fn rows_of(
    workload: &str,
    threads: u32,
    report: &Report,
    scenarios: &[String],
    sysbench_qps: f64,
) -> Vec<CellRow> {
    scenarios
        .iter()
        .filter_map(|s| report.row(s))
        .map(|h| {
            let change = h.qps_change.as_ref();
            CellRow {
                workload: workload.to_string(),
                threads,
                scenario: h.scenario.clone(),
                schedule: h.schedule.clone(),
                baseline: h.baseline.clone(),
                qps: h.qps,
                change_percent: change.map(|c| c.percent),
                ci_low_percent: change.and_then(|c| c.low),
                ci_high_percent: change.and_then(|c| c.high),
                significant: change.map(|c| c.significant),
                sysbench_qps,
                needs: change.and_then(|c| c.needs.clone()),
            }
        })
        .collect()
}

pub(crate) const CSV_HEADER: &str = "workload,threads,scenario,schedule,baseline,qps,change_percent,ci_low_percent,ci_high_percent,significant,sysbench_qps,needs";

/// The rows as CSV (the header first; names are plain words, and what a cell needs has no
/// comma, so no quoting is needed).
pub(crate) fn csv(rows: &[CellRow]) -> String {
    let mut out = format!("{CSV_HEADER}\n");
    let pct = |v: Option<f64>| v.map_or(String::new(), |v| format!("{v:.2}"));
    for r in rows {
        let _ = writeln!(
            out,
            "{},{},{},{},{},{:.1},{},{},{},{},{:.1},{}",
            r.workload,
            r.threads,
            r.scenario,
            r.schedule,
            r.baseline,
            r.qps,
            pct(r.change_percent),
            pct(r.ci_low_percent),
            pct(r.ci_high_percent),
            r.significant.map_or(String::new(), |s| s.to_string()),
            r.sysbench_qps,
            r.needs.as_deref().unwrap_or("").replace(',', ";")
        );
    }
    out
}

/// `STEM.SUFFIX`: a file of the study beside its report. (`Path::with_extension` would take a
/// dot in the stem for an extension: `-o study-9.7.md` wrote `study-9.html`.)
pub(crate) fn beside(stem: &Path, suffix: &str) -> std::path::PathBuf {
    let mut name = stem.as_os_str().to_owned();
    name.push(".");
    name.push(suffix);
    name.into()
}

/// Writes `STEM.cells.csv` and `STEM.cells.json` (each through a temporary file, so a study
/// killed while writing leaves the previous complete version).
pub(crate) fn write(stem: &Path, rows: &[CellRow]) -> anyhow::Result<()> {
    let json = serde_json::to_string_pretty(rows).context("cannot encode the cells")?;
    replace_file(&beside(stem, "cells.csv"), &csv(rows))?;
    replace_file(&beside(stem, "cells.json"), &(json + "\n"))
}

/// Writes `text` to `path` through a temporary file beside it, so that a process killed
/// while writing leaves the previous complete version (the study's files).
pub(super) fn replace_file(path: &Path, text: &str) -> anyhow::Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = std::path::PathBuf::from(tmp);
    std::fs::write(&tmp, text).with_context(|| format!("cannot write {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("cannot write {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(scenario: &str, change: Option<(f64, f64, f64)>) -> CellRow {
        CellRow {
            workload: "oltp_read_only".into(),
            threads: 8,
            scenario: scenario.into(),
            schedule: "fast".into(),
            baseline: "pfson_conoff_insoff".into(),
            qps: 12345.678,
            change_percent: change.map(|c| c.0),
            ci_low_percent: change.map(|c| c.1),
            ci_high_percent: change.map(|c| c.2),
            significant: change.map(|c| c.1 > 0.0 || c.2 < 0.0),
            sysbench_qps: 12000.04,
            needs: None,
        }
    }

    #[test]
    fn csv_has_a_row_per_scenario_and_leaves_missing_numbers_empty() {
        let text = csv(&[
            row("pfson_conoff_insoff", None),
            row("pfson_conon_inson", Some((-12.345, -14.0, -10.5))),
        ]);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], CSV_HEADER);
        assert_eq!(
            lines[1],
            "oltp_read_only,8,pfson_conoff_insoff,fast,pfson_conoff_insoff,12345.7,,,,,12000.0,"
        );
        assert_eq!(
            lines[2],
            "oltp_read_only,8,pfson_conon_inson,fast,pfson_conoff_insoff,12345.7,-12.35,-14.00,-10.50,true,12000.0,"
        );
        let width = CSV_HEADER.split(',').count();
        assert!(lines.iter().all(|l| l.split(',').count() == width));
    }

    #[test]
    fn a_dot_in_the_stem_is_kept() {
        let stem = Path::new("/d/study-9.7");
        assert_eq!(beside(stem, "html"), Path::new("/d/study-9.7.html"));
        assert_eq!(
            beside(stem, "cells.csv"),
            Path::new("/d/study-9.7.cells.csv")
        );
    }

    #[test]
    fn written_files_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let stem = dir.path().join("study-9.7");
        let rows = vec![row("pfson_conon_inson", Some((1.0, -1.0, 3.0)))];
        write(&stem, &rows).unwrap();
        let json: Vec<serde_json::Value> =
            serde_json::from_str(&std::fs::read_to_string(beside(&stem, "cells.json")).unwrap())
                .unwrap();
        assert_eq!(json.len(), 1);
        assert_eq!(json[0]["scenario"], "pfson_conon_inson");
        assert_eq!(json[0]["significant"], false);
        let csv = std::fs::read_to_string(beside(&stem, "cells.csv")).unwrap();
        assert_eq!(csv.lines().count(), 2);
        let names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(names.iter().all(|n| !n.ends_with(".tmp")), "{names:?}");
    }
}
