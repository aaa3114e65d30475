//! Aggregation of finished commands: per digest and scenario, in log-bucket histograms.
//!
//! Must not: allocate per command in the steady state, or know about I/O and the runtime.

pub mod digest_stats;
pub mod histogram;
pub mod scenario;
pub mod since_switch;
pub mod store;

pub use digest_stats::{DigestStats, Sample, Totals};
pub use histogram::LogHistogram;
pub use scenario::{Current, ScenarioId, Scenarios, SlotState, NO_SCENARIO};
pub use store::{DigestStore, StoreSnapshot, Tag, DEFAULT_MAX_DIGESTS, OTHER_DIGEST};
