//! What the server runs as, as far as the schedule's restarts are concerned, and how many
//! restarts may fail in a row. A leaf: the leader, the restore and the runner all read it.
//!
//! Must not: decide anything (the leader and the restore act on it).

/// Restarts that may fail in a row before the schedule stops.
pub(crate) const MAX_RESTART_FAILURES: u32 = 3;

/// What the last restart left the server running with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ServerMode {
    /// performance_schema ON, the server's own options (the state runtime scenarios need).
    Default,
    Off,
    /// Started with the options of this startup scenario.
    Startup(String),
    /// A restart failed: what runs now is not known (the next fast slot or the restore
    /// restarts it with its own options).
    Unknown,
}

impl ServerMode {
    /// As the snapshot records it (`None`: the server's own options), so a later start knows
    /// a restart of psprobe's is still in effect.
    pub(crate) fn recorded(&self) -> Option<String> {
        match self {
            ServerMode::Default => None,
            ServerMode::Off => Some("pfsoff".into()),
            ServerMode::Startup(name) => Some(name.clone()),
            ServerMode::Unknown => Some("an unknown state (a restart failed)".into()),
        }
    }
}
