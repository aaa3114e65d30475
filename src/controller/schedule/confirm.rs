//! `--confirm`: after an attribution's design, the recommended configuration is measured
//! directly, in a fast A/B against nothing instrumented in the same run, so the report shows
//! its measured cost beside the predicted one. This file turns the design's records into the
//! confirmation's settings (two scenarios, its own duration); the leader runs them like any
//! fast schedule.
//!
//! Must not: talk to a server or decide anything the analysis decides (the advice is
//! `analysis::attribution`'s).

use std::time::Duration;

use super::settings::ControllerSettings;
use crate::analysis::{analyze_run, Options};
use crate::controller::model::groups::{advice_scenario, Group};
use crate::phase_log::group_names::NONE_POINT;
use crate::phase_log::PhaseRecord;

/// Segments of the confirmation (several pairs of 250 ms slots each).
const SEGMENT: Duration = Duration::from_secs(5);

/// The confirmation's settings, and the line that announces it; `None` when the run asks for
/// none, or the advice is to turn no group on (nothing to confirm: it is the reference).
pub(crate) fn plan(
    s: &ControllerSettings,
    design_records: &[PhaseRecord],
) -> Option<(ControllerSettings, String)> {
    let plan = s.attribution.as_ref()?;
    let duration = plan.confirm?;
    let budget = plan.budget?;
    let options = Options {
        headline_only: true,
        budget: Some(budget),
        need: plan.need.clone(),
        ..Options::default()
    };
    let advice = match analyze_run(design_records, None, &options) {
        Ok(a) => a.recommendation?,
        Err(e) => {
            tracing::info!("no recommendation to confirm: {e}");
            return None;
        }
    };
    if advice.groups.is_empty() {
        tracing::info!(
            "the advice within {budget}% is no group at all: nothing to confirm against \
             nothing instrumented"
        );
        return None;
    }
    let on: Vec<&Group> = advice
        .groups
        .iter()
        .filter_map(|name| plan.groups.iter().find(|g| g.name == *name))
        .collect();
    let scenario = advice_scenario(&on);
    let note = format!(
        "confirming the recommendation ({}: predicted cost {:.1}% ({:.1}..{:.1})) against \
         nothing instrumented for {}s",
        advice.groups.join(", "),
        advice.predicted * 100.0,
        advice.ci_low.unwrap_or(f64::NAN) * 100.0,
        advice.ci_high.unwrap_or(f64::NAN) * 100.0,
        duration.as_secs()
    );
    let mut confirm = s.clone();
    confirm.scenarios = vec![NONE_POINT.to_string(), scenario.name.clone()];
    confirm.catalog.add_generated(scenario);
    confirm.attribution = None;
    confirm.duration = Some(duration);
    confirm.blocks = None;
    confirm.target_halfwidth = None;
    confirm.segment = SEGMENT;
    Some((confirm, note))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::model::groups::Groups;
    use crate::controller::schedule::attribution::AttributionPlan;

    #[test]
    fn nothing_to_confirm_without_a_budget_or_a_confirmation() {
        let mut s =
            crate::controller::schedule::settings::tests::settings(std::path::Path::new("/tmp"));
        assert!(plan(&s, &[]).is_none(), "not an attribution");
        let groups = Groups::builtin()
            .select(&["statements".to_string()])
            .unwrap();
        s.attribution = Some(AttributionPlan::new(groups, Some(2.0), Vec::new()));
        assert!(plan(&s, &[]).is_none(), "no --confirm");
        s.attribution.as_mut().unwrap().confirm = Some(Duration::from_secs(60));
        assert!(plan(&s, &[]).is_none(), "no records: no advice");
    }
}
