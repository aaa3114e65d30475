//! The scenario (performance_schema setting) in effect, as a small integer every command is
//! tagged with at its start, together with where the schedule is inside the scenario's slot:
//! switching to it, settling after the switch, or measuring. The controller publishes it;
//! until then it is `none`, always measured.
//!
//! The three facts live in one `AtomicU64`, so a command never sees the scenario of one slot
//! with the switch time of another (hot path: one relaxed load).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Instant;

pub(crate) type ScenarioId = u16;

/// Scenario of commands seen while no controller runs.
pub(crate) const NO_SCENARIO: ScenarioId = 0;
pub(crate) const NO_SCENARIO_NAME: &str = "none";
/// Scenario names are label values: a bounded set.
pub(crate) const MAX_SCENARIOS: usize = 64;

/// Where the schedule is within the current scenario's slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlotState {
    /// No schedule runs: everything counts, nothing is binned by time since a switch.
    Idle,
    /// The settings are being changed and verified: not measured, not binned.
    Switching,
    /// The scenario is in effect; the time right after the switch is left out of measurement
    /// but binned (the carryover profile).
    Settling,
    /// The measured window.
    Measuring,
}

impl SlotState {
    fn bits(self) -> u64 {
        match self {
            SlotState::Idle => 0,
            SlotState::Switching => 1,
            SlotState::Settling => 2,
            SlotState::Measuring => 3,
        }
    }

    fn from_bits(bits: u64) -> Self {
        match bits & 3 {
            1 => SlotState::Switching,
            2 => SlotState::Settling,
            3 => SlotState::Measuring,
            _ => SlotState::Idle,
        }
    }

    /// Commands started in this state count in the measured aggregates.
    pub fn measured(self) -> bool {
        matches!(self, SlotState::Idle | SlotState::Measuring)
    }

    /// Commands started in this state are binned by their time since the switch.
    pub fn binned(self) -> bool {
        matches!(self, SlotState::Settling | SlotState::Measuring)
    }
}

/// What a command is tagged with at its start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Current {
    pub id: ScenarioId,
    pub state: SlotState,
    /// When the scenario was found in effect, in ms since [`Scenarios::base`].
    pub switched_at_ms: u64,
}

#[derive(Debug, thiserror::Error)]
#[error("more than {MAX_SCENARIOS} scenarios: psprobe keeps scenario labels bounded")]
pub struct TooManyScenarios;

#[derive(Debug)]
pub struct Scenarios {
    /// id (16 bits) | state (2 bits) | switched_at_ms (46 bits).
    current: AtomicU64,
    base: Instant,
    names: RwLock<Vec<Arc<str>>>,
    /// psprobe's controller is restarting the upstream server on purpose (a slow phase):
    /// clients it cannot connect meanwhile are expected, not news.
    restarting: std::sync::atomic::AtomicBool,
}

impl Default for Scenarios {
    fn default() -> Self {
        Scenarios {
            current: AtomicU64::new(0),
            base: Instant::now(),
            names: RwLock::new(vec![Arc::from(NO_SCENARIO_NAME)]),
            restarting: std::sync::atomic::AtomicBool::new(false),
        }
    }
}

const SWITCHED_MASK: u64 = (1 << 46) - 1;

impl Scenarios {
    /// The scenario in effect now (one relaxed atomic load: hot path).
    pub fn current(&self) -> ScenarioId {
        self.now().id
    }

    /// The scenario, the slot state and the switch time (one relaxed atomic load: hot path).
    pub fn now(&self) -> Current {
        let v = self.current.load(Ordering::Relaxed);
        Current {
            id: (v & 0xFFFF) as ScenarioId,
            state: SlotState::from_bits(v >> 16),
            switched_at_ms: v >> 18,
        }
    }

    /// The origin of every `switched_at_ms` (when this registry was made).
    pub fn base(&self) -> Instant {
        self.base
    }

    /// Milliseconds from [`Scenarios::base`] to `at` (0 before it).
    pub fn ms_since_base(&self, at: Instant) -> u64 {
        u64::try_from(at.saturating_duration_since(self.base).as_millis()).unwrap_or(u64::MAX)
    }

    /// Sets the scenario with no schedule state (measured, not binned): `none` between runs,
    /// and the label a follower gives commands it cannot place in a slot.
    pub fn set_current(&self, id: ScenarioId) {
        self.publish(Current {
            id,
            state: SlotState::Idle,
            switched_at_ms: 0,
        });
    }

    /// Publishes `id` in slot state `state`, in effect since `in_effect` (the leader's switch,
    /// or when a follower read the leader's row).
    pub fn publish_slot(&self, id: ScenarioId, state: SlotState, in_effect: Instant) {
        self.publish(Current {
            id,
            state,
            switched_at_ms: self.ms_since_base(in_effect),
        });
    }

    /// psprobe's controller restarts the server on purpose (true) or has it back (false).
    pub fn set_restarting(&self, restarting: bool) {
        self.restarting.store(restarting, Ordering::Relaxed);
    }

    /// Whether psprobe's controller is restarting the server on purpose now.
    pub fn restarting(&self) -> bool {
        self.restarting.load(Ordering::Relaxed)
    }

    /// From now on, commands are not measured (a switch or restart is coming, or a follower's
    /// window ended); the scenario's label stays.
    pub fn stop_measuring(&self) {
        self.publish(Current {
            state: SlotState::Switching,
            ..self.now()
        });
    }

    pub fn publish(&self, c: Current) {
        let v =
            u64::from(c.id) | (c.state.bits() << 16) | ((c.switched_at_ms & SWITCHED_MASK) << 18);
        self.current.store(v, Ordering::Relaxed);
    }

    /// The id of a scenario name, registering it on first use.
    pub fn intern(&self, name: &str) -> Result<ScenarioId, TooManyScenarios> {
        let mut names = self.names.write().unwrap_or_else(|e| e.into_inner());
        if let Some(i) = names.iter().position(|n| &**n == name) {
            return Ok(i as ScenarioId);
        }
        if names.len() >= MAX_SCENARIOS {
            return Err(TooManyScenarios);
        }
        names.push(Arc::from(name));
        Ok((names.len() - 1) as ScenarioId)
    }

    pub fn name(&self, id: ScenarioId) -> Arc<str> {
        let names = self.names.read().unwrap_or_else(|e| e.into_inner());
        names
            .get(usize::from(id))
            .cloned()
            .unwrap_or_else(|| Arc::from(NO_SCENARIO_NAME))
    }

    /// Every registered scenario, by id.
    pub fn all(&self) -> Vec<(ScenarioId, Arc<str>)> {
        let names = self.names.read().unwrap_or_else(|e| e.into_inner());
        names
            .iter()
            .enumerate()
            .map(|(i, n)| (i as ScenarioId, Arc::clone(n)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intern_is_stable_and_bounded() {
        let s = Scenarios::default();
        assert_eq!(s.current(), NO_SCENARIO);
        assert_eq!(&*s.name(NO_SCENARIO), "none");
        let a = s.intern("pfsoff").unwrap();
        assert_eq!(s.intern("pfsoff").unwrap(), a);
        s.set_current(a);
        assert_eq!(s.current(), a);
        for i in 0..MAX_SCENARIOS - 2 {
            s.intern(&format!("s{i}")).unwrap();
        }
        assert!(s.intern("one-too-many").is_err());
        assert_eq!(s.all().len(), MAX_SCENARIOS);
    }

    #[test]
    fn state_round_trips_in_one_word() {
        let s = Scenarios::default();
        assert_eq!(s.now().state, SlotState::Idle);
        assert!(s.now().state.measured() && !s.now().state.binned());
        for state in [
            SlotState::Switching,
            SlotState::Settling,
            SlotState::Measuring,
        ] {
            let c = Current {
                id: 63,
                state,
                switched_at_ms: SWITCHED_MASK - 7,
            };
            s.publish(c);
            assert_eq!(s.now(), c);
        }
        assert!(!SlotState::Switching.measured() && !SlotState::Switching.binned());
        assert!(!SlotState::Settling.measured() && SlotState::Settling.binned());
        assert!(SlotState::Measuring.measured() && SlotState::Measuring.binned());
        s.set_current(2);
        assert_eq!(s.now().state, SlotState::Idle);
        assert_eq!(s.current(), 2);
    }
}
