//! Aggregation of finished commands: per digest and scenario, in log-bucket histograms.

pub mod digest_stats;
pub mod histogram;
pub mod recorder;
pub mod scenario;
pub mod store;

pub use digest_stats::{DigestStats, Sample};
pub use histogram::LogHistogram;
pub use recorder::{ConnectionRecorder, Observer};
pub use scenario::{ScenarioId, Scenarios, NO_SCENARIO};
pub use store::{DigestStore, StoreSnapshot, DEFAULT_MAX_DIGESTS, OTHER_DIGEST};
