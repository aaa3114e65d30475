//! An attribution run's records → per segment, one value per design point and metric (a log,
//! so differences are log-ratios): log statements/s, the log of the mix-adjusted mean latency
//! against the segment's nothing-instrumented point, log server CPU per statement. Only
//! segments holding every design point of the run and the nothing-instrumented point count:
//! a contrast needs the whole replicate.

use std::collections::{BTreeMap, BTreeSet};

use crate::phase_log::group_names::{point_groups, BASE_CHECK, NONE_POINT};
use crate::phase_log::PhaseRecord;

use super::super::estimate::Metric;
use super::super::mix::latency_pair;
use super::super::phase_data::{collect, PhaseData};

/// The metrics attributed to groups.
pub(crate) const METRICS: [Metric; 3] =
    [Metric::Throughput, Metric::MeanLatency, Metric::ServerCpu];

/// The design read from the records' names.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Points {
    /// The groups, in the order of the point that has them all (the run's listed order).
    pub groups: Vec<String>,
    /// Every design point: its name and its groups on (bit `j` for `groups[j]`).
    pub points: Vec<(String, u32)>,
}

impl Points {
    /// The design in `records`; `None` when they hold no design point.
    pub(crate) fn of(records: &[PhaseRecord]) -> Option<Points> {
        let mut names: BTreeSet<&str> = BTreeSet::new();
        for r in records {
            if point_groups(&r.scenario).is_some() {
                names.insert(&r.scenario);
            }
        }
        // The listed order: that of the point with the most groups (all of them).
        let widest = names
            .iter()
            .filter_map(|n| point_groups(n))
            .max_by_key(Vec::len)?;
        let mut groups: Vec<String> = widest.iter().map(|g| g.to_string()).collect();
        for n in &names {
            for g in point_groups(n).unwrap_or_default() {
                if !groups.iter().any(|x| x == g) {
                    groups.push(g.to_string());
                }
            }
        }
        let points = names
            .iter()
            .map(|n| {
                let mask = point_groups(n)
                    .unwrap_or_default()
                    .iter()
                    .filter_map(|g| groups.iter().position(|x| x == g))
                    .fold(0u32, |m, j| m | 1 << j);
                (n.to_string(), mask)
            })
            .collect();
        Some(Points { groups, points })
    }

    pub(crate) fn all_on(&self) -> u32 {
        (1u32 << self.groups.len()) - 1
    }

    /// Index of the point with exactly these groups on.
    pub(crate) fn index_of(&self, mask: u32) -> Option<usize> {
        self.points.iter().position(|(_, m)| *m == mask)
    }
}

/// One complete segment: per metric, the value of every point (in [`Points::points`] order)
/// and of the nothing-instrumented point.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Segment {
    pub block: u64,
    pub values: BTreeMap<Metric, Values>,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Values {
    pub points: Vec<f64>,
    pub none: f64,
    /// The base check (global and thread instrumentation only), paired with `none`.
    pub base_check: f64,
}

/// The complete segments, and how many were left out (incomplete or unverified).
pub(crate) struct Collected {
    pub segments: Vec<Segment>,
    pub incomplete: usize,
    /// Per segment (same order), the phases by point index, for per-digest contrasts.
    pub phases: Vec<Vec<PhaseData>>,
}

pub(crate) fn collect_segments(records: &[PhaseRecord], design: &Points) -> Collected {
    let relevant: Vec<PhaseRecord> = records
        .iter()
        .filter(|r| {
            r.scenario == NONE_POINT
                || r.scenario == BASE_CHECK
                || point_groups(&r.scenario).is_some()
        })
        .cloned()
        .collect();
    let data = collect(&relevant);
    let mut out = Collected {
        segments: Vec::new(),
        incomplete: 0,
        phases: Vec::new(),
    };
    for block in data.blocks() {
        // Segments of the design only (a confirmation's come after it).
        let in_design = design
            .points
            .iter()
            .any(|(name, _)| data.get(name, block).is_some());
        if !in_design {
            continue;
        }
        let none = data.get(NONE_POINT, block);
        let check = data.get(BASE_CHECK, block);
        let points: Option<Vec<&PhaseData>> = design
            .points
            .iter()
            .map(|(name, _)| data.get(name, block))
            .collect();
        let (Some(none), Some(check), Some(points)) = (none, check, points) else {
            out.incomplete += 1;
            continue;
        };
        let mut values = BTreeMap::new();
        for metric in METRICS {
            if let Some(v) = values_of(metric, none, check, &points) {
                values.insert(metric, v);
            }
        }
        if values.is_empty() {
            out.incomplete += 1;
            continue;
        }
        out.segments.push(Segment { block, values });
        out.phases.push(points.into_iter().cloned().collect());
    }
    out
}

fn ln(x: Option<f64>) -> Option<f64> {
    x.filter(|v| *v > 0.0 && v.is_finite()).map(f64::ln)
}

/// Every point's value of `metric` in a segment; `None` if any point lacks it.
fn values_of(
    metric: Metric,
    none: &PhaseData,
    check: &PhaseData,
    points: &[&PhaseData],
) -> Option<Values> {
    let value = |p: &PhaseData| -> Option<f64> {
        match metric {
            Metric::Throughput => ln(p.throughput()),
            Metric::ServerCpu => ln(p.cpu_per_statement()),
            // Against the nothing-instrumented point's mix and mean: a log-ratio.
            _ => latency_pair(none, p)?.mean_log_ratio(),
        }
    };
    let none_value = match metric {
        Metric::Throughput | Metric::ServerCpu => value(none)?,
        _ => 0.0,
    };
    Some(Values {
        points: points
            .iter()
            .map(|p| value(p))
            .collect::<Option<Vec<f64>>>()?,
        none: none_value,
        base_check: value(check)?,
    })
}
