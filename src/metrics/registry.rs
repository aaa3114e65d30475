//! The proxy's Prometheus metrics, registered once, with every labelled series resolved up
//! front so the relay only touches atomics (no label hashing, no locks on the hot path).

use std::collections::HashSet;
use std::sync::{Arc, Mutex, OnceLock};

use prometheus::{
    Histogram, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge, Opts, Registry,
};
use psprobe_core::protocol::CommandKind;
use psprobe_core::session::{Outcome, UnobservedReason};

use crate::stats::scenario::{ScenarioId, Scenarios, MAX_SCENARIOS, NO_SCENARIO};

/// Histogram bucket bounds in seconds: 31 geometric steps from 50 µs to 10 s (factor ≈ 1.5),
/// fine enough for sub-millisecond point selects and wide enough for slow reports. Bounds are
/// rounded to 3 significant digits so the `le` labels stay readable.
pub(crate) fn duration_buckets() -> Vec<f64> {
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
    ClientToServer = 0,
    ServerToClient = 1,
}

/// Series of one scenario, resolved when the scenario is first used.
struct ScenarioSeries {
    /// `[command][outcome]`
    commands: Vec<Vec<IntCounter>>,
    durations: Vec<Histogram>,
    bytes: [IntCounter; 2],
}

/// Distinct error codes exported individually; the rest are counted under `code="other"`.
pub(super) const MAX_ERROR_CODES: usize = 100;

pub struct ProxyMetrics {
    registry: Registry,
    scenarios: Arc<Scenarios>,
    commands_vec: IntCounterVec,
    durations_vec: HistogramVec,
    bytes_vec: IntCounterVec,
    errors_vec: IntCounterVec,
    error_codes: Mutex<HashSet<u16>>,
    slots: Box<[OnceLock<ScenarioSeries>]>,
    pub connections_active: IntGauge,
    pub connections_total: IntCounter,
    pub upstream_connect_errors: IntCounter,
    unobserved: Vec<IntCounter>,
    parse_errors: Vec<IntCounter>,
    pub auth_failures: IntCounter,
    /// 1 while this psprobe leads the scenario schedule.
    pub controller_leader: IntGauge,
    /// 1 while this psprobe runs a schedule, leading or following (0 once it is done).
    pub controller_schedule_active: IntGauge,
    /// Restores of the server's settings that failed (the operator must run `ps restore`).
    pub controller_restore_failures: IntCounter,
    pub controller_lead_lost: IntCounter,
    pub controller_settings_claimed: IntCounter,
    /// Phases or segments left out because the scenario's settings did not hold.
    pub controller_verification_failures: IntCounter,
    phases_vec: IntCounterVec,
    /// TLS, compression and unobserved traffic (metrics/transport.rs).
    pub transport: super::TransportMetrics,
    /// Connection limit, refusals, handshake timeouts, accept errors (metrics/load.rs).
    pub load: super::LoadMetrics,
}

impl ProxyMetrics {
    pub fn new(scenarios: Arc<Scenarios>) -> prometheus::Result<Self> {
        let registry = Registry::new();
        let commands_vec = IntCounterVec::new(
            Opts::new(
                "psprobe_commands_total",
                "Commands finished, by command and outcome (ok, rows, error, no_response, aborted, unobserved).",
            ),
            &["scenario", "command", "outcome"],
        )?;
        let durations_vec = HistogramVec::new(
            HistogramOpts::new(
                "psprobe_command_duration_seconds",
                "Latency seen by the proxy: command's first packet in to its response's last packet in.",
            )
            .buckets(duration_buckets()),
            &["scenario", "command"],
        )?;
        let bytes_vec = IntCounterVec::new(
            Opts::new("psprobe_bytes_total", "Bytes forwarded, by direction."),
            &["scenario", "direction"],
        )?;
        let errors_vec = IntCounterVec::new(
            Opts::new(
                "psprobe_errors_total",
                "ERR responses by MySQL error code (the first 100 distinct codes; then code=\"other\").",
            ),
            &["scenario", "code"],
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

        let unobserved = UnobservedReason::ALL
            .iter()
            .map(|r| unobserved_vec.with_label_values(&[r.label()]))
            .collect();
        let parse_errors = UnobservedReason::ALL
            .iter()
            .map(|r| parse_errors_vec.with_label_values(&[r.label()]))
            .collect();

        registry.register(Box::new(commands_vec.clone()))?;
        registry.register(Box::new(durations_vec.clone()))?;
        registry.register(Box::new(bytes_vec.clone()))?;
        registry.register(Box::new(errors_vec.clone()))?;
        registry.register(Box::new(unobserved_vec))?;
        registry.register(Box::new(parse_errors_vec))?;
        registry.register(Box::new(connections_active.clone()))?;
        registry.register(Box::new(connections_total.clone()))?;
        registry.register(Box::new(upstream_connect_errors.clone()))?;
        registry.register(Box::new(auth_failures.clone()))?;
        let controller_leader = IntGauge::new(
            "psprobe_controller_leader",
            "1 while this psprobe leads the performance_schema scenario schedule.",
        )?;
        let phases_vec = IntCounterVec::new(
            Opts::new(
                "psprobe_phases_total",
                "Phases measured to the end and written to the phase log, by scenario.",
            ),
            &["scenario"],
        )?;
        let controller_schedule_active = IntGauge::new(
            "psprobe_controller_schedule_active",
            "1 while this psprobe runs a scenario schedule, leading or following; 0 once it is done.",
        )?;
        let controller_restore_failures = IntCounter::new(
            "psprobe_controller_restore_failures_total",
            "Attempts to restore the server's performance_schema settings that failed.",
        )?;
        let controller_lead_lost = IntCounter::new(
            "psprobe_controller_lead_lost_total",
            "Times this psprobe, leading, was taken over after it could not beat for 3 s (stopped or cut off) and went on following.",
        )?;
        let controller_settings_claimed = IntCounter::new(
            "psprobe_controller_settings_claimed_total",
            "Setup-table rows someone else changed during a run (at runtime or by a restart psprobe did not make): kept as they were set, left out of later switches, never restored.",
        )?;
        let controller_verification_failures = IntCounter::new(
            "psprobe_controller_verification_failures_total",
            "Phases or segments left out because their scenario's settings did not hold.",
        )?;
        registry.register(Box::new(controller_leader.clone()))?;
        registry.register(Box::new(controller_schedule_active.clone()))?;
        registry.register(Box::new(controller_restore_failures.clone()))?;
        registry.register(Box::new(controller_lead_lost.clone()))?;
        registry.register(Box::new(controller_settings_claimed.clone()))?;
        registry.register(Box::new(controller_verification_failures.clone()))?;
        registry.register(Box::new(phases_vec.clone()))?;
        let transport = super::TransportMetrics::new(&registry)?;
        let load = super::LoadMetrics::new(&registry)?;

        let metrics = ProxyMetrics {
            registry,
            scenarios,
            commands_vec,
            durations_vec,
            bytes_vec,
            errors_vec,
            error_codes: Mutex::new(HashSet::new()),
            slots: (0..MAX_SCENARIOS).map(|_| OnceLock::new()).collect(),
            connections_active,
            connections_total,
            upstream_connect_errors,
            unobserved,
            parse_errors,
            auth_failures,
            controller_leader,
            controller_schedule_active,
            controller_restore_failures,
            controller_lead_lost,
            controller_settings_claimed,
            controller_verification_failures,
            phases_vec,
            transport,
            load,
        };
        // Export the series of the default scenario from the start.
        metrics.series(NO_SCENARIO);
        Ok(metrics)
    }

    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    pub fn scenarios(&self) -> &Arc<Scenarios> {
        &self.scenarios
    }

    fn series(&self, scenario: ScenarioId) -> &ScenarioSeries {
        let slot = usize::from(scenario).min(self.slots.len() - 1);
        self.slots[slot].get_or_init(|| {
            let name = self.scenarios.name(scenario);
            let name = &*name;
            ScenarioSeries {
                commands: CommandKind::ALL
                    .iter()
                    .map(|k| {
                        Outcome::LABELS
                            .iter()
                            .map(|o| self.commands_vec.with_label_values(&[name, k.label(), o]))
                            .collect()
                    })
                    .collect(),
                durations: CommandKind::ALL
                    .iter()
                    .map(|k| self.durations_vec.with_label_values(&[name, k.label()]))
                    .collect(),
                bytes: [
                    self.bytes_vec
                        .with_label_values(&[name, "client_to_server"]),
                    self.bytes_vec
                        .with_label_values(&[name, "server_to_client"]),
                ],
            }
        })
    }

    pub fn command(
        &self,
        scenario: ScenarioId,
        kind: CommandKind,
        outcome: Outcome,
    ) -> &IntCounter {
        &self.series(scenario).commands[kind.index()][outcome.index()]
    }

    /// Statements (text queries and prepared executions) finished under `scenario`, whatever
    /// their outcome: the controller samples it after a restart (atomic reads, off the relay).
    pub fn statements_finished(&self, scenario: ScenarioId) -> u64 {
        let series = self.series(scenario);
        [
            CommandKind::Query,
            CommandKind::StmtExecute,
            CommandKind::StmtBulkExecute,
        ]
        .iter()
        .flat_map(|k| series.commands[k.index()].iter())
        .map(IntCounter::get)
        .sum()
    }

    pub fn duration(&self, scenario: ScenarioId, kind: CommandKind) -> &Histogram {
        &self.series(scenario).durations[kind.index()]
    }

    pub fn bytes(&self, scenario: ScenarioId, direction: Direction) -> &IntCounter {
        &self.series(scenario).bytes[direction as usize]
    }

    pub fn phases(&self, scenario: &str) -> IntCounter {
        self.phases_vec.with_label_values(&[scenario])
    }

    /// Counts an ERR response (rare: a lock and a label lookup are fine here).
    pub fn record_error_code(&self, scenario: ScenarioId, code: u16) {
        let code_label = {
            let mut codes = self.error_codes.lock().unwrap_or_else(|e| e.into_inner());
            if codes.contains(&code) || codes.len() < MAX_ERROR_CODES {
                codes.insert(code);
                code.to_string()
            } else {
                "other".to_string()
            }
        };
        let name = self.scenarios.name(scenario);
        self.errors_vec
            .with_label_values(&[&*name, code_label.as_str()])
            .inc();
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
        let scenarios = Arc::new(Scenarios::default());
        let m = ProxyMetrics::new(Arc::clone(&scenarios)).expect("metrics register");
        m.command(NO_SCENARIO, CommandKind::Query, Outcome::Rows)
            .inc();
        m.record_unobserved(UnobservedReason::MalformedPacket);
        m.record_unobserved(UnobservedReason::Tls);
        let text = m.render();
        assert!(
            text.contains(
                r#"psprobe_commands_total{command="query",outcome="rows",scenario="none"} 1"#
            ),
            "{text}"
        );
        assert!(text
            .contains(r#"psprobe_commands_total{command="ping",outcome="ok",scenario="none"} 0"#));
        assert!(text.contains(r#"psprobe_parse_errors_total{reason="malformed_packet"} 1"#));
        assert!(text.contains(r#"psprobe_parse_errors_total{reason="tls"} 0"#));
        assert!(text.contains(r#"psprobe_unobserved_connections_total{reason="tls"} 1"#));
    }

    #[test]
    fn series_per_scenario_and_error_codes_bounded() {
        let scenarios = Arc::new(Scenarios::default());
        let m = ProxyMetrics::new(Arc::clone(&scenarios)).expect("metrics register");
        let off = scenarios.intern("pfsoff").unwrap();
        m.command(off, CommandKind::Ping, Outcome::Ok).inc();
        for code in 1000..1000 + MAX_ERROR_CODES as u16 + 10 {
            m.record_error_code(off, code);
        }
        let text = m.render();
        assert!(text.contains(
            r#"psprobe_commands_total{command="ping",outcome="ok",scenario="pfsoff"} 1"#
        ));
        assert!(
            text.contains(r#"psprobe_errors_total{code="other",scenario="pfsoff"} 10"#),
            "{text}"
        );
        let codes = text
            .lines()
            .filter(|l| l.starts_with("psprobe_errors_total{"))
            .count();
        assert_eq!(codes, MAX_ERROR_CODES + 1);
    }
}
