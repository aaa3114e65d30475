//! How connections were carried (TLS, compression), TLS handshake failures, and the traffic
//! psprobe forwarded without seeing inside: the denominator of "share observed".

use prometheus::{IntCounter, IntCounterVec, Opts, Registry};
use psprobe_core::protocol::Algorithm;

use crate::tls::{Cause, Leg};

/// How the client leg was carried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TlsCarriage {
    /// psprobe answered the client's SSLRequest: observed inside.
    Terminated,
    /// TLS between client and server, forwarded verbatim: unobserved.
    Passthrough,
    /// No TLS on the client leg.
    None,
}

impl TlsCarriage {
    const ALL: [TlsCarriage; 3] = [
        TlsCarriage::Terminated,
        TlsCarriage::Passthrough,
        TlsCarriage::None,
    ];

    pub fn label(self) -> &'static str {
        match self {
            TlsCarriage::Terminated => "terminated",
            TlsCarriage::Passthrough => "passthrough",
            TlsCarriage::None => "none",
        }
    }
}

/// Compression label values: an algorithm, none, or unknown (inside a passthrough TLS stream).
const COMPRESSION: [&str; 4] = ["zlib", "zstd", "none", "unknown"];

fn compression_index(c: Option<Option<Algorithm>>) -> usize {
    match c {
        Some(Some(Algorithm::Zlib)) => 0,
        Some(Some(Algorithm::Zstd)) => 1,
        Some(None) => 2,
        None => 3,
    }
}

pub struct TransportMetrics {
    /// `[tls][compression]`
    connections: Vec<IntCounter>,
    /// `[leg][cause]`
    handshake_failures: Vec<IntCounter>,
    /// Bytes forwarded while a connection was not observed, `[client_to_server, server_to_client]`.
    pub unobserved_bytes: [IntCounter; 2],
    /// Request/response turns on unobserved connections: an estimate of their commands.
    pub unobserved_exchanges: IntCounter,
    pub certificate_reloads_ok: IntCounter,
    pub certificate_reloads_failed: IntCounter,
}

impl TransportMetrics {
    pub fn new(registry: &Registry) -> prometheus::Result<Self> {
        let connections_vec = IntCounterVec::new(
            Opts::new(
                "psprobe_connections_by_transport_total",
                "Client connections by how they were carried: tls (terminated, passthrough, none) and compression (zlib, zstd, none, unknown inside passthrough TLS).",
            ),
            &["tls", "compression"],
        )?;
        let failures_vec = IntCounterVec::new(
            Opts::new(
                "psprobe_tls_handshake_failures_total",
                "TLS handshakes that failed, by leg (client, server) and cause.",
            ),
            &["leg", "cause"],
        )?;
        let unobserved_bytes_vec = IntCounterVec::new(
            Opts::new(
                "psprobe_unobserved_bytes_total",
                "Bytes forwarded on connections while they were not observed (TLS passthrough, parse errors), by direction.",
            ),
            &["direction"],
        )?;
        let unobserved_exchanges = IntCounter::new(
            "psprobe_unobserved_exchanges_total",
            "Request/response turns on unobserved connections (client bytes after server bytes): an estimate of the commands psprobe could not see.",
        )?;
        let reloads_vec = IntCounterVec::new(
            Opts::new(
                "psprobe_tls_certificate_reloads_total",
                "Certificate reloads on SIGHUP, by result (ok, error).",
            ),
            &["result"],
        )?;
        let connections = TlsCarriage::ALL
            .iter()
            .flat_map(|t| {
                COMPRESSION
                    .iter()
                    .map(|c| connections_vec.with_label_values(&[t.label(), c]))
            })
            .collect();
        let handshake_failures = Leg::ALL
            .iter()
            .flat_map(|l| {
                Cause::ALL
                    .iter()
                    .map(|c| failures_vec.with_label_values(&[l.label(), c.label()]))
            })
            .collect();
        let unobserved_bytes = [
            unobserved_bytes_vec.with_label_values(&["client_to_server"]),
            unobserved_bytes_vec.with_label_values(&["server_to_client"]),
        ];
        let certificate_reloads_ok = reloads_vec.with_label_values(&["ok"]);
        let certificate_reloads_failed = reloads_vec.with_label_values(&["error"]);
        registry.register(Box::new(connections_vec))?;
        registry.register(Box::new(failures_vec))?;
        registry.register(Box::new(unobserved_bytes_vec))?;
        registry.register(Box::new(unobserved_exchanges.clone()))?;
        registry.register(Box::new(reloads_vec))?;
        Ok(TransportMetrics {
            connections,
            handshake_failures,
            unobserved_bytes,
            unobserved_exchanges,
            certificate_reloads_ok,
            certificate_reloads_failed,
        })
    }

    /// Counts a connection once its carriage is known; `compression` is `None` when it
    /// cannot be known (inside passthrough TLS).
    pub fn record_connection(&self, tls: TlsCarriage, compression: Option<Option<Algorithm>>) {
        let t = TlsCarriage::ALL.iter().position(|x| *x == tls).unwrap_or(0);
        self.connections[t * COMPRESSION.len() + compression_index(compression)].inc();
    }

    pub fn record_handshake_failure(&self, leg: Leg, cause: Cause) {
        let l = Leg::ALL.iter().position(|x| *x == leg).unwrap_or(0);
        let c = Cause::ALL.iter().position(|x| *x == cause).unwrap_or(0);
        self.handshake_failures[l * Cause::ALL.len() + c].inc();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_series_exists_from_the_start_and_counts_where_it_should() {
        let registry = Registry::new();
        let m = TransportMetrics::new(&registry).unwrap();
        m.record_connection(TlsCarriage::Terminated, Some(Some(Algorithm::Zstd)));
        m.record_connection(TlsCarriage::Passthrough, None);
        m.record_handshake_failure(Leg::Server, Cause::Certificate);
        let mut out = String::new();
        prometheus::TextEncoder::new()
            .encode_utf8(&registry.gather(), &mut out)
            .unwrap();
        for line in [
            r#"psprobe_connections_by_transport_total{compression="zstd",tls="terminated"} 1"#,
            r#"psprobe_connections_by_transport_total{compression="unknown",tls="passthrough"} 1"#,
            r#"psprobe_connections_by_transport_total{compression="none",tls="none"} 0"#,
            r#"psprobe_tls_handshake_failures_total{cause="certificate",leg="server"} 1"#,
            r#"psprobe_tls_handshake_failures_total{cause="timeout",leg="client"} 0"#,
            r#"psprobe_unobserved_bytes_total{direction="server_to_client"} 0"#,
            "psprobe_unobserved_exchanges_total 0",
            r#"psprobe_tls_certificate_reloads_total{result="ok"} 0"#,
        ] {
            assert!(out.contains(line), "{line} missing:\n{out}");
        }
    }
}
