//! One small mapping function per table, from what psprobe recorded to a row in the order of
//! that table's columns ([`digest_row`], [`command_row`], [`phase_row`], [`overhead_row`],
//! [`connection_row`], ...), and the records the analysis hands in ([`OverheadRow`],
//! [`AttributionRow`]). A new field is one line in the table's column list (`schema.rs`) and one
//! in its function here; a unit test checks that the two agree.
//!
//! Must not: read live state or take locks; each function maps only what it is given
//! (`provider.rs` gathers it).

use std::time::UNIX_EPOCH;

use psprobe_core::protocol::CommandKind;

use super::schema::STATS_COLUMNS;
use super::value::{Row, Value};
use crate::observe::connections::ConnectionInfo;
use crate::phase_log::{Aggregate, PhaseRecord};
use crate::stats::{DigestStats, ScenarioId};
use crate::timestamp::rfc3339;

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admin::tables::schema::Table;
    use crate::admin::tables::value::ColumnKind::{Any, Float, Int, Text};
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
}
