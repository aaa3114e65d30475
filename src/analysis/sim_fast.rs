//! A simulated host under the fast schedule, for the calibration tests: statement rate and
//! latency follow the host's noise as measured here (1-second throughput varies ~14% with
//! lag-1 autocorrelation ~0.8: an AR(1) process), plus bursts (a second or two at half
//! speed, as when another job takes the CPU), and Poisson counting noise. A closed-loop
//! client (sysbench's threads) turns slower statements into fewer of them: latency is
//! threads / rate. The schedule is the controller's: slots in randomized pairs, a switch
//! time and settle time not measured, segments of a few seconds written as version 2 records.

use crate::phase_log::block_order;
use crate::phase_log::{Aggregate, PhaseRecord};
use crate::stats::histogram::bucket_of;
use crate::stats::Totals;

use super::rng::Rng;

/// Simulation step.
const TICK_S: f64 = 0.01;

#[derive(Debug, Clone)]
pub(crate) struct Host {
    /// Mean statements per second.
    pub rate: f64,
    /// Stationary log sd of the host factor.
    pub sd: f64,
    /// Autocorrelation of the host factor at a 1-second lag.
    pub rho_1s: f64,
    /// Bursts per second, and their slowdown factor and mean length.
    pub burst_rate: f64,
    pub burst_factor: f64,
    pub burst_s: f64,
    /// Client threads (latency = threads / rate).
    pub threads: f64,
}

impl Default for Host {
    fn default() -> Self {
        Host {
            rate: 5_000.0,
            sd: 0.137,
            rho_1s: 0.8,
            burst_rate: 1.0 / 20.0,
            burst_factor: 0.5,
            burst_s: 1.0,
            threads: 8.0,
        }
    }
}

#[derive(Debug, Clone)]
pub(crate) struct Schedule {
    pub slot_s: f64,
    pub switch_s: f64,
    pub settle_s: f64,
    pub guard_s: f64,
    pub segment_s: f64,
    pub duration_s: f64,
}

impl Default for Schedule {
    fn default() -> Self {
        Schedule {
            slot_s: 0.5,
            switch_s: 0.01,
            settle_s: 0.05,
            guard_s: 0.02,
            segment_s: 5.0,
            duration_s: 600.0,
        }
    }
}

/// The host's noise over time: AR(1) in logs, with bursts.
pub(crate) struct Noise {
    x: f64,
    phi: f64,
    innovation: f64,
    burst_left: f64,
    host: Host,
}

impl Noise {
    pub(crate) fn new(host: &Host, rng: &mut Rng) -> Self {
        let phi = host.rho_1s.powf(TICK_S);
        Noise {
            x: host.sd * rng.normal(),
            phi,
            innovation: host.sd * (1.0 - phi * phi).sqrt(),
            burst_left: 0.0,
            host: host.clone(),
        }
    }

    /// The host's speed factor for the next tick.
    pub(crate) fn step(&mut self, rng: &mut Rng) -> f64 {
        self.x = self.phi * self.x + self.innovation * rng.normal();
        if self.burst_left > 0.0 {
            self.burst_left -= TICK_S;
        } else if rng.uniform() < self.host.burst_rate * TICK_S {
            self.burst_left = -self.host.burst_s * (1.0 - rng.uniform()).ln();
        }
        let burst = if self.burst_left > 0.0 {
            self.host.burst_factor
        } else {
            1.0
        };
        self.x.exp() * burst
    }
}

fn poisson_ish(rng: &mut Rng, mean: f64) -> f64 {
    (mean + mean.sqrt() * rng.normal()).max(0.0).round()
}

/// One run: `effects[i]` multiplies scenario `i`'s throughput (its latency divides by it).
/// Returns the segment records, scenario names `s0`, `s1`, ...
pub(crate) fn run(
    rng: &mut Rng,
    host: &Host,
    schedule: &Schedule,
    effects: &[f64],
) -> Vec<PhaseRecord> {
    let mut noise = Noise::new(host, rng);
    let k = effects.len();
    let ticks = |s: f64| (s / TICK_S).round() as usize;
    let slots_per_block = k;
    let block_s = schedule.slot_s * k as f64;
    let blocks_per_segment = ((schedule.segment_s / block_s).ceil() as usize).max(1);
    let blocks = (schedule.duration_s / block_s) as usize;
    let seed = rng.next_u64();
    // Per scenario in the open segment: (count, latency sum ns, measured ticks).
    let mut open = vec![(0.0f64, 0.0f64, 0usize); k];
    let mut out = Vec::new();
    let mut clock_ms = 1_000_000u64;
    let mut phase = 0u64;
    for block in 0..blocks {
        for i in block_order(slots_per_block, block as u64, seed) {
            let start = ticks(schedule.switch_s + schedule.settle_s);
            let end = ticks(schedule.slot_s - schedule.guard_s);
            for t in 0..ticks(schedule.slot_s) {
                let speed = noise.step(rng) * effects[i];
                if t < start || t >= end {
                    continue;
                }
                let rate = host.rate * speed;
                let n = poisson_ish(rng, rate * TICK_S);
                let latency_ns = host.threads / rate * 1e9;
                open[i].0 += n;
                open[i].1 += n * latency_ns;
                open[i].2 += 1;
            }
            phase += 1;
        }
        if (block + 1) % blocks_per_segment == 0 {
            let segment = (block / blocks_per_segment) as u64;
            for (i, (n, sum, measured)) in open.iter_mut().enumerate() {
                let count = *n as u64;
                let latency = (*sum / n.max(1.0)) as u64;
                let agg = Aggregate {
                    command: Some("query".into()),
                    digest: None,
                    text: None,
                    totals: Totals {
                        count,
                        timed: count,
                        latency_sum_ns: *sum as u64,
                        latency_min_ns: latency,
                        latency_max_ns: latency,
                        ..Totals::default()
                    },
                    histogram: vec![(bucket_of(latency), count)],
                };
                let measured_ms = (*measured as f64 * TICK_S * 1000.0) as u64;
                out.push(PhaseRecord {
                    version: 2,
                    kind: "phase".into(),
                    scenario: format!("s{i}"),
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
                        ..agg
                    }],
                    schedule: Some("fast".into()),
                    measured_ms: Some(measured_ms),
                    ..PhaseRecord::default()
                });
                *n = 0.0;
                *sum = 0.0;
                *measured = 0;
            }
            clock_ms += (schedule.segment_s * 1000.0) as u64;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::{analyze_run, Metric, Options};

    fn options() -> Options {
        Options {
            headline_only: true,
            ..Options::default()
        }
    }

    /// The noise really is what it says: 1-second means vary ~14% with lag-1 correlation
    /// ~0.8 (bursts add to both).
    #[test]
    fn noise_has_the_measured_shape() {
        let mut rng = Rng::new(3);
        let host = Host {
            burst_rate: 0.0,
            ..Host::default()
        };
        let mut noise = Noise::new(&host, &mut rng);
        let seconds: Vec<f64> = (0..4000)
            .map(|_| (0..100).map(|_| noise.step(&mut rng)).sum::<f64>() / 100.0)
            .collect();
        let mean = seconds.iter().sum::<f64>() / seconds.len() as f64;
        let var = seconds.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / seconds.len() as f64;
        let lag1 = seconds
            .windows(2)
            .map(|w| (w[0] - mean) * (w[1] - mean))
            .sum::<f64>()
            / (seconds.len() - 1) as f64
            / var;
        let cv = var.sqrt() / mean;
        assert!((0.10..0.17).contains(&cv), "cv {cv}");
        assert!((0.7..0.88).contains(&lag1), "lag-1 {lag1}");
    }

    /// Coverage of the fast schedule's throughput and latency intervals under that noise,
    /// A/A and with a 5% effect: at least 93% of 200 runs (95% nominal; 93% leaves room for
    /// the binomial spread of 200 runs, sd 1.5 points).
    #[test]
    fn intervals_cover_under_autocorrelated_noise_and_bursts() {
        let schedule = Schedule {
            duration_s: 150.0,
            ..Schedule::default()
        };
        for (effect, seed) in [(1.0, 11), (0.95, 12)] {
            let mut rng = Rng::new(seed);
            let runs = 200;
            let (mut covered_t, mut covered_l, mut widths) = (0, 0, Vec::new());
            for _ in 0..runs {
                let records = run(&mut rng, &Host::default(), &schedule, &[1.0, effect]);
                let a = analyze_run(&records, Some("s0"), &options()).unwrap();
                let fast = a.fast.unwrap();
                let t = fast.estimate("s1", Metric::Throughput).unwrap();
                let l = fast.estimate("s1", Metric::MeanLatency).unwrap();
                let truth_t = effect - 1.0;
                let truth_l = 1.0 / effect - 1.0;
                let inside = |e: &crate::analysis::Estimate, truth: f64| {
                    e.ci_low.unwrap() <= truth && truth <= e.ci_high.unwrap()
                };
                covered_t += u32::from(inside(t, truth_t));
                covered_l += u32::from(inside(l, truth_l));
                widths.push(t.halfwidth_points().unwrap());
            }
            widths.sort_by(f64::total_cmp);
            let (ct, cl) = (
                f64::from(covered_t) / runs as f64,
                f64::from(covered_l) / runs as f64,
            );
            eprintln!(
                "fast schedule, effect {effect}: coverage throughput {:.1}%, latency {:.1}%, \
                 median half-width {:.2} points ({runs} runs of {}s)",
                ct * 100.0,
                cl * 100.0,
                widths[widths.len() / 2],
                schedule.duration_s
            );
            assert!(ct >= 0.93 && cl >= 0.93, "coverage {ct} {cl}");
        }
    }

    /// The stopping rule (`--target-halfwidth`): stop at the first segment end where every
    /// headline interval is within the target. The stopping time depends on the data only
    /// through the intervals' widths, not their centres, so the interval at the stop keeps its
    /// coverage (Chow and Robbins' fixed-width sequential interval); checked here, A/A and
    /// with an effect, against a target most runs reach.
    #[test]
    fn stopping_when_precise_keeps_coverage() {
        let schedule = Schedule {
            duration_s: 300.0,
            ..Schedule::default()
        };
        let target = 2.0;
        for (effect, seed) in [(1.0, 21), (0.95, 22)] {
            let mut rng = Rng::new(seed);
            let runs = 150;
            let (mut covered, mut stopped_early, mut stop_s) = (0, 0, 0.0);
            for _ in 0..runs {
                let records = run(&mut rng, &Host::default(), &schedule, &[1.0, effect]);
                let segments = records.len() / 2;
                let mut at = segments;
                for n in 6..=segments {
                    let a = analyze_run(&records[..2 * n], Some("s0"), &options()).unwrap();
                    if a.fast_halfwidth().is_some_and(|w| w <= target) {
                        at = n;
                        break;
                    }
                }
                stopped_early += u32::from(at < segments);
                stop_s += at as f64 * schedule.segment_s;
                let a = analyze_run(&records[..2 * at], Some("s0"), &options()).unwrap();
                let e = a.fast.unwrap();
                let e = e.estimate("s1", Metric::Throughput).unwrap();
                let truth = effect - 1.0;
                covered += u32::from(e.ci_low.unwrap() <= truth && truth <= e.ci_high.unwrap());
            }
            let c = f64::from(covered) / runs as f64;
            eprintln!(
                "stop at +-{target} points, effect {effect}: coverage {:.1}%, {} of {runs} runs \
                 stopped early, mean stop at {:.0}s of {}s",
                c * 100.0,
                stopped_early,
                stop_s / runs as f64,
                schedule.duration_s
            );
            assert!(c >= 0.92, "coverage {c}");
            assert!(stopped_early > runs / 2, "the target is reachable");
        }
    }

    /// What the model says about slot length (the default is chosen on real runs:
    /// docs/measurement.md): shorter slots cancel more of the host's drift, until switching
    /// and settling eat the measured time.
    #[test]
    fn shorter_slots_are_more_precise_under_drift() {
        let mut widths = Vec::new();
        for slot in [0.25, 0.5, 1.0, 4.0] {
            let schedule = Schedule {
                slot_s: slot,
                duration_s: 150.0,
                ..Schedule::default()
            };
            let mut rng = Rng::new(31);
            let mut w = Vec::new();
            for _ in 0..40 {
                let records = run(&mut rng, &Host::default(), &schedule, &[1.0, 1.0]);
                let a = analyze_run(&records, Some("s0"), &options()).unwrap();
                w.push(a.fast_halfwidth().unwrap());
            }
            w.sort_by(f64::total_cmp);
            eprintln!(
                "slot {slot}s: median half-width {:.2} points",
                w[w.len() / 2]
            );
            widths.push(w[w.len() / 2]);
        }
        assert!(widths[0] < widths[3] && widths[1] < widths[3], "{widths:?}");
    }
}
