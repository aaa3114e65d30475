//! The proxy's Prometheus metrics, registered once, with every labelled series resolved up
//! front so the relay only touches atomics (no label hashing, no locks on the hot path).

use prometheus::{
    Histogram, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge, Opts, Registry,
};

use crate::protocol::CommandKind;
use crate::session::{Outcome, UnobservedReason};

/// Histogram bucket bounds in seconds: 31 geometric steps from 50 µs to 10 s (factor ≈ 1.5),
/// fine enough for sub-millisecond point selects and wide enough for slow reports. Bounds are
/// rounded to 3 significant digits so the `le` labels stay readable.
pub fn duration_buckets() -> Vec<f64> {
    const LOW: f64 = 50e-6;
    const HIGH: f64 = 10.0;
    const STEPS: i32 = 30;
    (0..=STEPS)
        .map(|i| round_significant(LOW * (HIGH / LOW).powf(f64::from(i) / f64::from(STEPS)), 3))
        .collect()
}

fn round_significant(x: f64, digits: i32) -> f64 {
    let scale = 10f64.powi(digits - 1 - x.log10().floor() as i32);
    (x * scale).round() / scale
}

/// Direction of bytes through the proxy.
#[derive(Debug, Clone, Copy)]
pub enum Direction {
    ClientToServer,
    ServerToClient,
}

pub struct ProxyMetrics {
    registry: Registry,
    /// `[command][outcome]`
    commands: Vec<Vec<IntCounter>>,
    durations: Vec<Histogram>,
    pub connections_active: IntGauge,
    pub connections_total: IntCounter,
    pub upstream_connect_errors: IntCounter,
    bytes_c2s: IntCounter,
    bytes_s2c: IntCounter,
    unobserved: Vec<IntCounter>,
    parse_errors: Vec<IntCounter>,
    pub auth_failures: IntCounter,
}

impl ProxyMetrics {
    pub fn new() -> prometheus::Result<Self> {
        let registry = Registry::new();
        let commands_vec = IntCounterVec::new(
            Opts::new(
                "psprobe_commands_total",
                "Commands finished, by command and outcome (ok, rows, error, no_response, aborted).",
            ),
            &["command", "outcome"],
        )?;
        let durations_vec = HistogramVec::new(
            HistogramOpts::new(
                "psprobe_command_duration_seconds",
                "Latency seen by the proxy: command's first packet in to its response's last packet in.",
            )
            .buckets(duration_buckets()),
            &["command"],
        )?;
        let bytes_vec = IntCounterVec::new(
            Opts::new("psprobe_bytes_total", "Bytes forwarded, by direction."),
            &["direction"],
        )?;
        let unobserved_vec = IntCounterVec::new(
            Opts::new(
                "psprobe_unobserved_connections_total",
                "Connections forwarded verbatim without observation, by reason.",
            ),
            &["reason"],
        )?;
        let parse_errors_vec = IntCounterVec::new(
            Opts::new(
                "psprobe_parse_errors_total",
                "Protocol parse failures that stopped observation of a connection, by reason.",
            ),
            &["reason"],
        )?;
        let connections_active = IntGauge::new(
            "psprobe_connections_active",
            "Client connections currently open.",
        )?;
        let connections_total =
            IntCounter::new("psprobe_connections_total", "Client connections accepted.")?;
        let upstream_connect_errors = IntCounter::new(
            "psprobe_upstream_connect_errors_total",
            "Client connections that could not be connected to the upstream server.",
        )?;
        let auth_failures = IntCounter::new(
            "psprobe_auth_failures_total",
            "Connections the server refused during the connection phase.",
        )?;

        let commands = CommandKind::ALL
            .iter()
            .map(|k| {
                Outcome::LABELS
                    .iter()
                    .map(|o| commands_vec.with_label_values(&[k.label(), o]))
                    .collect()
            })
            .collect();
        let durations = CommandKind::ALL
            .iter()
            .map(|k| durations_vec.with_label_values(&[k.label()]))
            .collect();
        let unobserved = UnobservedReason::ALL
            .iter()
            .map(|r| unobserved_vec.with_label_values(&[r.label()]))
            .collect();
        let parse_errors = UnobservedReason::ALL
            .iter()
            .map(|r| parse_errors_vec.with_label_values(&[r.label()]))
            .collect();
        let bytes_c2s = bytes_vec.with_label_values(&["client_to_server"]);
        let bytes_s2c = bytes_vec.with_label_values(&["server_to_client"]);

        registry.register(Box::new(commands_vec))?;
        registry.register(Box::new(durations_vec))?;
        registry.register(Box::new(bytes_vec))?;
        registry.register(Box::new(unobserved_vec))?;
        registry.register(Box::new(parse_errors_vec))?;
        registry.register(Box::new(connections_active.clone()))?;
        registry.register(Box::new(connections_total.clone()))?;
        registry.register(Box::new(upstream_connect_errors.clone()))?;
        registry.register(Box::new(auth_failures.clone()))?;

        Ok(ProxyMetrics {
            registry,
            commands,
            durations,
            connections_active,
            connections_total,
            upstream_connect_errors,
            bytes_c2s,
            bytes_s2c,
            unobserved,
            parse_errors,
            auth_failures,
        })
    }

    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    pub fn command(&self, kind: CommandKind, outcome: Outcome) -> &IntCounter {
        &self.commands[kind.index()][outcome.index()]
    }

    pub fn duration(&self, kind: CommandKind) -> &Histogram {
        &self.durations[kind.index()]
    }

    pub fn bytes(&self, direction: Direction) -> &IntCounter {
        match direction {
            Direction::ClientToServer => &self.bytes_c2s,
            Direction::ServerToClient => &self.bytes_s2c,
        }
    }

    fn reason_index(reason: UnobservedReason) -> usize {
        UnobservedReason::ALL
            .iter()
            .position(|r| *r == reason)
            .unwrap_or(0)
    }

    pub fn record_unobserved(&self, reason: UnobservedReason) {
        let i = Self::reason_index(reason);
        self.unobserved[i].inc();
        if reason.is_parse_error() {
            self.parse_errors[i].inc();
        }
    }

    /// The exposition text of every metric.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let families = self.registry.gather();
        if let Err(e) = prometheus::TextEncoder::new().encode_utf8(&families, &mut out) {
            tracing::warn!("could not encode metrics: {e}");
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_span_50us_to_10s_geometrically() {
        let b = duration_buckets();
        assert_eq!(b.len(), 31);
        assert!((b[0] - 50e-6).abs() < 1e-12);
        assert!((b[30] - 10.0).abs() < 1e-9);
        for w in b.windows(2) {
            let ratio = w[1] / w[0];
            assert!((1.49..1.52).contains(&ratio), "{w:?}");
        }
    }

    #[test]
    fn every_series_is_exported_from_the_start() {
        let m = ProxyMetrics::new().expect("metrics register");
        m.command(CommandKind::Query, Outcome::Rows).inc();
        m.record_unobserved(UnobservedReason::MalformedPacket);
        m.record_unobserved(UnobservedReason::Tls);
        let text = m.render();
        assert!(text.contains(r#"psprobe_commands_total{command="query",outcome="rows"} 1"#));
        assert!(text.contains(r#"psprobe_commands_total{command="ping",outcome="ok"} 0"#));
        assert!(text.contains(r#"psprobe_parse_errors_total{reason="malformed_packet"} 1"#));
        assert!(text.contains(r#"psprobe_parse_errors_total{reason="tls"} 0"#));
        assert!(text.contains(r#"psprobe_unobserved_connections_total{reason="tls"} 1"#));
    }
}
