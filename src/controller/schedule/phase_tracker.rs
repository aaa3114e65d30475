//! Turns the schedule's slots into phase-log records, one per scenario and segment. A slot is
//! one scenario's turn (switch, settle, measured window); a segment is a few seconds of slots
//! (a fast schedule) or one slow block. Its records hold, per scenario, the aggregates of the
//! commands started in the scenario's measured windows (the difference of two snapshots of the
//! measured part of the digest store), the measured time, the server's CPU time in those
//! windows, what the switches cost, and the statements binned by time since the switch.

use std::time::{Duration, Instant};

use crate::observe::ControllerHandle;
use crate::stats::since_switch::{BINS, BIN_MS};
use crate::stats::{ScenarioId, StoreSnapshot};

use super::settings::PhaseHook;
use crate::clock::now_ms;
use crate::controller::client::server_cpu::{cpu_ms, PidSource};
use crate::controller::error::Result;
use crate::phase_log::{
    listed_digests, window_aggregates, BinRecord, PhaseLog, PhaseRecord, RestartRecord, SwitchCost,
    PHASE_LOG_VERSION,
};

/// One scenario's slots in the open segment.
struct Totals {
    name: String,
    id: ScenarioId,
    first_phase: u64,
    switched_at_ms: u64,
    from_ms: Option<u64>,
    to_ms: u64,
    measured_ms: u64,
    slots: u64,
    /// Server CPU ms in the measured windows; `None` once a window had no usable reading.
    cpu_ms: Option<u64>,
    switch: SwitchCost,
    settle_ms: u64,
    slot_ms: Option<u64>,
    restarted: bool,
    verified: bool,
    /// Slots whose post-switch time covered each bin.
    covered: [u64; BINS],
    /// How the restart into it went (a slow phase of the leader's).
    restart: Option<RestartRecord>,
    /// Why the phase is left out (its restart failed).
    failure: Option<String>,
}

impl Totals {
    fn new(name: &str, id: ScenarioId, phase: u64, switched_at_ms: u64) -> Self {
        Totals {
            name: name.to_string(),
            id,
            first_phase: phase,
            switched_at_ms,
            from_ms: None,
            to_ms: 0,
            measured_ms: 0,
            slots: 0,
            cpu_ms: Some(0),
            switch: SwitchCost::default(),
            settle_ms: 0,
            slot_ms: None,
            restarted: false,
            verified: true,
            covered: [0; BINS],
            restart: None,
            failure: None,
        }
    }
}

struct Segment {
    schedule: &'static str,
    number: u64,
    start: StoreSnapshot,
    totals: Vec<Totals>,
}

struct Window {
    from_ms: u64,
    from: Instant,
    /// (pid, CPU ms) of mysqld when the window opened.
    cpu: Option<(u32, u64)>,
}

struct Slot {
    /// Index in the segment's totals.
    index: usize,
    /// When the scenario was confirmed in effect.
    switched: Instant,
    window: Option<Window>,
}

/// A slot as the schedule reports it when its scenario is in effect.
pub(crate) struct SlotStart<'a> {
    pub scenario: &'a str,
    pub id: ScenarioId,
    /// Position of the slot in the run.
    pub phase: u64,
    /// Unix ms when the switch began.
    pub switched_at_ms: u64,
    /// When the scenario was confirmed in effect (the origin of the since-switch bins).
    pub in_effect: Instant,
    /// Apply + verify; `None` for a follower (it does not switch).
    pub switch: Option<(Duration, u64)>,
    pub settle: Duration,
    /// The fast slot's length (the leader's; `None` for a slow phase or a follower).
    pub slot: Option<Duration>,
    pub restarted: bool,
    pub verified: bool,
}

pub(crate) struct PhaseTracker {
    observer: ControllerHandle,
    on_segment: Option<PhaseHook>,
    mysqld_pid: Option<PidSource>,
    segment: Option<Segment>,
    slot: Option<Slot>,
}

impl PhaseTracker {
    pub(crate) fn new(
        observer: ControllerHandle,
        on_segment: Option<PhaseHook>,
        mysqld_pid: Option<PidSource>,
    ) -> Self {
        PhaseTracker {
            observer,
            on_segment,
            mysqld_pid,
            segment: None,
            slot: None,
        }
    }

    /// (pid, its CPU time in ms) of mysqld now.
    fn server_cpu(&self) -> Option<(u32, u64)> {
        let pid = self.mysqld_pid.as_ref()?.pid()?;
        Some((pid, cpu_ms(pid)?))
    }

    /// The open segment's schedule and number.
    pub(crate) fn segment(&self) -> Option<(&'static str, u64)> {
        self.segment.as_ref().map(|s| (s.schedule, s.number))
    }

    /// Opens a segment (the previous one must have been finished or abandoned).
    pub(crate) fn begin_segment(&mut self, schedule: &'static str, number: u64) {
        self.slot = None;
        self.segment = Some(Segment {
            schedule,
            number,
            start: self.observer.digests().snapshot_measured(),
            totals: Vec::new(),
        });
    }

    /// A slot's scenario is in effect (its settle time starts). Ends the previous slot.
    pub(crate) fn slot_started(&mut self, s: &SlotStart<'_>) {
        self.slot_ended();
        let Some(segment) = self.segment.as_mut() else {
            return;
        };
        let index = match segment.totals.iter().position(|t| t.id == s.id) {
            Some(i) => i,
            None => {
                segment
                    .totals
                    .push(Totals::new(s.scenario, s.id, s.phase, s.switched_at_ms));
                segment.totals.len() - 1
            }
        };
        let t = &mut segment.totals[index];
        t.slots += 1;
        if let Some((took, statements)) = s.switch {
            t.switch.add(took.as_secs_f64() * 1000.0, statements);
        }
        t.settle_ms = s.settle.as_millis() as u64;
        t.slot_ms = s.slot.map(|d| d.as_millis() as u64).or(t.slot_ms);
        t.restarted |= s.restarted;
        t.verified &= s.verified;
        self.slot = Some(Slot {
            index,
            switched: s.in_effect,
            window: None,
        });
    }

    /// The settle time is over: the slot's measured window starts now.
    pub(crate) fn measuring(&mut self) {
        self.measuring_at(Instant::now());
    }

    /// The measured window started at `at` (now, but for tests).
    pub(crate) fn measuring_at(&mut self, at: Instant) {
        let cpu = self.server_cpu();
        let ago = Instant::now().saturating_duration_since(at).as_millis() as u64;
        if let Some(slot) = self.slot.as_mut().filter(|s| s.window.is_none()) {
            slot.window = Some(Window {
                from_ms: now_ms().saturating_sub(ago),
                from: at,
                cpu,
            });
        }
    }

    /// Ends the slot in progress now (its measured window, if it had one).
    pub(crate) fn slot_ended(&mut self) {
        self.slot_ended_at(Instant::now());
    }

    /// Ends the slot in progress at `now` (now, but for tests).
    pub(crate) fn slot_ended_at(&mut self, now: Instant) {
        let Some(slot) = self.slot.take() else {
            return;
        };
        let cpu_now = slot
            .window
            .as_ref()
            .and_then(|w| w.cpu)
            .and_then(|_| self.server_cpu());
        let Some(segment) = self.segment.as_mut() else {
            return;
        };
        let t = &mut segment.totals[slot.index];
        let after_switch = now.saturating_duration_since(slot.switched).as_millis() as u64;
        let covered = ((after_switch / BIN_MS) as usize).min(BINS);
        for c in &mut t.covered[..covered] {
            *c += 1;
        }
        let Some(w) = slot.window else {
            return;
        };
        let measured = now.saturating_duration_since(w.from).as_millis() as u64;
        t.measured_ms += measured;
        t.from_ms.get_or_insert(w.from_ms);
        t.to_ms = w.from_ms + measured;
        // A restart in between (new pid, or CPU time going back) makes the figure meaningless.
        t.cpu_ms = match (t.cpu_ms, w.cpu, cpu_now) {
            (Some(sum), Some((pid_a, a)), Some((pid_b, b))) if pid_a == pid_b && b >= a => {
                Some(sum + (b - a))
            }
            _ => None,
        };
    }

    /// How the restart into the slot in progress went, with the statement rate after it
    /// (the leader's slow phases).
    pub(crate) fn restart(&mut self, record: RestartRecord) {
        let (Some(slot), Some(segment)) = (self.slot.as_ref(), self.segment.as_mut()) else {
            return;
        };
        segment.totals[slot.index].restart = Some(record);
    }

    /// A phase that could not be entered (its restart failed): written as left out, with why.
    pub(crate) fn failed(
        &mut self,
        scenario: &str,
        id: ScenarioId,
        phase: u64,
        switched_at_ms: u64,
        why: String,
    ) {
        self.slot_ended();
        let Some(segment) = self.segment.as_mut() else {
            return;
        };
        let mut t = Totals::new(scenario, id, phase, switched_at_ms);
        t.restarted = true;
        t.verified = false;
        t.failure = Some(why);
        segment.totals.push(t);
    }

    /// The scenario's rows were found changed after one of its slots in this segment: its
    /// record is written as not verified (the analysis leaves it out).
    pub(crate) fn unverify(&mut self, id: ScenarioId) {
        if let Some(t) = self
            .segment
            .as_mut()
            .and_then(|s| s.totals.iter_mut().find(|t| t.id == id))
        {
            t.verified = false;
        }
    }

    /// The slot in progress will not be finished (stop, takeover, failed switch): it counts
    /// for nothing.
    pub(crate) fn abandon_slot(&mut self) {
        self.slot = None;
    }

    /// Drops the open segment without writing it.
    pub(crate) fn abandon(&mut self) {
        self.slot = None;
        self.segment = None;
    }

    /// Ends the open segment (and its slot in progress) and writes one record per scenario
    /// that had a measured window; returns them.
    pub(crate) fn finish_segment(&mut self, log: &mut PhaseLog) -> Result<Vec<PhaseRecord>> {
        self.slot_ended();
        let Some(segment) = self.segment.take() else {
            return Ok(Vec::new());
        };
        let end = self.observer.digests().snapshot_measured();
        let ids: Vec<ScenarioId> = segment.totals.iter().map(|t| t.id).collect();
        let listed = listed_digests(&segment.start, &end, &ids);
        let mut records = Vec::new();
        for t in segment.totals {
            let from_ms = match (t.from_ms.filter(|_| t.measured_ms > 0), &t.failure) {
                (Some(from), _) => from,
                // A failed phase is written (so the report can name it), measuring nothing.
                (None, Some(_)) => t.switched_at_ms,
                (None, None) => continue,
            };
            let (commands, digests) =
                window_aggregates(&segment.start, &end, t.id, listed.as_ref());
            let record = PhaseRecord {
                version: PHASE_LOG_VERSION,
                kind: "phase".into(),
                scenario: t.name,
                block: segment.number,
                phase: t.first_phase,
                switched_at_ms: t.switched_at_ms,
                measure_from_ms: from_ms,
                measure_to_ms: if t.failure.is_some() {
                    from_ms
                } else {
                    t.to_ms.max(from_ms + 1)
                },
                restarted: t.restarted,
                verified: t.verified,
                commands,
                digests,
                server_cpu_ms: t.cpu_ms,
                schedule: Some(segment.schedule.to_string()),
                slots: Some(t.slots),
                measured_ms: Some(t.measured_ms),
                settle_ms: Some(t.settle_ms),
                slot_ms: t.slot_ms,
                switch: (t.switch.count > 0).then_some(t.switch),
                since_switch: bins(&segment.start, &end, t.id, &t.covered),
                merged_from: None,
                restart: t.restart,
                failure: t.failure,
            };
            log.append(&record)?;
            records.push(record);
        }
        if let Some(hook) = self.on_segment.as_ref().filter(|_| !records.is_empty()) {
            hook(&records);
        }
        Ok(records)
    }
}

fn bins(
    start: &StoreSnapshot,
    end: &StoreSnapshot,
    id: ScenarioId,
    covered: &[u64; BINS],
) -> Vec<BinRecord> {
    let empty = Vec::new();
    let later = end.since_switch.get(&id).unwrap_or(&empty);
    let earlier = start.since_switch.get(&id).unwrap_or(&empty);
    (0..BINS)
        .filter_map(|i| {
            let d = match (later.get(i), earlier.get(i)) {
                (Some(l), Some(e)) => l.since(e),
                (Some(l), None) => *l,
                _ => Default::default(),
            };
            (d.count > 0 || covered[i] > 0).then_some(BinRecord {
                bin: i as u16,
                slots: covered[i],
                count: d.count,
                timed: d.timed,
                latency_sum_ns: d.latency_sum_ns,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::phase_log::read_log;
    use crate::stats::digest_stats::Sample;
    use crate::stats::scenario::Current;
    use crate::stats::store::Tag;
    use crate::stats::SlotState;
    use psprobe_core::digest::DigestId;
    use psprobe_core::protocol::CommandKind;

    fn observer() -> ControllerHandle {
        ControllerHandle::for_tests()
    }

    fn start(scenario: &str, id: ScenarioId, phase: u64) -> SlotStart<'_> {
        SlotStart {
            scenario,
            id,
            phase,
            switched_at_ms: now_ms(),
            in_effect: Instant::now(),
            switch: Some((Duration::from_millis(4), 3)),
            settle: Duration::from_millis(0),
            slot: None,
            restarted: false,
            verified: true,
        }
    }

    /// Many slots, two scenarios, several segments: records are per scenario and segment, the
    /// measured commands land in their scenario, unmeasured ones nowhere, and the log of
    /// 5,000 slots stays small.
    #[test]
    fn segments_aggregate_slots_and_the_log_stays_small() {
        let obs = observer();
        let ids = [
            obs.scenarios().intern("a").unwrap(),
            obs.scenarios().intern("b").unwrap(),
        ];
        let digests: Vec<_> = (0..50)
            .map(|i| obs.digests().admit(DigestId(100 + i), b"select ?"))
            .collect();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("phases.jsonl");
        let mut log = PhaseLog::open(&path).unwrap();
        let mut tracker = PhaseTracker::new(obs.clone(), None, None);
        let sample = |ns| Sample {
            latency_ns: Some(ns),
            ..Sample::default()
        };
        let (slots, per_segment) = (5_000u64, 10u64);
        for phase in 0..slots {
            if phase % per_segment == 0 {
                if phase > 0 {
                    tracker.finish_segment(&mut log).unwrap();
                }
                tracker.begin_segment("fast", phase / per_segment);
            }
            let which = (phase % 2) as usize;
            let name = ["a", "b"][which];
            tracker.slot_started(&start(name, ids[which], phase));
            let tag = |measured| Tag {
                scenario: ids[which],
                measured,
                bin: Some(0),
            };
            // Settling: counted in the bins, not in the aggregates.
            obs.digests()
                .record(tag(false), CommandKind::Query, Some(digests[0]), &sample(9));
            let t = Instant::now();
            tracker.measuring_at(t - Duration::from_millis(900));
            for (i, d) in digests.iter().enumerate() {
                let ns = 1_000 * (1 + i as u64) * (1 + which as u64);
                obs.digests()
                    .record(tag(true), CommandKind::Query, Some(*d), &sample(ns));
            }
            tracker.slot_ended_at(t);
        }
        let last = tracker.finish_segment(&mut log).unwrap();
        assert_eq!(last.len(), 2);
        let contents = read_log(&path).unwrap();
        assert_eq!(contents.phases.len() as u64, slots / per_segment * 2);
        let first = &contents.phases[0];
        assert_eq!(
            (first.scenario.as_str(), first.block, first.phase),
            ("a", 0, 0)
        );
        assert_eq!(first.slots, Some(5));
        assert_eq!(first.schedule.as_deref(), Some("fast"));
        let statements: u64 = first.commands.iter().map(|c| c.totals.count).sum();
        assert_eq!(statements, 5 * 50, "settle commands are not measured");
        // The 20 digests with the most latency time in the segment, and the rest summed; the
        // other scenario's record of the segment lists the same digests.
        assert_eq!(first.digests.len(), 21);
        let last = first.digests.last().unwrap();
        assert_eq!(
            (last.text.as_deref(), last.totals.count),
            (Some("(rest)"), 5 * 30)
        );
        assert!(first.digests[0].totals.latency_sum_ns >= first.digests[19].totals.latency_sum_ns);
        let ids = |r: &PhaseRecord| {
            let mut ids: Vec<_> = r.digests.iter().map(|d| d.digest.clone()).collect();
            ids.sort();
            ids
        };
        assert_eq!(ids(first), ids(&contents.phases[1]));
        assert_eq!(first.switch.unwrap().count, 5);
        let bin0 = first.since_switch.iter().find(|b| b.bin == 0).unwrap();
        assert_eq!(bin0.count, 5 * 51, "the bins include the settle");
        let size = std::fs::metadata(&path).unwrap().len();
        // 1,000 records of 21 digests (a few KiB each): bounded whatever the digests.
        assert!(size < 6 << 20, "{size} bytes for {slots} slots");
        println!(
            "phase log for {slots} slots, 50 digests: {} KiB",
            size >> 10
        );
    }

    #[test]
    fn slot_without_window_is_not_written_and_bins_count_coverage() {
        let obs = observer();
        let id = obs.scenarios().intern("a").unwrap();
        let dir = tempfile::tempdir().unwrap();
        let mut log = PhaseLog::open(&dir.path().join("p.jsonl")).unwrap();
        let mut tracker = PhaseTracker::new(obs.clone(), None, None);
        tracker.begin_segment("slow", 0);
        tracker.slot_started(&start("a", id, 0));
        tracker.slot_ended();
        assert!(tracker.finish_segment(&mut log).unwrap().is_empty());

        tracker.begin_segment("fast", 1);
        let mut s = start("a", id, 1);
        s.in_effect = Instant::now() - Duration::from_millis(120);
        tracker.slot_started(&s);
        obs.scenarios().publish(Current {
            id,
            state: SlotState::Measuring,
            switched_at_ms: 0,
        });
        tracker.measuring_at(Instant::now() - Duration::from_millis(60));
        let r = tracker.finish_segment(&mut log).unwrap();
        assert_eq!(r.len(), 1);
        let covered: Vec<u64> = r[0].since_switch.iter().map(|b| b.slots).collect();
        assert_eq!(covered[..2], [1, 1], "{:?}", r[0].since_switch);
    }
}
