//! Turns one connection's session events into statistics: Prometheus counters and histograms by
//! scenario and command, and per-digest aggregates. Each command is tagged with the scenario in
//! effect when it started. Hot path: atomics, the thread's shard lock, and a per-connection
//! cache so the shared digest registry is consulted once per new digest per connection.
//!
//! Must not: block, wait on a scrape, or allocate per command once a connection's series exist.

use std::collections::VecDeque;

use psprobe_core::digest::Fingerprinter;
use psprobe_core::protocol::CommandKind;
use psprobe_core::session::{
    CommandFinished, CommandStarted, EventSink, Outcome, Statement, UnobservedReason,
    LAST_PREPARED_ID,
};
use rustc_hash::FxHashMap;

use super::Observer;
use crate::stats::digest_stats::Sample;
use crate::stats::scenario::ScenarioId;
use crate::stats::since_switch::bin_of;
use crate::stats::store::{DigestId, Tag, OTHER_DIGEST};

/// Entries of a connection's digest-admission cache before it is cleared (bounds memory for
/// connections that send endless distinct shapes).
const ADMISSION_CACHE_LIMIT: usize = 4096;

/// A command between its start and finish events.
struct Pending {
    seq: u64,
    tag: Tag,
    digest: Option<DigestId>,
}

pub struct ConnectionRecorder<'a> {
    observer: &'a Observer,
    pending: VecDeque<Pending>,
    /// Digest id → id recorded under (itself, or `other` past the cap).
    /// Fx (looked up per statement): keys are MD5-derived digest ids and the map is bounded.
    admitted: FxHashMap<DigestId, DigestId>,
    /// Prepared statement id → digest of its text.
    statements: FxHashMap<u32, DigestId>,
    /// Created on the connection's first statement (idle connections cost nothing).
    fingerprinter: Option<Fingerprinter>,
}

impl<'a> ConnectionRecorder<'a> {
    pub fn new(observer: &'a Observer) -> Self {
        ConnectionRecorder {
            observer,
            pending: VecDeque::new(),
            admitted: FxHashMap::default(),
            statements: FxHashMap::default(),
            fingerprinter: None,
        }
    }

    /// The scenario to charge bytes read now to.
    pub fn current_scenario(&self) -> ScenarioId {
        self.observer.scenarios.current()
    }

    fn admit(&mut self, sql: &[u8]) -> DigestId {
        let options = &self.observer.fingerprint;
        let fingerprinter = self
            .fingerprinter
            .get_or_insert_with(|| Fingerprinter::new(*options));
        let fingerprint = fingerprinter.fingerprint(sql);
        let id = fingerprint.id();
        if let Some(&admitted) = self.admitted.get(&id) {
            return admitted;
        }
        if self.admitted.len() >= ADMISSION_CACHE_LIMIT {
            self.admitted.clear();
        }
        let admitted = self.observer.digests.admit(id, fingerprint.text());
        self.admitted.insert(id, admitted);
        admitted
    }

    fn digest_of(&mut self, event: &CommandStarted<'_>) -> Option<DigestId> {
        match (event.kind, event.statement) {
            (CommandKind::Query, Statement::Text { sql, .. }) => Some(self.admit(sql)),
            (CommandKind::Query, _) => Some(OTHER_DIGEST),
            (
                CommandKind::StmtExecute | CommandKind::StmtBulkExecute,
                Statement::Prepared { id, sql },
            ) => {
                if let Some(&digest) = self.statements.get(&id) {
                    return Some(digest);
                }
                let digest = sql.map_or(OTHER_DIGEST, |sql| self.admit(sql));
                // MariaDB's "last prepared" id stands for different statements over time.
                if id != LAST_PREPARED_ID {
                    self.statements.insert(id, digest);
                }
                Some(digest)
            }
            (CommandKind::StmtClose, Statement::Prepared { id, .. }) => {
                self.statements.remove(&id);
                None
            }
            _ => None,
        }
    }
}

impl EventSink for ConnectionRecorder<'_> {
    fn command_started(&mut self, event: &CommandStarted<'_>) {
        let scenarios = &self.observer.scenarios;
        let now = scenarios.now();
        let bin = (now.state.binned() && event.kind.is_statement())
            .then(|| {
                let started = scenarios.ms_since_base(event.at);
                bin_of(started.saturating_sub(now.switched_at_ms))
            })
            .flatten();
        let tag = Tag {
            scenario: now.id,
            measured: now.state.measured(),
            bin,
        };
        let digest = self.digest_of(event);
        if matches!(
            event.kind,
            CommandKind::ChangeUser | CommandKind::ResetConnection
        ) {
            // Statement ids are reused by the server after these.
            self.statements.clear();
        }
        self.pending.push_back(Pending {
            seq: event.seq,
            tag,
            digest,
        });
    }

    fn command_finished(&mut self, event: &CommandFinished) {
        // Commands finish in order (the oldest), except those without a response, which
        // finish at once (the newest): both ends are looked at first, so a deep pipeline
        // costs no scan per command.
        let pending = if self.pending.front().is_some_and(|p| p.seq == event.seq) {
            self.pending.pop_front()
        } else if self.pending.back().is_some_and(|p| p.seq == event.seq) {
            self.pending.pop_back()
        } else {
            let position = self.pending.iter().rposition(|p| p.seq == event.seq);
            position.and_then(|i| self.pending.remove(i))
        };
        let Some(pending) = pending else {
            return;
        };
        let metrics = &self.observer.metrics;
        let scenario = pending.tag.scenario;
        metrics.command(scenario, event.kind, event.outcome).inc();
        let latency_ns = event
            .latency
            .map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
        if let Some(latency) = event.latency {
            metrics
                .duration(scenario, event.kind)
                .observe(latency.as_secs_f64());
        }
        if let Outcome::Error(code) = event.outcome {
            metrics.record_error_code(scenario, code);
        }
        self.observer.digests.record(
            pending.tag,
            event.kind,
            pending.digest,
            &Sample {
                latency_ns,
                error: matches!(event.outcome, Outcome::Error(_)),
                rows_sent: event.rows,
                rows_affected: event.affected_rows,
            },
        );
    }

    fn unobserved(&mut self, reason: UnobservedReason) {
        self.observer.metrics.record_unobserved(reason);
    }

    fn authenticated(&mut self, ok: bool) {
        if !ok {
            self.observer.metrics.auth_failures.inc();
        }
    }
}
