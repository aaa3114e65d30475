//! `{"version":2,"kind":"claim",...}`: a setup-table row someone other than psprobe changed
//! during the run (at runtime, or by a restart psprobe did not make). psprobe kept it as it was
//! set and left it out of every later switch; the report names each one.

use serde::{Deserialize, Serialize};

use super::PHASE_LOG_VERSION;

pub(crate) const CLAIM: &str = "claim";

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub(crate) struct ClaimRecord {
    pub version: u32,
    pub kind: String,
    /// When psprobe first saw it (Unix milliseconds).
    pub at_ms: u64,
    /// `setup_instruments 'wait/io/file/sql/binlog'`.
    pub setting: String,
    /// As it was set: `ENABLED=YES TIMED=NO`.
    pub value: String,
    /// What psprobe had written there (or found there, for a restart).
    pub psprobe_left: String,
    /// `runtime`, `restart` or `while_stopped`.
    pub origin: String,
}

impl ClaimRecord {
    pub(crate) fn new(
        at_ms: u64,
        setting: String,
        value: String,
        psprobe_left: String,
        origin: &str,
    ) -> Self {
        ClaimRecord {
            version: PHASE_LOG_VERSION,
            kind: CLAIM.into(),
            at_ms,
            setting,
            value,
            psprobe_left,
            origin: origin.into(),
        }
    }
}
