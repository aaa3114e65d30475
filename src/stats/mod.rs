//! Aggregation of finished commands: per digest and scenario, in log-bucket histograms.
//!
//! Must not: allocate per command in the steady state, or know about I/O and the runtime.

pub(crate) mod digest_stats;
pub(crate) mod histogram;
pub(crate) mod scenario;
pub(crate) mod since_switch;
pub(crate) mod store;

pub(crate) use digest_stats::{DigestStats, Totals};
pub(crate) use scenario::{ScenarioId, Scenarios, SlotState, NO_SCENARIO};
pub(crate) use store::{DigestStore, StoreSnapshot, DEFAULT_MAX_DIGESTS};
