//! The follower against a scripted server: it follows the leader's slots into its own phase
//! log, measuring only inside each slot's window; it ends when the leader's run is done or it
//! is stopped; it takes over when the lock frees; it ends a stalled leader's connections (and
//! says once when it may not); a failed read goes back to the runner. The runner's answer to
//! each ending is tested in `role.rs`; the live paths in tests/controller_*.rs and
//! tests/network_faults.

use std::time::{Duration, Instant};

use tokio::sync::watch;

use super::*;
use crate::controller::client::heartbeat::{Beat, Holder};
use crate::controller::error::ControllerError;
use crate::observe::ControllerHandle;
use crate::phase_log::{read_log, PhaseLog, PhaseRecord};

/// A fast slot: 20 ms settle, 250 ms measured (the follower polls every quarter slot once it
/// has seen one).
fn slot(scenario: &str, block: u64, phase: u64) -> PhaseRow {
    PhaseRow {
        scenario: scenario.into(),
        block,
        phase,
        state: "settling".into(),
        leader: "leader:1".into(),
        schedule: FAST.into(),
        settle_ms: 20,
        measure_ms: 250,
    }
}

fn done() -> PhaseRow {
    PhaseRow {
        scenario: "none".into(),
        state: "done".into(),
        leader: "leader:1".into(),
        ..PhaseRow::default()
    }
}

/// What the scripted server answers, by time since the follower started, and what it was
/// asked.
struct Script {
    start: Instant,
    /// The leader's rows: each is what `read` answers from its time on.
    rows: Vec<(u64, PhaseRow)>,
    /// From this many ms on the lock is free (the leader is gone).
    lock_free_at: Option<u64>,
    /// From this many ms on the holder's beat is stale.
    stalled_at: Option<u64>,
    kill_refused: bool,
    /// From this many ms on every read fails (the link is cut).
    cut_at: Option<u64>,
    kills: usize,
}

impl Script {
    fn new(rows: Vec<(u64, PhaseRow)>) -> Self {
        Script {
            start: Instant::now(),
            rows,
            lock_free_at: None,
            stalled_at: None,
            kill_refused: false,
            cut_at: None,
            kills: 0,
        }
    }

    fn now_ms(&self) -> u64 {
        self.start.elapsed().as_millis() as u64
    }

    fn past(&self, at: Option<u64>) -> bool {
        at.is_some_and(|at| self.now_ms() >= at)
    }
}

fn cut() -> ControllerError {
    ControllerError::Connection {
        target: "psprobe@127.0.0.1:3306".into(),
        action: "read the phase".into(),
        reason: "connection reset".into(),
    }
}

impl FollowServer for Script {
    async fn ping(&mut self) -> Result<Duration> {
        Ok(Duration::from_millis(1))
    }

    async fn poll_lock(&mut self) -> Result<LockPoll> {
        if self.past(self.lock_free_at) {
            return Ok(LockPoll::Acquired);
        }
        let age = if self.past(self.stalled_at) {
            Duration::from_secs(30)
        } else {
            Duration::from_millis(100)
        };
        Ok(LockPoll::Held(Some(Holder {
            connection: 7,
            beat: Some(Beat {
                leader: "leader:1".into(),
                conns: vec![7, 8],
                age,
            }),
        })))
    }

    async fn read(&mut self) -> Result<Option<PhaseRow>> {
        if self.past(self.cut_at) {
            return Err(cut());
        }
        let now = self.now_ms();
        Ok(self
            .rows
            .iter()
            .rev()
            .find(|(at, _)| *at <= now)
            .map(|(_, row)| row.clone()))
    }

    async fn kill(&mut self, connections: &[u64]) -> Result<()> {
        assert_eq!(connections, [7, 8], "the holder's connections");
        self.kills += 1;
        if self.kill_refused {
            return Err(ControllerError::Sql {
                target: "psprobe@127.0.0.1:3306".into(),
                action: "end the stalled leader's connections".into(),
                code: 1095,
                message: "You are not owner of thread 7".into(),
            });
        }
        Ok(())
    }
}

/// How a scripted follow ended and what it wrote.
struct Followed {
    outcome: Result<Option<Resume>>,
    phases: Vec<PhaseRecord>,
    kill_refused: bool,
}

fn follow(script: &mut Script, stop_at: Option<u64>) -> Followed {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("phases.jsonl");
    let observer = ControllerHandle::for_tests();
    let mut tracker = PhaseTracker::new(observer.clone(), None, None);
    let mut log = PhaseLog::open(&path).unwrap();
    let (tx, mut stop) = watch::channel(false);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let (outcome, kill_refused) = rt.block_on(async {
        script.start = Instant::now();
        let stopper = async {
            match stop_at {
                Some(ms) => {
                    tokio::time::sleep(Duration::from_millis(ms)).await;
                    let _ = tx.send(true);
                    std::future::pending::<()>().await;
                }
                None => std::future::pending::<()>().await,
            }
        };
        let mut follower = Follower {
            lead: script,
            observer: &observer,
            tracker: &mut tracker,
            log: &mut log,
            stop: &mut stop,
            kill_refused: false,
        };
        let outcome = tokio::select! {
            outcome = follower.run() => outcome,
            () = stopper => unreachable!("the stopper never ends first"),
        };
        (outcome, follower.kill_refused)
    });
    Followed {
        outcome,
        phases: read_log(&path).unwrap().phases,
        kill_refused,
    }
}

/// Four slots in two segments (A, B, A, B: 300 ms apart), then the leader's "done". The
/// follower's first poll (at 250 ms) finds the first slot under way: it learns the slot length
/// from it (and polls every quarter slot from then on) but cannot measure it safely.
fn two_segments() -> Vec<(u64, PhaseRow)> {
    vec![
        (200, slot("a", 0, 0)),
        (500, slot("b", 0, 1)),
        (800, slot("a", 1, 2)),
        (1100, slot("b", 1, 3)),
        (1400, done()),
    ]
}

#[test]
fn follows_the_leaders_slots_into_its_own_log_until_the_run_is_done() {
    let mut script = Script::new(two_segments());
    let f = follow(&mut script, None);
    assert!(
        matches!(f.outcome, Ok(None)),
        "done ends following: {:?}",
        f.outcome.err()
    );
    let seen: Vec<(u64, &str)> = f
        .phases
        .iter()
        .map(|p| (p.block, p.scenario.as_str()))
        .collect();
    // Every slot after the first (which a loaded machine may catch early enough too).
    let all = [(0, "a"), (0, "b"), (1, "a"), (1, "b")];
    assert!(seen.iter().all(|s| all.contains(s)), "{seen:?}");
    for s in &all[1..] {
        assert!(seen.contains(s), "{s:?} measured: {seen:?}");
    }
    for p in &f.phases {
        assert_eq!(p.schedule(), FAST);
        assert!(p.verified && !p.restarted);
        // Measured only inside the leader's 250 ms window, less the poll and the margin.
        let measured = p.measured_ms();
        // (Less the poll and margin; a late wake-up on a busy machine adds to it.)
        assert!(measured > 50 && measured < 400, "{measured} ms in {p:?}");
        assert!(
            p.measure_from_ms + 1 >= p.switched_at_ms + 20,
            "after the settle (less a millisecond of rounding): {p:?}"
        );
    }
}

#[test]
fn takes_over_when_the_lock_frees_with_the_last_row_seen() {
    let mut script = Script::new(two_segments());
    script.lock_free_at = Some(750);
    let f = follow(&mut script, None);
    match f.outcome {
        Ok(Some(Some(last))) => assert_eq!((last.scenario.as_str(), last.phase), ("b", 1)),
        other => panic!("expected a takeover after slot b: {other:?}"),
    }
    // The segment in progress is written with what was measured of it.
    let seen: Vec<&str> = f.phases.iter().map(|p| p.scenario.as_str()).collect();
    assert_eq!(seen, ["b"], "{:?}", f.phases);
}

#[test]
fn a_stalled_leader_has_its_connections_ended() {
    let mut script = Script::new(two_segments());
    script.stalled_at = Some(400);
    let f = follow(&mut script, None);
    assert!(
        script.kills >= 1,
        "the stalled holder's connections were ended"
    );
    assert!(!f.kill_refused);

    // Without the right to KILL: said once (the flag), tried on, never an error.
    let mut script = Script::new(two_segments());
    script.stalled_at = Some(400);
    script.kill_refused = true;
    let f = follow(&mut script, None);
    assert!(f.kill_refused, "the refusal is noted (and warned once)");
    assert!(script.kills >= 2, "{} kills", script.kills);
    assert!(matches!(f.outcome, Ok(None)), "{:?}", f.outcome.err());
}

#[test]
fn a_cut_link_goes_back_to_the_runner() {
    let mut script = Script::new(two_segments());
    script.cut_at = Some(700);
    let f = follow(&mut script, None);
    assert!(
        matches!(f.outcome, Err(ControllerError::Connection { .. })),
        "the runner rejoins on a connection error"
    );
}

#[test]
fn a_stop_ends_following_and_writes_the_segment_in_progress() {
    let mut rows = two_segments();
    rows.pop(); // the leader never finishes
    let mut script = Script::new(rows);
    let f = follow(&mut script, Some(1050));
    assert!(matches!(f.outcome, Ok(None)), "{:?}", f.outcome.err());
    let blocks: Vec<u64> = f.phases.iter().map(|p| p.block).collect();
    assert_eq!(
        blocks,
        [0, 1],
        "segment 0 whole, segment 1 as far as it went"
    );
}
