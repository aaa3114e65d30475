//! The leader's slot loop against a scripted server: every way a slot can end (completes,
//! apply fails, rows do not hold, restart hook fails or times out, the lead is lost, stopped
//! mid-settle), without a server. The roles' answer to each ending (restore, rejoin, follow) is
//! tested in `role.rs`; the live paths in tests/controller_*.rs.

use std::time::Duration;

use tokio::sync::watch;

use super::*;
use crate::controller::client::fast_switch::Switched;
use crate::controller::client::restart::RestartTiming;
use crate::controller::error::ControllerError;
use crate::controller::model::scenario::Scenario;
use crate::controller::model::setup_tables::Mismatch;
use crate::controller::schedule::tuning::Tuning;
use crate::observe::ControllerHandle;
use crate::phase_log::{read_log, PhaseLog, PhaseRecord};

const BASE: &str = "pfson_conoff_insoff";
const ON: &str = "pfson_conon_inson";

/// What the scripted server does, and what it was asked.
#[derive(Default)]
struct Script {
    /// The n-th switch (from 1) fails as an apply that the server refused.
    fail_switch: Option<usize>,
    /// Before the n-th switch the lead is found lost.
    lose_lead_before_switch: Option<usize>,
    /// The n-th switch finds the previous scenario's rows changed.
    previous_changed_at: Option<usize>,
    /// What a segment-end check of the rows finds (`None`: held).
    confirm: Option<bool>,
    /// The restart hook fails with this reason (every time, or only the n-th restart).
    restart_fails: Option<&'static str>,
    restart_fails_only: Option<usize>,
    restarts: usize,
    /// How long each restart says it took to the first query.
    restart_took: Option<Duration>,
    /// After the n-th switch a stop is requested (the slot is then settling).
    stop_after_switch: Option<(usize, watch::Sender<bool>)>,
    /// Calls, in order: `switch NAME`, `confirm`, `publish STATE`, `restart ON|OFF`, `verify`.
    calls: Vec<String>,
    switches: usize,
    ps: Option<bool>,
    /// Each switch takes this long (a loaded server's switches queue behind its clients).
    switch_takes: Option<Duration>,
}

impl LeadServer for &mut Script {
    async fn ensure_lead(&mut self) -> Result<()> {
        if self.lose_lead_before_switch == Some(self.switches + 1) {
            return Err(lost());
        }
        Ok(())
    }

    async fn switch(
        &mut self,
        scenario: &Scenario,
        _publish: Option<&PhaseRow>,
    ) -> Result<Switched> {
        self.switches += 1;
        self.calls.push(format!("switch {}", scenario.name));
        if let Some(took) = self.switch_takes {
            tokio::time::sleep(took).await;
        }
        if self.fail_switch == Some(self.switches) {
            return Err(ControllerError::Sql {
                target: "psprobe@127.0.0.1:3306".into(),
                action: "switch scenario".into(),
                code: 1142,
                message: "UPDATE command denied".into(),
            });
        }
        if let Some((n, stop)) = &self.stop_after_switch {
            if *n == self.switches {
                let _ = stop.send(true);
            }
        }
        let changed = self.previous_changed_at == Some(self.switches);
        Ok(Switched {
            statements: 3,
            full: self.switches <= 2,
            previous_held: (self.switches > 1).then_some(!changed),
            claims: Vec::new(),
        })
    }

    async fn confirm(&mut self) -> Result<Option<bool>> {
        self.calls.push("confirm".into());
        Ok(Some(self.confirm.unwrap_or(true)))
    }

    async fn publish(&mut self, row: &PhaseRow) -> Result<()> {
        self.calls.push(format!("publish {}", row.state));
        Ok(())
    }

    async fn restart(&mut self, into: &ServerMode, _opts: &str) -> Result<RestartTiming> {
        let ps = *into != ServerMode::Off;
        self.calls
            .push(format!("restart {}", if ps { "ON" } else { "OFF" }));
        self.restarts += 1;
        if let Some(reason) = self.restart_fails {
            if self.restart_fails_only.is_none_or(|n| n == self.restarts) {
                return Err(ControllerError::Restart {
                    reason: reason.into(),
                });
            }
        }
        self.ps = Some(ps);
        Ok(RestartTiming {
            first_query: self.restart_took.unwrap_or_default(),
            ..RestartTiming::default()
        })
    }

    async fn answers(&mut self) -> bool {
        true
    }

    fn performance_schema(&self) -> Option<bool> {
        self.ps
    }

    async fn verify(&mut self, _scenario: &Scenario) -> Result<Vec<Mismatch>> {
        self.calls.push("verify".into());
        Ok(Vec::new())
    }

    fn consumers(&self) -> Vec<String> {
        vec!["events_statements_current".into()]
    }
}

fn lost() -> ControllerError {
    ControllerError::LostLead {
        target: "psprobe@127.0.0.1:3306".into(),
        by: "other:2".into(),
        stale_after: Duration::from_secs(10),
    }
}

/// Two runtime scenarios in slots of 40 ms, one block a segment, three blocks; with
/// `slow`, pfsoff too, in one slow block of 40 ms phases.
fn settings(dir: &std::path::Path, slow: bool) -> ControllerSettings {
    let mut s = crate::controller::schedule::settings::tests::settings(dir);
    assert_eq!(s.scenarios, [BASE, ON]);
    if slow {
        s.scenarios.push("pfsoff".into());
        s.slow_reference = Some(BASE.to_string());
        s.restart_cmd = Some("true".to_string());
    }
    s
}

/// How a scripted run ended and what it wrote.
struct Ran {
    outcome: Result<bool>,
    phases: Vec<PhaseRecord>,
    mode: ServerMode,
}

fn run(script: &mut Script, slow: bool, stop: watch::Receiver<bool>) -> Ran {
    run_with(script, slow, stop, |_| {})
}

fn run_with(
    script: &mut Script,
    slow: bool,
    stop: watch::Receiver<bool>,
    tweak: impl FnOnce(&mut ControllerSettings),
) -> Ran {
    let dir = tempfile::tempdir().unwrap();
    let mut s = settings(dir.path(), slow);
    tweak(&mut s);
    let observer = ControllerHandle::for_tests();
    let ids: Vec<ScenarioId> = s
        .scenarios
        .iter()
        .map(|n| observer.scenarios().intern(n).unwrap())
        .collect();
    let mut tracker = PhaseTracker::new(observer.clone(), None, None);
    let mut log = PhaseLog::open(&s.phase_log).unwrap();
    let mut stop = stop;
    let mut mode = ServerMode::Default;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let outcome = rt.block_on(async {
        let mut tuning = Tuning::new(&s);
        tuning.switch_estimate = Duration::from_millis(1);
        let mut leader = Leader::new(
            &s,
            script,
            Out {
                ids: &ids,
                observer: &observer,
                tracker: &mut tracker,
                log: &mut log,
            },
            &mut stop,
            &mut mode,
            (tuning, 0),
        );
        leader.run(Timeline::new(s.timeline(), 0, 0)).await
    });
    let phases = read_log(&s.phase_log).unwrap().phases;
    Ran {
        outcome,
        phases,
        mode,
    }
}

fn no_stop() -> watch::Receiver<bool> {
    let (tx, rx) = watch::channel(false);
    std::mem::forget(tx); // never stopped
    rx
}

fn segments(phases: &[PhaseRecord]) -> Vec<u64> {
    let mut blocks: Vec<u64> = phases.iter().map(|p| p.block).collect();
    blocks.dedup();
    blocks
}

#[test]
fn a_schedule_that_completes_writes_every_segment_verified() {
    let mut script = Script::default();
    let ran = run(&mut script, false, no_stop());
    assert!(matches!(ran.outcome, Ok(true)), "{:?}", ran.outcome.err());
    // Three blocks of two slots, one block a segment: six switches, a check at each end.
    assert_eq!(script.switches, 6);
    assert_eq!(
        script.calls.iter().filter(|c| *c == "confirm").count(),
        3,
        "{:?}",
        script.calls
    );
    assert_eq!(ran.phases.len(), 6, "a record per scenario and segment");
    assert_eq!(segments(&ran.phases), [0, 1, 2]);
    assert!(ran.phases.iter().all(|p| p.verified && p.slots == Some(1)));
    assert_eq!(ran.mode, ServerMode::Default);
}

#[test]
fn an_apply_that_fails_ends_the_lead_and_keeps_only_whole_segments() {
    // The fourth switch is the second slot of the second segment.
    let mut script = Script {
        fail_switch: Some(4),
        ..Script::default()
    };
    let ran = run(&mut script, false, no_stop());
    match &ran.outcome {
        Err(ControllerError::Sql { code: 1142, .. }) => {}
        other => panic!("the apply error ends the lead: {other:?}"),
    }
    assert_eq!(script.switches, 4, "nothing is switched after the failure");
    // The roles then restore (role.rs: LeadEnd::Failed -> Restore(idle)). The first segment
    // is kept whole; the second, cut short with one scenario's slot only, is not written.
    assert_eq!(segments(&ran.phases), [0]);
    assert_eq!(ran.phases.len(), 2);
}

#[test]
fn rows_that_do_not_hold_leave_their_segment_unverified() {
    // Segment ends find the rows changed, and so does the switch of slot 4 (its previous
    // scenario is slot 3's, in segment 1).
    let mut script = Script {
        confirm: Some(false),
        previous_changed_at: Some(4),
        ..Script::default()
    };
    let ran = run(&mut script, false, no_stop());
    assert!(matches!(ran.outcome, Ok(true)), "{:?}", ran.outcome.err());
    // The scenario in effect at each segment's end is unverified; in segment 1 both are.
    for block in 0..3 {
        let unverified = ran
            .phases
            .iter()
            .filter(|p| p.block == block && !p.verified)
            .count();
        let want = if block == 1 { 2 } else { 1 };
        assert_eq!(unverified, want, "segment {block}: {:?}", ran.phases);
    }
}

#[test]
fn a_restart_that_fails_leaves_its_phase_out_named_and_the_schedule_goes_on() {
    // The first restart (into the slow pair's first phase) fails once.
    let mut script = Script {
        restart_fails: Some("exited with status 1"),
        restart_fails_only: Some(1),
        ..Script::default()
    };
    let ran = run(&mut script, true, no_stop());
    assert!(matches!(ran.outcome, Ok(true)), "{:?}", ran.outcome.err());
    let failed: Vec<&PhaseRecord> = ran.phases.iter().filter(|p| p.failure.is_some()).collect();
    assert_eq!(failed.len(), 1, "{:?}", ran.phases);
    let f = failed[0];
    assert!(f
        .failure
        .as_deref()
        .unwrap()
        .contains("exited with status 1"));
    assert!(!f.verified && f.measured_ms() == 0 && f.restarted);
    // The other phase of the pair still ran and measured.
    assert!(ran
        .phases
        .iter()
        .any(|p| p.schedule.as_deref() == Some("slow") && p.failure.is_none() && p.verified));
}

#[test]
fn restarts_that_keep_failing_or_timing_out_end_the_lead() {
    for reason in ["exited with status 1", "did not finish within 5s (killed)"] {
        let mut script = Script {
            restart_fails: Some(reason),
            ..Script::default()
        };
        let ran = run(&mut script, true, no_stop());
        match &ran.outcome {
            Err(ControllerError::Restart { reason: r }) => {
                assert!(
                    r.contains("3 restarts in a row failed") && r.contains(reason),
                    "{r}"
                )
            }
            other => panic!("three failures end the lead: {other:?}"),
        }
        let restarts = script.calls.iter().filter(|c| c.starts_with("restart"));
        assert_eq!(restarts.count(), 3, "{:?}", script.calls);
        // Each failed phase is written, named, measuring nothing; the roles restore from here
        // (restarting with the server's own options first: the mode says it is not known).
        assert!(ran
            .phases
            .iter()
            .filter(|p| p.schedule.as_deref() == Some("slow"))
            .all(|p| p.failure.is_some() && p.measured_ms() == 0));
        assert_eq!(ran.mode, ServerMode::Unknown);
    }
}

#[test]
fn a_slow_block_restarts_into_each_scenario_and_back() {
    let mut script = Script::default();
    let ran = run(&mut script, true, no_stop());
    assert!(matches!(ran.outcome, Ok(true)), "{:?}", ran.outcome.err());
    let restarts: Vec<&String> = script
        .calls
        .iter()
        .filter(|c| c.starts_with("restart"))
        .collect();
    // The reference and pfsoff, each entered through a restart; then back to the server's own
    // options before the next fast slot, if one came after the slow block.
    assert!(
        restarts.contains(&&"restart OFF".to_string()),
        "{restarts:?}"
    );
    assert!(restarts.len() >= 2, "{restarts:?}");
    let slow: Vec<&PhaseRecord> = ran
        .phases
        .iter()
        .filter(|p| p.schedule.as_deref() == Some("slow"))
        .collect();
    assert_eq!(slow.len(), 2, "{slow:?}");
    assert!(slow.iter().all(|p| p.restarted && p.verified));
}

#[test]
fn a_lost_lead_changes_nothing_more() {
    let mut script = Script {
        lose_lead_before_switch: Some(3),
        ..Script::default()
    };
    let ran = run(&mut script, false, no_stop());
    assert!(
        matches!(ran.outcome, Err(ControllerError::LostLead { .. })),
        "{:?}",
        ran.outcome
    );
    assert_eq!(script.switches, 2, "no switch once the lead is in doubt");
    // The roles rejoin from here (role.rs: LeadEnd::LostLead -> Rejoin(LostLead)): whoever
    // holds the lock then restores; this psprobe follows or leads on after the last
    // published slot.
    assert_eq!(segments(&ran.phases), [0]);
}

#[test]
fn a_stop_mid_settle_ends_the_lead_at_once_and_counts_the_slot_for_nothing() {
    let (tx, rx) = watch::channel(false);
    let mut script = Script {
        stop_after_switch: Some((3, tx)),
        ..Script::default()
    };
    let ran = run(&mut script, false, rx);
    assert!(matches!(ran.outcome, Ok(false)), "{:?}", ran.outcome.err());
    assert_eq!(script.switches, 3, "nothing switched after the stop");
    // Segment 0 whole; slot 3 (segment 1) was settling: nothing of it is written.
    assert_eq!(segments(&ran.phases), [0]);
    assert_eq!(ran.phases.len(), 2);
}

/// With --duration, a restart phase starts only if the last restart and a slow phase still fit
/// (two 90 s restarts used to run in a run given 60 s).
#[test]
fn a_restart_phase_that_no_longer_fits_the_duration_is_not_started() {
    let mut script = Script {
        restart_took: Some(Duration::from_secs(5)),
        ..Script::default()
    };
    let ran = run_with(&mut script, true, no_stop(), |s| {
        s.duration = Some(Duration::from_secs(2));
        s.blocks = None;
        s.slow_blocks = Some(3);
    });
    assert!(matches!(ran.outcome, Ok(true)), "{:?}", ran.outcome.err());
    let restarts = script.calls.iter().filter(|c| c.starts_with("restart"));
    assert_eq!(restarts.count(), 1, "{:?}", script.calls);
}

/// Switches longer than the slot (a loaded server) never leave a slot measuring nothing:
/// the slot is lengthened to measure at least half of what an instant switch would leave, so
/// every block holds every scenario, with `--phase` given too.
#[test]
fn a_switch_longer_than_its_slot_lengthens_the_slot_instead_of_losing_it() {
    let mut script = Script {
        switch_takes: Some(Duration::from_millis(150)),
        ..Script::default()
    };
    let ran = run_with(&mut script, false, no_stop(), |s| {
        s.phase = Duration::from_millis(100);
    });
    assert!(matches!(ran.outcome, Ok(true)), "{:?}", ran.outcome.err());
    assert!(!ran.phases.is_empty());
    for p in &ran.phases {
        assert_eq!(
            p.slot_ms,
            Some(100),
            "--phase keeps the planned length: {p:?}"
        );
        assert!(
            p.measured_ms.unwrap_or(0) > 0,
            "a slot measured nothing: {p:?}"
        );
    }
    let blocks: std::collections::BTreeSet<u64> = ran.phases.iter().map(|p| p.block).collect();
    for b in blocks {
        let n = ran.phases.iter().filter(|p| p.block == b).count();
        assert_eq!(n, 2, "block {b} holds both scenarios: {:?}", ran.phases);
    }
}

/// Switches that take 30 ms of a 100 ms slot (a busy server) lengthen the slots from the second
/// segment on, so that switching takes a fifth (at least 500 ms); the records say each
/// segment's slot length and the later slots measure most of their time. With --phase given
/// the slots stay as given.
#[test]
fn slow_switches_lengthen_the_slots_unless_phase_was_given() {
    let slot = |s: &mut ControllerSettings| s.phase = Duration::from_millis(100);
    let mut script = Script {
        switch_takes: Some(Duration::from_millis(30)),
        ..Script::default()
    };
    let ran = run_with(&mut script, false, no_stop(), |s| {
        slot(s);
        s.phase_auto = true;
    });
    assert!(matches!(ran.outcome, Ok(true)), "{:?}", ran.outcome.err());
    let slot_of = |block: u64| -> Vec<Option<u64>> {
        ran.phases
            .iter()
            .filter(|p| p.block == block)
            .map(|p| p.slot_ms)
            .collect()
    };
    assert_eq!(slot_of(0), [Some(100), Some(100)]);
    assert_eq!(slot_of(1), [Some(500), Some(500)]);
    assert_eq!(slot_of(2), [Some(500), Some(500)]);
    for p in ran.phases.iter().filter(|p| p.block > 0) {
        assert!(p.measured_ms.unwrap() >= 300, "{p:?}");
    }

    let mut fixed = Script {
        switch_takes: Some(Duration::from_millis(30)),
        ..Script::default()
    };
    let ran = run_with(&mut fixed, false, no_stop(), slot);
    assert_eq!(ran.phases.len(), 6);
    assert!(
        ran.phases.iter().all(|p| p.slot_ms == Some(100)),
        "{:?}",
        ran.phases
    );
}
