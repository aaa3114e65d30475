//! `psprobe experiment --duet`: the seed study's pfsoff column from duet runs. After a cell's
//! runtime scenarios (switched fast on the study's server alone), pfsoff against its reference
//! runs as a duet on that server and a copy of its data made for the cell (duet_on_copy.rs).
//! The cell's pfsoff figures come from the duet: the reference's change against pfsoff (the
//! seed table's direction) with the duet's interval, pfsoff's statements/s from both sides'
//! pfsoff phases.
//!
//! Must not: compute an estimate of its own (the duet's analysis does).

use std::path::{Path, PathBuf};

use std::time::Duration;

use anyhow::Context;

use super::cells::CellRow;
use crate::analysis::duet::{analyze_duet, Change};
use crate::demo::duet_run::DuetFiles;
use crate::phase_log::read_phases;
use crate::report::{report_of, Interval};

const LEVEL: f64 = 0.95;
/// The `schedule` of a cell measured by a duet.
const DUET: &str = "duet";
/// The half-width a duet cell stops at, and that a cell without an interval is told about.
pub(super) const TARGET_POINTS: f64 = 3.0;
/// The least duet time worth a cell.
pub(super) use crate::demo::duet_on_copy::MIN_DUET;

/// A cell's pfsoff figures from its duet.
#[derive(Debug, Clone)]
pub(super) struct DuetCell {
    pub reference: String,
    /// pfsoff's statements/s: the mean of both sides' pfsoff phases.
    pub pfsoff_qps: f64,
    /// The reference's change against pfsoff.
    pub change: Interval,
    pub pairs: usize,
}

impl DuetCell {
    /// Sets the duet's figures into a run's cells: the reference against pfsoff (its row from
    /// the runtime scenarios held it as their baseline), and pfsoff's own row.
    pub(super) fn patch(
        &self,
        cells: &mut Vec<CellRow>,
        workload: &str,
        threads: u32,
        sysbench_qps: f64,
    ) {
        let c = &self.change;
        for row in cells.iter_mut().filter(|r| r.scenario == self.reference) {
            row.schedule = DUET.into();
            row.baseline = "pfsoff".into();
            row.change_percent = Some(c.percent);
            row.ci_low_percent = c.low;
            row.ci_high_percent = c.high;
            row.significant = Some(c.significant);
            row.needs = c.needs.clone();
        }
        cells.push(CellRow {
            workload: workload.to_string(),
            threads,
            scenario: "pfsoff".into(),
            schedule: DUET.into(),
            baseline: "pfsoff".into(),
            qps: self.pfsoff_qps,
            change_percent: None,
            ci_low_percent: None,
            ci_high_percent: None,
            significant: None,
            sysbench_qps,
            needs: None,
        });
    }
}

/// The duet's share of a cell's schedule time: half, at least [`MIN_DUET`].
pub(super) fn duet_time(cell: Duration) -> Duration {
    (cell / 2).max(MIN_DUET)
}

/// Where a cell's duet writes: `STEM-WORKLOAD-THREADS.duet.{a,b}.phases.jsonl`, ...
pub(super) fn files(stem: &Path, workload: &str, threads: u32) -> (DuetFiles, PathBuf) {
    let cell = PathBuf::from(format!("{}-{workload}-{threads}.duet", stem.display()));
    (DuetFiles::beside(&cell), cell.with_extension("duet.md"))
}

/// The cell's pfsoff figures from a duet's two logs.
pub(super) fn cell_of(files: &DuetFiles, reference: &str) -> anyhow::Result<DuetCell> {
    let read = |p: &Path| read_phases(p).with_context(|| format!("cannot read {}", p.display()));
    let (a, b) = (read(&files.logs[0])?, read(&files.logs[1])?);
    let comparison = analyze_duet(&a, &b, reference, LEVEL)
        .into_iter()
        .find(|c| c.scenario == "pfsoff")
        .context("the duet compared no pfsoff phase with its reference")?;
    let qps: Vec<f64> = [&a, &b]
        .iter()
        .filter_map(|log| report_of(log, None).ok()?.row("pfsoff").map(|h| h.qps))
        .collect();
    Ok(DuetCell {
        reference: reference.to_string(),
        pfsoff_qps: qps.iter().sum::<f64>() / qps.len().max(1) as f64,
        change: reference_against_pfsoff(&comparison.throughput),
        pairs: comparison.pairs(),
    })
}

/// pfsoff's change against the reference turned round: the reference's against pfsoff (a
/// ratio r becomes 1/r, the bounds swap); without an interval, what more pairs would give one.
fn reference_against_pfsoff(c: &Change) -> Interval {
    let invert = |p: f64| (1.0 / (1.0 + p / 100.0) - 1.0) * 100.0;
    let (low, high) = (c.high.map(invert), c.low.map(invert));
    let needs = (low.is_none()).then(|| {
        format!(
            "not enough pairs for an interval: about {} more duet pairs for +-{TARGET_POINTS} points",
            c.pairs_for(TARGET_POINTS, LEVEL)
                .saturating_sub(c.pairs as u64)
                .max(1)
        )
    });
    Interval {
        percent: invert(c.percent),
        low,
        high,
        significant: low.zip(high).is_some_and(|(lo, hi)| lo > 0.0 || hi < 0.0),
        needs,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(percent: f64, bounds: Option<(f64, f64)>, pairs: usize) -> Change {
        Change {
            percent,
            low: bounds.map(|b| b.0),
            high: bounds.map(|b| b.1),
            pairs,
            pair_sd: Some(0.01),
        }
    }

    /// pfsoff +25% (+20..+30) against the reference is the reference -20% (-23.1..-16.7)
    /// against pfsoff, significant; an interval across 0 stays across it.
    #[test]
    fn the_change_is_turned_round_with_its_bounds() {
        let i = reference_against_pfsoff(&change(25.0, Some((20.0, 30.0)), 12));
        assert!((i.percent + 20.0).abs() < 1e-9, "{i:?}");
        assert!((i.low.unwrap() + 23.0769).abs() < 1e-3, "{i:?}");
        assert!((i.high.unwrap() + 16.6667).abs() < 1e-3, "{i:?}");
        assert!(i.significant && i.needs.is_none());
        let across = reference_against_pfsoff(&change(0.5, Some((-0.4, 1.3)), 12));
        assert!(across.low.unwrap() < 0.0 && across.high.unwrap() > 0.0 && !across.significant);
    }

    #[test]
    fn too_few_pairs_say_how_many_more() {
        let i = reference_against_pfsoff(&change(1.0, None, 3));
        assert!(i.low.is_none() && i.high.is_none() && !i.significant);
        let needs = i.needs.expect("what it needs");
        assert!(
            needs.starts_with("not enough pairs for an interval: about ")
                && needs.ends_with("more duet pairs for +-3 points"),
            "{needs}"
        );
    }

    /// The reference's row (the runtime scenarios' baseline) gets the duet's change against
    /// pfsoff, and pfsoff a row of its own, as the restart pairs' cells have them.
    #[test]
    fn the_duet_sets_the_reference_against_pfsoff_into_the_cells() {
        let row = |scenario: &str| CellRow {
            workload: "oltp_read_only".into(),
            threads: 8,
            scenario: scenario.into(),
            schedule: "fast".into(),
            baseline: "pfson_conoff_insoff".into(),
            qps: 1000.0,
            change_percent: (scenario != "pfson_conoff_insoff").then_some(-5.0),
            ci_low_percent: None,
            ci_high_percent: None,
            significant: None,
            sysbench_qps: 990.0,
            needs: None,
        };
        let mut cells = vec![row("pfson_conoff_insoff"), row("pfson_conon_inson")];
        let cell = DuetCell {
            reference: "pfson_conoff_insoff".into(),
            pfsoff_qps: 1010.0,
            change: reference_against_pfsoff(&change(0.8, Some((0.36, 1.24)), 40)),
            pairs: 40,
        };
        cell.patch(&mut cells, "oltp_read_only", 8, 990.0);
        assert_eq!(cells.len(), 3);
        let reference = &cells[0];
        assert_eq!(
            (reference.baseline.as_str(), reference.schedule.as_str()),
            ("pfsoff", "duet")
        );
        assert!((reference.change_percent.unwrap() + 0.7937).abs() < 1e-3);
        assert!(reference.significant == Some(true) && reference.ci_high_percent.unwrap() < 0.0);
        assert_eq!(cells[1].baseline, "pfson_conoff_insoff", "untouched");
        assert_eq!(
            (
                cells[2].scenario.as_str(),
                cells[2].qps,
                cells[2].change_percent
            ),
            ("pfsoff", 1010.0, None)
        );
    }

    #[test]
    fn half_of_each_cell_and_at_least_a_minute() {
        assert_eq!(duet_time(Duration::from_secs(150)), Duration::from_secs(75));
        assert_eq!(duet_time(Duration::from_secs(90)), MIN_DUET);
    }
}
