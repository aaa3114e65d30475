//! Reading psprobe's /metrics during a benchmark: one HTTP/1.1 GET over a std TcpStream
//! (psprobe answers with Content-Length and closes), and the sum of a metric's samples.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use anyhow::{bail, Context, Result};

/// The body of http://ADDR/metrics.
pub fn fetch(addr: &str) -> Result<String> {
    let what = || format!("GET http://{addr}/metrics");
    let mut stream = TcpStream::connect(addr).with_context(what)?;
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    stream
        .write_all(
            format!("GET /metrics HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n")
                .as_bytes(),
        )
        .with_context(what)?;
    let mut response = Vec::new();
    stream.read_to_end(&mut response).with_context(what)?;
    let response = String::from_utf8_lossy(&response);
    let (head, body) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
    let status = head.lines().next().unwrap_or("");
    if status.split_whitespace().nth(1) != Some("200") {
        bail!("{}: answered {status:?}", what());
    }
    Ok(body.to_string())
}

/// Sum of the samples of metric `name` (exactly that name, with or without labels) whose line
/// contains `label` when given.
pub fn sum(text: &str, name: &str, label: Option<&str>) -> f64 {
    text.lines()
        .filter(|line| {
            line.strip_prefix(name)
                .is_some_and(|rest| rest.starts_with(' ') || rest.starts_with('{'))
        })
        .filter(|line| label.is_none_or(|l| line.contains(l)))
        .filter_map(|line| line.rsplit_once(' ')?.1.parse::<f64>().ok())
        .sum()
}

/// [`sum`] of a fresh scrape.
pub fn scrape(addr: &str, name: &str, label: Option<&str>) -> Result<f64> {
    Ok(sum(&fetch(addr)?, name, label))
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "# HELP psprobe_bytes_total Bytes relayed.
# TYPE psprobe_bytes_total counter
psprobe_bytes_total{direction=\"client_to_server\"} 1000
psprobe_bytes_total{direction=\"server_to_client\"} 1141899264
psprobe_bytes_total_extra 5
psprobe_connections_active 10000
";

    #[test]
    fn sums_a_metric_by_exact_name_and_label() {
        assert_eq!(sum(TEXT, "psprobe_bytes_total", None), 1141900264.0);
        assert_eq!(
            sum(
                TEXT,
                "psprobe_bytes_total",
                Some("direction=\"server_to_client\"")
            ),
            1141899264.0
        );
        assert_eq!(sum(TEXT, "psprobe_connections_active", None), 10000.0);
        assert_eq!(sum(TEXT, "psprobe_missing", None), 0.0);
    }
}
