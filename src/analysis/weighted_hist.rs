//! Latency histograms with real-valued weights (the mix adjustment reweights a digest's
//! counts), over the phase log's bucket layout, and quantiles read from them with log-linear
//! interpolation inside a bucket (latencies taken as log-uniform within the bucket). The
//! interpolation matters here: the store's nearest-rank quantile moves in 5% steps, which
//! would make a phase's p99 jump a whole bucket or not at all, and a paired ratio of such
//! steps is either 0 or ≥ 5%.

use crate::stats::histogram::{BUCKET_FACTOR, FIRST_BOUND_NS};

/// Weights (counts, or reweighted counts) of a dense range of buckets.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Hist {
    /// Bucket index of `weights[0]`.
    first: u16,
    weights: Vec<f64>,
    total: f64,
}

impl Hist {
    pub(crate) fn new() -> Self {
        Hist::default()
    }

    /// Widens the dense range to cover buckets `lo..=hi`.
    fn cover(&mut self, lo: u16, hi: u16) {
        if self.weights.is_empty() {
            self.first = lo;
        } else if lo < self.first {
            let grow = usize::from(self.first - lo);
            self.weights.splice(0..0, std::iter::repeat_n(0.0, grow));
            self.first = lo;
        }
        let len = usize::from(hi - self.first) + 1;
        if len > self.weights.len() {
            self.weights.resize(len, 0.0);
        }
    }

    pub(crate) fn add_bucket(&mut self, bucket: u16, weight: f64) {
        self.cover(bucket, bucket);
        self.weights[usize::from(bucket - self.first)] += weight;
        self.total += weight;
    }

    /// (bucket, weight) of the non-empty buckets, in bucket order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (u16, f64)> + '_ {
        self.weights
            .iter()
            .enumerate()
            .filter(|(_, &w)| w > 0.0)
            .map(|(i, &w)| (self.first + i as u16, w))
    }
}

/// A quantile is read only when at least this many samples lie above it (n·(1 − q) ≥ 5: p50
/// needs 10 samples, p95 100, p99 500); below that a phase's tail is a handful of queries.
pub(crate) const MIN_TAIL_SAMPLES: f64 = 5.0;

/// Adds `buckets` (`[bucket, count]` as in the phase log), each count times `weight`.
pub(crate) fn add(hist: &mut Hist, buckets: &[(u16, u64)], weight: f64) {
    let lo = buckets.iter().map(|b| b.0).min();
    let hi = buckets.iter().map(|b| b.0).max();
    if let (Some(lo), Some(hi)) = (lo, hi) {
        hist.cover(lo, hi);
    }
    for &(bucket, count) in buckets {
        hist.add_bucket(bucket, count as f64 * weight);
    }
}

/// Adds every bucket of `other`, times `weight`.
pub(crate) fn merge(hist: &mut Hist, other: &Hist, weight: f64) {
    if other.weights.is_empty() {
        return;
    }
    hist.cover(other.first, other.first + (other.weights.len() - 1) as u16);
    let offset = usize::from(other.first - hist.first);
    for (mine, w) in hist.weights[offset..].iter_mut().zip(&other.weights) {
        *mine += w * weight;
    }
    hist.total += other.total * weight;
}

pub(crate) fn total(hist: &Hist) -> f64 {
    hist.total
}

/// Whether `samples` samples are enough to read the q-quantile.
pub(crate) fn enough_for(samples: f64, q: f64) -> bool {
    samples * (1.0 - q) >= MIN_TAIL_SAMPLES
}

/// The q-quantile (0 < q < 1) in nanoseconds, `None` when the histogram is empty.
pub(crate) fn quantile_ns(hist: &Hist, q: f64) -> Option<f64> {
    if hist.total <= 0.0 {
        return None;
    }
    let target = q.clamp(0.0, 1.0) * hist.total;
    let mut below = 0.0;
    let mut last = None;
    for (bucket, w) in hist.iter() {
        if below + w >= target {
            let frac = ((target - below) / w).clamp(0.0, 1.0);
            return Some(FIRST_BOUND_NS * BUCKET_FACTOR.powf(f64::from(bucket) + frac));
        }
        below += w;
        last = Some(bucket);
    }
    // Rounding left the target just past the end: the top of the last bucket.
    last.map(|b| FIRST_BOUND_NS * BUCKET_FACTOR.powf(f64::from(b) + 1.0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::stats_math::normal_quantile;
    use crate::stats::histogram::{bucket_of, bucket_value_ns};

    #[test]
    fn quantiles_interpolate_within_buckets() {
        let mut h = Hist::new();
        assert_eq!(quantile_ns(&h, 0.5), None);
        add(&mut h, &[(10, 100)], 1.0);
        let lo = FIRST_BOUND_NS * BUCKET_FACTOR.powi(10);
        let mid = quantile_ns(&h, 0.5).unwrap();
        assert!(
            (mid - bucket_value_ns(10)).abs() / mid < 1e-12,
            "geometric middle"
        );
        assert!((quantile_ns(&h, 0.0).unwrap() - lo).abs() < 1e-6);
        assert!(quantile_ns(&h, 0.99).unwrap() < lo * BUCKET_FACTOR);

        // A smooth (log-normal) distribution: quantiles move continuously with a 1% shift of
        // every sample, and are read within 1% of the exact ones.
        let samples: Vec<f64> = (0..20_000)
            .map(|i| 2e6 * (0.5 * normal_quantile((f64::from(i) + 0.5) / 20_000.0)).exp())
            .collect();
        let hist_of = |scale: f64| {
            let mut h = Hist::new();
            for s in &samples {
                h.add_bucket(bucket_of((s * scale) as u64), 1.0);
            }
            h
        };
        let (a, b) = (hist_of(1.0), hist_of(1.01));
        for q in [0.5, 0.95, 0.99] {
            let ratio = quantile_ns(&b, q).unwrap() / quantile_ns(&a, q).unwrap();
            assert!((ratio - 1.01).abs() < 0.003, "q {q}: {ratio}");
            let exact = samples[(q * samples.len() as f64) as usize];
            let got = quantile_ns(&a, q).unwrap();
            assert!((got / exact - 1.0).abs() < 0.01, "q {q}: {got} vs {exact}");
        }
    }

    #[test]
    fn weights_and_sample_thresholds() {
        let mut h = Hist::new();
        add(&mut h, &[(5, 1), (1, 3)], 2.0);
        let mut g = Hist::new();
        g.add_bucket(9, 1.0);
        g.add_bucket(0, 1.0);
        merge(&mut g, &h, 0.5);
        assert_eq!(total(&h), 8.0);
        assert_eq!(total(&g), 6.0);
        let got: Vec<(u16, f64)> = g.iter().collect();
        assert_eq!(got, vec![(0, 1.0), (1, 3.0), (5, 1.0), (9, 1.0)]);
        assert!(enough_for(500.0, 0.99) && !enough_for(499.0, 0.99));
        assert!(enough_for(10.0, 0.5) && !enough_for(9.0, 0.5));
    }
}
