//! Results kept up to date while the schedule runs: every finished segment's records are added
//! to the in-memory phase list, the analysis is run again, and its estimates are published as
//! Prometheus gauges (`psprobe_overhead_ratio{scenario,metric,baseline}` with `_ci_low` /
//! `_ci_high`), so the interval can be watched tightening, and as the admin interface's
//! `overhead` table; an attribution's group costs likewise
//! (`psprobe_attribution_ratio{group,metric}`, the admin's `attribution` table); and the
//! analysis with the phases it came from, kept for the live page (page.rs) to render on request.
//!
//! Must not: run on the relay's path; it runs once per finished segment.

mod page;

pub(crate) use page::LivePage;

use std::sync::{Arc, RwLock};

use prometheus::{GaugeVec, Opts, Registry};

use crate::admin::{AttributionRow, OverheadRow};
use crate::analysis::attribution::GroupEffect;
use crate::analysis::{analyze_run, Options, RunAnalysis};
use crate::phase_log::PhaseRecord;

/// The run as of its last finished segment: what the live page shows.
pub(crate) struct Snapshot {
    /// Snapshots published so far (one per finished segment): the page's version.
    pub generation: u64,
    pub phases: Arc<Vec<PhaseRecord>>,
    /// The analysis of `phases` (the one the gauges and the admin's tables show), or why
    /// there is none yet.
    pub analysis: Result<Arc<RunAnalysis>, String>,
    /// When it was published, Unix seconds.
    pub at_s: u64,
}

pub(crate) struct LiveResults {
    pub phases: Arc<RwLock<Vec<PhaseRecord>>>,
    pub overhead: Arc<RwLock<Vec<OverheadRow>>>,
    /// An attribution's group costs (the admin's `attribution` table).
    pub attribution: Arc<RwLock<Vec<AttributionRow>>>,
    latest: RwLock<Arc<Snapshot>>,
    baseline: Option<String>,
    ratio: GaugeVec,
    ci_low: GaugeVec,
    ci_high: GaugeVec,
    group_ratio: GaugeVec,
    group_low: GaugeVec,
    group_high: GaugeVec,
}

fn gauge(registry: &Registry, name: &str, help: &str) -> prometheus::Result<GaugeVec> {
    gauge_with(registry, name, help, &["scenario", "metric", "baseline"])
}

fn gauge_with(
    registry: &Registry,
    name: &str,
    help: &str,
    labels: &[&str],
) -> prometheus::Result<GaugeVec> {
    let g = GaugeVec::new(Opts::new(name, help), labels)?;
    registry.register(Box::new(g.clone()))?;
    Ok(g)
}

impl LiveResults {
    pub(crate) fn new(registry: &Registry, baseline: Option<String>) -> prometheus::Result<Self> {
        Ok(LiveResults {
            phases: Arc::default(),
            overhead: Arc::default(),
            latest: RwLock::new(Arc::new(Snapshot {
                generation: 0,
                phases: Arc::default(),
                analysis: Err("no segment has finished yet".into()),
                at_s: 0,
            })),
            baseline,
            ratio: gauge(
                registry,
                "psprobe_overhead_ratio",
                "Scenario vs baseline, paired by block: S/B - 1 (throughput: negative is a loss; latency: positive is overhead).",
            )?,
            ci_low: gauge(registry, "psprobe_overhead_ratio_ci_low", "Lower bound of the 95% interval of psprobe_overhead_ratio.")?,
            ci_high: gauge(registry, "psprobe_overhead_ratio_ci_high", "Upper bound of the 95% interval of psprobe_overhead_ratio.")?,
            attribution: Arc::default(),
            group_ratio: gauge_with(
                registry,
                "psprobe_attribution_ratio",
                "An instrument group's main effect in an --attribute run: the change when the group is on, averaged over the other groups (throughput: negative is a loss).",
                &["group", "metric"],
            )?,
            group_low: gauge_with(registry, "psprobe_attribution_ratio_ci_low", "Lower bound of the 95% interval of psprobe_attribution_ratio.", &["group", "metric"])?,
            group_high: gauge_with(registry, "psprobe_attribution_ratio_ci_high", "Upper bound of the 95% interval of psprobe_attribution_ratio.", &["group", "metric"])?,
        })
    }

    /// Adds a finished segment's records and refreshes the estimates (off the hot path: once
    /// per segment).
    pub(crate) fn on_segment(&self, records: &[PhaseRecord]) {
        let phases = {
            let mut all = self.phases.write().unwrap_or_else(|e| e.into_inner());
            all.extend_from_slice(records);
            Arc::new(all.clone())
        };
        let analysis = match analyze_run(&phases, self.baseline.as_deref(), &Options::default()) {
            Ok(a) => a,
            // Too early (one scenario so far, no pair yet): no estimate to publish.
            Err(e) => {
                tracing::debug!("no overhead estimate yet: {e}");
                self.publish(phases, Err(e.to_string()));
                return;
            }
        };
        let mut rows = Vec::new();
        for e in analysis.estimates() {
            let labels = [e.scenario.as_str(), e.metric.label(), e.baseline.as_str()];
            self.ratio.with_label_values(&labels).set(e.ratio);
            if let (Some(lo), Some(hi)) = (e.ci_low, e.ci_high) {
                self.ci_low.with_label_values(&labels).set(lo);
                self.ci_high.with_label_values(&labels).set(hi);
            }
            rows.push(OverheadRow {
                schedule: e.schedule.clone(),
                scenario: e.scenario.clone(),
                baseline: e.baseline.clone(),
                metric: e.metric.label().to_string(),
                change_pct: e.ratio * 100.0,
                ci_low_pct: e.ci_low.map_or(f64::NAN, |v| v * 100.0),
                ci_high_pct: e.ci_high.map_or(f64::NAN, |v| v * 100.0),
                significant: e.significant,
                blocks: e.n_blocks as u64,
            });
        }
        *self.overhead.write().unwrap_or_else(|e| e.into_inner()) = rows;
        if let Some(a) = &analysis.attribution {
            let mut effects: Vec<GroupEffect> = a.effects.clone();
            effects.extend(a.base.iter().cloned());
            for e in &effects {
                let labels = [e.group.as_str(), e.metric.label()];
                self.group_ratio
                    .with_label_values(&labels)
                    .set(e.effect.ratio);
                if let (Some(lo), Some(hi)) = (e.effect.ci_low, e.effect.ci_high) {
                    self.group_low.with_label_values(&labels).set(lo);
                    self.group_high.with_label_values(&labels).set(hi);
                }
            }
            let rows = effects
                .iter()
                .map(|e| AttributionRow {
                    group: e.group.clone(),
                    metric: e.metric.label().to_string(),
                    change_pct: e.effect.ratio * 100.0,
                    ci_low_pct: e.effect.ci_low.map_or(f64::NAN, |v| v * 100.0),
                    ci_high_pct: e.effect.ci_high.map_or(f64::NAN, |v| v * 100.0),
                    significant: e.effect.significant,
                    segments: e.effect.n_segments as u64,
                })
                .collect();
            *self.attribution.write().unwrap_or_else(|e| e.into_inner()) = rows;
        }
        // After the admin's rows: a page showing this analysis never runs ahead of them.
        self.publish(phases, Ok(Arc::new(analysis)));
    }

    fn publish(&self, phases: Arc<Vec<PhaseRecord>>, analysis: Result<Arc<RunAnalysis>, String>) {
        let mut latest = self.latest.write().unwrap_or_else(|e| e.into_inner());
        *latest = Arc::new(Snapshot {
            generation: latest.generation + 1,
            phases,
            analysis,
            at_s: crate::clock::unix_now(),
        });
    }

    /// The run as of its last finished segment.
    pub(crate) fn snapshot(&self) -> Arc<Snapshot> {
        Arc::clone(&self.latest.read().unwrap_or_else(|e| e.into_inner()))
    }
}
