//! The restart profile: how the statement rate comes back after a server restart, from the
//! slow phases' rate bins (statements finished through the proxy in each 250 ms bin after the
//! first successful query), and how long the restarts' parts took.
//!
//! Each phase's bins are divided by its own steady rate (the mean of its last third, well inside
//! its measured window), so phases of different scenarios and loads line up; then per second
//! (four bins), the mean over phases and its standard error. The rate is steady from the first
//! second after which every second's mean is within [`TOLERANCE`] of 1, widened by two standard
//! errors (a busy host's rate varies by a fifth from one 250 ms bin to the next: without that,
//! noise alone would keep the rate from ever counting as steady). The settle time this supports
//! is the start of that second (at least one): the measured window begins where the data say
//! the restart is over, not at a guess.
//!
//! Must not: read files or choose anything itself (the leader applies the suggestion).

use std::collections::BTreeMap;

use serde::Serialize;

use crate::phase_log::{PhaseRecord, SLOW};

use super::stats_math::{mean, sd};

/// A bin's mean rate within this share of steady counts as steady.
pub(crate) const TOLERANCE: f64 = 0.05;
/// Bins of a phase whose mean is its steady rate: its last third.
const STEADY_SHARE: f64 = 1.0 / 3.0;
/// The shortest settle time suggested.
const MIN_SETTLE_MS: u64 = 1000;
/// Bins are judged in windows this long.
const WINDOW_MS: u64 = 1000;

/// The medians of one scenario's restarts (ms).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct RestartParts {
    pub scenario: String,
    pub restarts: usize,
    /// Until the server refused connections.
    pub stop_ms: Option<f64>,
    /// From then until it accepted them again.
    pub start_ms: Option<f64>,
    /// The restart command's own run time.
    pub command_ms: f64,
    /// Until the first successful query with the setting asked for.
    pub first_query_ms: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct RestartProfile {
    pub bin_ms: u64,
    /// Slow phases with a rate profile behind it.
    pub phases: usize,
    /// Per bin after the first query: (ms from it to the bin's start, mean rate as a share of
    /// the steady rate).
    pub points: Vec<(u64, f64)>,
    /// From here (ms after the first query) every bin is within the tolerance of steady;
    /// `None`: only the last bins are.
    pub steady_after_ms: Option<u64>,
    /// The settle time this supports (ms after the first query).
    pub suggested_settle_ms: u64,
    /// Settle times the phases used (min, max), ms.
    pub settle_used_ms: (u64, u64),
    pub parts: Vec<RestartParts>,
}

fn median(mut xs: Vec<f64>) -> Option<f64> {
    if xs.is_empty() {
        return None;
    }
    xs.sort_by(f64::total_cmp);
    let n = xs.len();
    Some(if n % 2 == 1 {
        xs[n / 2]
    } else {
        (xs[n / 2 - 1] + xs[n / 2]) / 2.0
    })
}

/// The profile of the slow records that carry restart bins; `None` when none does.
pub(crate) fn restart_profile(records: &[PhaseRecord]) -> Option<RestartProfile> {
    let restarts: Vec<(&PhaseRecord, &crate::phase_log::RestartRecord)> = records
        .iter()
        .filter(|r| r.schedule() == SLOW && r.failure.is_none())
        .filter_map(|r| Some((r, r.restart.as_ref()?)))
        .collect();
    if restarts.is_empty() {
        return None;
    }
    let bin_ms = restarts[0].1.bin_ms.max(1);
    let normalized: Vec<Vec<f64>> = restarts
        .iter()
        .filter(|(_, x)| x.bin_ms == bin_ms && x.after.len() >= 3)
        .filter_map(|(_, x)| {
            let tail = ((x.after.len() as f64 * STEADY_SHARE).ceil() as usize).max(1);
            let steady = x.after[x.after.len() - tail..].iter().sum::<u64>() as f64 / tail as f64;
            (steady > 0.0).then(|| x.after.iter().map(|c| *c as f64 / steady).collect())
        })
        .collect();
    let shortest = normalized.iter().map(Vec::len).min().unwrap_or(0);
    let points: Vec<(u64, f64)> = (0..shortest)
        .filter_map(|b| {
            let at: Vec<f64> = normalized.iter().map(|n| n[b]).collect();
            Some((b as u64 * bin_ms, mean(&at)?))
        })
        .collect();
    // Per window of about a second: each phase's mean rate in it, then over phases.
    let per_window = ((WINDOW_MS / bin_ms) as usize).max(1);
    let windows: Vec<(f64, f64)> = (0..shortest / per_window)
        .filter_map(|w| {
            let at: Vec<f64> = normalized
                .iter()
                .filter_map(|n| mean(&n[w * per_window..(w + 1) * per_window]))
                .collect();
            let m = mean(&at)?;
            let se = sd(&at).map_or(0.0, |s| s / (at.len() as f64).sqrt());
            Some((m, se))
        })
        .collect();
    // The first window from which every later one is within the tolerance (and its noise).
    let steady_from = (0..windows.len()).find(|&w| {
        windows[w..]
            .iter()
            .all(|(m, se)| (m - 1.0).abs() <= TOLERANCE + 2.0 * se)
    });
    let window_ms = per_window as u64 * bin_ms;
    let steady_after_ms = steady_from
        .filter(|&w| w + 1 < windows.len())
        .map(|w| w as u64 * window_ms);
    let suggested_settle_ms = match steady_after_ms {
        Some(ms) => ms.max(MIN_SETTLE_MS),
        None => windows.len() as u64 * window_ms,
    };
    let settles: Vec<u64> = restarts.iter().map(|(_, x)| x.settle_ms).collect();
    let mut by: BTreeMap<&str, Vec<&crate::phase_log::RestartRecord>> = BTreeMap::new();
    for (r, x) in &restarts {
        by.entry(r.scenario.as_str()).or_default().push(x);
    }
    let parts = by
        .into_iter()
        .map(|(scenario, xs)| {
            let of = |f: &dyn Fn(&crate::phase_log::RestartRecord) -> Option<u64>| {
                median(xs.iter().filter_map(|x| f(x)).map(|v| v as f64).collect())
            };
            RestartParts {
                scenario: scenario.to_string(),
                restarts: xs.len(),
                stop_ms: of(&|x| x.stop_ms),
                start_ms: of(&|x| x.start_ms),
                command_ms: of(&|x| Some(x.command_ms)).unwrap_or(0.0),
                first_query_ms: of(&|x| Some(x.first_query_ms)).unwrap_or(0.0),
            }
        })
        .collect();
    Some(RestartProfile {
        bin_ms,
        phases: normalized.len(),
        points,
        steady_after_ms,
        suggested_settle_ms,
        settle_used_ms: (
            settles.iter().copied().min().unwrap_or(0),
            settles.iter().copied().max().unwrap_or(0),
        ),
        parts,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::phase_log::RestartRecord;

    /// A slow phase whose rate ramps up over `ramp` bins to `steady` per bin, then holds.
    fn phase(scenario: &str, ramp: usize, steady: u64, bins: usize) -> PhaseRecord {
        let after = (0..bins)
            .map(|b| {
                if b < ramp {
                    steady * b as u64 / ramp as u64
                } else {
                    steady
                }
            })
            .collect();
        PhaseRecord {
            kind: "phase".into(),
            scenario: scenario.into(),
            schedule: Some(SLOW.into()),
            restart: Some(RestartRecord {
                stop_ms: Some(400),
                start_ms: Some(300),
                command_ms: 900,
                first_query_ms: 1100,
                settle_ms: 5000,
                bin_ms: 250,
                after,
            }),
            ..PhaseRecord::default()
        }
    }

    #[test]
    fn the_settle_starts_where_the_rate_is_back_to_steady() {
        // Rates of different sizes ramp over 8 bins (2 s): the first two seconds are below
        // steady, the third on is steady.
        let records = vec![
            phase("pfsoff", 8, 1000, 48),
            phase("pfson_conoff_insoff", 8, 600, 48),
            phase("pfsoff", 8, 1100, 40),
        ];
        let p = restart_profile(&records).unwrap();
        assert_eq!(p.phases, 3);
        assert_eq!(p.points.len(), 40, "the shortest phase's bins");
        assert_eq!(p.steady_after_ms, Some(2000));
        assert_eq!(p.suggested_settle_ms, 2000);
        assert!((p.points[4].1 - 0.5).abs() < 1e-9);
        assert_eq!(p.parts.len(), 2);
        let off = p.parts.iter().find(|x| x.scenario == "pfsoff").unwrap();
        assert_eq!((off.scenario.as_str(), off.restarts), ("pfsoff", 2));
        assert_eq!((off.stop_ms, off.first_query_ms), (Some(400.0), 1100.0));
    }

    #[test]
    fn noise_alone_does_not_keep_the_rate_from_steady() {
        // Steady from the start, with bins that swing by 30% from one to the next.
        let noisy = |scenario: &str, seed: u64| {
            let mut p = phase(scenario, 1, 1000, 40);
            let r = p.restart.as_mut().unwrap();
            let mut x = seed;
            for c in &mut r.after {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                *c = 700 + (x >> 33) % 600;
            }
            p
        };
        let records: Vec<PhaseRecord> = (0..6).map(|i| noisy("a", i + 1)).collect();
        let p = restart_profile(&records).unwrap();
        assert!(p.steady_after_ms.is_some_and(|ms| ms <= 1000), "{p:?}");
    }

    #[test]
    fn a_fast_recovery_still_settles_a_second_and_a_never_steady_one_says_so() {
        // Only the first 250 ms bin is empty: steady from the second second on.
        let p = restart_profile(&[phase("a", 1, 1000, 20), phase("b", 1, 1000, 20)]).unwrap();
        assert_eq!(p.steady_after_ms, Some(1000));
        assert_eq!(p.suggested_settle_ms, MIN_SETTLE_MS);
        // Still climbing at the end: steady only in its last second.
        let p = restart_profile(&[phase("a", 30, 1000, 20), phase("b", 30, 900, 20)]).unwrap();
        assert_eq!(p.steady_after_ms, None);
        assert_eq!(p.suggested_settle_ms, 20 * 250);
        assert!(restart_profile(&[PhaseRecord::default()]).is_none());
    }
}
