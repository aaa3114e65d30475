//! Overhead analysis: phase records → for each scenario against the baseline, throughput,
//! mean latency, p50/p95/p99 latency and error rate, each as a paired estimate with a 95%
//! interval and a significance verdict, plus a drift check. Pure: no I/O; the caller reads the
//! phase log (`phase_log::read_phases`) and prints the [`Analysis`].
//!
//! How it measures honestly (docs/measurement.md has the definitions and the evidence):
//! - the sample is the phase, not the query: a phase's aggregate is one observation;
//! - each scenario is paired with the baseline's phase of the same block, and the per-block
//!   log-ratios are averaged, so load changing slowly over the run cancels out;
//! - only the measured windows are used (the settle time after a switch is not in them);
//! - intervals: Student's t on the per-block log-ratios (throughput, mean latency) or
//!   differences (error rate); an expanded-percentile block bootstrap for the percentiles;
//! - latency is mix-adjusted: compared at the baseline's per-digest mix, weighted by the
//!   baseline's time share, so a shift in the traffic mix is not reported as overhead;
//! - a trend of the paired log-ratios over blocks is flagged as drift.
//!
//! Files, as the data goes through them:
//! - records to numbers: [`phase_data`] (records → per-phase numbers), [`mix`] (the mix
//!   adjustment), [`weighted_hist`];
//! - the fast comparisons: [`baseline`] (which scenario is the reference), [`paired`] (pairing,
//!   t interval, drift), [`bootstrap`] (percentiles), `analyze` (the driver), [`estimate`] (the
//!   result types), [`error`];
//! - a whole run: [`run`] (fast and slow comparisons of one phase log, and the restart pairs),
//!   [`duet`] (two servers over the same seconds);
//! - what the controller re-chooses from as it goes: [`carryover`] (settle after a switch),
//!   [`restart_profile`] (settle after a restart), [`switch_load`] (slot length);
//! - attribution: [`design`] (fractional factorial designs), [`attribution`] (effects and
//!   advice);
//! - the numeric kit: [`stats_math`], [`kendall`], [`rng`]; for the tests only, `synth`
//!   (synthetic logs), `sim_fast` (a simulated host) and `tests`.
//!
//! Must not: read files, print, or depend on the controller; it gets records, returns numbers.

mod analyze;
pub(crate) mod attribution;
pub(crate) mod baseline;
pub(crate) mod bootstrap;
pub(crate) mod carryover;
pub(crate) mod design;
pub(crate) mod duet;
pub(crate) mod error;
pub(crate) mod estimate;
pub(crate) mod kendall;
pub(crate) mod mix;
pub(crate) mod paired;
pub(crate) mod phase_data;
pub(crate) mod restart_profile;
pub(crate) mod rng;
pub(crate) mod run;
pub(crate) mod stats_math;
pub(crate) mod switch_load;
pub(crate) mod weighted_hist;

#[cfg(test)]
pub(crate) mod sim_fast;
#[cfg(test)]
mod synth;
#[cfg(test)]
mod tests;

#[cfg(test)]
pub(crate) use analyze::analyze;
pub(crate) use analyze::analyze_with;
pub(crate) use carryover::CarryoverProfile;
pub(crate) use estimate::{Analysis, Estimate, Metric, Options};
pub(crate) use run::{analyze_run, RunAnalysis};
