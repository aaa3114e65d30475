//! A whole phase log: the fast comparisons (scenarios switched at runtime, many short slots)
//! and the slow ones (scenarios entered through a restart) are different designs with different
//! noise, so each is analysed on its own, against its own baseline; then the carryover
//! profile, what the switches cost, and startup against runtime settings for the same
//! scenario. An attribution run's design points go to the attribution (what each instrument
//! group costs, and the advice for a budget); its other runtime scenarios (nothing
//! instrumented, a confirmed recommendation) are compared as usual.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::phase_log::group_names::{
    advice_name, point_groups, point_name, BASE_CHECK, NONE_POINT, POINT_PREFIX,
};
use crate::phase_log::{twin_name, SUFFIX};
use crate::phase_log::{PhaseRecord, FAST, SLOW};

use super::analyze_with;
use super::attribution::{advise, attribute, Attribution, Prediction, Recommendation};
use super::baseline::PFSOFF;
use super::carryover::{profile, CarryoverProfile};
use super::error::AnalysisError;
use super::estimate::{Analysis, Estimate, Metric, Options};
use super::restart_profile::{restart_profile, RestartProfile};
use super::switch_load::{run_warning, slot_lengths_ms, slots_time_ms};

/// What switching into a scenario cost over the run (fast schedule).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct SwitchSummary {
    pub scenario: String,
    pub switches: u64,
    pub mean_ms: f64,
    pub max_ms: f64,
    pub statements_per_switch: f64,
    /// Share of the slots' time spent switching into this scenario.
    pub share_of_slot: Option<f64>,
}

/// One scenario's cost set at startup against the same settings flipped at runtime, both
/// against the same reference.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct StartupComparison {
    /// The runtime scenario (`NAME`); the startup one is `NAME@startup`.
    pub scenario: String,
    pub reference: String,
    pub metric: Metric,
    /// `NAME` vs the reference, fast schedule.
    pub runtime: Option<Estimate>,
    /// `NAME@startup` vs the reference, slow schedule.
    pub startup: Option<Estimate>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct RunAnalysis {
    pub level: f64,
    pub fast: Option<Analysis>,
    pub slow: Option<Analysis>,
    pub carryover: Option<CarryoverProfile>,
    pub switches: Vec<SwitchSummary>,
    /// The fast slots' lengths in ms, in the order the run used them (more than one: the
    /// leader lengthened them from the switch cost).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub slot_lengths_ms: Vec<u64>,
    pub startup: Vec<StartupComparison>,
    /// What each instrument group costs (an `--attribute` run).
    pub attribution: Option<Attribution>,
    /// The configuration to run within `--budget` (an attribution with a budget).
    pub recommendation: Option<Recommendation>,
    /// How the restarts of the slow phases went and how the statement rate came back.
    pub restarts: Option<RestartProfile>,
    pub warnings: Vec<String>,
}

impl RunAnalysis {
    /// Both designs' analyses, fast first.
    pub(crate) fn analyses(&self) -> impl Iterator<Item = &Analysis> {
        self.fast.iter().chain(self.slow.iter())
    }

    pub(crate) fn estimates(&self) -> impl Iterator<Item = &Estimate> {
        self.analyses().flat_map(|a| a.estimates.iter())
    }

    /// Widest half-width (points) of the restart comparisons' headline estimates, `None` while
    /// any has no interval yet (too few pairs).
    pub(crate) fn slow_halfwidth(&self) -> Option<f64> {
        let slow = self.slow.as_ref()?;
        let mut widest: Option<f64> = None;
        for scenario in slow.scenarios.iter().filter(|s| **s != slow.baseline) {
            for metric in Metric::HEADLINE {
                let h = slow.estimate(scenario, metric)?.halfwidth_points()?;
                widest = Some(widest.map_or(h, |w: f64| w.max(h)));
            }
        }
        widest
    }

    /// Widest half-width (points) of the fast headline estimates (an attribution's main
    /// effects), `None` while any is missing its interval or there is nothing to compare yet.
    pub(crate) fn fast_halfwidth(&self) -> Option<f64> {
        if let Some(a) = &self.attribution {
            return a.widest_halfwidth();
        }
        let fast = self.fast.as_ref()?;
        let mut widest: Option<f64> = None;
        for scenario in fast.scenarios.iter().filter(|s| **s != fast.baseline) {
            for metric in Metric::HEADLINE {
                let h = fast.estimate(scenario, metric)?.halfwidth_points()?;
                widest = Some(widest.map_or(h, |w: f64| w.max(h)));
            }
        }
        widest
    }
}

/// Analyses a phase log of either version. `baseline` applies to the fast design (the slow
/// one compares with pfsoff, else with its runtime reference).
pub(crate) fn analyze_run(
    phases: &[PhaseRecord],
    baseline: Option<&str>,
    options: &Options,
) -> Result<RunAnalysis, AnalysisError> {
    if !(options.level > 0.0 && options.level < 1.0) {
        return Err(AnalysisError::BadLevel(options.level));
    }
    let of = |schedule: &str| -> Vec<PhaseRecord> {
        phases
            .iter()
            .filter(|p| p.kind == "phase" && p.schedule() == schedule)
            .cloned()
            .collect()
    };
    let (all_fast, slow_records) = (of(FAST), of(SLOW));
    if all_fast.is_empty() && slow_records.is_empty() {
        return Err(AnalysisError::NoPhases);
    }
    let attribution = attribute(&all_fast, options.level);
    let recommendation = match (&attribution, options.budget) {
        (Some(a), Some(budget)) => Some(advise(a, budget, &options.need)?),
        (None, Some(_)) => return Err(AnalysisError::NoAttribution),
        _ => None,
    };
    // The design's points are the attribution's; what else ran at runtime (nothing
    // instrumented, a confirmation) is compared as usual.
    let in_design =
        |r: &PhaseRecord| point_groups(&r.scenario).is_some() || r.scenario == BASE_CHECK;
    let fast_records: Vec<PhaseRecord> =
        all_fast.iter().filter(|r| !in_design(r)).cloned().collect();
    let mut warnings = Vec::new();
    let names = |records: &[PhaseRecord]| -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for r in records {
            if !out.contains(&r.scenario) {
                out.push(r.scenario.clone());
            }
        }
        out
    };
    let fast_names = names(&fast_records);
    let slow_names = names(&slow_records);
    if let Some(b) = baseline {
        if !fast_names.iter().chain(&slow_names).any(|n| n == b) {
            return Err(AnalysisError::BaselineNotScheduled {
                name: b.to_string(),
                scheduled: fast_names.iter().chain(&slow_names).cloned().collect(),
            });
        }
    }
    let fast_baseline = baseline.filter(|b| fast_names.iter().any(|n| n == b));
    let fast = match analyze_with(&fast_records, fast_baseline, options) {
        Ok(a) => Some(a),
        Err(AnalysisError::NoPhases) => None,
        // An attribution without a confirmation has nothing else to compare.
        Err(AnalysisError::NothingToCompare { .. } | AnalysisError::NoPairedBlocks { .. })
            if attribution.is_some() =>
        {
            None
        }
        Err(e) if slow_records.is_empty() => return Err(e),
        Err(e) => {
            warnings.push(format!("runtime-switched scenarios not compared: {e}"));
            None
        }
    };
    let reference = slow_reference(&slow_names);
    let slow_baseline = if let Some(b) = baseline.filter(|b| slow_names.iter().any(|n| n == b)) {
        Some(b.to_string())
    } else if slow_names.iter().any(|n| n == PFSOFF) {
        Some(PFSOFF.to_string())
    } else {
        reference.clone()
    };
    // Each restart scenario is paired with the reference beside it: the headline compares
    // against the baseline in the pairs that hold it (a startup scenario's pairs are compared
    // with the reference below, in "startup against runtime").
    let headline_slow: Vec<PhaseRecord> = match slow_baseline.as_deref() {
        Some(b) => {
            let with: std::collections::BTreeSet<u64> = slow_records
                .iter()
                .filter(|r| r.scenario == b)
                .map(|r| r.block)
                .collect();
            slow_records
                .iter()
                .filter(|r| with.contains(&r.block) || r.failure.is_some())
                .cloned()
                .collect()
        }
        None => slow_records.clone(),
    };
    let slow = if slow_records.is_empty() {
        None
    } else {
        match analyze_with(&headline_slow, slow_baseline.as_deref(), options) {
            Ok(a) => Some(a),
            Err(e) => {
                warnings.push(format!("scenarios entered by restart not compared: {e}"));
                None
            }
        }
    };
    let carryover = match &attribution {
        // The largest switch a design makes: nothing instrumented to every group on.
        Some(a) => {
            let all_on = point_name(&a.groups);
            let pair: Vec<PhaseRecord> = all_fast
                .iter()
                .filter(|r| r.scenario == NONE_POINT || r.scenario == all_on)
                .cloned()
                .collect();
            profile(&pair, NONE_POINT, crate::stats::since_switch::BIN_MS)
        }
        None => fast.as_ref().and_then(|f| {
            profile(
                &fast_records,
                &f.baseline,
                crate::stats::since_switch::BIN_MS,
            )
        }),
    };
    let startup = startup_comparisons(
        &fast_records,
        &slow_records,
        fast.as_ref(),
        slow.as_ref(),
        reference.as_deref(),
        options,
    );
    let blocks = fast.as_ref().map(|f| (f.complete_blocks, f.blocks));
    if let Some(w) = run_warning(&all_fast, blocks) {
        warnings.push(w);
    }
    let mut recommendation = recommendation;
    if let (Some(r), Some(f)) = (recommendation.as_mut(), fast.as_ref()) {
        r.confirmed = confirmed(f, &r.groups);
    }
    Ok(RunAnalysis {
        level: options.level,
        fast,
        slow,
        carryover,
        switches: switch_summaries(&all_fast),
        slot_lengths_ms: slot_lengths_ms(&all_fast),
        startup,
        attribution,
        recommendation,
        restarts: restart_profile(&slow_records),
        warnings,
    })
}

/// The measured cost of the recommended groups, if the run confirmed exactly them (their
/// `advice:` scenario against nothing instrumented).
fn confirmed(fast: &Analysis, groups: &[String]) -> Option<Prediction> {
    let e = fast.estimate(&advice_name(groups), Metric::Throughput)?;
    if e.baseline != NONE_POINT {
        return None;
    }
    // A throughput ratio r is a cost of -r; the interval flips.
    Some(Prediction {
        groups: groups.to_vec(),
        predicted: -e.ratio,
        ci_low: e.ci_high.map(|h| -h),
        ci_high: e.ci_low.map(|l| -l),
        n_segments: e.n_blocks,
    })
}

/// The runtime scenario of the slow blocks (neither pfsoff nor a startup scenario).
fn slow_reference(names: &[String]) -> Option<String> {
    names
        .iter()
        .find(|n| *n != PFSOFF && twin_name(n).is_none())
        .cloned()
}

/// What the switches into each scenario cost; an attribution's design points together as one
/// row (`g:*`).
fn switch_summaries(fast: &[PhaseRecord]) -> Vec<SwitchSummary> {
    // scenario → (switches, sum ms, max ms, statements, slots' time ms)
    let mut by: BTreeMap<String, (u64, f64, f64, u64, f64)> = BTreeMap::new();
    for p in fast {
        let Some(sw) = &p.switch else { continue };
        let key = if point_groups(&p.scenario).is_some() {
            format!("{POINT_PREFIX}*")
        } else {
            p.scenario.clone()
        };
        let e = by.entry(key).or_default();
        e.0 += sw.count;
        e.1 += sw.sum_ms;
        e.2 = e.2.max(sw.max_ms);
        e.3 += sw.statements;
        e.4 += slots_time_ms(p, sw.sum_ms);
    }
    by.into_iter()
        .filter(|(_, e)| e.0 > 0)
        .map(
            |(scenario, (n, sum, max, statements, time))| SwitchSummary {
                scenario,
                switches: n,
                mean_ms: sum / n as f64,
                max_ms: max,
                statements_per_switch: statements as f64 / n as f64,
                share_of_slot: (time > 0.0).then(|| sum / time),
            },
        )
        .collect()
}

fn startup_comparisons(
    fast_records: &[PhaseRecord],
    slow_records: &[PhaseRecord],
    fast: Option<&Analysis>,
    slow: Option<&Analysis>,
    reference: Option<&str>,
    options: &Options,
) -> Vec<StartupComparison> {
    let (Some(reference), Some(slow)) = (reference, slow) else {
        return Vec::new();
    };
    let startups: Vec<&String> = slow
        .scenarios
        .iter()
        .filter(|s| s.ends_with(SUFFIX))
        .collect();
    if startups.is_empty() {
        return Vec::new();
    }
    // Both sides against the same reference.
    let slow_vs_ref = if slow.baseline == reference {
        Some(slow.clone())
    } else {
        analyze_with(slow_records, Some(reference), options).ok()
    };
    let fast_vs_ref = match fast {
        Some(f) if f.baseline == reference => Some(f.clone()),
        Some(f) if f.scenarios.iter().any(|s| s == reference) => {
            analyze_with(fast_records, Some(reference), options).ok()
        }
        _ => None,
    };
    let mut out = Vec::new();
    for startup in startups {
        let Some(twin) = twin_name(startup) else {
            continue;
        };
        for metric in [Metric::Throughput, Metric::MeanLatency, Metric::ServerCpu] {
            let runtime = fast_vs_ref
                .as_ref()
                .and_then(|a| a.estimate(twin, metric))
                .cloned();
            let startup = slow_vs_ref
                .as_ref()
                .and_then(|a| a.estimate(startup, metric))
                .cloned();
            if runtime.is_none() && startup.is_none() {
                continue;
            }
            out.push(StartupComparison {
                scenario: twin.to_string(),
                reference: reference.to_string(),
                metric,
                runtime,
                startup,
            });
        }
    }
    out
}
