//! What a scheduled run is given: every setting of the controller, validated once by
//! [`super::args`] (flags and the config file), and what follows from them (which scenarios
//! switch at runtime and which through restarts, the timeline's configuration).
//!
//! Must not: read flags or files (that is `args`), or talk to a server.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use super::attribution::AttributionPlan;
use super::duet::{DuetSide, Side};
use super::timeline::TimelineConfig;
use crate::controller::client::dsn::ControllerDsn;
use crate::controller::client::server_cpu::PidSource;
use crate::controller::error::Result;
use crate::controller::model::catalog::Catalog;
use crate::controller::model::setup_tables::SetupState;
use crate::phase_log::PhaseRecord;

/// Everything the controller runs with, validated by the config layer.
#[derive(Clone)]
pub(crate) struct ControllerSettings {
    pub dsn: ControllerDsn,
    pub catalog: Catalog,
    pub scenarios: Vec<String>,
    /// One slot of a scenario switched at runtime: switch, settle, measure (the first one,
    /// when `phase_auto`).
    pub phase: Duration,
    /// The slot is lengthened as the run goes when switches take more than a fifth of it
    /// (`--phase` not given).
    pub phase_auto: bool,
    /// Fixed settle time; `None`: chosen from the carryover profile as the run goes.
    pub settle: Option<Duration>,
    /// Target length of a segment of fast slots (the unit the analysis pairs).
    pub segment: Duration,
    /// Settle time after a restart (the first one, when chosen as the run goes).
    pub restart_settle: Duration,
    /// The settle time after a restart is chosen from the restart profile as the run goes.
    pub restart_settle_auto: bool,
    /// One phase of a scenario entered through a restart: restart settle + measured window.
    pub slow_phase: Duration,
    /// Slow blocks (`None`: until the run ends).
    pub slow_blocks: Option<u64>,
    /// The runtime scenario the restart scenarios are compared with (in the slow blocks too).
    pub slow_reference: Option<String>,
    /// Fast time between slow blocks when the run has no set length.
    pub slow_every: Duration,
    pub blocks: Option<u64>,
    pub duration: Option<Duration>,
    /// Stop once every fast headline interval is within this many percentage points.
    pub target_halfwidth: Option<f64>,
    pub seed: u64,
    pub state_file: PathBuf,
    pub phase_log: PathBuf,
    pub restart_cmd: Option<String>,
    pub restart_timeout: Duration,
    /// How long a stop (SIGTERM, SIGINT) may spend restoring the settings before psprobe
    /// exits with the command that finishes the restore.
    pub stop_timeout: Duration,
    /// The `--config` file (named in the commands psprobe suggests).
    pub config_path: Option<PathBuf>,
    pub upstream: String,
    /// Name this psprobe gives itself in `psprobe.phase.leader`.
    pub identity: String,
    /// Called with each segment's records once they are written (live estimates, admin).
    pub on_phase: Option<PhaseHook>,
    /// mysqld's pid on this host, to record its CPU time per slot.
    pub mysqld_pid: Option<PidSource>,
    /// `--attribute`: the groups to measure together in a factorial design (then `scenarios`
    /// are the design's points, once fitted to the server).
    pub attribution: Option<AttributionPlan>,
    /// One side of a duet run (every scenario entered by restart, at the same moments as the
    /// partner's server, the roles mirrored); `None`: a run of its own.
    pub duet: Option<DuetSide>,
}

/// Receives each segment's records (one per scenario) once they are written.
pub(crate) type PhaseHook = Arc<dyn Fn(&[PhaseRecord]) + Send + Sync>;

/// Settle time before the carryover profile has chosen one: a quarter of the slot, at most
/// 250 ms.
pub(crate) fn initial_settle(phase: Duration) -> Duration {
    (phase / 4).min(Duration::from_millis(250))
}

impl ControllerSettings {
    /// Fits `--attribute`'s plan to the server's rows (`attribution::fit`): the run's
    /// scenarios become the design's, one replicate per segment. What was left out, for the
    /// log (nothing without a plan).
    pub(crate) fn fit_attribution(&mut self, server: &SetupState) -> Result<Vec<String>> {
        let Some(plan) = self.attribution.as_mut() else {
            return Ok(Vec::new());
        };
        let fitted = super::attribution::fit(plan, &mut self.catalog, server)?;
        self.scenarios = fitted.scenarios;
        self.segment = self.phase;
        Ok(fitted.notes)
    }

    /// The scheduled scenarios switched at runtime (indices), in the order given (none in a
    /// duet: there every phase is entered by restart, at the partner's moment).
    pub(crate) fn fast_scenarios(&self) -> Vec<usize> {
        if self.duet.is_some() {
            return Vec::new();
        }
        (0..self.scenarios.len())
            .filter(|&i| {
                self.catalog
                    .get(&self.scenarios[i])
                    .is_ok_and(|s| !s.requires_restart())
            })
            .collect()
    }

    /// The restart scenarios and their reference (indices); empty when nothing needs a restart.
    /// In a duet every scenario, the reference (or the first) first.
    pub(crate) fn slow_scenarios(&self) -> Vec<usize> {
        if self.duet.is_some() {
            let reference = self
                .slow_reference
                .as_ref()
                .and_then(|r| self.scenarios.iter().position(|s| s == r))
                .unwrap_or(0);
            return std::iter::once(reference)
                .chain((0..self.scenarios.len()).filter(|&i| i != reference))
                .collect();
        }
        let restart: Vec<usize> = (0..self.scenarios.len())
            .filter(|&i| {
                self.catalog
                    .get(&self.scenarios[i])
                    .is_ok_and(|s| s.requires_restart())
            })
            .collect();
        if restart.is_empty() {
            return restart;
        }
        let reference = self
            .slow_reference
            .as_ref()
            .and_then(|r| self.scenarios.iter().position(|s| s == r));
        reference.into_iter().chain(restart).collect()
    }

    pub(crate) fn timeline(&self) -> TimelineConfig {
        TimelineConfig {
            fast: self.fast_scenarios(),
            slow: self.slow_scenarios(),
            slot: self.phase,
            segment: self.segment,
            slow_phase: self.slow_phase,
            slow_blocks: self.slow_blocks,
            blocks: self.blocks,
            duration: self.duration,
            slow_every: self.slow_every,
            seed: self.seed,
            units: self
                .attribution
                .as_ref()
                .map(|a| a.units.clone())
                .unwrap_or_default(),
            mirror: self.duet.as_ref().is_some_and(|d| d.side == Side::B),
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Two runtime scenarios (nothing instrumented, everything on) in slots of 40 ms, one
    /// block a segment, three blocks; state and phase log under `dir`.
    pub(crate) fn settings(dir: &std::path::Path) -> ControllerSettings {
        ControllerSettings {
            dsn: ControllerDsn::parse("mysql://psprobe:pw@127.0.0.1:3306/", "the test").unwrap(),
            catalog: Catalog::builtin(),
            scenarios: vec!["pfson_conoff_insoff".into(), "pfson_conon_inson".into()],
            phase: Duration::from_millis(40),
            phase_auto: false,
            settle: Some(Duration::from_millis(5)),
            segment: Duration::from_millis(80),
            restart_settle: Duration::from_millis(5),
            restart_settle_auto: false,
            slow_phase: Duration::from_millis(40),
            slow_blocks: Some(1),
            slow_reference: None,
            slow_every: Duration::from_secs(120),
            blocks: Some(3),
            duration: None,
            target_halfwidth: None,
            seed: 7,
            state_file: dir.join("state.json"),
            phase_log: dir.join("phases.jsonl"),
            restart_cmd: None,
            restart_timeout: Duration::from_secs(5),
            stop_timeout: Duration::from_secs(5),
            config_path: None,
            upstream: "127.0.0.1:3306".into(),
            identity: "psprobe-test".into(),
            on_phase: None,
            mysqld_pid: None,
            attribution: None,
            duet: None,
        }
    }
}
