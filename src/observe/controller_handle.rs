//! What the controller may touch of the observation path: the scenario slot state (which
//! scenario the traffic is measured under now), the digest snapshots a phase is cut from, the
//! statement counts it waits on, and the controller's own metrics. Not the connection table,
//! not the fingerprint options, not the proxy's metrics: the controller decides when to
//! measure, never how a command is recorded.

use std::sync::Arc;

use crate::stats::scenario::{ScenarioId, Scenarios};
use crate::stats::store::DigestStore;

use super::Observer;

/// The controller's narrow view of the [`Observer`] (cloning shares it).
#[derive(Clone)]
pub(crate) struct ControllerHandle(Arc<Observer>);

impl ControllerHandle {
    pub(crate) fn new(observer: Arc<Observer>) -> Self {
        ControllerHandle(observer)
    }

    /// The scenario slot state the recorders read on every command.
    pub(crate) fn scenarios(&self) -> &Arc<Scenarios> {
        &self.0.scenarios
    }

    /// Snapshots of the digest statistics (a phase is the difference of two).
    pub(crate) fn digests(&self) -> &DigestStore {
        &self.0.digests
    }

    /// Statements that finished under `scenario` so far (a phase waits for traffic).
    pub(crate) fn statements_finished(&self, scenario: ScenarioId) -> u64 {
        self.0.metrics.statements_finished(scenario)
    }

    /// psprobe_controller_leader: whether this psprobe leads the schedule now.
    pub(crate) fn set_leading(&self, leading: bool) {
        self.0.metrics.controller_leader.set(i64::from(leading));
    }

    /// psprobe_controller_schedule_active: whether a schedule runs (leading or following).
    pub(crate) fn set_schedule_active(&self, active: bool) {
        self.0
            .metrics
            .controller_schedule_active
            .set(i64::from(active));
    }

    pub(crate) fn restore_failed(&self) {
        self.0.metrics.controller_restore_failures.inc();
    }

    /// A row someone else set, seen by the controller: for the admin's `setting_changes`
    /// table and psprobe_controller_settings_claimed_total.
    pub(crate) fn setting_claimed(
        &self,
        setting: String,
        value: String,
        psprobe_left: String,
        origin: &str,
        seen_at_ms: u64,
    ) {
        self.0.metrics.controller_settings_claimed.inc();
        self.0.setting_changes.push(super::SettingChange {
            setting,
            value,
            psprobe_left,
            origin: origin.into(),
            seen_at_ms,
        });
    }

    pub(crate) fn lead_lost(&self) {
        self.0.metrics.controller_lead_lost.inc();
    }

    /// A phase (of `slots` slots) was written to the phase log; `verified` false when its
    /// scenario's settings did not hold and it was left out.
    pub(crate) fn phase_written(&self, scenario: &str, slots: u64, verified: bool) {
        self.0.metrics.phases(scenario).inc_by(slots);
        if !verified {
            self.0.metrics.controller_verification_failures.inc();
        }
    }
}

#[cfg(test)]
impl ControllerHandle {
    /// A handle on a fresh observer (100 digests at most) for unit tests.
    pub(crate) fn for_tests() -> ControllerHandle {
        ControllerHandle::new(Arc::new(Observer::for_tests()))
    }
}
