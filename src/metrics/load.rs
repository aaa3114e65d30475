//! psprobe under load: the connection limit, clients it refused or cut during the connection
//! phase, and accept errors (out of file descriptors).

use prometheus::{IntCounter, IntCounterVec, IntGauge, Opts, Registry};

/// Why psprobe answered a client with ERR 1040 itself instead of connecting it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// `--max-connections` client connections were already open.
    MaxConnections,
    /// psprobe had no file descriptor left for the upstream connection.
    NoFileDescriptors,
}

impl Refusal {
    pub const ALL: [Refusal; 2] = [Refusal::MaxConnections, Refusal::NoFileDescriptors];

    pub fn label(self) -> &'static str {
        match self {
            Refusal::MaxConnections => "max_connections",
            Refusal::NoFileDescriptors => "no_file_descriptors",
        }
    }
}

pub struct LoadMetrics {
    /// The effective `--max-connections` (0: no limit).
    pub connections_limit: IntGauge,
    refused: [IntCounter; 2],
    /// Clients closed because their connection phase did not finish in time.
    pub handshake_timeouts: IntCounter,
    /// Failed accept() calls (EMFILE, ENFILE, ...): clients wait in the backlog meanwhile.
    pub accept_errors: IntCounter,
}

impl LoadMetrics {
    pub fn new(registry: &Registry) -> prometheus::Result<Self> {
        let connections_limit = IntGauge::new(
            "psprobe_connections_limit",
            "Client connections psprobe accepts at once (--max-connections; 0 = no limit).",
        )?;
        let refused_vec = IntCounterVec::new(
            Opts::new(
                "psprobe_connections_refused_total",
                "Clients psprobe answered with ERR 1040 (Too many connections) itself, by reason (max_connections, no_file_descriptors).",
            ),
            &["reason"],
        )?;
        let handshake_timeouts = IntCounter::new(
            "psprobe_client_handshake_timeouts_total",
            "Clients closed because they had not sent their handshake response within --client-handshake-timeout.",
        )?;
        let accept_errors = IntCounter::new(
            "psprobe_accept_errors_total",
            "Failed accepts of new clients (usually out of file descriptors); the clients wait in the listen backlog meanwhile.",
        )?;
        let refused = Refusal::ALL.map(|r| refused_vec.with_label_values(&[r.label()]));
        registry.register(Box::new(connections_limit.clone()))?;
        registry.register(Box::new(refused_vec))?;
        registry.register(Box::new(handshake_timeouts.clone()))?;
        registry.register(Box::new(accept_errors.clone()))?;
        Ok(LoadMetrics {
            connections_limit,
            refused,
            handshake_timeouts,
            accept_errors,
        })
    }

    pub fn record_refusal(&self, reason: Refusal) {
        self.refused[reason as usize].inc();
    }
}
