//! Turns phase transitions (switched, measuring, finished) into phase-log records: the
//! measured window's aggregates are the difference of two snapshots of the digest store.

use std::sync::Arc;

use crate::stats::{Observer, ScenarioId, StoreSnapshot};

use super::error::{ControllerError, Result};
use super::phase_log::{window_aggregates, PhaseLog, PhaseRecord, PHASE_LOG_VERSION};
use super::runner::{now_ms, PhaseHook};
use super::server_cpu::{cpu_ms, PidSource};

struct Open {
    scenario: String,
    id: ScenarioId,
    block: u64,
    phase: u64,
    switched_at_ms: u64,
    restarted: bool,
    /// Set when the measured window began (with mysqld's CPU time then, if known).
    window: Option<(u64, StoreSnapshot, Option<u64>)>,
}

pub struct PhaseTracker {
    observer: Arc<Observer>,
    open: Option<Open>,
    on_phase: Option<PhaseHook>,
    mysqld_pid: Option<PidSource>,
    /// The pid the window's first CPU reading came from.
    window_pid: Option<u32>,
}

impl PhaseTracker {
    pub fn new(
        observer: Arc<Observer>,
        on_phase: Option<PhaseHook>,
        mysqld_pid: Option<PidSource>,
    ) -> Self {
        PhaseTracker {
            observer,
            open: None,
            on_phase,
            mysqld_pid,
            window_pid: None,
        }
    }

    /// (pid, its CPU time in ms) of mysqld now.
    fn server_cpu(&self) -> Option<(u32, u64)> {
        let pid = self.mysqld_pid.as_ref()?.pid()?;
        Some((pid, cpu_ms(pid)?))
    }

    pub fn switched(
        &mut self,
        scenario: &str,
        id: ScenarioId,
        block: u64,
        phase: u64,
        at_ms: u64,
        restarted: bool,
    ) {
        self.open = Some(Open {
            scenario: scenario.to_string(),
            id,
            block,
            phase,
            switched_at_ms: at_ms,
            restarted,
            window: None,
        });
    }

    /// The settle time is over: the measured window starts now.
    pub fn measuring(&mut self) {
        let cpu = self.server_cpu();
        if let Some(open) = self.open.as_mut().filter(|o| o.window.is_none()) {
            self.window_pid = cpu.map(|c| c.0);
            open.window = Some((now_ms(), self.observer.digests.snapshot(), cpu.map(|c| c.1)));
        }
    }

    /// The phase in progress will not be finished (stop, takeover): nothing is written.
    pub fn abandon(&mut self) {
        self.open = None;
    }

    /// Ends the open phase; writes its record if it had a measured window.
    pub fn finish(&mut self, log: &mut PhaseLog, verified: bool) -> Result<()> {
        let Some(open) = self.open.take() else {
            return Ok(());
        };
        let Some((from_ms, start, cpu_from)) = open.window else {
            return Ok(());
        };
        let end = self.observer.digests.snapshot();
        // A restart in between (new pid, or CPU time going back) makes the figure meaningless.
        let server_cpu_ms = match (cpu_from, self.server_cpu()) {
            (Some(a), Some((pid, b))) if Some(pid) == self.window_pid && b >= a => Some(b - a),
            _ => None,
        };
        let (commands, digests) = window_aggregates(&start, &end, open.id);
        let record = PhaseRecord {
            version: PHASE_LOG_VERSION,
            kind: "phase".into(),
            scenario: open.scenario,
            block: open.block,
            phase: open.phase,
            switched_at_ms: open.switched_at_ms,
            measure_from_ms: from_ms,
            measure_to_ms: now_ms(),
            restarted: open.restarted,
            verified,
            commands,
            digests,
            server_cpu_ms,
        };
        log.append(&record).map_err(|e| ControllerError::Config {
            path: log.path().to_path_buf(),
            reason: e.to_string(),
        })?;
        if let Some(hook) = &self.on_phase {
            hook(&record);
        }
        Ok(())
    }
}
