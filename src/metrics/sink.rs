//! Turns session events into metric updates (atomics only).

use crate::session::{CommandFinished, CommandStarted, EventSink, UnobservedReason};

use super::ProxyMetrics;

/// Per-connection sink feeding the shared metrics.
pub struct MetricsSink<'a> {
    metrics: &'a ProxyMetrics,
}

impl<'a> MetricsSink<'a> {
    pub fn new(metrics: &'a ProxyMetrics) -> Self {
        MetricsSink { metrics }
    }
}

impl EventSink for MetricsSink<'_> {
    fn command_started(&mut self, _event: &CommandStarted<'_>) {}

    fn command_finished(&mut self, event: &CommandFinished) {
        self.metrics.command(event.kind, event.outcome).inc();
        if let Some(latency) = event.latency {
            self.metrics
                .duration(event.kind)
                .observe(latency.as_secs_f64());
        }
    }

    fn unobserved(&mut self, reason: UnobservedReason) {
        self.metrics.record_unobserved(reason);
    }

    fn authenticated(&mut self, ok: bool) {
        if !ok {
            self.metrics.auth_failures.inc();
        }
    }
}
