//! Settings of the server someone other than psprobe changed during a run, as the controller
//! saw them: the admin interface's `setting_changes` table reads them. Bounded: past
//! [`MAX_CHANGES`] the oldest go (the phase log keeps every one).
//!
//! Must not: know what a setting is beyond its text (the controller's model does).

use std::collections::VecDeque;
use std::sync::Mutex;

/// Changes kept for the admin interface.
pub(crate) const MAX_CHANGES: usize = 10_000;

/// One row someone else set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SettingChange {
    /// `setup_instruments 'wait/io/file/sql/binlog'`.
    pub setting: String,
    /// `ENABLED=YES TIMED=NO`.
    pub value: String,
    /// What psprobe had written there (or found).
    pub psprobe_left: String,
    /// `runtime`, `restart` or `while_stopped`.
    pub origin: String,
    /// When psprobe first saw it (Unix milliseconds).
    pub seen_at_ms: u64,
}

#[derive(Debug, Default)]
pub struct SettingChanges(Mutex<VecDeque<SettingChange>>);

impl SettingChanges {
    pub fn push(&self, change: SettingChange) {
        let mut list = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if list.len() >= MAX_CHANGES {
            list.pop_front();
        }
        list.push_back(change);
    }

    /// Every change kept, oldest first.
    pub fn all(&self) -> Vec<SettingChange> {
        let list = self.0.lock().unwrap_or_else(|e| e.into_inner());
        list.iter().cloned().collect()
    }
}
