//! What the leader runs next: a pure state machine over the schedule, so every order of fast
//! slots, segment ends, slow blocks and the end of the run is a unit test.
//!
//! - **Fast part**: the scenarios switched at runtime, in randomized complete blocks of one
//!   slot each (`--phase`), slots grouped into segments of about `--segment` (whole blocks),
//!   the unit the analysis pairs.
//! - **Slow part**: scenarios that need a restart (pfsoff, `NAME@startup`) and the reference
//!   they are compared with, every phase entered through a restart. A slow block holds one
//!   pair per restart scenario, (reference, scenario) next to each other in random order, the
//!   pairs in random order; each pair is a segment of its own (the unit the analysis pairs),
//!   so every restart phase is compared with the reference phase beside it in time. Blocks
//!   are spread evenly over the run.
//! - The run ends after `--blocks` fast blocks, at `--duration`, or when the fast estimates are
//!   precise enough (`--target-halfwidth`, reported by the caller), once the slow blocks are
//!   done; else when stopped.

use std::collections::VecDeque;
use std::time::Duration;

use crate::phase_log::block_order;

/// Salt of the slow blocks' order, so it does not mirror the fast blocks'.
const SLOW_SALT: u64 = 0x736c_6f77_2d62_6c6b;
/// Salt of the order inside a unit.
const UNIT_SALT: u64 = 0x756e_6974_2d6f_7264;

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TimelineConfig {
    /// Indices (into the run's scenario list) switched at runtime.
    pub fast: Vec<usize>,
    /// Indices entered through a restart: the slow reference first, then the restart
    /// scenarios.
    pub slow: Vec<usize>,
    pub slot: Duration,
    pub segment: Duration,
    /// Slow phase: restart settle + measured window (the restart itself comes on top).
    pub slow_phase: Duration,
    /// `None`: until the run ends.
    pub slow_blocks: Option<u64>,
    /// Fast blocks; `None`: until the duration, the target or a stop.
    pub blocks: Option<u64>,
    pub duration: Option<Duration>,
    /// Fast time between slow blocks when the run has no set length.
    pub slow_every: Duration,
    pub seed: u64,
    /// Slots kept next to each other in every fast block (an attribution's mirror pairs):
    /// the units' order is shuffled, and each unit's own order; empty: every slot shuffled
    /// alone. The units hold every `fast` scenario, some several times.
    pub units: Vec<Vec<usize>>,
    /// Each slow pair in the reverse order (side B of a duet: in every phase it runs the
    /// scenario side A does not).
    pub mirror: bool,
}

impl TimelineConfig {
    /// The fast part runs: two runtime scenarios or more, or one with nothing slow (a run that
    /// holds one scenario).
    pub(crate) fn fast_active(&self) -> bool {
        self.fast.len() >= 2 || (self.fast.len() == 1 && self.slow.is_empty())
    }

    /// Slots in a fast block: one per scenario, or as the units list them.
    pub(crate) fn slots_per_block(&self) -> usize {
        if self.units.is_empty() {
            self.fast.len()
        } else {
            self.units.iter().map(Vec::len).sum()
        }
    }

    /// Whole blocks per segment: enough to last `segment`, at least one.
    pub(crate) fn blocks_per_segment(&self) -> u64 {
        let block = self.slot.as_secs_f64() * self.slots_per_block().max(1) as f64;
        ((self.segment.as_secs_f64() / block.max(1e-9)).ceil() as u64).max(1)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    /// One slot of fast scenario `scenario` (an index into the run's list).
    Fast {
        scenario: usize,
        block: u64,
        segment: u64,
        phase: u64,
    },
    /// One phase of a slow block: restart into `scenario`, settle, measure. `block` numbers
    /// the (reference, scenario) pair, the slow segment.
    Slow {
        scenario: usize,
        block: u64,
        phase: u64,
    },
    /// Write the open segment (fast) or slow pair.
    EndSegment,
    Done,
}

/// What the caller knows at a decision point.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Progress {
    /// Since the schedule started.
    pub elapsed: Duration,
    /// Every fast estimate is within the target half-width.
    pub precise: bool,
    /// Every restart comparison is within the target half-width (ends the slow blocks of a run
    /// without a set number of them).
    pub slow_precise: bool,
}

#[derive(Debug, Clone)]
pub(crate) struct Timeline {
    cfg: TimelineConfig,
    fast_block: u64,
    /// The block in progress and the position in it.
    order: Vec<usize>,
    pos: usize,
    segment: u64,
    blocks_in_segment: u64,
    segment_open: bool,
    slow_done: u64,
    /// The slow block in progress: `Some(scenario)` a phase, `None` the end of a pair.
    slow_queue: VecDeque<Option<usize>>,
    /// Slow pairs begun (the next pair's segment number).
    slow_pair: u64,
    /// The last progress said the restart comparisons are precise enough.
    slow_precise: bool,
    phase: u64,
    /// Time the fast slots so far took (their lengths may change between segments).
    fast_time: Duration,
    done: bool,
}

impl Timeline {
    /// Starts at fast block `first_block` and phase number `first_phase` (a takeover goes on
    /// after the old leader's).
    pub(crate) fn new(cfg: TimelineConfig, first_block: u64, first_phase: u64) -> Self {
        Timeline {
            fast_block: first_block,
            segment: first_block / cfg.blocks_per_segment().max(1),
            cfg,
            order: Vec::new(),
            pos: 0,
            blocks_in_segment: 0,
            segment_open: false,
            slow_done: 0,
            slow_queue: VecDeque::new(),
            slow_pair: 0,
            slow_precise: false,
            phase: first_phase,
            fast_time: Duration::ZERO,
            done: false,
        }
    }

    /// The fast slots' length from the next segment on (lengthened from the switch cost);
    /// the segments' block counts follow it.
    pub(crate) fn set_slot(&mut self, slot: Duration) {
        self.cfg.slot = slot;
    }

    fn slow_left(&self) -> bool {
        !self.cfg.slow.is_empty()
            && self.cfg.slow_blocks.is_none_or(|n| self.slow_done < n)
            && !(self.cfg.slow_blocks.is_none() && self.slow_precise)
    }

    /// The fast part is over (or never ran).
    fn fast_over(&self, p: &Progress) -> bool {
        if !self.cfg.fast_active() {
            return true;
        }
        let block_time = self.cfg.slot * self.cfg.slots_per_block() as u32;
        self.cfg.blocks.is_some_and(|n| self.fast_block >= n)
            || self
                .cfg
                .duration
                .is_some_and(|d| p.elapsed + block_time > d)
            || p.precise
    }

    fn past_deadline(&self, p: &Progress) -> bool {
        self.cfg.duration.is_some_and(|d| p.elapsed >= d)
    }

    /// A slow block is due before the next fast block.
    fn slow_due(&self, p: &Progress) -> bool {
        if !self.slow_left() {
            return false;
        }
        if !self.cfg.fast_active() || self.fast_over(p) {
            return true;
        }
        let next = self.slow_done as f64 + 0.5;
        match (self.cfg.slow_blocks, self.cfg.blocks, self.cfg.duration) {
            (Some(n), Some(blocks), _) => self.fast_block as f64 / blocks as f64 >= next / n as f64,
            (Some(n), None, Some(d)) => {
                p.elapsed.as_secs_f64() / d.as_secs_f64() >= next / n as f64
            }
            _ => {
                self.fast_time.as_secs_f64()
                    >= (self.slow_done + 1) as f64 * self.cfg.slow_every.as_secs_f64()
            }
        }
    }

    pub(crate) fn next(&mut self, p: Progress) -> Step {
        if self.done {
            return Step::Done;
        }
        self.slow_precise = p.slow_precise;
        match self.slow_queue.pop_front() {
            Some(Some(scenario)) => return self.slow(scenario),
            Some(None) => {
                self.slow_pair += 1;
                if self.slow_queue.is_empty() {
                    self.slow_done += 1;
                }
                return Step::EndSegment;
            }
            None => {}
        }
        if self.pos > 0 && self.pos < self.order.len() {
            return self.fast();
        }
        if self.pos > 0 {
            // A block just ended.
            self.pos = 0;
            self.fast_block += 1;
            self.blocks_in_segment += 1;
        }
        let segment_full = self.blocks_in_segment >= self.cfg.blocks_per_segment();
        let stop = self.past_deadline(&p)
            || (self.fast_over(&p) && !self.slow_left())
            || (self.slow_due(&p) && self.past_deadline(&p));
        if self.segment_open && (segment_full || stop || self.slow_due(&p)) {
            self.segment_open = false;
            self.segment += 1;
            self.blocks_in_segment = 0;
            return Step::EndSegment;
        }
        if stop {
            self.done = true;
            return Step::Done;
        }
        if self.slow_due(&p) {
            self.slow_queue = self.slow_block();
            return self.next(p);
        }
        self.order = self.fast_order();
        self.segment_open = true;
        self.fast()
    }

    /// The order of the next fast block: every scenario once, shuffled alone or by units.
    fn fast_order(&self) -> Vec<usize> {
        let (block, seed) = (self.fast_block, self.cfg.seed);
        if self.cfg.units.is_empty() {
            let order = block_order(self.cfg.fast.len(), block, seed);
            return order.into_iter().map(|i| self.cfg.fast[i]).collect();
        }
        let units = &self.cfg.units;
        block_order(units.len(), block, seed)
            .into_iter()
            .flat_map(|u| {
                let salt = seed ^ UNIT_SALT ^ (u as u64).wrapping_mul(0x9E37_79B9);
                block_order(units[u].len(), block, salt)
                    .into_iter()
                    .map(move |i| units[u][i])
            })
            .collect()
    }

    /// The next slow block: one (reference, scenario) pair per restart scenario, in random
    /// order, each pair's own order random, each pair ended by `None`.
    fn slow_block(&self) -> VecDeque<Option<usize>> {
        let Some((&reference, restart)) = self.cfg.slow.split_first() else {
            return VecDeque::new();
        };
        if restart.is_empty() {
            // Only the reference (a run of one scenario entered by restart): one phase a pair.
            return VecDeque::from([Some(reference), None]);
        }
        let seed = self.cfg.seed ^ SLOW_SALT;
        let block = self.slow_done;
        let mut queue = VecDeque::new();
        for u in block_order(restart.len(), block, seed) {
            let pair = [reference, restart[u]];
            let salt = seed ^ UNIT_SALT ^ (u as u64).wrapping_mul(0x9E37_79B9);
            let mut order = block_order(2, block, salt);
            if self.cfg.mirror {
                order.reverse();
            }
            for i in order {
                queue.push_back(Some(pair[i]));
            }
            queue.push_back(None);
        }
        queue
    }

    fn fast(&mut self) -> Step {
        let step = Step::Fast {
            scenario: self.order[self.pos],
            block: self.fast_block,
            segment: self.segment,
            phase: self.phase,
        };
        self.pos += 1;
        self.phase += 1;
        self.fast_time += self.cfg.slot;
        step
    }

    fn slow(&mut self, scenario: usize) -> Step {
        let step = Step::Slow {
            scenario,
            block: self.slow_pair,
            phase: self.phase,
        };
        self.phase += 1;
        step
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(fast: &[usize], slow: &[usize]) -> TimelineConfig {
        TimelineConfig {
            fast: fast.to_vec(),
            slow: slow.to_vec(),
            slot: Duration::from_secs(1),
            segment: Duration::from_secs(4),
            slow_phase: Duration::from_secs(30),
            slow_blocks: Some(2),
            blocks: Some(10),
            duration: None,
            slow_every: Duration::from_secs(60),
            seed: 7,
            units: Vec::new(),
            mirror: false,
        }
    }

    /// Runs to the end (or `limit` steps) with a clock that advances one slot per fast step
    /// and 40 s per slow step.
    fn run(cfg: TimelineConfig, precise_after: Option<u64>, limit: usize) -> Vec<Step> {
        let mut t = Timeline::new(cfg, 0, 0);
        let mut elapsed = Duration::ZERO;
        let mut out = Vec::new();
        let mut fast = 0;
        for _ in 0..limit {
            let p = Progress {
                elapsed,
                precise: precise_after.is_some_and(|n| fast >= n),
                slow_precise: false,
            };
            let step = t.next(p);
            out.push(step);
            match step {
                Step::Fast { .. } => {
                    elapsed += Duration::from_secs(1);
                    fast += 1;
                }
                Step::Slow { .. } => elapsed += Duration::from_secs(40),
                Step::EndSegment => {}
                Step::Done => break,
            }
        }
        out
    }

    fn fast_count(steps: &[Step]) -> usize {
        steps
            .iter()
            .filter(|s| matches!(s, Step::Fast { .. }))
            .count()
    }

    #[test]
    fn fast_only_runs_complete_blocks_in_segments() {
        let steps = run(cfg(&[0, 1], &[]), None, 1000);
        assert_eq!(fast_count(&steps), 20);
        assert_eq!(steps.last(), Some(&Step::Done));
        // Segments of 2 blocks (4 s of 1 s slots, 2 scenarios): 4 slots, then an end.
        assert!(matches!(steps[4], Step::EndSegment), "{steps:?}");
        let ends = steps.iter().filter(|s| **s == Step::EndSegment).count();
        assert_eq!(ends, 5);
        // Every block holds each scenario once; phases count up from 0.
        let slots: Vec<_> = steps
            .iter()
            .filter_map(|s| match s {
                Step::Fast {
                    scenario,
                    block,
                    phase,
                    ..
                } => Some((*scenario, *block, *phase)),
                _ => None,
            })
            .collect();
        for b in 0..10u64 {
            let mut of: Vec<usize> = slots.iter().filter(|s| s.1 == b).map(|s| s.0).collect();
            of.sort_unstable();
            assert_eq!(of, [0, 1]);
        }
        assert!(slots.iter().enumerate().all(|(i, s)| s.2 == i as u64));
    }

    /// The slow steps' (scenario, block, phase) of a run.
    fn slow_steps(steps: &[Step]) -> Vec<(usize, u64, u64)> {
        steps
            .iter()
            .filter_map(|s| match s {
                Step::Slow {
                    scenario,
                    block,
                    phase,
                } => Some((*scenario, *block, *phase)),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_mirrored_timeline_runs_the_other_scenario_of_every_slow_phase() {
        // A duet: nothing fast, two restart scenarios and their reference, six blocks.
        let mut a = cfg(&[], &[0, 1, 2]);
        a.slow_blocks = Some(6);
        let mut b = a.clone();
        b.mirror = true;
        let (sa, sb) = (run(a, None, 1000), run(b, None, 1000));
        // The same steps, segment ends included, at the same places.
        assert_eq!(sa.len(), sb.len());
        for (x, y) in sa.iter().zip(&sb) {
            assert_eq!(
                std::mem::discriminant(x),
                std::mem::discriminant(y),
                "{sa:?} / {sb:?}"
            );
        }
        let (pa, pb) = (slow_steps(&sa), slow_steps(&sb));
        assert_eq!(pa.len(), 6 * 2 * 2);
        let mut a_first_ref = 0;
        for (x, y) in pa.chunks(2).zip(pb.chunks(2)) {
            // Same block and phase numbers; each phase the other scenario; both sides run
            // both scenarios of the pair.
            assert_eq!((x[0].1, x[0].2), (y[0].1, y[0].2));
            assert_eq!((x[1].1, x[1].2), (y[1].1, y[1].2));
            assert_eq!((x[0].0, x[1].0), (y[1].0, y[0].0), "{x:?} / {y:?}");
            assert_ne!(x[0].0, y[0].0);
            a_first_ref += usize::from(x[0].0 == 0);
        }
        // The order is random: side A starts some pairs with the reference, not all.
        assert!((1..12).contains(&a_first_ref), "{a_first_ref}");
    }

    #[test]
    fn slow_blocks_are_spread_and_closed_as_segments() {
        let steps = run(cfg(&[0, 1, 2], &[0, 3]), None, 1000);
        assert_eq!(fast_count(&steps), 30);
        let slow: Vec<usize> = steps
            .iter()
            .enumerate()
            .filter(|(_, s)| matches!(s, Step::Slow { .. }))
            .map(|(i, _)| i)
            .collect();
        assert_eq!(slow.len(), 4, "2 blocks of one pair: {steps:?}");
        // Each slow block is preceded by a segment end (the fast segment closes) and followed
        // by its own end.
        for pair in slow.chunks(2) {
            assert_eq!(steps[pair[0] - 1], Step::EndSegment);
            assert_eq!(steps[pair[1] + 1], Step::EndSegment);
        }
        // Spread: the first after about a quarter of the fast blocks, the second at three
        // quarters.
        let fast_before = |i: usize| fast_count(&steps[..i]);
        assert!(
            (6..=12).contains(&fast_before(slow[0])),
            "{}",
            fast_before(slow[0])
        );
        assert!(
            (18..=27).contains(&fast_before(slow[2])),
            "{}",
            fast_before(slow[2])
        );
    }

    #[test]
    fn each_restart_phase_is_paired_with_the_reference_beside_it() {
        // Reference 0 and two restart scenarios: a block is two pairs, each its own segment.
        let mut c = cfg(&[0], &[0, 1, 2]);
        c.slow_blocks = Some(20);
        let steps = run(c, None, 1000);
        let mut pairs: Vec<Vec<usize>> = vec![Vec::new()];
        let mut blocks: Vec<u64> = Vec::new();
        for s in &steps {
            match s {
                Step::Slow {
                    scenario, block, ..
                } => {
                    pairs.last_mut().unwrap().push(*scenario);
                    blocks.push(*block);
                }
                Step::EndSegment => pairs.push(Vec::new()),
                _ => {}
            }
        }
        pairs.retain(|p| !p.is_empty());
        assert_eq!(pairs.len(), 40, "two pairs a block, 20 blocks");
        let mut orders = std::collections::HashSet::new();
        for (i, p) in pairs.iter().enumerate() {
            assert_eq!(p.len(), 2);
            assert!(
                p.contains(&0) && (p.contains(&1) || p.contains(&2)),
                "{p:?}"
            );
            orders.insert(p.clone());
            // Both phases of a pair carry its segment number.
            assert_eq!(blocks[2 * i], i as u64);
            assert_eq!(blocks[2 * i + 1], i as u64);
        }
        assert_eq!(
            orders.len(),
            4,
            "both orders of both pairs occur: {orders:?}"
        );
        // Each block holds one pair of each restart scenario.
        for b in pairs.chunks(2) {
            assert!(b.iter().any(|p| p.contains(&1)) && b.iter().any(|p| p.contains(&2)));
        }
    }

    #[test]
    fn slow_only_and_reference_sharing() {
        // One runtime scenario that is the slow reference: no fast part.
        let mut c = cfg(&[0], &[0, 1]);
        c.slow_blocks = Some(3);
        let steps = run(c, None, 100);
        assert_eq!(fast_count(&steps), 0);
        let slow = steps
            .iter()
            .filter(|s| matches!(s, Step::Slow { .. }))
            .count();
        assert_eq!(slow, 6);
        assert_eq!(steps.last(), Some(&Step::Done));
    }

    #[test]
    fn duration_and_target_end_the_run() {
        let mut c = cfg(&[0, 1], &[]);
        c.blocks = None;
        c.duration = Some(Duration::from_secs(31));
        let steps = run(c.clone(), None, 1000);
        assert_eq!(fast_count(&steps), 30, "whole blocks that fit in 31 s");
        assert_eq!(steps[steps.len() - 2], Step::EndSegment);

        c.duration = None;
        let steps = run(c.clone(), Some(12), 1000);
        assert_eq!(fast_count(&steps), 12, "stops at the block after precision");

        // Precise early, slow blocks still to do: they run, then the run ends.
        c.slow = vec![0, 2];
        c.slow_blocks = Some(2);
        let steps = run(c, Some(4), 1000);
        let slow = steps
            .iter()
            .filter(|s| matches!(s, Step::Slow { .. }))
            .count();
        assert_eq!((fast_count(&steps), slow), (4, 4));
    }

    #[test]
    fn unbounded_runs_interleave_slow_blocks_by_fast_time() {
        let mut c = cfg(&[0, 1], &[0, 2]);
        c.blocks = None;
        c.slow_blocks = None;
        c.slow_every = Duration::from_secs(10);
        let steps = run(c, None, 200);
        let first_slow = steps
            .iter()
            .position(|s| matches!(s, Step::Slow { .. }))
            .unwrap();
        assert_eq!(fast_count(&steps[..first_slow]), 10);
        assert!(!steps.contains(&Step::Done));
    }

    #[test]
    fn units_stay_together_in_a_shuffled_order() {
        let mut c = cfg(&[0, 1, 2, 3, 4], &[]);
        c.units = vec![vec![0, 4], vec![1, 3], vec![2]];
        c.blocks = Some(40);
        let steps = run(c, None, 10_000);
        let slots: Vec<(u64, usize)> = steps
            .iter()
            .filter_map(|s| match s {
                Step::Fast {
                    scenario, block, ..
                } => Some((*block, *scenario)),
                _ => None,
            })
            .collect();
        let mut first_units = std::collections::HashSet::new();
        let mut pair_orders = std::collections::HashSet::new();
        for b in 0..40u64 {
            let order: Vec<usize> = slots.iter().filter(|s| s.0 == b).map(|s| s.1).collect();
            assert_eq!(order.len(), 5, "block {b}: every scenario once");
            // Each unit's slots are adjacent.
            for unit in [[0, 4], [1, 3]] {
                let at: Vec<usize> = unit
                    .iter()
                    .map(|x| order.iter().position(|y| y == x).unwrap())
                    .collect();
                assert_eq!(at[0].abs_diff(at[1]), 1, "block {b}: {order:?}");
            }
            first_units.insert(order[0]);
            let a = order.iter().position(|y| *y == 0).unwrap();
            let e = order.iter().position(|y| *y == 4).unwrap();
            pair_orders.insert(a < e);
        }
        assert!(
            first_units.len() >= 4,
            "units' order shuffled: {first_units:?}"
        );
        assert_eq!(pair_orders.len(), 2, "order inside a unit shuffled");
    }

    #[test]
    fn a_slow_only_run_without_a_block_count_ends_once_precise() {
        let mut c = cfg(&[0], &[0, 1]);
        c.slow_blocks = None;
        c.duration = Some(Duration::from_secs(100_000));
        let mut t = Timeline::new(c, 0, 0);
        let mut slow = 0;
        for _ in 0..1000 {
            let p = Progress {
                slow_precise: slow >= 10,
                ..Progress::default()
            };
            match t.next(p) {
                Step::Slow { .. } => slow += 1,
                Step::Done => break,
                _ => {}
            }
        }
        assert_eq!(slow, 10, "stops at the pair after precision");
    }

    #[test]
    fn takeover_resumes_numbering() {
        let mut t = Timeline::new(cfg(&[0, 1], &[]), 6, 40);
        match t.next(Progress::default()) {
            Step::Fast {
                block,
                segment,
                phase,
                ..
            } => assert_eq!((block, segment, phase), (6, 3, 40)),
            other => panic!("{other:?}"),
        }
    }
}
