//! What the admin interface serves: the tables (names, typed columns, what each column means),
//! the [`AdminData`] provider that fills them, and [`ObserverData`], the provider over psprobe's
//! live statistics.
//!
//! Each table's rows come from one small mapping function next to its column list
//! ([`digest_row`], [`command_row`], [`phase_row`], [`overhead_row`], [`connection_row`], ...):
//! a new field is one line in the column list and one in the function (a unit test checks that
//! the two agree).

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::{Instant, UNIX_EPOCH};

use psprobe_core::protocol::CommandKind;

use crate::observe::connections::ConnectionInfo;
use crate::observe::Observer;
use crate::phase_log::{Aggregate, PhaseRecord};
use crate::stats::{DigestStats, ScenarioId, StoreSnapshot};
use crate::timestamp::rfc3339;

/// How a column is stored (SQLite) and typed towards MySQL clients.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnKind {
    /// 64-bit integer (MySQL BIGINT).
    Int,
    /// Double, shown with [`FLOAT_DECIMALS`] decimals (MySQL DOUBLE).
    Float,
    /// Text (MySQL VARCHAR), compared case-insensitively like MySQL's default collation.
    Text,
    /// Any of the above per row (a `status` value).
    Any,
}

/// Decimals shown for values of [`ColumnKind::Float`] columns.
pub(crate) const FLOAT_DECIMALS: usize = 3;

/// One column: name, type, and what it holds (shown by `SHOW FULL COLUMNS`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Column {
    pub name: &'static str,
    pub kind: ColumnKind,
    pub doc: &'static str,
}

const fn col(name: &'static str, kind: ColumnKind, doc: &'static str) -> Column {
    Column { name, kind, doc }
}

/// The tables, in the order `SHOW TABLES` lists them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Table {
    Digests,
    Commands,
    Phases,
    Overhead,
    Attribution,
    Connections,
    Scenarios,
    SettingChanges,
    Status,
}

impl Table {
    pub const ALL: [Table; 9] = [
        Table::Digests,
        Table::Commands,
        Table::Phases,
        Table::Overhead,
        Table::Attribution,
        Table::Connections,
        Table::Scenarios,
        Table::SettingChanges,
        Table::Status,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Table::Digests => "digests",
            Table::Commands => "commands",
            Table::Phases => "phases",
            Table::Overhead => "overhead",
            Table::Attribution => "attribution",
            Table::Connections => "connections",
            Table::Scenarios => "scenarios",
            Table::SettingChanges => "setting_changes",
            Table::Status => "status",
        }
    }

    /// The table of a name, case-insensitively (as SQLite resolves names).
    pub fn from_name(name: &str) -> Option<Table> {
        Table::ALL
            .into_iter()
            .find(|t| t.name().eq_ignore_ascii_case(name))
    }

    pub fn doc(self) -> &'static str {
        match self {
            Table::Digests => "per scenario and query shape (digest): counts and latency since start",
            Table::Commands => "per scenario and command kind (query, stmt_execute, ping, ...): counts and latency since start",
            Table::Phases => "the controller's finished phases",
            Table::Overhead => "each scenario against the baseline, with confidence intervals (after each phase)",
            Table::Attribution => "an --attribute run: what each instrument group costs, with confidence intervals (after each segment)",
            Table::Connections => "client connections open now (no credentials, no statement text)",
            Table::Scenarios => "every scenario seen, the active one flagged",
            Table::SettingChanges => "setup-table rows someone else changed during a run: kept as set, left out of later switches, never restored",
            Table::Status => "counters and state of this psprobe (SHOW STATUS)",
        }
    }

    pub fn columns(self) -> &'static [Column] {
        match self {
            Table::Digests => DIGEST_COLUMNS,
            Table::Commands => COMMAND_COLUMNS,
            Table::Phases => PHASE_COLUMNS,
            Table::Overhead => OVERHEAD_COLUMNS,
            Table::Attribution => ATTRIBUTION_COLUMNS,
            Table::Connections => CONNECTION_COLUMNS,
            Table::Scenarios => SCENARIO_COLUMNS,
            Table::SettingChanges => SETTING_CHANGE_COLUMNS,
            Table::Status => STATUS_COLUMNS,
        }
    }
}

/// A value of a row, before it goes into the engine.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Int(i64),
    UInt(u64),
    Float(f64),
    Text(String),
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

impl From<Option<String>> for Value {
    fn from(v: Option<String>) -> Self {
        v.map_or(Value::Null, Value::Text)
    }
}

impl From<Option<&str>> for Value {
    fn from(v: Option<&str>) -> Self {
        v.map_or(Value::Null, Value::from)
    }
}

pub type Row = Vec<Value>;

/// The data the admin interface serves.
pub trait AdminData: Send + Sync + 'static {
    /// The rows of each of `tables` (in that order), taken at one moment: a query that reads
    /// several tables sees one consistent state. Called once per query, on a blocking thread,
    /// only for the tables the query reads.
    fn snapshot(&self, tables: &[Table]) -> Vec<Vec<Row>>;
}

use ColumnKind::{Any, Float, Int, Text};

/// The statistics of one aggregate of finished commands, after the key columns of the
/// `digests` and `commands` tables; [`stats_values`] fills them.
const STATS_COLUMNS: [Column; 9] = [
    col("count", Int, "commands finished"),
    col("errors", Int, "commands answered with ERR"),
    col("rows_sent", Int, "rows of result sets"),
    col("rows_affected", Int, "affected rows of OK packets"),
    col("mean_ms", Float, "mean latency, milliseconds"),
    col(
        "p50_ms",
        Float,
        "median latency, milliseconds (log buckets, within 2.5%)",
    ),
    col("p95_ms", Float, "95th percentile latency, milliseconds"),
    col("p99_ms", Float, "99th percentile latency, milliseconds"),
    col("max_ms", Float, "highest latency, milliseconds"),
];

/// `keys` then [`STATS_COLUMNS`]; `N` is their sum (checked when the constant is evaluated,
/// that is at compile time).
const fn with_stats<const K: usize, const N: usize>(keys: [Column; K]) -> [Column; N] {
    assert!(
        N == K + STATS_COLUMNS.len(),
        "N must be K + STATS_COLUMNS.len()"
    );
    let mut all = [STATS_COLUMNS[0]; N];
    let mut i = 0;
    while i < N {
        all[i] = if i < K { keys[i] } else { STATS_COLUMNS[i - K] };
        i += 1;
    }
    all
}

/// The scenario a `digests` or `commands` row counts under.
const SCENARIO_KEY: Column = col(
    "scenario",
    Text,
    "scenario in effect when the command started",
);

pub(crate) const DIGEST_COLUMNS: &[Column] = &with_stats::<3, 12>([
    SCENARIO_KEY,
    col(
        "digest",
        Text,
        "digest id: 16 hex digits (see docs/fingerprint.md)",
    ),
    col("digest_text", Text, "the fingerprint, cut at 1024 bytes"),
]);

pub(crate) const COMMAND_COLUMNS: &[Column] = &with_stats::<2, 11>([
    SCENARIO_KEY,
    col(
        "command",
        Text,
        "command kind, as the `command` label of psprobe_commands_total",
    ),
]);

pub(crate) const PHASE_COLUMNS: &[Column] = &[
    col(
        "phase",
        Int,
        "position in the run of the record's first slot, from 0",
    ),
    col(
        "block",
        Int,
        "segment (fast schedule) or slow block the record covers",
    ),
    col("scenario", Text, "scenario of the record"),
    col(
        "schedule",
        Text,
        "fast (switched at runtime) or slow (entered by restart)",
    ),
    col("slots", Int, "slots of the scenario in the segment"),
    col(
        "measure_from",
        Text,
        "start of the measured window (UTC, RFC 3339)",
    ),
    col(
        "seconds",
        Float,
        "measured time (the slots' windows, settle and switch left out)",
    ),
    col(
        "statements",
        Int,
        "queries and prepared-statement executions measured",
    ),
    col("qps", Float, "statements per second"),
    col("mean_ms", Float, "mean statement latency, milliseconds"),
    col("errors", Int, "statements answered with ERR"),
    col(
        "restarted",
        Int,
        "1 when the server was restarted to enter the phase",
    ),
    col(
        "verified",
        Int,
        "1 when the scenario was read back from the server",
    ),
];

pub(crate) const OVERHEAD_COLUMNS: &[Column] = &[
    col(
        "schedule",
        Text,
        "fast (switched at runtime) or slow (entered by restart)",
    ),
    col("scenario", Text, "the scenario compared"),
    col("baseline", Text, "the scenario it is compared with"),
    col(
        "metric",
        Text,
        "what is compared (throughput, latency, ...)",
    ),
    col("change_pct", Float, "change against the baseline, percent"),
    col(
        "ci_low_pct",
        Float,
        "lower bound of the confidence interval, percent",
    ),
    col(
        "ci_high_pct",
        Float,
        "upper bound of the confidence interval, percent",
    ),
    col(
        "halfwidth_pct",
        Float,
        "half the interval's width, percentage points (it tightens as the run goes)",
    ),
    col("significant", Int, "1 when the interval excludes zero"),
    col(
        "blocks",
        Int,
        "paired segments (or slow blocks) behind the estimate",
    ),
];

pub(crate) const ATTRIBUTION_COLUMNS: &[Column] = &[
    col(
        "instrument_group",
        Text,
        "the instrument group (psprobe ps groups), or base: global and thread instrumentation",
    ),
    col("metric", Text, "throughput, mean_latency or server_cpu"),
    col(
        "change_pct",
        Float,
        "change when the group is on, averaged over the other groups, percent",
    ),
    col(
        "ci_low_pct",
        Float,
        "lower bound of the confidence interval, percent",
    ),
    col(
        "ci_high_pct",
        Float,
        "upper bound of the confidence interval, percent",
    ),
    col(
        "halfwidth_pct",
        Float,
        "half the interval's width, percentage points (it tightens as the run goes)",
    ),
    col("significant", Int, "1 when the interval excludes zero"),
    col(
        "segments",
        Int,
        "complete replicates of the design behind the estimate",
    ),
];

pub(crate) const SETTING_CHANGE_COLUMNS: &[Column] = &[
    col("seen_at", Text, "when psprobe first saw it (UTC, RFC 3339)"),
    col(
        "setting",
        Text,
        "the row: setup_consumers 'NAME' or setup_instruments 'NAME'",
    ),
    col(
        "value",
        Text,
        "as it was set: ENABLED=YES, or ENABLED=YES TIMED=NO",
    ),
    col(
        "psprobe_left",
        Text,
        "what psprobe had written there (or found, for a restart)",
    ),
    col(
        "origin",
        Text,
        "runtime, restart (one psprobe did not make) or while_stopped",
    ),
];

pub(crate) const CONNECTION_COLUMNS: &[Column] = &[
    col("id", Int, "psprobe's number for the connection, from 1"),
    col("client", Text, "client address and port"),
    col("user", Text, "user name from the handshake (NULL before it)"),
    col("db", Text, "default database from the handshake"),
    col("connected_at", Text, "when the connection was accepted (UTC, RFC 3339)"),
    col("seconds", Float, "time since then"),
    col("state", Text, "idle, the command in progress (query, stmt_execute, ...), connecting, handshake, unobserved or refused"),
    col("command_seconds", Float, "time the command in progress has run so far"),
    col("commands", Int, "commands finished"),
    col("errors", Int, "commands answered with ERR"),
    col("observed", Int, "1 while psprobe follows the protocol, 0 once forwarded verbatim"),
    col("unobserved_reason", Text, "why it is not observed (tls, compression, ...)"),
];

pub(crate) const SCENARIO_COLUMNS: &[Column] = &[
    col("id", Int, "the scenario's number (0 is `none`)"),
    col("scenario", Text, "name"),
    col("active", Int, "1 for the scenario in effect now"),
    col("commands", Int, "commands finished under it, since start"),
    col(
        "statements",
        Int,
        "of which queries and prepared-statement executions",
    ),
    col("errors", Int, "commands answered with ERR"),
    col("phases", Int, "finished phases of the controller"),
    col(
        "measured_seconds",
        Float,
        "length of their measured windows",
    ),
];

pub(crate) const STATUS_COLUMNS: &[Column] = &[
    col("variable_name", Text, "name"),
    col("value", Any, "value (a number or a text)"),
];

fn ns_to_ms(ns: f64) -> f64 {
    ns / 1e6
}

/// The values of [`STATS_COLUMNS`] of one aggregate: count, errors, rows, latency mean /
/// quantiles / max.
fn stats_values(stats: &DigestStats) -> [Value; STATS_COLUMNS.len()] {
    let quantile = |q| stats.quantile_ns(q).map(ns_to_ms);
    let t = &stats.totals;
    let max = (t.timed > 0).then(|| ns_to_ms(t.latency_max_ns as f64));
    [
        t.count.into(),
        t.errors.into(),
        t.rows_sent.into(),
        t.rows_affected.into(),
        stats.mean_ns().map(ns_to_ms).into(),
        quantile(0.5).into(),
        quantile(0.95).into(),
        quantile(0.99).into(),
        max.into(),
    ]
}

/// The `digests` row of one (scenario, digest) aggregate.
pub(crate) fn digest_row(scenario: &str, digest: &str, text: &str, stats: &DigestStats) -> Row {
    let mut row = vec![scenario.into(), digest.into(), text.into()];
    row.extend(stats_values(stats));
    row
}

/// The `commands` row of one (scenario, command kind) aggregate.
pub(crate) fn command_row(scenario: &str, command: CommandKind, stats: &DigestStats) -> Row {
    let mut row = vec![scenario.into(), command.label().into()];
    row.extend(stats_values(stats));
    row
}

/// The `phases` row of one phase-log record.
pub(crate) fn phase_row(record: &PhaseRecord) -> Row {
    let statements: Vec<&Aggregate> = record
        .commands
        .iter()
        .filter(|a| {
            a.command
                .as_deref()
                .is_some_and(CommandKind::is_statement_label)
        })
        .collect();
    let count: u64 = statements.iter().map(|a| a.totals.count).sum();
    let errors: u64 = statements.iter().map(|a| a.totals.errors).sum();
    let timed: u64 = statements.iter().map(|a| a.totals.timed).sum();
    let latency_sum_ns: u64 = statements
        .iter()
        .fold(0u64, |sum, a| sum.saturating_add(a.totals.latency_sum_ns));
    let seconds = record.measured_ms() as f64 / 1000.0;
    let qps = (seconds > 0.0).then(|| count as f64 / seconds);
    let mean_ms = (timed > 0).then(|| ns_to_ms(latency_sum_ns as f64 / timed as f64));
    vec![
        record.phase.into(),
        record.block.into(),
        record.scenario.as_str().into(),
        record.schedule().into(),
        record.slots.unwrap_or(1).into(),
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

/// One line of the overhead analysis: how much `metric` changed under `scenario` relative to
/// `baseline`, with a confidence interval.
#[derive(Debug, Clone, PartialEq)]
pub struct OverheadRow {
    /// `fast` (switched at runtime) or `slow` (entered by restart).
    pub schedule: String,
    pub scenario: String,
    pub baseline: String,
    pub metric: String,
    pub change_pct: f64,
    pub ci_low_pct: f64,
    pub ci_high_pct: f64,
    pub significant: bool,
    pub blocks: u64,
}

/// The `overhead` row of one estimate (a NaN bound becomes NULL).
pub fn overhead_row(row: &OverheadRow) -> Row {
    let halfwidth = (row.ci_high_pct - row.ci_low_pct) / 2.0;
    vec![
        row.schedule.as_str().into(),
        row.scenario.as_str().into(),
        row.baseline.as_str().into(),
        row.metric.as_str().into(),
        row.change_pct.into(),
        row.ci_low_pct.into(),
        row.ci_high_pct.into(),
        (!halfwidth.is_nan()).then_some(halfwidth).into(),
        row.significant.into(),
        row.blocks.into(),
    ]
}

/// One instrument group's cost in an attribution run.
#[derive(Debug, Clone, PartialEq)]
pub struct AttributionRow {
    pub group: String,
    pub metric: String,
    pub change_pct: f64,
    pub ci_low_pct: f64,
    pub ci_high_pct: f64,
    pub significant: bool,
    pub segments: u64,
}

/// The `attribution` row of one group's cost (a NaN bound becomes NULL).
pub(crate) fn attribution_row(row: &AttributionRow) -> Row {
    let halfwidth = (row.ci_high_pct - row.ci_low_pct) / 2.0;
    vec![
        row.group.as_str().into(),
        row.metric.as_str().into(),
        row.change_pct.into(),
        row.ci_low_pct.into(),
        row.ci_high_pct.into(),
        (!halfwidth.is_nan()).then_some(halfwidth).into(),
        row.significant.into(),
        row.segments.into(),
    ]
}

/// The `setting_changes` row of one row someone else set.
pub(crate) fn setting_change_row(c: &crate::observe::SettingChange) -> Row {
    vec![
        rfc3339(c.seen_at_ms / 1000).into(),
        c.setting.clone().into(),
        c.value.clone().into(),
        c.psprobe_left.clone().into(),
        c.origin.clone().into(),
    ]
}

/// The `connections` row of one live connection.
pub(crate) fn connection_row(c: &ConnectionInfo) -> Row {
    let connected_at = c
        .connected_at
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    vec![
        c.id.into(),
        c.client.to_string().into(),
        c.identity.as_ref().map(|i| i.user.clone()).into(),
        c.identity.as_ref().and_then(|i| i.database.clone()).into(),
        rfc3339(connected_at).into(),
        c.seconds.into(),
        c.state.as_str().into(),
        c.command_seconds.into(),
        c.commands.into(),
        c.errors.into(),
        c.unobserved_reason.is_none().into(),
        c.unobserved_reason.into(),
    ]
}

/// Per-scenario sums the `scenarios` table shows.
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct ScenarioTotals {
    pub commands: u64,
    pub statements: u64,
    pub errors: u64,
    pub phases: u64,
    pub measured_seconds: f64,
}

/// The `scenarios` row of one scenario.
pub(crate) fn scenario_row(id: ScenarioId, name: &str, active: bool, t: &ScenarioTotals) -> Row {
    vec![
        u64::from(id).into(),
        name.into(),
        active.into(),
        t.commands.into(),
        t.statements.into(),
        t.errors.into(),
        t.phases.into(),
        t.measured_seconds.into(),
    ]
}

/// A `status` row.
pub fn status_row(name: &str, value: impl Into<Value>) -> Row {
    vec![name.into(), value.into()]
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
    attribution: Arc<RwLock<Vec<AttributionRow>>>,
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
            attribution: Arc::default(),
            started: Instant::now(),
        }
    }

    /// The attribution's rows, kept up to date by whoever computes them.
    pub fn with_attribution(mut self, attribution: Arc<RwLock<Vec<AttributionRow>>>) -> Self {
        self.attribution = attribution;
        self
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

    fn digests(&self, store: &StoreSnapshot) -> Vec<Row> {
        let scenarios = &self.observer.scenarios;
        let mut entries: Vec<_> = store.entries.iter().collect();
        // Busiest first; ties in a stable order.
        entries.sort_by(|((sa, da), a), ((sb, db), b)| {
            b.totals
                .count
                .cmp(&a.totals.count)
                .then(sa.cmp(sb))
                .then(da.0.cmp(&db.0))
        });
        entries
            .into_iter()
            .map(|((scenario, digest), stats)| {
                let text = store.texts.get(digest).map_or("", |t| &**t);
                digest_row(&scenarios.name(*scenario), &digest.to_string(), text, stats)
            })
            .collect()
    }

    fn commands(&self, store: &StoreSnapshot) -> Vec<Row> {
        let scenarios = &self.observer.scenarios;
        let mut entries: Vec<_> = store.commands.iter().collect();
        entries.sort_by_key(|((scenario, kind), _)| (*scenario, kind.index()));
        entries
            .into_iter()
            .map(|((scenario, kind), stats)| command_row(&scenarios.name(*scenario), *kind, stats))
            .collect()
    }

    fn scenarios(&self, store: &StoreSnapshot, phases: &[PhaseRecord]) -> Vec<Row> {
        let scenarios = &self.observer.scenarios;
        let mut totals: HashMap<ScenarioId, ScenarioTotals> = HashMap::new();
        for ((scenario, kind), stats) in &store.commands {
            let t = totals.entry(*scenario).or_default();
            t.commands += stats.totals.count;
            t.errors += stats.totals.errors;
            if kind.is_statement() {
                t.statements += stats.totals.count;
            }
        }
        let all = scenarios.all();
        for record in phases {
            if let Some((id, _)) = all.iter().find(|(_, n)| **n == *record.scenario) {
                let t = totals.entry(*id).or_default();
                t.phases += 1;
                t.measured_seconds +=
                    record.measure_to_ms.saturating_sub(record.measure_from_ms) as f64 / 1000.0;
            }
        }
        let current = scenarios.current();
        all.iter()
            .map(|(id, name)| {
                let t = totals.remove(id).unwrap_or_default();
                scenario_row(*id, name, *id == current, &t)
            })
            .collect()
    }

    fn status(&self, store: &StoreSnapshot) -> Vec<Row> {
        let observer = &self.observer;
        let metrics = &observer.metrics;
        let commands: u64 = store.commands.values().map(|s| s.totals.count).sum();
        let scenario = observer.scenarios.name(observer.scenarios.current());
        vec![
            status_row("uptime_seconds", self.started.elapsed().as_secs()),
            status_row("connections_active", metrics.connections_active.get()),
            status_row("connections_total", metrics.connections_total.get()),
            status_row("commands_total", commands),
            status_row("digests_tracked", observer.digests.digest_count() as u64),
            status_row("current_scenario", scenario.to_string()),
            status_row("controller_leader", metrics.controller_leader.get()),
            status_row(
                "unobserved_connections",
                self.metric_sum("psprobe_unobserved_connections_total"),
            ),
            status_row(
                "parse_errors",
                self.metric_sum("psprobe_parse_errors_total"),
            ),
            status_row(
                "upstream_connect_errors",
                metrics.upstream_connect_errors.get(),
            ),
            status_row("auth_failures", metrics.auth_failures.get()),
            status_row("version", env!("CARGO_PKG_VERSION")),
        ]
    }
}

impl AdminData for ObserverData {
    fn snapshot(&self, tables: &[Table]) -> Vec<Vec<Row>> {
        // One copy of each source, shared by every table that reads it.
        let needs_store = tables.iter().any(|t| {
            matches!(
                t,
                Table::Digests | Table::Commands | Table::Scenarios | Table::Status
            )
        });
        let store = if needs_store {
            self.observer.digests.snapshot()
        } else {
            StoreSnapshot::default()
        };
        let phases = if tables
            .iter()
            .any(|t| matches!(t, Table::Phases | Table::Scenarios))
        {
            read(&self.phases)
        } else {
            Vec::new()
        };
        tables
            .iter()
            .map(|table| match table {
                Table::Digests => self.digests(&store),
                Table::Commands => self.commands(&store),
                Table::Phases => phases.iter().map(phase_row).collect(),
                Table::Overhead => read(&self.overhead).iter().map(overhead_row).collect(),
                Table::Attribution => read(&self.attribution)
                    .iter()
                    .map(attribution_row)
                    .collect(),
                Table::Connections => self
                    .observer
                    .connections
                    .snapshot()
                    .iter()
                    .map(connection_row)
                    .collect(),
                Table::Scenarios => self.scenarios(&store, &phases),
                Table::SettingChanges => self
                    .observer
                    .setting_changes
                    .all()
                    .iter()
                    .map(setting_change_row)
                    .collect(),
                Table::Status => self.status(&store),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::digest_stats::Sample;

    /// Every value of a row fits its column's type.
    fn check_row(table: Table, row: &Row) {
        let columns = table.columns();
        assert_eq!(row.len(), columns.len(), "{table:?}: {row:?}");
        for (value, column) in row.iter().zip(columns) {
            let fits = matches!(
                (value, column.kind),
                (Value::Null, _)
                    | (_, Any)
                    | (Value::Int(_) | Value::UInt(_), Int)
                    | (Value::Float(_), Float)
                    | (Value::Text(_), Text)
            );
            assert!(fits, "{table:?}.{}: {value:?}", column.name);
        }
    }

    fn stats() -> DigestStats {
        let mut stats = DigestStats::default();
        for ns in [1_000_000, 3_000_000] {
            stats.record(&Sample {
                latency_ns: Some(ns),
                rows_sent: 2,
                ..Sample::default()
            });
        }
        stats
    }

    #[test]
    fn digest_row_in_milliseconds() {
        let row = digest_row("none", "ABC", "select ?", &stats());
        check_row(Table::Digests, &row);
        assert_eq!(row[3], Value::UInt(2));
        assert_eq!(row[5], Value::UInt(4));
        assert_eq!(row[7], Value::Float(2.0));
        assert_eq!(row[11], Value::Float(3.0));
        let Value::Float(p50) = row[8] else {
            panic!("p50 {:?}", row[8])
        };
        assert!((p50 / 1.0 - 1.0).abs() <= 0.025, "{p50}");
        check_row(
            Table::Commands,
            &command_row("none", CommandKind::Ping, &stats()),
        );
    }

    #[test]
    fn rows_match_their_columns() {
        let record = PhaseRecord {
            version: 1,
            kind: "phase".into(),
            scenario: "pfs_on".into(),
            block: 2,
            phase: 5,
            switched_at_ms: 1_764_441_290_000,
            measure_from_ms: 1_764_441_296_000,
            measure_to_ms: 1_764_441_306_000,
            restarted: false,
            verified: true,
            commands: vec![Aggregate {
                command: Some("query".into()),
                digest: None,
                text: None,
                totals: crate::stats::Totals {
                    count: 100,
                    errors: 2,
                    timed: 100,
                    latency_sum_ns: 200_000_000,
                    ..Default::default()
                },
                histogram: vec![],
            }],
            digests: vec![],
            server_cpu_ms: None,
            ..PhaseRecord::default()
        };
        let row = phase_row(&record);
        check_row(Table::Phases, &row);
        assert_eq!(row[8], Value::Float(10.0), "qps");
        assert_eq!(row[9], Value::Float(2.0), "mean_ms");
        let overhead = OverheadRow {
            schedule: "fast".into(),
            scenario: "a".into(),
            baseline: "b".into(),
            metric: "throughput".into(),
            change_pct: 1.0,
            ci_low_pct: f64::NAN,
            ci_high_pct: 2.0,
            significant: false,
            blocks: 3,
        };
        check_row(Table::Overhead, &overhead_row(&overhead));
        let group = AttributionRow {
            group: "stages".into(),
            metric: "throughput".into(),
            change_pct: -1.5,
            ci_low_pct: -2.0,
            ci_high_pct: -1.0,
            significant: true,
            segments: 40,
        };
        check_row(Table::Attribution, &attribution_row(&group));
        let table = crate::observe::connections::ConnectionTable::default();
        let _entry = table.register("127.0.0.1:9".parse().unwrap());
        check_row(Table::Connections, &connection_row(&table.snapshot()[0]));
        let change = crate::observe::SettingChange {
            setting: "setup_consumers 'events_waits_history'".into(),
            value: "ENABLED=YES".into(),
            psprobe_left: "ENABLED=NO".into(),
            origin: "runtime".into(),
            seen_at_ms: 1_700_000_000_000,
        };
        check_row(Table::SettingChanges, &setting_change_row(&change));
        check_row(
            Table::Scenarios,
            &scenario_row(0, "none", true, &ScenarioTotals::default()),
        );
        check_row(Table::Status, &status_row("version", "1"));
    }

    /// What clients see of the shared statistics columns: keys first, then the nine.
    #[test]
    fn digests_and_commands_end_in_the_statistics_columns() {
        let names = |t: Table| t.columns().iter().map(|c| c.name).collect::<Vec<_>>();
        let stats = [
            "count",
            "errors",
            "rows_sent",
            "rows_affected",
            "mean_ms",
            "p50_ms",
            "p95_ms",
            "p99_ms",
            "max_ms",
        ];
        let digest = [&["scenario", "digest", "digest_text"][..], &stats].concat();
        let command = [&["scenario", "command"][..], &stats].concat();
        assert_eq!(names(Table::Digests), digest);
        assert_eq!(names(Table::Commands), command);
        assert_eq!(DIGEST_COLUMNS[0], COMMAND_COLUMNS[0]);
    }

    #[test]
    fn names_are_unique_and_found() {
        for t in Table::ALL {
            assert_eq!(Table::from_name(&t.name().to_uppercase()), Some(t));
            let mut names: Vec<_> = t.columns().iter().map(|c| c.name).collect();
            names.sort_unstable();
            names.dedup();
            assert_eq!(names.len(), t.columns().len(), "{t:?}");
        }
        assert_eq!(Table::from_name("user"), None);
    }
}
