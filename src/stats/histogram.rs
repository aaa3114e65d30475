//! Log-bucket latency histogram, like pt-query-digest's EventAggregator: bucket bounds grow by
//! 5%, so any quantile read back is within 2.5% of the true value. Buckets are stored densely
//! over the range actually used (a digest's latencies usually span a few dozen buckets), so a
//! histogram costs a few hundred bytes, and recording allocates only when the range widens.

/// Ratio between consecutive bucket bounds.
pub(crate) const BUCKET_FACTOR: f64 = 1.05;
/// Lower bound of bucket 0, in nanoseconds: everything faster lands there.
pub(crate) const FIRST_BOUND_NS: f64 = 1_000.0;
/// Highest bucket index (1 µs · 1.05^500 ≈ 39 000 s): slower samples land in it.
pub(crate) const MAX_BUCKET: u16 = 500;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LogHistogram {
    /// Index of the bucket `counts[0]` counts.
    first: u16,
    counts: Vec<u64>,
}

/// Bucket index of a latency in nanoseconds (hot path: one search in a table of bounds).
pub(crate) fn bucket_of(ns: u64) -> u16 {
    // BOUNDS[i] is the lowest latency of bucket i, so the bucket is the number of bounds at or
    // below `ns`, less one (bucket 0's bound is 0).
    let bounds = bucket_bounds();
    let above = bounds.partition_point(|&b| b <= ns);
    // `above` >= 1: BOUNDS[0] is 0.
    above.saturating_sub(1) as u16
}

/// The lowest latency (ns) of each bucket, derived from [`bucket_by_formula`] itself (once, at
/// first use: about a millisecond), so the table cannot disagree with the definition.
pub(crate) fn bucket_bounds() -> &'static [u64; MAX_BUCKET as usize + 1] {
    static BOUNDS: std::sync::OnceLock<[u64; MAX_BUCKET as usize + 1]> = std::sync::OnceLock::new();
    BOUNDS.get_or_init(|| {
        let mut bounds = [0u64; MAX_BUCKET as usize + 1];
        for (i, bound) in bounds.iter_mut().enumerate().skip(1) {
            // The smallest ns whose bucket is >= i (the formula never decreases with ns).
            let (mut lo, mut hi) = (0u64, u64::MAX);
            while lo < hi {
                let mid = lo + (hi - lo) / 2;
                if usize::from(bucket_by_formula(mid)) >= i {
                    hi = mid;
                } else {
                    lo = mid + 1;
                }
            }
            *bound = lo;
        }
        bounds
    })
}

/// The definition of the buckets: floor(log_1.05(ns / 1 µs)), clamped to 0..=MAX_BUCKET.
fn bucket_by_formula(ns: u64) -> u16 {
    let ns = ns as f64;
    if ns <= FIRST_BOUND_NS {
        return 0;
    }
    let i = ((ns / FIRST_BOUND_NS).ln() / BUCKET_FACTOR.ln()).floor();
    if i >= f64::from(MAX_BUCKET) {
        MAX_BUCKET
    } else {
        i as u16
    }
}

/// Representative value of a bucket: the geometric middle of its bounds (≤ 2.5% from both).
pub(crate) fn bucket_value_ns(index: u16) -> f64 {
    FIRST_BOUND_NS * BUCKET_FACTOR.powf(f64::from(index) + 0.5)
}

impl LogHistogram {
    pub fn record(&mut self, ns: u64) {
        self.add_to_bucket(bucket_of(ns), 1);
    }

    /// Counts one latency whose bucket ([`bucket_of`]) the caller computed already.
    pub(crate) fn record_bucket(&mut self, index: u16) {
        self.add_to_bucket(index.min(MAX_BUCKET), 1);
    }

    fn add_to_bucket(&mut self, index: u16, n: u64) {
        if self.counts.is_empty() {
            self.first = index;
            self.counts.push(n);
            return;
        }
        if index < self.first {
            let grow = usize::from(self.first - index);
            self.counts.splice(0..0, std::iter::repeat_n(0, grow));
            self.first = index;
        }
        let offset = usize::from(index - self.first);
        if offset >= self.counts.len() {
            self.counts.resize(offset + 1, 0);
        }
        self.counts[offset] += n;
    }

    pub fn count(&self) -> u64 {
        self.counts.iter().sum()
    }

    pub fn merge(&mut self, other: &LogHistogram) {
        for (i, &n) in other.counts.iter().enumerate() {
            if n > 0 {
                self.add_to_bucket(other.first + i as u16, n);
            }
        }
    }

    /// Removes `earlier`'s counts (an older snapshot of the same histogram).
    pub fn subtract(&mut self, earlier: &LogHistogram) {
        for (i, &n) in earlier.counts.iter().enumerate() {
            let index = earlier.first + i as u16;
            if let Some(offset) = index.checked_sub(self.first).map(usize::from) {
                if let Some(c) = self.counts.get_mut(offset) {
                    *c = c.saturating_sub(n);
                }
            }
        }
    }

    /// The q-quantile (0..=1) in nanoseconds, `None` when empty. Nearest-rank on buckets.
    pub fn quantile_ns(&self, q: f64) -> Option<f64> {
        let total = self.count();
        if total == 0 {
            return None;
        }
        let rank = ((q.clamp(0.0, 1.0) * total as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (i, &n) in self.counts.iter().enumerate() {
            seen += n;
            if seen >= rank {
                return Some(bucket_value_ns(self.first + i as u16));
            }
        }
        None
    }

    /// Representative values of the lowest and highest non-empty buckets.
    pub fn min_max_ns(&self) -> Option<(u64, u64)> {
        let mut buckets = self.buckets();
        let first = buckets.next()?.0;
        let last = buckets.last().map_or(first, |b| b.0);
        Some((bucket_value_ns(first) as u64, bucket_value_ns(last) as u64))
    }

    /// (bucket index, count) of the non-empty buckets, for serialisation.
    pub fn buckets(&self) -> impl Iterator<Item = (u16, u64)> + '_ {
        self.counts
            .iter()
            .enumerate()
            .filter(|(_, &n)| n > 0)
            .map(|(i, &n)| (self.first + i as u16, n))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_within_two_and_a_half_percent() {
        let mut h = LogHistogram::default();
        // 1..=10000 µs, uniform: true p50 = 5000 µs, p95 = 9500 µs, p99 = 9900 µs.
        for us in 1..=10_000u64 {
            h.record(us * 1000);
        }
        for (q, truth) in [(0.5, 5_000_000.0), (0.95, 9_500_000.0), (0.99, 9_900_000.0)] {
            let got = h.quantile_ns(q).unwrap();
            assert!((got / truth - 1.0).abs() <= 0.025, "q{q}: {got} vs {truth}");
        }
        assert_eq!(h.count(), 10_000);
    }

    #[test]
    fn every_value_is_within_two_and_a_half_percent_of_its_bucket_value() {
        for ns in [1_001u64, 1_500, 77_777, 123_456_789, 9_999_999_999] {
            let v = bucket_value_ns(bucket_of(ns));
            assert!((v / ns as f64 - 1.0).abs() <= 0.025, "{ns} -> {v}");
        }
        assert_eq!(bucket_of(0), 0);
        assert_eq!(bucket_of(u64::MAX), MAX_BUCKET);
    }

    #[test]
    fn the_table_agrees_with_the_formula_at_every_bound_and_between() {
        let bounds = bucket_bounds();
        for (i, &b) in bounds.iter().enumerate() {
            for ns in [
                b.saturating_sub(2),
                b.saturating_sub(1),
                b,
                b + 1,
                b.saturating_add(2),
            ] {
                assert_eq!(
                    bucket_of(ns),
                    bucket_by_formula(ns),
                    "ns {ns} near bound {i}"
                );
            }
        }
        // Every bucket is reachable, in order.
        assert!(bounds.windows(2).all(|w| w[0] < w[1]));
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        for _ in 0..200_000 {
            // xorshift, spread over every magnitude.
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let ns = x >> (x % 64);
            assert_eq!(bucket_of(ns), bucket_by_formula(ns), "ns {ns}");
        }
        for ns in [0, 1, 999, 1_000, 1_001, 1_049, 1_050, 1_051, u64::MAX] {
            assert_eq!(bucket_of(ns), bucket_by_formula(ns), "ns {ns}");
        }
    }

    #[test]
    fn merge_and_subtract_are_inverse() {
        let mut a = LogHistogram::default();
        let mut b = LogHistogram::default();
        for ns in [5_000, 6_000, 1_000_000] {
            a.record(ns);
        }
        for ns in [100, 2_000_000_000] {
            b.record(ns);
        }
        let before = a.clone();
        a.merge(&b);
        assert_eq!(a.count(), 5);
        a.subtract(&b);
        assert_eq!(
            a.buckets().collect::<Vec<_>>(),
            before.buckets().collect::<Vec<_>>()
        );
    }

    #[test]
    fn empty_has_no_quantile() {
        assert_eq!(LogHistogram::default().quantile_ns(0.5), None);
    }
}
