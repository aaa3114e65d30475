//! Advice: which groups to run within a throughput budget. A configuration's predicted cost
//! is the base (global and thread instrumentation) plus its groups' main effects, summed per
//! segment so the interval carries their covariance; a configuration with no group costs
//! nothing (nothing instrumented). The recommendation is the richest set (most groups; then
//! the lowest worst case) that holds every needed group and whose cost at the upper end of its
//! interval stays within the budget.
//!
//! Must not: know what a group sets (SQL and my.cnf lines are the report's, from the run
//! record's group definitions).

use serde::Serialize;

use super::super::estimate::Metric;
use super::super::paired::robust_interval;
use super::Attribution;

/// A configuration's predicted throughput cost (a fraction of statements/s lost: 0.02 is 2%).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Prediction {
    pub groups: Vec<String>,
    pub predicted: f64,
    pub ci_low: Option<f64>,
    pub ci_high: Option<f64>,
    pub n_segments: usize,
}

/// What to run for a budget.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Recommendation {
    /// Percent of throughput the DBA accepts to lose.
    pub budget: f64,
    pub need: Vec<String>,
    /// The recommended groups (in the run's order).
    pub groups: Vec<String>,
    /// Their predicted cost, a fraction of throughput, with its interval.
    pub predicted: f64,
    pub ci_low: Option<f64>,
    pub ci_high: Option<f64>,
    /// The cost's upper bound is within the budget (false: even the needed groups alone
    /// are not, and they are what is recommended).
    pub within_budget: bool,
    /// The cheapest configuration with what is needed: the needed groups alone.
    pub cheapest: Prediction,
    /// The statements that set it at runtime, and the my.cnf lines that set it at startup
    /// (filled by the report from the run's group definitions).
    pub sql: Vec<String>,
    pub mycnf: Vec<String>,
    /// The confirmation's measured cost against nothing instrumented, when the run
    /// confirmed it (`--confirm`).
    pub confirmed: Option<Prediction>,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(crate) enum AdviceError {
    #[error("--budget {0}: give the percent of throughput you accept to lose, more than 0 and at most 100 (e.g. 2)")]
    Budget(f64),
    #[error("--need {name}: that group was not measured in this run (groups: {})", measured.join(", "))]
    NotMeasured { name: String, measured: Vec<String> },
    #[error("the run has no complete segment with throughput for every design point: no advice")]
    NoData,
}

/// The prediction for the groups in `mask`, from the per-segment throughput series.
fn predict(att: &Attribution, mask: u32, level: f64) -> Option<Prediction> {
    let series = att.series.get(&Metric::Throughput)?;
    let groups: Vec<String> = (0..att.groups.len())
        .filter(|j| mask & (1 << j) != 0)
        .map(|j| att.groups[j].clone())
        .collect();
    if mask == 0 {
        return Some(Prediction {
            groups,
            predicted: 0.0,
            ci_low: Some(0.0),
            ci_high: Some(0.0),
            n_segments: series.base.len(),
        });
    }
    let sums: Vec<f64> = (0..series.base.len())
        .map(|s| {
            series.base[s]
                + (0..att.groups.len())
                    .filter(|j| mask & (1 << j) != 0)
                    .map(|j| series.effects[j][s])
                    .sum::<f64>()
        })
        .collect();
    let i = robust_interval(&sums, level, None)?;
    // A throughput ratio r is a cost of -r; the interval flips.
    let cost = |x: f64| -x.exp_m1();
    Some(Prediction {
        groups,
        predicted: cost(i.center),
        ci_low: i.bounds.map(|b| cost(b.1)),
        ci_high: i.bounds.map(|b| cost(b.0)),
        n_segments: i.n,
    })
}

/// The recommendation for `budget` percent that holds every group in `need`.
pub(crate) fn advise(
    att: &Attribution,
    budget: f64,
    need: &[String],
) -> Result<Recommendation, AdviceError> {
    if !(budget > 0.0 && budget <= 100.0) {
        return Err(AdviceError::Budget(budget));
    }
    let mut need_mask = 0u32;
    for name in need {
        let Some(j) = att.groups.iter().position(|g| g == name) else {
            return Err(AdviceError::NotMeasured {
                name: name.clone(),
                measured: att.groups.clone(),
            });
        };
        need_mask |= 1 << j;
    }
    let level = att.level;
    let cheapest = predict(att, need_mask, level).ok_or(AdviceError::NoData)?;
    let limit = budget / 100.0;
    let fits = |p: &Prediction| p.ci_high.is_some_and(|h| h <= limit);
    let mut best: Option<Prediction> = None;
    let k = att.groups.len();
    for mask in 0u32..(1 << k) {
        if mask & need_mask != need_mask {
            continue;
        }
        let Some(p) = predict(att, mask, level) else {
            continue;
        };
        if !fits(&p) {
            continue;
        }
        let better = match &best {
            None => true,
            Some(b) => {
                p.groups.len() > b.groups.len()
                    || (p.groups.len() == b.groups.len()
                        && p.ci_high.unwrap_or(f64::INFINITY) < b.ci_high.unwrap_or(f64::INFINITY))
            }
        };
        if better {
            best = Some(p);
        }
    }
    let (chosen, within_budget) = match best {
        Some(p) => (p, true),
        None => (cheapest.clone(), false),
    };
    Ok(Recommendation {
        budget,
        need: need.to_vec(),
        groups: chosen.groups,
        predicted: chosen.predicted,
        ci_low: chosen.ci_low,
        ci_high: chosen.ci_high,
        within_budget,
        cheapest,
        sql: Vec::new(),
        mycnf: Vec::new(),
        confirmed: None,
    })
}

#[cfg(test)]
mod tests {
    use super::super::{Attribution, Series};
    use super::*;
    use std::collections::BTreeMap;

    /// Three groups costing 1%, 3% and 10% (as log-ratios, with a little noise), base 0.5%.
    fn attribution() -> Attribution {
        let n = 40;
        let wobble = |s: usize, j: usize| ((s * 7 + j * 3) % 5) as f64 * 0.0004 - 0.0008;
        let cost = [0.01, 0.03, 0.10];
        let series = Series {
            base: (0..n)
                .map(|s| (1.0f64 - 0.005).ln() + wobble(s, 9))
                .collect(),
            effects: cost
                .iter()
                .enumerate()
                .map(|(j, c)| (0..n).map(|s| (1.0f64 - c).ln() + wobble(s, j)).collect())
                .collect(),
        };
        Attribution {
            groups: vec!["cheap".into(), "mid".into(), "dear".into()],
            points: 8,
            level: 0.95,
            segments: n,
            incomplete_segments: 0,
            effects: Vec::new(),
            base: Vec::new(),
            all_on: Vec::new(),
            interactions: Vec::new(),
            additivity: Vec::new(),
            digests: Vec::new(),
            warnings: Vec::new(),
            series: BTreeMap::from([(Metric::Throughput, series)]),
        }
    }

    #[test]
    fn the_richest_set_within_the_budget_at_its_upper_bound() {
        let att = attribution();
        // 5%: cheap + mid cost about 4.5% (base 0.5 + 1 + 3): fits; dear never does.
        let r = advise(&att, 5.0, &[]).unwrap();
        assert_eq!(r.groups, ["cheap", "mid"]);
        assert!(r.within_budget);
        assert!((r.predicted - 0.0446).abs() < 0.003, "{}", r.predicted);
        assert!(r.ci_high.unwrap() <= 0.05 && r.ci_low.unwrap() <= r.predicted);
        // 2%: one group; the cheaper worst case of the two that fit is chosen.
        let r = advise(&att, 2.0, &[]).unwrap();
        assert_eq!(r.groups, ["cheap"]);
        // 100%: everything.
        assert_eq!(advise(&att, 100.0, &[]).unwrap().groups.len(), 3);
        // A budget below the base: nothing at all is the richest that fits.
        let r = advise(&att, 0.1, &[]).unwrap();
        assert!(r.groups.is_empty() && r.within_budget && r.predicted == 0.0);
    }

    #[test]
    fn what_is_needed_is_always_in_and_may_exceed_the_budget() {
        let att = attribution();
        let r = advise(&att, 12.0, &["dear".into()]).unwrap();
        assert!(r.groups.contains(&"dear".to_string()));
        assert_eq!(r.cheapest.groups, ["dear"]);
        let r = advise(&att, 2.0, &["dear".into()]).unwrap();
        assert!(!r.within_budget, "dear alone is over 2%");
        assert_eq!(r.groups, ["dear"], "the needed groups alone, flagged");
        assert!(r.predicted > 0.1);
    }

    #[test]
    fn bad_budgets_and_unknown_needs_are_errors() {
        let att = attribution();
        for bad in [0.0, -1.0, 100.5, f64::NAN] {
            assert!(
                matches!(advise(&att, bad, &[]), Err(AdviceError::Budget(_))),
                "{bad}"
            );
        }
        let e = advise(&att, 2.0, &["waits".into()]).unwrap_err();
        assert!(e.to_string().contains("waits") && e.to_string().contains("cheap, mid, dear"));
        let mut empty = attribution();
        empty.series.clear();
        assert_eq!(advise(&empty, 2.0, &[]), Err(AdviceError::NoData));
    }
}
