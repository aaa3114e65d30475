//! Attribution: what each instrument group costs, from a run of a two-level fractional
//! factorial design on the fast schedule (one design point per slot, one complete replicate
//! per segment; the design is analysis/design.rs).
//!
//! Per segment and metric, every point has a value on a log scale (`segments`). Then:
//! - a group's **main effect** in a segment is the mean over the points with the group on
//!   minus the mean over those with it off: the log-ratio of its cost, averaged over every
//!   setting of the other groups (the design balances them). Over segments: Student's t with
//!   the larger of the plain and the Newey–West standard error, as for every other estimate,
//!   so autocorrelated noise does not narrow the interval; the segment is the sample.
//! - the **base**: global and thread instrumentation with no group on (`base_check`, the
//!   settings of `g:base`) against nothing instrumented (`pfson_conoff_insoff`), run in
//!   adjacent pairs eight times a segment. A configuration's predicted cost is the base
//!   plus its groups' main effects.
//! - **two-factor interactions**: the contrast of each alias chain (pairs of groups whose
//!   interaction columns coincide in this design, so only their sum is seen); flagged when the
//!   interval at a Bonferroni-corrected level excludes zero and the effect is at least half a
//!   point: such a pair costs more (or less) together than apart.
//! - the **additivity check**: all groups on against none on (measured) minus the sum of the
//!   main effects (predicted), per segment. Two-factor interactions cancel from this
//!   difference in a fold-over design; what is left is higher-order non-additivity.
//! - **per digest**: for the costliest groups, each statement shape's own main effect on its
//!   mean latency: which statements pay most.
//!
//! Must not: read files or know what a group sets (names come from the records).

mod advice;
mod segments;

use std::collections::BTreeMap;

use serde::Serialize;

use crate::phase_log::PhaseRecord;

use super::estimate::Metric;
use super::paired::{robust_interval, Interval};
pub(crate) use advice::{advise, AdviceError, Prediction, Recommendation};
pub(crate) use segments::Points;
use segments::{collect_segments, Collected, METRICS};

/// Flagged interactions must be at least this large (as a ratio), besides significant.
const INTERACTION_TOLERANCE: f64 = 0.005;
/// Groups whose statements are broken down per digest.
const DIGEST_GROUPS: usize = 3;
/// Digests listed per group.
const DIGESTS_PER_GROUP: usize = 5;

/// One contrast over segments, as a ratio (`exp(x) - 1`) with its interval.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Effect {
    pub ratio: f64,
    pub ci_low: Option<f64>,
    pub ci_high: Option<f64>,
    pub significant: bool,
    pub p_value: Option<f64>,
    /// Segments (complete replicates) behind it.
    pub n_segments: usize,
}

impl Effect {
    fn of(xs: &[f64], level: f64) -> Option<Effect> {
        let Interval {
            center,
            bounds,
            p_value,
            n,
        } = robust_interval(xs, level, None)?;
        Some(Effect {
            ratio: center.exp_m1(),
            ci_low: bounds.map(|b| b.0.exp_m1()),
            ci_high: bounds.map(|b| b.1.exp_m1()),
            significant: bounds.is_some_and(|(lo, hi)| lo > 0.0 || hi < 0.0),
            p_value,
            n_segments: n,
        })
    }

    /// Half the interval's width in percentage points.
    pub(crate) fn halfwidth_points(&self) -> Option<f64> {
        Some((self.ci_high? - self.ci_low?) * 50.0)
    }
}

/// A group's main effect on one metric.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct GroupEffect {
    pub group: String,
    pub metric: Metric,
    #[serde(flatten)]
    pub effect: Effect,
}

/// An alias chain of two-factor interactions and its contrast (throughput).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Interaction {
    /// The pairs whose interactions this contrast sums.
    pub pairs: Vec<(String, String)>,
    pub metric: Metric,
    #[serde(flatten)]
    pub effect: Effect,
    /// Significant at the corrected level and at least half a point.
    pub flagged: bool,
}

/// All groups on against no group on: measured, and as the main effects predict it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Additivity {
    pub metric: Metric,
    /// `exp(sum of main effects) - 1`.
    pub predicted: f64,
    /// Measured all-on against base.
    pub measured: f64,
    /// Measured minus predicted (on the log scale), with its interval.
    pub difference: Effect,
    /// The difference's interval holds zero.
    pub agrees: bool,
}

/// A statement shape's mean latency change when a group is on.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct DigestCost {
    pub group: String,
    pub digest: String,
    pub text: Option<String>,
    #[serde(flatten)]
    pub effect: Effect,
}

/// Per segment, a metric's base and main effects (log scale): what predictions sum.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Series {
    pub base: Vec<f64>,
    /// `effects[g][s]`: group `g`'s main effect in segment `s`.
    pub effects: Vec<Vec<f64>>,
}

/// Everything the attribution found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Attribution {
    pub groups: Vec<String>,
    /// Design points per replicate (segment), besides the nothing-instrumented check.
    pub points: usize,
    pub level: f64,
    /// Complete replicates used, and segments left out (a point missing or unverified).
    pub segments: usize,
    pub incomplete_segments: usize,
    /// Main effects, by group then metric.
    pub effects: Vec<GroupEffect>,
    /// Global and thread instrumentation with no group on, against nothing instrumented.
    pub base: Vec<GroupEffect>,
    /// Every group on against nothing instrumented, measured.
    pub all_on: Vec<GroupEffect>,
    pub interactions: Vec<Interaction>,
    pub additivity: Vec<Additivity>,
    pub digests: Vec<DigestCost>,
    pub warnings: Vec<String>,
    #[serde(skip)]
    pub(crate) series: BTreeMap<Metric, Series>,
}

impl Attribution {
    pub(crate) fn effect(&self, group: &str, metric: Metric) -> Option<&GroupEffect> {
        self.effects
            .iter()
            .find(|e| e.group == group && e.metric == metric)
    }

    /// Widest half-width (points) of the throughput and mean-latency main effects; `None`
    /// while any lacks an interval.
    pub(crate) fn widest_halfwidth(&self) -> Option<f64> {
        let mut widest: Option<f64> = None;
        for metric in [Metric::Throughput, Metric::MeanLatency] {
            for g in &self.groups {
                let h = self.effect(g, metric)?.effect.halfwidth_points()?;
                widest = Some(widest.map_or(h, |w: f64| w.max(h)));
            }
        }
        widest
    }

    /// Groups by throughput cost, costliest first.
    pub(crate) fn by_cost(&self) -> Vec<&GroupEffect> {
        let mut out: Vec<&GroupEffect> = self
            .effects
            .iter()
            .filter(|e| e.metric == Metric::Throughput)
            .collect();
        out.sort_by(|a, b| a.effect.ratio.total_cmp(&b.effect.ratio));
        out
    }
}

/// +1 when bit `j` is set in `mask`, -1 otherwise.
fn level_of(mask: u32, j: usize) -> f64 {
    if mask & (1 << j) != 0 {
        1.0
    } else {
        -1.0
    }
}

/// Mean of `values` where `sign` is +1 minus the mean where it is -1.
fn contrast(values: &[f64], signs: &[f64]) -> f64 {
    let (mut plus, mut np, mut minus, mut nm) = (0.0f64, 0.0f64, 0.0f64, 0.0f64);
    for (v, s) in values.iter().zip(signs) {
        if *s > 0.0 {
            plus += v;
            np += 1.0;
        } else {
            minus += v;
            nm += 1.0;
        }
    }
    plus / np.max(1.0) - minus / nm.max(1.0)
}

/// The attribution of the design points in `records` (any records of other scenarios are
/// ignored); `None` when they hold no design point.
pub(crate) fn attribute(records: &[PhaseRecord], level: f64) -> Option<Attribution> {
    let design = Points::of(records)?;
    let Collected {
        segments,
        incomplete,
        phases,
    } = collect_segments(records, &design);
    let k = design.groups.len();
    let masks: Vec<u32> = design.points.iter().map(|(_, m)| *m).collect();
    let base_index = design.index_of(0);
    let all_index = design.index_of(design.all_on());
    let mut out = Attribution {
        groups: design.groups.clone(),
        points: design.points.len(),
        level,
        segments: segments.len(),
        incomplete_segments: incomplete,
        effects: Vec::new(),
        base: Vec::new(),
        all_on: Vec::new(),
        interactions: Vec::new(),
        additivity: Vec::new(),
        digests: Vec::new(),
        warnings: Vec::new(),
        series: BTreeMap::new(),
    };
    if incomplete > 0 {
        out.warnings.push(format!(
            "{incomplete} segment(s) left out: a design point or the nothing-instrumented \
             check was missing or not verified in them (a replicate must be complete)"
        ));
    }
    if base_index.is_none() || all_index.is_none() {
        out.warnings.push(
            "the design has no point with every group off or every group on: base and \
             additivity not estimated"
                .into(),
        );
    }
    let signs: Vec<Vec<f64>> = (0..k)
        .map(|j| masks.iter().map(|m| level_of(*m, j)).collect())
        .collect();
    for metric in METRICS {
        let of_metric: Vec<&segments::Values> = segments
            .iter()
            .filter_map(|s| s.values.get(&metric))
            .collect();
        if of_metric.is_empty() {
            continue;
        }
        let mut series = Series {
            base: Vec::new(),
            effects: vec![Vec::new(); k],
        };
        let mut all_vs_none = Vec::new();
        let mut additivity = Vec::new();
        for v in &of_metric {
            let sum: f64 = (0..k)
                .map(|j| {
                    let e = contrast(&v.points, &signs[j]);
                    series.effects[j].push(e);
                    e
                })
                .sum();
            series.base.push(v.base_check - v.none);
            if let (Some(b), Some(a)) = (base_index, all_index) {
                all_vs_none.push(v.points[a] - v.none);
                additivity.push(v.points[a] - v.points[b] - sum);
            }
        }
        for (j, g) in design.groups.iter().enumerate() {
            if let Some(effect) = Effect::of(&series.effects[j], level) {
                out.effects.push(GroupEffect {
                    group: g.clone(),
                    metric,
                    effect,
                });
            }
        }
        let named = |group: &str, xs: &[f64]| {
            Effect::of(xs, level).map(|effect| GroupEffect {
                group: group.to_string(),
                metric,
                effect,
            })
        };
        out.base.extend(named("base", &series.base));
        out.all_on.extend(named("all", &all_vs_none));
        if let Some(difference) = Effect::of(&additivity, level) {
            let predicted: f64 = series
                .effects
                .iter()
                .map(|e| super::stats_math::mean(e).unwrap_or(0.0))
                .sum();
            // All on against base, measured: the mean difference plus what was predicted.
            let measured = super::stats_math::mean(&additivity).unwrap_or(0.0) + predicted;
            out.additivity.push(Additivity {
                metric,
                predicted: predicted.exp_m1(),
                measured: measured.exp_m1(),
                agrees: !difference.significant,
                difference,
            });
        }
        if metric == Metric::Throughput {
            out.interactions = interactions(&design, &masks, &of_metric, level);
        }
        out.series.insert(metric, series);
    }
    out.digests = digest_costs(&out, &masks, &phases, records, level);
    Some(out)
}

/// Every alias chain's contrast.
fn interactions(
    design: &Points,
    masks: &[u32],
    values: &[&segments::Values],
    level: f64,
) -> Vec<Interaction> {
    let k = design.groups.len();
    // Chains: pairs whose interaction sign vectors over the points coincide.
    let mut chains: BTreeMap<Vec<bool>, Vec<(usize, usize)>> = BTreeMap::new();
    for a in 0..k {
        for b in a + 1..k {
            let key: Vec<bool> = masks
                .iter()
                .map(|m| level_of(*m, a) * level_of(*m, b) > 0.0)
                .collect();
            chains.entry(key).or_default().push((a, b));
        }
    }
    let corrected = 1.0 - (1.0 - level) / chains.len().max(1) as f64;
    let mut out = Vec::new();
    for (key, pairs) in chains {
        let signs: Vec<f64> = key.iter().map(|p| if *p { 1.0 } else { -1.0 }).collect();
        if signs.iter().all(|s| *s > 0.0) || signs.iter().all(|s| *s < 0.0) {
            continue; // confounded with the mean: no contrast
        }
        let xs: Vec<f64> = values.iter().map(|v| contrast(&v.points, &signs)).collect();
        let (Some(effect), Some(strict)) = (Effect::of(&xs, level), Effect::of(&xs, corrected))
        else {
            continue;
        };
        let flagged = strict.significant && effect.ratio.abs() >= INTERACTION_TOLERANCE;
        out.push(Interaction {
            pairs: pairs
                .iter()
                .map(|(a, b)| (design.groups[*a].clone(), design.groups[*b].clone()))
                .collect(),
            metric: Metric::Throughput,
            effect,
            flagged,
        });
    }
    out
}

/// For the costliest groups, each digest's own main effect on its mean latency.
fn digest_costs(
    out: &Attribution,
    masks: &[u32],
    phases: &[Vec<super::phase_data::PhaseData>],
    records: &[PhaseRecord],
    level: f64,
) -> Vec<DigestCost> {
    let texts: BTreeMap<String, String> = records
        .iter()
        .flat_map(|r| r.digests.iter())
        .filter_map(|a| Some((a.digest.clone()?, a.text.clone()?)))
        .collect();
    let costliest: Vec<String> = out
        .by_cost()
        .iter()
        .filter(|e| e.effect.ratio < 0.0)
        .take(DIGEST_GROUPS)
        .map(|e| e.group.clone())
        .collect();
    let mut found = Vec::new();
    for group in costliest {
        let Some(j) = out.groups.iter().position(|g| *g == group) else {
            continue;
        };
        let signs: Vec<f64> = masks.iter().map(|m| level_of(*m, j)).collect();
        let mut by_digest: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
        for segment in phases {
            let Some(first) = segment.first() else {
                continue;
            };
            for key in first.digests.keys() {
                let values: Option<Vec<f64>> = segment
                    .iter()
                    .map(|p| {
                        p.digests
                            .get(key)?
                            .mean_ns()
                            .filter(|m| *m > 0.0)
                            .map(f64::ln)
                    })
                    .collect();
                if let Some(values) = values {
                    by_digest
                        .entry(key.as_str())
                        .or_default()
                        .push(contrast(&values, &signs));
                }
            }
        }
        let mut costs: Vec<DigestCost> = by_digest
            .into_iter()
            .filter(|(_, xs)| xs.len() >= 2)
            .filter_map(|(digest, xs)| {
                Some(DigestCost {
                    group: group.clone(),
                    digest: digest.to_string(),
                    text: texts.get(digest).cloned(),
                    effect: Effect::of(&xs, level)?,
                })
            })
            .collect();
        // By the lower bound: the statements surely hurt most, not the noisiest.
        let low = |c: &DigestCost| c.effect.ci_low.unwrap_or(f64::NEG_INFINITY);
        costs.sort_by(|a, b| low(b).total_cmp(&low(a)));
        found.extend(costs.into_iter().take(DIGESTS_PER_GROUP));
    }
    found
}

#[cfg(test)]
mod sim;
#[cfg(test)]
mod tests;
