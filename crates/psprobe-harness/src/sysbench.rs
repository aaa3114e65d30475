//! sysbench 1.0.20: the connection arguments of its MySQL driver and its final summary.

/// Where and as whom sysbench connects.
#[derive(Debug, Clone, Copy)]
pub struct Connection<'a> {
    /// Host name or IP address.
    pub host: &'a str,
    /// TCP port.
    pub port: u16,
    /// User name.
    pub user: &'a str,
    /// Password.
    pub password: &'a str,
    /// Database its tables are in.
    pub database: &'a str,
}

impl Connection<'_> {
    /// `--mysql-host=... --mysql-port=... --mysql-user=... --mysql-password=... --mysql-db=...`
    pub fn args(&self) -> Vec<String> {
        vec![
            format!("--mysql-host={}", self.host),
            format!("--mysql-port={}", self.port),
            format!("--mysql-user={}", self.user),
            format!("--mysql-password={}", self.password),
            format!("--mysql-db={}", self.database),
        ]
    }
}

/// The numbers of sysbench's final report ("SQL statistics", "General statistics", "Latency")
/// and, with `--histogram=on`, its latency histogram.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Summary {
    /// Queries performed: read.
    pub read: u64,
    /// Queries performed: write.
    pub write: u64,
    /// Queries performed: other (BEGIN, COMMIT, ...).
    pub other: u64,
    /// Queries performed: total.
    pub total: u64,
    /// Transactions.
    pub transactions: u64,
    /// Ignored errors (`--mysql-ignore-errors`).
    pub ignored_errors: u64,
    /// Reconnects.
    pub reconnects: u64,
    /// Queries per second over the run ("queries: N (Q per sec.)").
    pub qps: Option<f64>,
    /// Transactions per second over the run ("transactions: N (T per sec.)").
    pub tps: Option<f64>,
    /// The run's length as sysbench measured it ("total time: 20.0012s"), in seconds.
    pub total_time_s: Option<f64>,
    /// Mean latency of an event ("Latency (ms):" then "avg:"), in ms, 2 decimals.
    pub latency_avg_ms: Option<f64>,
    /// Longest latency of an event ("max:"), in ms, 2 decimals.
    pub latency_max_ms: Option<f64>,
    /// Which percentile sysbench printed ("99th percentile:": 99; `--percentile`, default 95).
    pub latency_percentile: Option<u32>,
    /// That percentile of the latency, in ms, 2 decimals (from the histogram's buckets).
    pub latency_percentile_ms: Option<f64>,
    /// The latency histogram (`--histogram=on`): (bucket value in ms, events), as printed
    /// (ascending values, 3 decimals); empty without the option.
    pub histogram: Vec<(f64, u64)>,
    /// The whole output, for messages and per-interval lines.
    pub text: String,
}

/// Reads the summary of `sysbench ... run`; a field sysbench did not print is 0 (`qps`:
/// `None`).
pub fn parse_summary(text: &str) -> Summary {
    let field = |label: &str| -> u64 {
        text.lines()
            .find_map(|line| {
                let rest = line.trim().strip_prefix(label)?;
                rest.split_whitespace().next()?.parse().ok()
            })
            .unwrap_or(0)
    };
    Summary {
        read: field("read:"),
        write: field("write:"),
        other: field("other:"),
        total: field("total:"),
        transactions: field("transactions:"),
        ignored_errors: field("ignored errors:"),
        reconnects: field("reconnects:"),
        qps: per_second(text, "queries:"),
        tps: per_second(text, "transactions:"),
        total_time_s: text.lines().find_map(|line| {
            let rest = line.trim().strip_prefix("total time:")?;
            rest.trim().strip_suffix('s')?.parse().ok()
        }),
        latency_avg_ms: latency(text, |label| label == "avg"),
        latency_max_ms: latency(text, |label| label == "max"),
        latency_percentile: latency_lines(text).find_map(|(label, _)| percentile_of(label)),
        latency_percentile_ms: latency(text, |label| percentile_of(label).is_some()),
        histogram: histogram(text),
        text: text.to_string(),
    }
}

impl Summary {
    /// The `q`-quantile (0..=1) of the latency histogram, in ms: the first bucket at which at
    /// least `q` of the events are counted. `None` without a histogram. sysbench's own
    /// percentile line comes from the same buckets but with 2 decimals (7% at 0.14 ms); the
    /// histogram has 3.
    pub fn histogram_quantile(&self, q: f64) -> Option<f64> {
        let total: u64 = self.histogram.iter().map(|&(_, count)| count).sum();
        if total == 0 {
            return None;
        }
        let mut seen = 0;
        for &(value, count) in &self.histogram {
            seen += count;
            if seen as f64 >= q * total as f64 {
                return Some(value);
            }
        }
        self.histogram.last().map(|&(value, _)| value)
    }
}

/// "    queries:                             1140048 (9119.14 per sec.)" → 9119.14.
fn per_second(text: &str, label: &str) -> Option<f64> {
    let line = text.lines().find(|l| l.trim_start().starts_with(label))?;
    line.split('(')
        .nth(1)?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// The "label: value" lines of the "Latency (ms):" block, up to the blank line ending it.
fn latency_lines(text: &str) -> impl Iterator<Item = (&str, &str)> {
    text.lines()
        .skip_while(|line| line.trim() != "Latency (ms):")
        .skip(1)
        .take_while(|line| !line.trim().is_empty())
        .filter_map(|line| line.trim().split_once(':'))
}

/// The value of the first line of the latency block whose label `wanted` accepts.
fn latency(text: &str, wanted: impl Fn(&str) -> bool) -> Option<f64> {
    latency_lines(text)
        .find(|(label, _)| wanted(label))
        .and_then(|(_, value)| value.trim().parse().ok())
}

/// "99th percentile" → 99.
fn percentile_of(label: &str) -> Option<u32> {
    label.strip_suffix("th percentile")?.parse().ok()
}

/// The buckets of "Latency histogram (values are in milliseconds)": lines
/// "       0.134 |****                                     63", up to the first blank line.
fn histogram(text: &str) -> Vec<(f64, u64)> {
    let bucket = |line: &str| -> Option<(f64, u64)> {
        let (value, bar) = line.split_once('|')?;
        let bar = bar.trim_end();
        let (stars, count) = bar.rsplit_once(' ')?;
        if !stars.chars().all(|c| c == '*' || c == ' ') {
            return None;
        }
        Some((value.trim().parse().ok()?, count.parse().ok()?))
    };
    text.lines()
        .skip_while(|line| !line.starts_with("Latency histogram"))
        .skip(1)
        .skip_while(|line| bucket(line).is_none() && !line.trim().is_empty())
        .map_while(bucket)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The summary of a real `sysbench oltp_read_write run` (1.0.20).
    const RUN: &str = "SQL statistics:
    queries performed:
        read:                            1400
        write:                           400
        other:                           200
        total:                           2000
    transactions:                        100    (9.95 per sec.)
    queries:                             2000   (199.08 per sec.)
    ignored errors:                      3      (0.30 per sec.)
    reconnects:                          0      (0.00 per sec.)
";

    /// A real `sysbench oltp_point_select run --percentile=99 --histogram=on` (1.0.20), its
    /// histogram cut to 5 buckets (1 + 2 + 4 + 2 + 1 = 10 events).
    const HISTOGRAM_RUN: &str = "Threads started!

Latency histogram (values are in milliseconds)
       value  ------------- distribution ------------- count
       0.056 |                                         1
       0.062 |**                                       2
       0.064 |****************************************  4
       0.068 |**                                       2
     434.829 |                                         1
 
SQL statistics:
    queries performed:
        read:                            36333
        write:                           0
        other:                           0
        total:                           36333
    transactions:                        36333  (12071.37 per sec.)
    queries:                             36333  (12071.38 per sec.)
    ignored errors:                      0      (0.00 per sec.)
    reconnects:                          0      (0.00 per sec.)

General statistics:
    total time:                          3.0075s
    total number of events:              36333

Latency (ms):
         min:                                    0.06
         avg:                                    1.32
         max:                                  438.55
         99th percentile:                        8.58
         sum:                                47999.71

Threads fairness:
    events (avg/stddev):           2270.8125/361.63
    execution time (avg/stddev):   3.0000/0.00
";

    #[test]
    fn reads_rates_time_and_latency() {
        let s = parse_summary(HISTOGRAM_RUN);
        assert_eq!((s.qps, s.tps), (Some(12071.38), Some(12071.37)));
        assert_eq!(s.total_time_s, Some(3.0075));
        assert_eq!(
            (s.latency_avg_ms, s.latency_max_ms),
            (Some(1.32), Some(438.55))
        );
        assert_eq!(
            (s.latency_percentile, s.latency_percentile_ms),
            (Some(99), Some(8.58))
        );
        // "events (avg/stddev):" below the block is not the latency's avg.
        let none = parse_summary(RUN);
        assert_eq!(
            (none.latency_avg_ms, none.total_time_s, none.tps),
            (None, None, Some(9.95))
        );
    }

    #[test]
    fn reads_the_histogram_and_its_quantiles() {
        let s = parse_summary(HISTOGRAM_RUN);
        assert_eq!(
            s.histogram,
            [(0.056, 1), (0.062, 2), (0.064, 4), (0.068, 2), (434.829, 1)]
        );
        // 10 events: the median is the 5th (0.064), 0.9 the 9th (0.068), 0.99 the 10th.
        assert_eq!(s.histogram_quantile(0.5), Some(0.064));
        assert_eq!(s.histogram_quantile(0.9), Some(0.068));
        assert_eq!(s.histogram_quantile(0.99), Some(434.829));
        assert_eq!(s.histogram_quantile(0.0), Some(0.056));
        assert_eq!(parse_summary(RUN).histogram_quantile(0.99), None);
    }

    #[test]
    fn reads_every_count_and_the_rate() {
        let s = parse_summary(RUN);
        assert_eq!(
            (s.read, s.write, s.other, s.total, s.transactions),
            (1400, 400, 200, 2000, 100)
        );
        assert_eq!((s.ignored_errors, s.reconnects), (3, 0));
        assert_eq!(s.qps, Some(199.08));
        assert_eq!(parse_summary("nothing").qps, None);
    }

    #[test]
    fn connection_arguments() {
        let c = Connection {
            host: "127.0.0.1",
            port: 6033,
            user: "u",
            password: "p",
            database: "d",
        };
        assert_eq!(
            c.args(),
            [
                "--mysql-host=127.0.0.1",
                "--mysql-port=6033",
                "--mysql-user=u",
                "--mysql-password=p",
                "--mysql-db=d"
            ]
        );
    }
}
