//! Per-digest series, built at scrape time from the digest store.
//!
//! Cardinality stays bounded whatever the traffic: at most `top` digests are exported by id,
//! everything else is summed under `digest="other"`. Membership is sticky: once a digest is
//! exported it stays, so no counter ever moves between a digest and `other` (which would make
//! `other` go down and `rate()` lie). Free places go to the digests with the most total time.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use prometheus::core::{Collector, Desc};
use prometheus::proto::{
    Counter, Gauge, LabelPair, Metric, MetricFamily, MetricType, Quantile, Summary,
};

use crate::stats::store::{DigestId, DigestStore, OTHER_DIGEST, OTHER_DIGEST_TEXT};
use crate::stats::{DigestStats, ScenarioId, Scenarios};

/// Default of `--metrics-top-digests`.
pub const DEFAULT_TOP_DIGESTS: usize = 50;
/// Longest `digest_text` label value, in characters.
pub(crate) const DIGEST_TEXT_LABEL_CHARS: usize = 120;
const QUANTILES: [f64; 3] = [0.5, 0.95, 0.99];

pub struct DigestCollector {
    store: Arc<DigestStore>,
    scenarios: Arc<Scenarios>,
    top: usize,
    exported: Mutex<HashSet<DigestId>>,
    descs: Vec<Desc>,
}

const FAMILIES: [(&str, &str); 6] = [
    ("psprobe_digest_commands_total", "Commands of the digest, finished."),
    ("psprobe_digest_errors_total", "Commands of the digest answered with ERR."),
    ("psprobe_digest_rows_sent_total", "Rows of result sets returned for the digest."),
    ("psprobe_digest_rows_affected_total", "Rows affected (OK packets) by the digest."),
    ("psprobe_digest_latency_seconds", "Latency of the digest's commands: quantiles since start (log buckets, within 2.5%), sum and count."),
    ("psprobe_scenario_active", "1 for the scenario in effect now, 0 for the others."),
];

impl DigestCollector {
    pub fn new(
        store: Arc<DigestStore>,
        scenarios: Arc<Scenarios>,
        top: usize,
    ) -> prometheus::Result<Self> {
        let descs = FAMILIES
            .iter()
            .map(|(name, help)| {
                Desc::new(name.to_string(), help.to_string(), vec![], HashMap::new())
            })
            .collect::<prometheus::Result<Vec<_>>>()?;
        Ok(DigestCollector {
            store,
            scenarios,
            top,
            exported: Mutex::new(HashSet::new()),
            descs,
        })
    }

    /// Picks the exported digests (sticky), given this scrape's totals.
    fn choose(&self, totals: &HashMap<DigestId, u64>) -> HashSet<DigestId> {
        let mut exported = self.exported.lock().unwrap_or_else(|e| e.into_inner());
        if exported.len() < self.top {
            let mut candidates: Vec<(&DigestId, &u64)> = totals
                .iter()
                .filter(|(id, _)| **id != OTHER_DIGEST && !exported.contains(*id))
                .collect();
            candidates.sort_by(|a, b| b.1.cmp(a.1).then(a.0 .0.cmp(&b.0 .0)));
            let room = self.top - exported.len();
            exported.extend(candidates.into_iter().take(room).map(|(id, _)| *id));
        }
        exported.clone()
    }
}

fn label(name: &str, value: &str) -> LabelPair {
    let mut l = LabelPair::default();
    l.set_name(name.to_string());
    l.set_value(value.to_string());
    l
}

fn truncate_chars(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((i, _)) => text[..i].to_string(),
        None => text.to_string(),
    }
}

fn family(name: &str, help: &str, kind: MetricType, metrics: Vec<Metric>) -> MetricFamily {
    let mut f = MetricFamily::default();
    f.set_name(name.to_string());
    f.set_help(help.to_string());
    f.set_field_type(kind);
    f.set_metric(metrics);
    f
}

fn counter(labels: &[LabelPair], value: f64) -> Metric {
    let mut c = Counter::default();
    c.set_value(value);
    let mut m = Metric::default();
    m.set_label(labels.to_vec());
    m.set_counter(c);
    m
}

fn summary(labels: &[LabelPair], s: &DigestStats) -> Metric {
    let mut summary = Summary::default();
    summary.set_sample_count(s.totals.timed);
    summary.set_sample_sum(s.totals.latency_sum_ns as f64 / 1e9);
    let quantiles = QUANTILES
        .iter()
        .filter_map(|&q| {
            let v = s.quantile_ns(q)?;
            let mut quantile = Quantile::default();
            quantile.set_quantile(q);
            quantile.set_value(v / 1e9);
            Some(quantile)
        })
        .collect();
    summary.set_quantile(quantiles);
    let mut m = Metric::default();
    m.set_label(labels.to_vec());
    m.set_summary(summary);
    m
}

impl Collector for DigestCollector {
    fn desc(&self) -> Vec<&Desc> {
        self.descs.iter().collect()
    }

    fn collect(&self) -> Vec<MetricFamily> {
        let snapshot = self.store.snapshot();
        let mut totals: HashMap<DigestId, u64> = HashMap::new();
        for ((_, id), s) in &snapshot.entries {
            *totals.entry(*id).or_default() += s.totals.latency_sum_ns;
        }
        let exported = self.choose(&totals);

        // Fold what is not exported into `other`, per scenario.
        let mut rows: HashMap<(ScenarioId, DigestId), DigestStats> = HashMap::new();
        for ((scenario, id), s) in snapshot.entries {
            let id = if exported.contains(&id) {
                id
            } else {
                OTHER_DIGEST
            };
            rows.entry((scenario, id)).or_default().merge(&s);
        }
        let mut keys: Vec<_> = rows.keys().copied().collect();
        keys.sort_by_key(|(scenario, id)| (*scenario, id.0));

        let mut families: [Vec<Metric>; 5] = Default::default();
        for key in keys {
            let s = &rows[&key];
            let (scenario, id) = key;
            let text = snapshot
                .texts
                .get(&id)
                .map_or(OTHER_DIGEST_TEXT.to_string(), |t| {
                    truncate_chars(t, DIGEST_TEXT_LABEL_CHARS)
                });
            let digest = if id == OTHER_DIGEST {
                OTHER_DIGEST_TEXT.to_string()
            } else {
                id.to_string()
            };
            let labels = [
                label("digest", &digest),
                label("digest_text", &text),
                label("scenario", &self.scenarios.name(scenario)),
            ];
            families[0].push(counter(&labels, s.totals.count as f64));
            families[1].push(counter(&labels, s.totals.errors as f64));
            families[2].push(counter(&labels, s.totals.rows_sent as f64));
            families[3].push(counter(&labels, s.totals.rows_affected as f64));
            families[4].push(summary(&labels, s));
        }

        let current = self.scenarios.current();
        let active = self
            .scenarios
            .all()
            .into_iter()
            .map(|(id, name)| {
                let mut g = Gauge::default();
                g.set_value(if id == current { 1.0 } else { 0.0 });
                let mut m = Metric::default();
                m.set_label(vec![label("scenario", &name)]);
                m.set_gauge(g);
                m
            })
            .collect();

        let kinds = [
            MetricType::COUNTER,
            MetricType::COUNTER,
            MetricType::COUNTER,
            MetricType::COUNTER,
            MetricType::SUMMARY,
        ];
        let mut out: Vec<MetricFamily> = families
            .into_iter()
            .zip(kinds)
            .zip(FAMILIES)
            .filter(|((metrics, _), _)| !metrics.is_empty())
            .map(|((metrics, kind), (name, help))| family(name, help, kind, metrics))
            .collect();
        let (name, help) = FAMILIES[5];
        out.push(family(name, help, MetricType::GAUGE, active));
        out
    }
}
