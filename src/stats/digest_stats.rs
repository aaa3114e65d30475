//! The aggregate psprobe keeps per digest and scenario.

use super::histogram::LogHistogram;

/// One finished command's contribution.
#[derive(Debug, Clone, Copy, Default)]
pub struct Sample {
    pub latency_ns: Option<u64>,
    pub error: bool,
    pub rows_sent: u64,
    pub rows_affected: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DigestStats {
    pub count: u64,
    pub errors: u64,
    pub rows_sent: u64,
    pub rows_affected: u64,
    /// Commands with a latency (all but aborted ones).
    pub timed: u64,
    pub latency_sum_ns: u64,
    pub latency_min_ns: u64,
    pub latency_max_ns: u64,
    pub latency: LogHistogram,
}

impl DigestStats {
    pub fn record(&mut self, s: &Sample) {
        self.count += 1;
        self.errors += u64::from(s.error);
        // A server may report absurd row counts: saturate, so no counter ever goes backwards.
        self.rows_sent = self.rows_sent.saturating_add(s.rows_sent);
        self.rows_affected = self.rows_affected.saturating_add(s.rows_affected);
        if let Some(ns) = s.latency_ns {
            self.latency_min_ns = if self.timed == 0 {
                ns
            } else {
                self.latency_min_ns.min(ns)
            };
            self.latency_max_ns = self.latency_max_ns.max(ns);
            self.timed += 1;
            self.latency_sum_ns = self.latency_sum_ns.saturating_add(ns);
            self.latency.record(ns);
        }
    }

    pub fn merge(&mut self, o: &DigestStats) {
        if o.timed > 0 {
            self.latency_min_ns = if self.timed == 0 {
                o.latency_min_ns
            } else {
                self.latency_min_ns.min(o.latency_min_ns)
            };
        }
        self.count += o.count;
        self.errors += o.errors;
        self.rows_sent = self.rows_sent.saturating_add(o.rows_sent);
        self.rows_affected = self.rows_affected.saturating_add(o.rows_affected);
        self.timed += o.timed;
        self.latency_sum_ns = self.latency_sum_ns.saturating_add(o.latency_sum_ns);
        self.latency_max_ns = self.latency_max_ns.max(o.latency_max_ns);
        self.latency.merge(&o.latency);
    }

    /// What was added since `earlier` (an older copy of the same aggregate). Min and max cannot
    /// be subtracted; they are taken from the histogram of the difference (within 2.5%).
    pub fn since(&self, earlier: &DigestStats) -> DigestStats {
        let mut latency = self.latency.clone();
        latency.subtract(&earlier.latency);
        let bounds = latency.min_max_ns();
        DigestStats {
            count: self.count.saturating_sub(earlier.count),
            errors: self.errors.saturating_sub(earlier.errors),
            rows_sent: self.rows_sent.saturating_sub(earlier.rows_sent),
            rows_affected: self.rows_affected.saturating_sub(earlier.rows_affected),
            timed: self.timed.saturating_sub(earlier.timed),
            latency_sum_ns: self.latency_sum_ns.saturating_sub(earlier.latency_sum_ns),
            latency_min_ns: bounds.map_or(0, |b| b.0),
            latency_max_ns: bounds.map_or(0, |b| b.1),
            latency,
        }
    }

    /// The q-quantile of latency in nanoseconds, read from the histogram (within 2.5%) and
    /// kept within the exact min and max, so a p99 never reads above the slowest command.
    pub fn quantile_ns(&self, q: f64) -> Option<f64> {
        let v = self.latency.quantile_ns(q)?;
        if self.timed == 0 || self.latency_max_ns < self.latency_min_ns {
            return Some(v);
        }
        Some(v.clamp(self.latency_min_ns as f64, self.latency_max_ns as f64))
    }

    /// Mean latency in nanoseconds of the timed commands.
    pub fn mean_ns(&self) -> Option<f64> {
        (self.timed > 0).then(|| self.latency_sum_ns as f64 / self.timed as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_and_merge() {
        let mut a = DigestStats::default();
        a.record(&Sample {
            latency_ns: Some(2_000),
            error: false,
            rows_sent: 3,
            rows_affected: 0,
        });
        a.record(&Sample {
            latency_ns: None,
            error: true,
            ..Sample::default()
        });
        let mut b = DigestStats::default();
        b.record(&Sample {
            latency_ns: Some(500),
            ..Sample::default()
        });
        a.merge(&b);
        assert_eq!((a.count, a.errors, a.rows_sent, a.timed), (3, 1, 3, 2));
        assert_eq!((a.latency_min_ns, a.latency_max_ns), (500, 2_000));
        assert_eq!(a.mean_ns(), Some(1_250.0));
        assert_eq!(a.latency.count(), 2);
    }

    #[test]
    fn quantiles_stay_within_min_and_max() {
        let mut a = DigestStats::default();
        // One command: the bucket's middle could be above (or below) the only value.
        a.record(&Sample {
            latency_ns: Some(1_139_000),
            ..Sample::default()
        });
        for q in [0.01, 0.5, 0.99] {
            assert_eq!(a.quantile_ns(q), Some(1_139_000.0));
        }
    }
}
