//! The row a leader publishes in `psprobe.phase` about the slot in effect (scenario, segment,
//! state, and the slot's timing in the leader column), as data: followers read it, `ps
//! restore` and a new leader read the last one to know what a run left.
//!
//! Must not: talk to a server (`client::leadership` reads and writes the row).

/// What the leader publishes about the slot in effect, once per slot.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct PhaseRow {
    pub scenario: String,
    /// Segment (fast) or slow block.
    pub block: u64,
    /// Position of the slot in the run.
    pub phase: u64,
    /// `switching` (a restart is coming), `settling` (the scenario is in effect; the settle
    /// time runs, then the measured window), `measuring` (older psprobes), `idle` (no schedule
    /// running) or `done` (the schedule completed).
    pub state: String,
    pub leader: String,
    /// `fast` or `slow`.
    pub schedule: String,
    /// From the moment the row was written: settle, then measure for this long.
    pub settle_ms: u64,
    pub measure_ms: u64,
}

impl PhaseRow {
    /// The `leader` column: the leader's name, then the slot's timing (the table predates it,
    /// and the controller account may not ALTER it).
    pub(crate) fn leader_column(&self) -> String {
        if self.schedule.is_empty() {
            return self.leader.clone();
        }
        format!(
            "{} {} {} {}",
            self.leader, self.schedule, self.settle_ms, self.measure_ms
        )
    }

    /// A row as read from `psprobe.phase` (the leader column carries the slot's timing).
    pub(crate) fn from_columns(
        (scenario, block, phase, state, leader): (String, u64, u64, String, String),
    ) -> PhaseRow {
        let mut row = PhaseRow {
            scenario,
            block,
            phase,
            state,
            ..PhaseRow::default()
        };
        row.parse_leader_column(&leader);
        row
    }

    pub(crate) fn parse_leader_column(&mut self, column: &str) {
        let words: Vec<&str> = column.rsplitn(4, ' ').collect();
        match words.as_slice() {
            [measure, settle, schedule, leader] => {
                if let (Ok(m), Ok(s)) = (measure.parse(), settle.parse()) {
                    self.leader = leader.to_string();
                    self.schedule = schedule.to_string();
                    self.settle_ms = s;
                    self.measure_ms = m;
                    return;
                }
                self.leader = column.to_string();
            }
            _ => self.leader = column.to_string(),
        }
    }
}

/// What a leader writes (`psprobe.switch_intent`) before a switch's statements, in the same
/// round trip: the phase row that names the new scenario comes after them, so a crash, a kill
/// or an error in between leaves an intent newer than the row, and the next start knows each
/// row may hold either scenario's value.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct SwitchIntent {
    pub leader: String,
    pub from: String,
    pub to: String,
    /// The phase of the slot the switch begins (the phase row's after it).
    pub phase: u64,
}
