//! The controller's roles as a state machine: whether to lead, follow, restore or rejoin next,
//! decided from how the last step ended. No I/O and no clock: the runner (runner.rs) carries
//! out each [`Action`] against the server and feeds back the [`Event`] it ended with, so every
//! path between the roles (a schedule completed or stopped, a leader taken over, cut off and
//! back, a follower taking over or cut off, a restore that failed, a stale snapshot) is tested
//! here without a server.
//!
//! Must not: talk to the server, read the clock, or decide anything inside a role (the slots
//! of a schedule are the leader's, `lead.rs`, over a [`super::timeline::Timeline`]).

/// (fast block, phase) a leader starts from: after a takeover, the segment after the last one
/// published.
pub(crate) type StartAt = (u64, u64);

/// What the leader publishes when it leaves: `done` tells followers the schedule is complete
/// (nothing to take over); `idle` (stopped early, or failed) lets one of them take over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EndState {
    Done,
    Idle,
}

impl EndState {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            EndState::Done => "done",
            EndState::Idle => "idle",
        }
    }
}

/// Why the runner must reconnect before going on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Rejoin {
    /// Another psprobe was seen leading: change nothing; follow it once the server answers.
    LostLead,
    /// The leader's connection failed or the server stalled: change nothing until it answers,
    /// then lead on (the run is still this psprobe's, and so is its restore).
    Interrupted,
    /// A follower lost the server: stop labelling until it answers again.
    Cut,
}

/// How the runner's part ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Finish {
    /// Release the lock and disconnect; return what the lead ended with (and the restore).
    Led,
    /// Release the lock and disconnect; the followed schedule ended or this psprobe stopped.
    Followed,
    /// Return the follower's error as it is.
    FollowFailed,
    /// Stopped while rejoining after losing the lead: the lead-lost error.
    LostLead,
    /// Stopped while rejoining as a follower: nothing to report.
    StoppedRejoining,
}

/// The next thing the runner does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Action {
    /// Try to take the controller lock: [`Event::LockTaken`].
    TryLead,
    /// Lead the schedule from here: [`Event::LeadEnded`].
    Lead(StartAt),
    /// Put the snapshot back, publish the end state: [`Event::RestoreEnded`].
    Restore(EndState),
    /// Connect anew, every second until the server answers or a stop: [`Event::Rejoined`].
    Rejoin(Rejoin),
    /// Back after losing the lead: take the lock again if it is free (and read where the
    /// schedule got to); if another psprobe holds it, the state file is that leader's to
    /// resolve (it did when it took over) and is removed: [`Event::Reclaimed`].
    Reclaim,
    /// Follow the psprobe that leads: [`Event::FollowEnded`].
    Follow,
    Finish(Finish),
}

/// How a lead ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LeadEnd {
    /// The schedule ran to its end.
    Completed,
    /// Stopped (SIGTERM) before its end.
    Stopped,
    /// The settings left behind by a dead run are not provably its own: nothing was changed,
    /// and nothing may be restored (the operator decides, with `ps restore`).
    StaleSnapshot,
    /// Another psprobe was seen holding the lock: it took over.
    LostLead,
    /// The server stopped answering, stalled or restarted: whether this psprobe still leads
    /// is not known until it answers.
    Interrupted,
    /// The server was restarted by someone else with performance_schema OFF: nothing to
    /// measure, nothing of psprobe's left to restore.
    PsOffByOthers,
    /// Any other error (apply, verify, restart): restore, then report it.
    Failed,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RestoreEnd {
    Restored,
    /// The lock is another psprobe's now: the restore is its job.
    LostLead,
    Failed,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FollowEnd {
    /// The leader is gone: take over from here.
    LeaderGone(StartAt),
    /// The schedule is done, or this psprobe was stopped.
    Ended,
    /// The server stopped answering.
    Cut,
    Failed,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Event {
    LockTaken(bool),
    LeadEnded(LeadEnd),
    RestoreEnded(RestoreEnd),
    /// false: stopped before the server answered.
    Rejoined(bool),
    /// `Some`: the lock is this psprobe's again, go on from there; `None`: another leads.
    Reclaimed(Option<StartAt>),
    FollowEnded(FollowEnd),
}

/// The runner's role state.
#[derive(Debug, Default)]
pub(crate) struct Roles {
    start_at: StartAt,
    rejoining: Option<Rejoin>,
}

impl Roles {
    /// The first action: try to lead.
    pub(crate) fn start(&mut self) -> Action {
        Action::TryLead
    }

    /// The action after `event` (the outcome of the previous action).
    pub(crate) fn next(&mut self, event: Event) -> Action {
        match event {
            Event::LockTaken(true) => Action::Lead(self.start_at),
            Event::LockTaken(false) => Action::Follow,
            Event::LeadEnded(end) => match end {
                LeadEnd::Completed => Action::Restore(EndState::Done),
                LeadEnd::Stopped | LeadEnd::Failed => Action::Restore(EndState::Idle),
                LeadEnd::StaleSnapshot | LeadEnd::PsOffByOthers => Action::Finish(Finish::Led),
                LeadEnd::LostLead => self.rejoin(Rejoin::LostLead),
                LeadEnd::Interrupted => self.rejoin(Rejoin::Interrupted),
            },
            Event::RestoreEnded(RestoreEnd::Restored | RestoreEnd::Failed) => {
                Action::Finish(Finish::Led)
            }
            Event::RestoreEnded(RestoreEnd::LostLead) => self.rejoin(Rejoin::LostLead),
            Event::Rejoined(back) => match (self.rejoining.take(), back) {
                (Some(Rejoin::LostLead | Rejoin::Interrupted), true) => Action::Reclaim,
                (Some(Rejoin::LostLead), false) => Action::Finish(Finish::LostLead),
                // Stopped while the server did not answer: the restore is still this
                // psprobe's (within the stop's bound, saying what it left if it cannot).
                (Some(Rejoin::Interrupted), false) => Action::Restore(EndState::Idle),
                (_, true) => Action::TryLead,
                (_, false) => Action::Finish(Finish::StoppedRejoining),
            },
            Event::Reclaimed(at) => {
                if let Some(at) = at {
                    self.start_at = at;
                }
                Action::TryLead
            }
            Event::FollowEnded(FollowEnd::LeaderGone(at)) => {
                self.start_at = at;
                Action::TryLead
            }
            Event::FollowEnded(FollowEnd::Ended) => Action::Finish(Finish::Followed),
            Event::FollowEnded(FollowEnd::Cut) => self.rejoin(Rejoin::Cut),
            Event::FollowEnded(FollowEnd::Failed) => Action::Finish(Finish::FollowFailed),
        }
    }

    fn rejoin(&mut self, why: Rejoin) -> Action {
        self.rejoining = Some(why);
        Action::Rejoin(why)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `events` in turn and returns every action, the first included.
    fn run(events: &[Event]) -> Vec<Action> {
        let mut roles = Roles::default();
        let mut actions = vec![roles.start()];
        actions.extend(events.iter().map(|e| roles.next(*e)));
        actions
    }

    use Action as A;
    use Event as E;

    #[test]
    fn a_leader_completes_restores_and_says_done() {
        let actions = run(&[
            E::LockTaken(true),
            E::LeadEnded(LeadEnd::Completed),
            E::RestoreEnded(RestoreEnd::Restored),
        ]);
        assert_eq!(
            actions,
            [
                A::TryLead,
                A::Lead((0, 0)),
                A::Restore(EndState::Done),
                A::Finish(Finish::Led)
            ]
        );
    }

    /// SIGTERM mid-schedule (in a settle time or anywhere else): the lead returns stopped;
    /// the settings are restored and `idle` lets a follower take over.
    #[test]
    fn a_stopped_or_failed_leader_restores_and_says_idle() {
        for end in [LeadEnd::Stopped, LeadEnd::Failed] {
            let actions = run(&[
                E::LockTaken(true),
                E::LeadEnded(end),
                E::RestoreEnded(RestoreEnd::Failed),
            ]);
            assert_eq!(
                actions[2..],
                [A::Restore(EndState::Idle), A::Finish(Finish::Led)],
                "{end:?}"
            );
        }
    }

    #[test]
    fn a_stale_snapshot_changes_nothing_and_restores_nothing() {
        let actions = run(&[E::LockTaken(true), E::LeadEnded(LeadEnd::StaleSnapshot)]);
        assert_eq!(actions[2], A::Finish(Finish::Led), "no restore");
    }

    /// The leader dies mid-phase: its follower sees it gone, takes the lock and leads from the
    /// segment after the last one published (the lead itself restores what the dead one left
    /// before its first change).
    #[test]
    fn a_follower_takes_over_where_the_leader_left() {
        let actions = run(&[
            E::LockTaken(false),
            E::FollowEnded(FollowEnd::LeaderGone((8, 17))),
            E::LockTaken(true),
            E::LeadEnded(LeadEnd::Completed),
        ]);
        assert_eq!(
            actions,
            [
                A::TryLead,
                A::Follow,
                A::TryLead,
                A::Lead((8, 17)),
                A::Restore(EndState::Done)
            ]
        );
        // Two followers race for the lock: the one that loses follows the winner.
        let actions = run(&[
            E::LockTaken(false),
            E::FollowEnded(FollowEnd::LeaderGone((8, 17))),
            E::LockTaken(false),
        ]);
        assert_eq!(actions[3], A::Follow);
    }

    /// Cut off while leading: no restore (the new leader's job), rejoin; back, the lock held by
    /// another psprobe: follow it, never lead twice.
    #[test]
    fn a_leader_taken_over_rejoins_and_follows() {
        let actions = run(&[
            E::LockTaken(true),
            E::LeadEnded(LeadEnd::LostLead),
            E::Rejoined(true),
            E::Reclaimed(None),
            E::LockTaken(false),
        ]);
        assert_eq!(
            actions,
            [
                A::TryLead,
                A::Lead((0, 0)),
                A::Rejoin(Rejoin::LostLead),
                A::Reclaim,
                A::TryLead,
                A::Follow
            ]
        );
    }

    /// Lost the lead (a long stall) but nobody took over: lead on after the last slot published.
    #[test]
    fn a_leader_nobody_took_over_goes_on() {
        let actions = run(&[
            E::LockTaken(true),
            E::LeadEnded(LeadEnd::LostLead),
            E::Rejoined(true),
            E::Reclaimed(Some((3, 9))),
            E::LockTaken(true),
        ]);
        assert_eq!(actions[4..], [A::TryLead, A::Lead((3, 9))]);
    }

    /// The restore at the end finds the lock another's: that leader restores, this one follows.
    #[test]
    fn a_restore_without_the_lock_is_left_to_the_new_leader() {
        let actions = run(&[
            E::LockTaken(true),
            E::LeadEnded(LeadEnd::Stopped),
            E::RestoreEnded(RestoreEnd::LostLead),
            E::Rejoined(false),
        ]);
        assert_eq!(
            actions[2..],
            [
                A::Restore(EndState::Idle),
                A::Rejoin(Rejoin::LostLead),
                A::Finish(Finish::LostLead)
            ]
        );
    }

    /// Server connection lost and back, as a follower: rejoin, then lead if the lock is free
    /// (the leader is gone too) or follow again.
    #[test]
    fn a_follower_cut_off_rejoins() {
        let actions = run(&[
            E::LockTaken(false),
            E::FollowEnded(FollowEnd::Cut),
            E::Rejoined(true),
            E::LockTaken(false),
            E::FollowEnded(FollowEnd::Ended),
        ]);
        assert_eq!(
            actions,
            [
                A::TryLead,
                A::Follow,
                A::Rejoin(Rejoin::Cut),
                A::TryLead,
                A::Follow,
                A::Finish(Finish::Followed)
            ]
        );
        let stopped = run(&[
            E::LockTaken(false),
            E::FollowEnded(FollowEnd::Cut),
            E::Rejoined(false),
        ]);
        assert_eq!(stopped[3], A::Finish(Finish::StoppedRejoining));
        let failed = run(&[E::LockTaken(false), E::FollowEnded(FollowEnd::Failed)]);
        assert_eq!(failed[2], A::Finish(Finish::FollowFailed));
    }
}
