//! What an analysis of a phase log can fail with (every module of the analysis returns it).
//!
//! Must not: depend on an analysis module but for the errors it wraps.

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(crate) enum AnalysisError {
    #[error("the phase log holds no phases")]
    NoPhases,
    #[error("baseline {name:?} is not in the phase log (scenarios: {})", scheduled.join(", "))]
    BaselineNotScheduled {
        name: String,
        scheduled: Vec<String>,
    },
    #[error("the phase log holds only scenario {only:?}: nothing to compare it with")]
    NothingToCompare { only: String },
    #[error("no block has usable phases of both the baseline {baseline:?} and another scenario")]
    NoPairedBlocks { baseline: String },
    #[error("confidence level {0} is not between 0 and 1")]
    BadLevel(f64),
    #[error("{0}")]
    Advice(#[from] super::attribution::AdviceError),
    #[error("--budget and --need advise from a run of `psprobe proxy --attribute`: this phase log has no attribution (no design point)")]
    NoAttribution,
}
