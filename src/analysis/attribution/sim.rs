//! A simulated attribution run, for the calibration tests: the host of `sim_fast` (AR(1)
//! noise with the measured 1-second shape, bursts, counting noise, closed-loop clients), the
//! controller's slot order (each design point next to its mirror, eight pairs of nothing
//! instrumented and the base check, pairs in random order), one replicate per segment, records
//! as the phase tracker writes them (several slots of one scenario in a segment: one record).

use crate::analysis::design::Design;
use crate::analysis::rng::Rng;
use crate::analysis::sim_fast::{Host, Noise, Schedule};
use crate::phase_log::group_names::{point_name, BASE_CHECK, NONE_POINT};
use crate::phase_log::{Aggregate, PhaseRecord};
use crate::stats::histogram::bucket_of;
use crate::stats::Totals;

/// Simulation step (as in `sim_fast`).
const TICK_S: f64 = 0.01;

/// What the groups truly cost (throughput multipliers; latency divides by them).
#[derive(Debug, Clone)]
pub(crate) struct Truth {
    pub groups: Vec<String>,
    /// Per group: its factor when on.
    pub factors: Vec<f64>,
    /// Global and thread instrumentation with no group on, against nothing instrumented.
    pub base: f64,
    /// An extra factor when both groups of the pair are on.
    pub interaction: Option<(usize, usize, f64)>,
}

impl Truth {
    /// The throughput factor of a point (groups on in `mask`), against nothing instrumented.
    pub(crate) fn factor(&self, mask: u32) -> f64 {
        let mut f = self.base;
        for (j, g) in self.factors.iter().enumerate() {
            if mask & (1 << j) != 0 {
                f *= g;
            }
        }
        if let Some((a, b, x)) = self.interaction {
            if mask & (1 << a) != 0 && mask & (1 << b) != 0 {
                f *= x;
            }
        }
        f
    }

    /// Group `j`'s true main effect (log scale), averaged over the others as the design does.
    pub(crate) fn main_effect(&self, j: usize) -> f64 {
        let half_interaction = match self.interaction {
            Some((a, b, x)) if a == j || b == j => 0.5 * x.ln(),
            _ => 0.0,
        };
        self.factors[j].ln() + half_interaction
    }
}

/// One run of `duration_s`: the records of every complete segment.
pub(crate) fn run(
    rng: &mut Rng,
    host: &Host,
    schedule: &Schedule,
    truth: &Truth,
) -> Vec<PhaseRecord> {
    let design = Design::new(truth.groups.len()).expect("a design fits");
    let names: Vec<String> = (0..design.runs())
        .map(|r| {
            let mask = design.point(r);
            let on: Vec<&str> = truth
                .groups
                .iter()
                .enumerate()
                .filter(|(j, _)| mask & (1 << j) != 0)
                .map(|(_, g)| g.as_str())
                .collect();
            point_name(&on)
        })
        .collect();
    // Slots: (name, factor). The units: every mirror pair, then the base pairs.
    let mut units: Vec<Vec<(String, f64)>> = Vec::new();
    for (a, b) in design.mirror_pairs() {
        units.push(vec![
            (names[a].clone(), truth.factor(design.point(a))),
            (names[b].clone(), truth.factor(design.point(b))),
        ]);
    }
    for _ in 0..8 {
        units.push(vec![
            (NONE_POINT.to_string(), 1.0),
            (BASE_CHECK.to_string(), truth.base),
        ]);
    }
    let slots_per_segment: usize = units.iter().map(Vec::len).sum();
    let segment_s = schedule.slot_s * slots_per_segment as f64;
    let segments = (schedule.duration_s / segment_s) as usize;
    let mut noise = Noise::new(host, rng);
    let ticks = |s: f64| (s / TICK_S).round() as usize;
    let (start, end, slot) = (
        ticks(schedule.switch_s + schedule.settle_s),
        ticks(schedule.slot_s - schedule.guard_s),
        ticks(schedule.slot_s),
    );
    let mut out = Vec::new();
    let mut clock_ms = 1_000_000u64;
    let mut phase = 0u64;
    for segment in 0..segments as u64 {
        shuffle(rng, &mut units);
        for unit in &mut units {
            shuffle(rng, unit);
        }
        // Per scenario in the segment: (count, latency sum, measured ticks, first phase).
        let mut open: Vec<(String, f64, f64, usize, u64)> = Vec::new();
        for (name, factor) in units.iter().flatten() {
            let i = match open.iter().position(|o| o.0 == *name) {
                Some(i) => i,
                None => {
                    open.push((name.clone(), 0.0, 0.0, 0, phase));
                    open.len() - 1
                }
            };
            let (mut n, mut sum, mut measured) = (0.0f64, 0.0f64, 0usize);
            for t in 0..slot {
                let speed = noise.step(rng) * factor;
                if t < start || t >= end {
                    continue;
                }
                let rate = host.rate * speed;
                let got = (rate * TICK_S + (rate * TICK_S).sqrt() * rng.normal())
                    .max(0.0)
                    .round();
                n += got;
                sum += got * host.threads / rate * 1e9;
                measured += 1;
            }
            open[i].1 += n;
            open[i].2 += sum;
            open[i].3 += measured;
            phase += 1;
        }
        for (name, n, sum, measured, first) in open {
            out.push(record(&name, segment, first, clock_ms, n, sum, measured));
        }
        clock_ms += (segment_s * 1000.0) as u64;
    }
    out
}

fn shuffle<T>(rng: &mut Rng, items: &mut [T]) {
    for i in (1..items.len()).rev() {
        let j = (rng.next_u64() % (i as u64 + 1)) as usize;
        items.swap(i, j);
    }
}

fn record(
    name: &str,
    segment: u64,
    phase: u64,
    clock_ms: u64,
    n: f64,
    sum: f64,
    measured: usize,
) -> PhaseRecord {
    let count = n as u64;
    let latency = (sum / n.max(1.0)) as u64;
    let agg = Aggregate {
        command: Some("query".into()),
        digest: None,
        text: None,
        totals: Totals {
            count,
            timed: count,
            latency_sum_ns: sum as u64,
            latency_min_ns: latency,
            latency_max_ns: latency,
            ..Totals::default()
        },
        histogram: vec![(bucket_of(latency), count)],
    };
    let measured_ms = (measured as f64 * TICK_S * 1000.0) as u64;
    PhaseRecord {
        version: 2,
        kind: "phase".into(),
        scenario: name.to_string(),
        block: segment,
        phase,
        switched_at_ms: clock_ms,
        measure_from_ms: clock_ms + 1,
        measure_to_ms: clock_ms + 1 + measured_ms,
        verified: true,
        commands: vec![agg.clone()],
        digests: vec![Aggregate {
            command: None,
            digest: Some("00000000000000d1".into()),
            text: Some("select c from sbtest1 where id = ?".into()),
            ..agg
        }],
        schedule: Some("fast".into()),
        slots: Some(1),
        measured_ms: Some(measured_ms),
        ..PhaseRecord::default()
    }
}
