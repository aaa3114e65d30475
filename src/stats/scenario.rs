//! The scenario (performance_schema setting) in effect, as a small integer every command is
//! tagged with at its start. The controller publishes it; until then it is `none`.

use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::{Arc, RwLock};

pub type ScenarioId = u16;

/// Scenario of commands seen while no controller runs.
pub const NO_SCENARIO: ScenarioId = 0;
pub const NO_SCENARIO_NAME: &str = "none";
/// Scenario names are label values: a bounded set.
pub const MAX_SCENARIOS: usize = 64;

#[derive(Debug, thiserror::Error)]
#[error("more than {MAX_SCENARIOS} scenarios: psprobe keeps scenario labels bounded")]
pub struct TooManyScenarios;

#[derive(Debug)]
pub struct Scenarios {
    current: AtomicU16,
    names: RwLock<Vec<Arc<str>>>,
}

impl Default for Scenarios {
    fn default() -> Self {
        Scenarios {
            current: AtomicU16::new(NO_SCENARIO),
            names: RwLock::new(vec![Arc::from(NO_SCENARIO_NAME)]),
        }
    }
}

impl Scenarios {
    /// The scenario in effect now (one relaxed atomic load: hot path).
    pub fn current(&self) -> ScenarioId {
        self.current.load(Ordering::Relaxed)
    }

    pub fn set_current(&self, id: ScenarioId) {
        self.current.store(id, Ordering::Relaxed);
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
}
