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

/// The numbers of sysbench's final report ("SQL statistics" and "General statistics").
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
        qps: queries_per_second(text),
        text: text.to_string(),
    }
}

/// "    queries:                             1140048 (9119.14 per sec.)" → 9119.14.
fn queries_per_second(text: &str) -> Option<f64> {
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("queries:"))?;
    line.split('(')
        .nth(1)?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
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
