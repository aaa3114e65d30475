//! The aggregate psprobe keeps per digest and scenario: its sums ([`Totals`], which the phase
//! log's records carry as they are) and its latency histogram.

use serde::{Deserialize, Serialize};

use super::histogram::{bucket_of, LogHistogram};

/// One finished command's contribution.
#[derive(Debug, Clone, Copy, Default)]
pub struct Sample {
    pub latency_ns: Option<u64>,
    pub error: bool,
    pub rows_sent: u64,
    pub rows_affected: u64,
}

/// The sums of an aggregate of finished commands: what [`DigestStats`] keeps beside its
/// histogram, and what the phase log writes of every aggregate (`phase_log::Aggregate`
/// flattens it into its records, so these names and their order are the file format's:
/// docs/phase-log.md).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Totals {
    pub count: u64,
    pub errors: u64,
    pub rows_sent: u64,
    pub rows_affected: u64,
    /// Commands with a latency (all but aborted ones).
    pub timed: u64,
    pub latency_sum_ns: u64,
    /// Of the timed commands; 0 when none is.
    pub latency_min_ns: u64,
    pub latency_max_ns: u64,
}

impl Totals {
    /// Adds another aggregate's sums (of the same kind of commands: a digest's in several
    /// stores, or in several probes' logs). Saturating, so no counter ever goes backwards.
    pub fn merge(&mut self, o: &Totals) {
        // The min is over timed commands only: a side with none timed has min 0.
        self.latency_min_ns = match (self.timed, o.timed) {
            (0, _) => o.latency_min_ns,
            (_, 0) => self.latency_min_ns,
            _ => self.latency_min_ns.min(o.latency_min_ns),
        };
        self.count = self.count.saturating_add(o.count);
        self.errors = self.errors.saturating_add(o.errors);
        self.rows_sent = self.rows_sent.saturating_add(o.rows_sent);
        self.rows_affected = self.rows_affected.saturating_add(o.rows_affected);
        self.timed = self.timed.saturating_add(o.timed);
        self.latency_sum_ns = self.latency_sum_ns.saturating_add(o.latency_sum_ns);
        self.latency_max_ns = self.latency_max_ns.max(o.latency_max_ns);
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DigestStats {
    pub totals: Totals,
    pub latency: LogHistogram,
}

impl DigestStats {
    pub fn record(&mut self, s: &Sample) {
        self.record_in_bucket(s, s.latency_ns.map(bucket_of));
    }

    /// [`DigestStats::record`] with the latency's bucket computed by the caller (who files the
    /// same sample in several aggregates and computes it once).
    pub(crate) fn record_in_bucket(&mut self, s: &Sample, bucket: Option<u16>) {
        let t = &mut self.totals;
        t.count += 1;
        t.errors += u64::from(s.error);
        // A server may report absurd row counts: saturate, so no counter ever goes backwards.
        t.rows_sent = t.rows_sent.saturating_add(s.rows_sent);
        t.rows_affected = t.rows_affected.saturating_add(s.rows_affected);
        if let Some(ns) = s.latency_ns {
            t.latency_min_ns = if t.timed == 0 {
                ns
            } else {
                t.latency_min_ns.min(ns)
            };
            t.latency_max_ns = t.latency_max_ns.max(ns);
            t.timed += 1;
            t.latency_sum_ns = t.latency_sum_ns.saturating_add(ns);
            self.latency
                .record_bucket(bucket.unwrap_or_else(|| bucket_of(ns)));
        }
    }

    pub fn merge(&mut self, o: &DigestStats) {
        self.totals.merge(&o.totals);
        self.latency.merge(&o.latency);
    }

    /// What was added since `earlier` (an older copy of the same aggregate). Min and max cannot
    /// be subtracted; they are taken from the histogram of the difference (within 2.5%).
    pub fn since(&self, earlier: &DigestStats) -> DigestStats {
        let mut latency = self.latency.clone();
        latency.subtract(&earlier.latency);
        let bounds = latency.min_max_ns();
        let (now, then) = (&self.totals, &earlier.totals);
        DigestStats {
            totals: Totals {
                count: now.count.saturating_sub(then.count),
                errors: now.errors.saturating_sub(then.errors),
                rows_sent: now.rows_sent.saturating_sub(then.rows_sent),
                rows_affected: now.rows_affected.saturating_sub(then.rows_affected),
                timed: now.timed.saturating_sub(then.timed),
                latency_sum_ns: now.latency_sum_ns.saturating_sub(then.latency_sum_ns),
                latency_min_ns: bounds.map_or(0, |b| b.0),
                latency_max_ns: bounds.map_or(0, |b| b.1),
            },
            latency,
        }
    }

    /// The q-quantile of latency in nanoseconds, read from the histogram (within 2.5%) and
    /// kept within the exact min and max, so a p99 never reads above the slowest command.
    pub fn quantile_ns(&self, q: f64) -> Option<f64> {
        let v = self.latency.quantile_ns(q)?;
        let t = &self.totals;
        if t.timed == 0 || t.latency_max_ns < t.latency_min_ns {
            return Some(v);
        }
        Some(v.clamp(t.latency_min_ns as f64, t.latency_max_ns as f64))
    }

    /// Mean latency in nanoseconds of the timed commands.
    pub fn mean_ns(&self) -> Option<f64> {
        let t = &self.totals;
        (t.timed > 0).then(|| t.latency_sum_ns as f64 / t.timed as f64)
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
        let t = a.totals;
        assert_eq!((t.count, t.errors, t.rows_sent, t.timed), (3, 1, 3, 2));
        assert_eq!((t.latency_min_ns, t.latency_max_ns), (500, 2_000));
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
