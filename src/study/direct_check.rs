//! `psprobe experiment --direct-check N`: after a run with pfsoff, the same comparison without
//! psprobe on the same server (restart OFF, sysbench; restart ON with the reference's settings,
//! sysbench; in random order), set beside psprobe's estimate (slow blocks, or the duet's).
//!
//! Must not: leave the server in any state but performance_schema ON.

use anyhow::Context;

use crate::controller::model::catalog::Catalog;
use crate::demo::sysbench;
use crate::demo::throwaway;
use crate::demo::Plan;

/// A direct sequential A/B of pfsoff against the slow reference on `server`, without psprobe;
/// returns one line setting it beside psprobe's slow estimate.
#[allow(clippy::too_many_arguments)]
pub(super) fn direct_check(
    server: &throwaway::Throwaway,
    tables: &sysbench::Tables,
    workload: &str,
    threads: u32,
    plan: &Plan,
    catalog: &Catalog,
    scenarios: &[String],
    psprobe: &str,
    reps: u32,
) -> anyhow::Result<String> {
    use crate::analysis::paired::t_interval;
    use crate::analysis::rng::Rng;
    let reference = crate::controller::schedule::args::default_slow_reference(catalog, scenarios)
        .context("pfsoff needs a runtime scenario to compare with")?;
    let statements = catalog.get(&reference)?.sql().unwrap_or_default();
    let measure = plan
        .slow_phase
        .saturating_sub(plan.restart_settle)
        .as_secs()
        .max(1);
    let mut rng = Rng::new(plan.seed.unwrap_or(7) ^ 0xd1ec7);
    let mut log_ratios = Vec::new();
    for _ in 0..reps {
        let mut qps = [0.0f64; 2]; // [off, on]
        let first_on = rng.below(2) == 1;
        for on in [first_on, !first_on] {
            server.restart(on)?;
            if on {
                for sql in &statements {
                    server.sql(&format!("{sql};"))?;
                }
            }
            std::thread::sleep(plan.restart_settle);
            qps[usize::from(on)] =
                sysbench::run_for(&server.addr(), workload, tables, threads, measure)?;
        }
        log_ratios.push((qps[1] / qps[0]).ln());
    }
    server.restart(true)?;
    let direct = t_interval(&log_ratios, 0.95).context("no repetition")?;
    let pct = |x: f64| x.exp_m1() * 100.0;
    let direct_text = match direct.bounds {
        Some((lo, hi)) => format!(
            "{:+.1}% ({:+.1}..{:+.1})",
            pct(direct.center),
            pct(lo),
            pct(hi)
        ),
        None => format!("{:+.1}%", pct(direct.center)),
    };
    Ok(format!(
        "{reference} vs pfsoff: {psprobe}; direct sequential {direct_text} over {reps} repetitions"
    ))
}

/// psprobe's slow estimate of the reference against pfsoff in `report`, as the direct check
/// line sets it beside its own.
pub(super) fn slow_estimate(
    catalog: &Catalog,
    scenarios: &[String],
    report: &crate::report::Report,
) -> String {
    let reference = crate::controller::schedule::args::default_slow_reference(catalog, scenarios)
        .unwrap_or_default();
    let text = report
        .analysis
        .slow
        .as_ref()
        .and_then(|a| a.estimate(&reference, crate::analysis::Metric::Throughput))
        .map_or_else(
            || "no estimate".to_string(),
            |e| crate::report::Interval::of(e).text(),
        );
    format!("psprobe (slow blocks) {text}")
}
