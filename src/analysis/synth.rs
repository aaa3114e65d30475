//! Synthetic phase logs for the estimator tests: randomized complete blocks of phases whose
//! true throughput and latency ratios are known, with noise like a real machine's (a shared
//! per-block level, plus independent phase-to-phase noise of a few percent).

use crate::phase_log::{Aggregate, PhaseRecord};
use crate::stats::histogram::{BUCKET_FACTOR, FIRST_BOUND_NS};
use crate::stats::Totals;

use super::rng::Rng;
use super::stats_math::normal_cdf;

/// Spread (log sd) of latencies within a digest.
const WITHIN_DIGEST_SIGMA: f64 = 0.3;

/// A digest of the workload: median latency and share of the statements.
#[derive(Debug, Clone)]
pub(super) struct Digest {
    pub id: &'static str,
    pub median_ns: f64,
    pub share: f64,
}

/// One scenario's true behaviour, relative to the workload's base.
#[derive(Debug, Clone)]
pub(super) struct Arm {
    pub name: &'static str,
    pub throughput_factor: f64,
    pub latency_factor: f64,
    pub error_rate: f64,
    /// The scenario's statement mix (shares are normalised).
    pub mix: Vec<Digest>,
}

impl Arm {
    pub(super) fn new(name: &'static str) -> Self {
        Arm {
            name,
            throughput_factor: 1.0,
            latency_factor: 1.0,
            error_rate: 0.0,
            mix: two_digests(0.8),
        }
    }

    pub(super) fn throughput(mut self, factor: f64) -> Self {
        self.throughput_factor = factor;
        self
    }

    pub(super) fn latency(mut self, factor: f64) -> Self {
        self.latency_factor = factor;
        self
    }

    pub(super) fn errors(mut self, rate: f64) -> Self {
        self.error_rate = rate;
        self
    }

    pub(super) fn mix(mut self, mix: Vec<Digest>) -> Self {
        self.mix = mix;
        self
    }
}

/// A fast (1 ms) and a slow (10 ms) digest, `fast_share` of the statements fast.
pub(super) fn two_digests(fast_share: f64) -> Vec<Digest> {
    vec![
        Digest {
            id: "00000000000000f1",
            median_ns: 1e6,
            share: fast_share,
        },
        Digest {
            id: "00000000000000f2",
            median_ns: 1e7,
            share: 1.0 - fast_share,
        },
    ]
}

#[derive(Debug, Clone)]
pub(super) struct Sim {
    pub blocks: u64,
    /// Phase-to-phase noise (log sd ≈ coefficient of variation) of throughput and latency.
    pub cv: f64,
    /// Shared level of a block (log sd): slow load changes, removed by pairing.
    pub block_sd: f64,
    /// Added to the log-ratio per block (drift).
    pub trend_per_block: f64,
    pub rate_per_s: f64,
    pub window_ms: u64,
}

impl Default for Sim {
    fn default() -> Self {
        Sim {
            blocks: 6,
            cv: 0.04,
            block_sd: 0.10,
            trend_per_block: 0.0,
            rate_per_s: 1000.0,
            window_ms: 30_000,
        }
    }
}

/// Latency histogram of `n` statements, log-normal around `median_ns`.
fn histogram(n: u64, median_ns: f64) -> Vec<(u16, u64)> {
    let ln_first = FIRST_BOUND_NS.ln();
    let ln_f = BUCKET_FACTOR.ln();
    let center = (median_ns.ln() - ln_first) / ln_f;
    let span = 4.0 * WITHIN_DIGEST_SIGMA / ln_f;
    let lo = (center - span).floor().max(0.0) as u16;
    let hi = (center + span).ceil() as u16;
    (lo..=hi)
        .filter_map(|i| {
            let edge = |k: f64| (ln_first + k * ln_f - median_ns.ln()) / WITHIN_DIGEST_SIGMA;
            let mass = normal_cdf(edge(f64::from(i) + 1.0)) - normal_cdf(edge(f64::from(i)));
            let c = (mass * n as f64).round() as u64;
            (c > 0).then_some((i, c))
        })
        .collect()
}

fn aggregate(
    command: Option<&str>,
    digest: Option<&str>,
    count: u64,
    errors: u64,
    latency_sum_ns: u64,
    histogram: Vec<(u16, u64)>,
) -> Aggregate {
    let timed = histogram.iter().map(|b| b.1).sum();
    Aggregate {
        command: command.map(str::to_string),
        digest: digest.map(str::to_string),
        text: None,
        totals: Totals {
            count,
            errors,
            timed,
            latency_sum_ns,
            ..Totals::default()
        },
        histogram,
    }
}

/// A phase log of `sim.blocks` blocks, each running every arm once, in shuffled order.
pub(super) fn simulate(rng: &mut Rng, sim: &Sim, arms: &[Arm]) -> Vec<PhaseRecord> {
    let mut out = Vec::new();
    let mut phase = 0;
    let mut clock = 0;
    for block in 0..sim.blocks {
        let level = sim.block_sd * rng.normal();
        let mut order: Vec<usize> = (0..arms.len()).collect();
        for i in (1..order.len()).rev() {
            order.swap(i, rng.below(i + 1));
        }
        for (pos, &a) in order.iter().enumerate() {
            let arm = &arms[a];
            // The first arm listed is the reference the trend is measured against.
            let trend = if a == 0 {
                0.0
            } else {
                sim.trend_per_block * block as f64
            };
            let thr = sim.rate_per_s
                * arm.throughput_factor
                * (level + trend + sim.cv * rng.normal()).exp();
            let lat = arm.latency_factor * (-0.5 * level - trend + sim.cv * rng.normal()).exp();
            let statements = (thr * sim.window_ms as f64 / 1000.0).round() as u64;
            let total_share: f64 = arm.mix.iter().map(|d| d.share).sum();
            let mut digests = Vec::new();
            let (mut errors, mut sum, mut hist) = (0, 0u64, Vec::<(u16, u64)>::new());
            for d in &arm.mix {
                let n = (statements as f64 * d.share / total_share).round() as u64;
                if n == 0 {
                    continue;
                }
                let median = d.median_ns * lat;
                let h = histogram(n, median);
                let timed: u64 = h.iter().map(|b| b.1).sum();
                let mean = median * (WITHIN_DIGEST_SIGMA.powi(2) / 2.0).exp();
                let s = (timed as f64 * mean) as u64;
                let e = (n as f64 * arm.error_rate * (0.3 * rng.normal()).exp()).round() as u64;
                errors += e;
                sum += s;
                for &(b, c) in &h {
                    match hist.iter_mut().find(|x| x.0 == b) {
                        Some(x) => x.1 += c,
                        None => hist.push((b, c)),
                    }
                }
                digests.push(aggregate(None, Some(d.id), n, e, s, h));
            }
            hist.sort_unstable();
            let count = digests.iter().map(|d| d.totals.count).sum();
            let from = clock + 5_000;
            let to = from + sim.window_ms;
            clock = to;
            out.push(PhaseRecord {
                version: 1,
                kind: "phase".into(),
                scenario: arm.name.to_string(),
                block,
                phase,
                switched_at_ms: from - 5_000,
                measure_from_ms: from,
                measure_to_ms: to,
                restarted: arm.name == "pfsoff" || pos > 0 && arms[order[pos - 1]].name == "pfsoff",
                verified: true,
                commands: vec![
                    aggregate(Some("ping"), None, 10, 0, 1000, vec![(1, 10)]),
                    aggregate(Some("query"), None, count, errors, sum, hist),
                ],
                digests,
                server_cpu_ms: None,
                ..PhaseRecord::default()
            });
            phase += 1;
        }
    }
    out
}
