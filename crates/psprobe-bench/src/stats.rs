//! Summaries over rounds shared by the reports: median, min and max of the values present, a
//! ratio that is absent rather than infinite, and the "median (min..max)" cell.

use serde::Serialize;

/// Median, min, max and count of the values that were present.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Stats {
    pub median: f64,
    pub min: f64,
    pub max: f64,
    pub n: usize,
}

impl Stats {
    /// Over the `Some` values; `None` when there is none. The median of an even count is the
    /// mean of the two middle values (Python's statistics.median).
    pub fn of(values: impl IntoIterator<Item = Option<f64>>) -> Option<Stats> {
        let mut v: Vec<f64> = values.into_iter().flatten().collect();
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let median = if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        };
        Some(Stats {
            median,
            min: v[0],
            max: v[n - 1],
            n,
        })
    }
}

/// `a / b`, absent when either is or when `b` is 0.
pub fn ratio(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if b != 0.0 => Some(a / b),
        _ => None,
    }
}

/// "0.98 (0.96..1.11)"; the median alone for one round or no spread; "n/a" without values.
pub fn cell(s: Option<&Stats>, digits: usize) -> String {
    let Some(s) = s else {
        return "n/a".to_string();
    };
    let median = format!("{:.digits$}", s.median);
    if s.n == 1 || s.min == s.max {
        median
    } else {
        format!("{median} ({:.digits$}..{:.digits$})", s.min, s.max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_min_max_over_present_values() {
        let s = Stats::of([Some(3.0), None, Some(1.0), Some(2.0)]).unwrap();
        assert_eq!((s.median, s.min, s.max, s.n), (2.0, 1.0, 3.0, 3));
        let even = Stats::of([Some(4.0), Some(1.0), Some(2.0), Some(10.0)]).unwrap();
        assert_eq!(even.median, 3.0);
        assert_eq!(Stats::of([None, None]), None);
    }

    #[test]
    fn ratios_are_absent_not_infinite() {
        assert_eq!(ratio(Some(3.0), Some(2.0)), Some(1.5));
        assert_eq!(ratio(Some(3.0), Some(0.0)), None);
        assert_eq!(ratio(None, Some(2.0)), None);
        assert_eq!(ratio(Some(1.0), None), None);
    }

    #[test]
    fn cells_show_the_spread_only_when_there_is_one() {
        let three = Stats::of([Some(0.98), Some(0.96), Some(1.11)]);
        assert_eq!(cell(three.as_ref(), 2), "0.98 (0.96..1.11)");
        let one = Stats::of([Some(27.37)]);
        assert_eq!(cell(one.as_ref(), 1), "27.4");
        let same = Stats::of([Some(2.0), Some(2.0)]);
        assert_eq!(cell(same.as_ref(), 2), "2.00");
        assert_eq!(cell(None, 2), "n/a");
    }
}
