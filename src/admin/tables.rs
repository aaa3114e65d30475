//! What the admin interface serves: the [`AdminData`] provider trait, the [`Table`] it returns,
//! and [`ObserverData`], the provider built from psprobe's live statistics.

use std::cmp::Ordering;
use std::sync::{Arc, RwLock};
use std::time::Instant;

use crate::controller::phase_log::{Aggregate, PhaseRecord};
use crate::controller::snapshot::rfc3339;
use crate::stats::{DigestStats, Observer};

/// How a column is typed towards the client (text protocol: only alignment and client-side
/// typing depend on it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnKind {
    Int,
    Float,
    Text,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    pub name: String,
    pub kind: ColumnKind,
}

impl Column {
    pub fn new(name: &str, kind: ColumnKind) -> Self {
        Column {
            name: name.to_string(),
            kind,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Int(i64),
    UInt(u64),
    Float(f64),
    Text(String),
}

/// Decimals shown for floating-point values.
pub const FLOAT_DECIMALS: usize = 3;

impl Value {
    /// The value as the text protocol sends it; `None` is SQL NULL.
    pub fn render(&self) -> Option<String> {
        match self {
            Value::Null => None,
            Value::Int(v) => Some(v.to_string()),
            Value::UInt(v) => Some(v.to_string()),
            Value::Float(v) if v.is_finite() => Some(format!("{v:.FLOAT_DECIMALS$}")),
            Value::Float(_) => None,
            Value::Text(s) => Some(s.clone()),
        }
    }

    fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Int(v) => Some(*v as f64),
            Value::UInt(v) => Some(*v as f64),
            Value::Float(v) if v.is_finite() => Some(*v),
            _ => None,
        }
    }

    /// SQL-like ordering: NULL first, numbers numerically, text case-insensitively.
    pub fn compare(&self, other: &Value) -> Ordering {
        match (self, other) {
            (Value::Null, Value::Null) => Ordering::Equal,
            (Value::Null, _) => Ordering::Less,
            (_, Value::Null) => Ordering::Greater,
            (Value::Int(a), Value::Int(b)) => a.cmp(b),
            (Value::UInt(a), Value::UInt(b)) => a.cmp(b),
            (Value::Int(a), Value::UInt(b)) => i128::from(*a).cmp(&i128::from(*b)),
            (Value::UInt(a), Value::Int(b)) => i128::from(*a).cmp(&i128::from(*b)),
            _ => match (self.as_f64(), other.as_f64()) {
                (Some(a), Some(b)) => a.total_cmp(&b),
                _ => {
                    let a = self.render().unwrap_or_default();
                    let b = other.render().unwrap_or_default();
                    a.to_lowercase()
                        .cmp(&b.to_lowercase())
                        .then_with(|| a.cmp(&b))
                }
            },
        }
    }
}

impl From<&str> for Value {
    fn from(s: &str) -> Self {
        Value::Text(s.to_string())
    }
}

impl From<String> for Value {
    fn from(s: String) -> Self {
        Value::Text(s)
    }
}

impl From<u64> for Value {
    fn from(v: u64) -> Self {
        Value::UInt(v)
    }
}

impl From<i64> for Value {
    fn from(v: i64) -> Self {
        Value::Int(v)
    }
}

impl From<bool> for Value {
    fn from(v: bool) -> Self {
        Value::Int(i64::from(v))
    }
}

impl From<Option<f64>> for Value {
    fn from(v: Option<f64>) -> Self {
        v.map_or(Value::Null, Value::Float)
    }
}

impl From<f64> for Value {
    fn from(v: f64) -> Self {
        Value::Float(v)
    }
}

/// A result set: column definitions and rows (each row has one value per column).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Table {
    pub columns: Vec<Column>,
    pub rows: Vec<Vec<Value>>,
}

impl Table {
    pub fn new(columns: &[(&str, ColumnKind)]) -> Self {
        Table {
            columns: columns
                .iter()
                .map(|(name, kind)| Column::new(name, *kind))
                .collect(),
            rows: Vec::new(),
        }
    }

    /// Position of a column, matched case-insensitively like MySQL column names.
    pub fn column_index(&self, name: &str) -> Option<usize> {
        self.columns
            .iter()
            .position(|c| c.name.eq_ignore_ascii_case(name))
    }

    pub fn column_names(&self) -> String {
        self.columns
            .iter()
            .map(|c| c.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// A two-column `Variable_name` / `Value` table, like `SHOW STATUS`.
    pub fn variables(rows: Vec<(&str, Value)>) -> Self {
        let mut table = Table::new(&[
            ("Variable_name", ColumnKind::Text),
            ("Value", ColumnKind::Text),
        ]);
        table.rows = rows
            .into_iter()
            .map(|(name, value)| vec![Value::from(name), value])
            .collect();
        table
    }
}

/// The data the admin interface serves. Called on every query, from the connection's task:
/// implementations should take a snapshot and return quickly.
pub trait AdminData: Send + Sync + 'static {
    fn digests(&self) -> Table;
    fn phases(&self) -> Table;
    fn overhead(&self) -> Table;
    /// `Variable_name` / `Value` rows for `SHOW STATUS`.
    fn status(&self) -> Table;
}

/// One line of the overhead analysis: how much `metric` changed under `scenario` relative to
/// `baseline`, with a confidence interval.
#[derive(Debug, Clone, PartialEq)]
pub struct OverheadRow {
    pub scenario: String,
    pub baseline: String,
    pub metric: String,
    pub change_pct: f64,
    pub ci_low_pct: f64,
    pub ci_high_pct: f64,
    pub significant: bool,
    pub blocks: u64,
}

pub fn digests_table() -> Table {
    use ColumnKind::{Float, Int, Text};
    Table::new(&[
        ("scenario", Text),
        ("digest", Text),
        ("digest_text", Text),
        ("count", Int),
        ("errors", Int),
        ("rows_sent", Int),
        ("rows_affected", Int),
        ("mean_ms", Float),
        ("p50_ms", Float),
        ("p95_ms", Float),
        ("p99_ms", Float),
        ("max_ms", Float),
    ])
}

pub fn phases_table() -> Table {
    use ColumnKind::{Float, Int, Text};
    Table::new(&[
        ("phase", Int),
        ("block", Int),
        ("scenario", Text),
        ("measure_from", Text),
        ("seconds", Float),
        ("statements", Int),
        ("qps", Float),
        ("mean_ms", Float),
        ("errors", Int),
        ("restarted", Int),
        ("verified", Int),
    ])
}

pub fn overhead_table() -> Table {
    use ColumnKind::{Float, Int, Text};
    Table::new(&[
        ("scenario", Text),
        ("baseline", Text),
        ("metric", Text),
        ("change_pct", Float),
        ("ci_low_pct", Float),
        ("ci_high_pct", Float),
        ("significant", Int),
        ("blocks", Int),
    ])
}

fn ns_to_ms(ns: f64) -> f64 {
    ns / 1e6
}

/// The `digests` row of one (scenario, digest) aggregate.
pub fn digest_row(scenario: &str, digest: &str, text: &str, stats: &DigestStats) -> Vec<Value> {
    let quantile = |q| stats.latency.quantile_ns(q).map(ns_to_ms);
    let max = (stats.timed > 0).then(|| ns_to_ms(stats.latency_max_ns as f64));
    vec![
        scenario.into(),
        digest.into(),
        text.into(),
        stats.count.into(),
        stats.errors.into(),
        stats.rows_sent.into(),
        stats.rows_affected.into(),
        stats.mean_ns().map(ns_to_ms).into(),
        quantile(0.5).into(),
        quantile(0.95).into(),
        quantile(0.99).into(),
        max.into(),
    ]
}

/// Command kinds counted as statements in the `phases` table.
const STATEMENT_COMMANDS: [&str; 2] = ["query", "stmt_execute"];

/// The `phases` row of one phase-log record.
pub fn phase_row(record: &PhaseRecord) -> Vec<Value> {
    let statements: Vec<&Aggregate> = record
        .commands
        .iter()
        .filter(|a| {
            a.command
                .as_deref()
                .is_some_and(|c| STATEMENT_COMMANDS.contains(&c))
        })
        .collect();
    let count: u64 = statements.iter().map(|a| a.count).sum();
    let errors: u64 = statements.iter().map(|a| a.errors).sum();
    let timed: u64 = statements.iter().map(|a| a.timed).sum();
    let latency_sum_ns: u64 = statements
        .iter()
        .fold(0u64, |sum, a| sum.saturating_add(a.latency_sum_ns));
    let seconds = record.measure_to_ms.saturating_sub(record.measure_from_ms) as f64 / 1000.0;
    let qps = (seconds > 0.0).then(|| count as f64 / seconds);
    let mean_ms = (timed > 0).then(|| ns_to_ms(latency_sum_ns as f64 / timed as f64));
    vec![
        record.phase.into(),
        record.block.into(),
        record.scenario.as_str().into(),
        rfc3339(record.measure_from_ms / 1000).into(),
        seconds.into(),
        count.into(),
        qps.into(),
        mean_ms.into(),
        errors.into(),
        record.restarted.into(),
        record.verified.into(),
    ]
}

pub fn overhead_row(row: &OverheadRow) -> Vec<Value> {
    vec![
        row.scenario.as_str().into(),
        row.baseline.as_str().into(),
        row.metric.as_str().into(),
        row.change_pct.into(),
        row.ci_low_pct.into(),
        row.ci_high_pct.into(),
        row.significant.into(),
        row.blocks.into(),
    ]
}

fn read<T: Clone>(lock: &RwLock<Vec<T>>) -> Vec<T> {
    lock.read().unwrap_or_else(|e| e.into_inner()).clone()
}

/// [`AdminData`] over psprobe's live state: the observer every connection records into, the
/// phases the controller finished, and the overhead analysis (filled in by whoever computes it).
pub struct ObserverData {
    observer: Arc<Observer>,
    phases: Arc<RwLock<Vec<PhaseRecord>>>,
    overhead: Arc<RwLock<Vec<OverheadRow>>>,
    started: Instant,
}

impl ObserverData {
    /// `uptime_seconds` counts from this call.
    pub fn new(
        observer: Arc<Observer>,
        phases: Arc<RwLock<Vec<PhaseRecord>>>,
        overhead: Arc<RwLock<Vec<OverheadRow>>>,
    ) -> Self {
        ObserverData {
            observer,
            phases,
            overhead,
            started: Instant::now(),
        }
    }

    /// Sum of every series of a counter or gauge family in the metrics registry (for values
    /// [`crate::metrics::ProxyMetrics`] keeps private).
    fn metric_sum(&self, name: &str) -> u64 {
        self.observer
            .metrics
            .registry()
            .gather()
            .iter()
            .filter(|family| family.get_name() == name)
            .flat_map(|family| family.get_metric())
            .map(|m| m.get_counter().get_value() + m.get_gauge().get_value())
            .sum::<f64>() as u64
    }
}

impl AdminData for ObserverData {
    fn digests(&self) -> Table {
        let snapshot = self.observer.digests.snapshot();
        let scenarios = &self.observer.scenarios;
        let mut entries: Vec<_> = snapshot.entries.iter().collect();
        // Busiest first; ties in a stable order.
        entries.sort_by(|((sa, da), a), ((sb, db), b)| {
            b.count.cmp(&a.count).then(sa.cmp(sb)).then(da.0.cmp(&db.0))
        });
        let mut table = digests_table();
        table.rows = entries
            .into_iter()
            .map(|((scenario, digest), stats)| {
                let text = snapshot.texts.get(digest).map_or("", |t| &**t);
                digest_row(&scenarios.name(*scenario), &digest.to_string(), text, stats)
            })
            .collect();
        table
    }

    fn phases(&self) -> Table {
        let mut table = phases_table();
        table.rows = read(&self.phases).iter().map(phase_row).collect();
        table
    }

    fn overhead(&self) -> Table {
        let mut table = overhead_table();
        table.rows = read(&self.overhead).iter().map(overhead_row).collect();
        table
    }

    fn status(&self) -> Table {
        let observer = &self.observer;
        let metrics = &observer.metrics;
        let snapshot = observer.digests.snapshot();
        let commands: u64 = snapshot.commands.values().map(|s| s.count).sum();
        let scenario = observer.scenarios.name(observer.scenarios.current());
        Table::variables(vec![
            ("uptime_seconds", self.started.elapsed().as_secs().into()),
            (
                "connections_active",
                metrics.connections_active.get().into(),
            ),
            ("connections_total", metrics.connections_total.get().into()),
            ("commands_total", commands.into()),
            (
                "digests_tracked",
                (observer.digests.digest_count() as u64).into(),
            ),
            ("current_scenario", scenario.to_string().into()),
            ("controller_leader", metrics.controller_leader.get().into()),
            (
                "unobserved_connections",
                self.metric_sum("psprobe_unobserved_connections_total")
                    .into(),
            ),
            (
                "parse_errors",
                self.metric_sum("psprobe_parse_errors_total").into(),
            ),
            (
                "upstream_connect_errors",
                metrics.upstream_connect_errors.get().into(),
            ),
            ("auth_failures", metrics.auth_failures.get().into()),
            ("version", env!("CARGO_PKG_VERSION").into()),
        ])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::Sample;

    #[test]
    fn values_render_and_order_like_sql() {
        assert_eq!(Value::Float(1.23456).render().as_deref(), Some("1.235"));
        assert_eq!(Value::Float(f64::NAN).render(), None);
        assert_eq!(Value::Null.render(), None);
        assert_eq!(Value::UInt(7).render().as_deref(), Some("7"));
        assert_eq!(Value::Null.compare(&Value::Int(-5)), Ordering::Less);
        assert_eq!(Value::Int(-1).compare(&Value::UInt(0)), Ordering::Less);
        assert_eq!(
            Value::UInt(10).compare(&Value::Float(9.5)),
            Ordering::Greater
        );
        assert_eq!(
            Value::from("abc").compare(&Value::from("ABD")),
            Ordering::Less
        );
    }

    #[test]
    fn digest_row_in_milliseconds() {
        let mut stats = DigestStats::default();
        for ns in [1_000_000, 3_000_000] {
            stats.record(&Sample {
                latency_ns: Some(ns),
                rows_sent: 2,
                ..Sample::default()
            });
        }
        let row = digest_row("none", "ABC", "select ?", &stats);
        assert_eq!(row[3], Value::UInt(2));
        assert_eq!(row[5], Value::UInt(4));
        assert_eq!(row[7], Value::Float(2.0));
        assert_eq!(row[11], Value::Float(3.0));
        let Value::Float(p50) = row[8] else {
            panic!("p50 {:?}", row[8])
        };
        assert!((p50 / 1.0 - 1.0).abs() <= 0.025, "{p50}");
        assert_eq!(row.len(), digests_table().columns.len());
    }

    #[test]
    fn phase_row_counts_statements_only() {
        let agg = |command: &str, count, sum| Aggregate {
            command: Some(command.to_string()),
            digest: None,
            text: None,
            count,
            errors: 1,
            rows_sent: 0,
            rows_affected: 0,
            timed: count,
            latency_sum_ns: sum,
            latency_min_ns: 0,
            latency_max_ns: 0,
            histogram: vec![],
        };
        let record = PhaseRecord {
            version: 1,
            kind: "phase".into(),
            scenario: "pfs_on".into(),
            block: 2,
            phase: 5,
            switched_at_ms: 0,
            measure_from_ms: 1_764_441_296_000,
            measure_to_ms: 1_764_441_306_000,
            restarted: true,
            verified: false,
            commands: vec![
                agg("query", 60, 60_000_000),
                agg("stmt_execute", 40, 140_000_000),
                agg("ping", 1000, 1),
            ],
            digests: vec![],
            server_cpu_ms: None,
            ..PhaseRecord::default()
        };
        let row = phase_row(&record);
        assert_eq!(
            row,
            vec![
                Value::UInt(5),
                Value::UInt(2),
                "pfs_on".into(),
                "2025-11-29T18:34:56Z".into(),
                Value::Float(10.0),
                Value::UInt(100),
                Value::Float(10.0),
                Value::Float(2.0),
                Value::UInt(2),
                Value::Int(1),
                Value::Int(0),
            ]
        );
    }
}
