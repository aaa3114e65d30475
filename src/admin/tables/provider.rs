//! The data the admin interface serves: the [`AdminData`] trait (one consistent snapshot of the
//! tables a query reads) and [`ObserverData`], its implementation over psprobe's live
//! statistics, phases, overhead and attribution.
//!
//! Must not: write to what it reads or hold a lock past the copy it takes; the relay records
//! into the same observer, and a slow admin query never blocks it.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::Instant;

use super::rows::{
    attribution_row, command_row, connection_row, digest_row, overhead_row, phase_row,
    scenario_row, setting_change_row, status_row, AttributionRow, OverheadRow, ScenarioTotals,
};
use super::schema::Table;
use super::value::Row;
use crate::observe::Observer;
use crate::phase_log::PhaseRecord;
use crate::stats::{ScenarioId, StoreSnapshot};

/// The data the admin interface serves.
pub trait AdminData: Send + Sync + 'static {
    /// The rows of each of `tables` (in that order), taken at one moment: a query that reads
    /// several tables sees one consistent state. Called once per query, on a blocking thread,
    /// only for the tables the query reads.
    fn snapshot(&self, tables: &[Table]) -> Vec<Vec<Row>>;
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
