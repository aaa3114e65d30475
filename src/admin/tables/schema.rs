//! The tables the admin interface serves: [`Table`] (names, in `SHOW TABLES` order, and what
//! each holds) and each table's typed, documented columns.
//!
//! Must not: build rows or read live state; `rows.rs` maps records to rows in the order of
//! these columns, and `provider.rs` fills the tables.

use super::value::{Column, ColumnKind};

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

use ColumnKind::{Any, Float, Int, Text};

/// The statistics of one aggregate of finished commands, after the key columns of the
/// `digests` and `commands` tables; `stats_values` (in `rows.rs`) fills them.
pub(super) const STATS_COLUMNS: [Column; 9] = [
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

#[cfg(test)]
mod tests {
    use super::*;

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
