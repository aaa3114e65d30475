//! An attribution run's plan: the groups asked for, fitted to the rows the server has (a group
//! the server lacks is reported and left out), the fractional factorial design over them
//! (`analysis::design`), its points as scenarios, and the slot order's units: each design point
//! next to its mirror, and [`BASE_PAIRS`] pairs of nothing instrumented next to global and
//! thread instrumentation only (the base every configuration with a group pays, and so every
//! prediction; measured in eight pairs a replicate, its interval is about 1.4 times the
//! groups', whose sixteen pairs each measure every group at once).
//!
//! Must not: talk to a server (the caller reads the rows) or run anything.

use std::time::Duration;

use crate::analysis::design::Design;
use crate::controller::error::{ControllerError, Result};
use crate::controller::model::catalog::Catalog;
use crate::controller::model::groups::{point_scenario, Group};
use crate::controller::model::setup_tables::SetupState;
use crate::phase_log::block_order;
use crate::phase_log::group_names::{BASE_CHECK, NONE_POINT};

/// Pairs of (nothing instrumented, base) in each replicate.
pub(crate) const BASE_PAIRS: usize = 8;

/// What `--attribute` asked for.
#[derive(Debug, Clone)]
pub(crate) struct AttributionPlan {
    /// The groups, in the order given (reports list them so).
    pub groups: Vec<Group>,
    /// Percent of throughput the advice may spend.
    pub budget: Option<f64>,
    /// Groups the advice must hold.
    pub need: Vec<String>,
    /// After the design: an A/B of the recommendation against nothing instrumented, this long.
    pub confirm: Option<Duration>,
    /// Set by [`fit`]: runs per replicate and the design's resolution (`None`: full factorial).
    pub runs: usize,
    pub resolution: Option<u32>,
    /// Set by [`fit`]: groups of the slot order, as indices into the run's scenarios.
    pub units: Vec<Vec<usize>>,
    /// Set by [`fit`]: the server's consumers (for the advice's my.cnf lines).
    pub consumers: Vec<String>,
}

impl AttributionPlan {
    pub(crate) fn new(groups: Vec<Group>, budget: Option<f64>, need: Vec<String>) -> Self {
        AttributionPlan {
            groups,
            budget,
            need,
            confirm: None,
            runs: 0,
            resolution: None,
            units: Vec::new(),
            consumers: Vec::new(),
        }
    }
}

/// The plan fitted to a server: the run's scenarios (the design's, in `catalog`) and what was
/// left out, for the log.
pub(crate) struct Fitted {
    pub scenarios: Vec<String>,
    pub notes: Vec<String>,
}

/// Fits the plan to the server's rows: leaves out (and says so) groups the server lacks
/// ([`Group::missing_kind`]), refuses if a needed group is among them or none is left, adds
/// the design's scenarios to `catalog` and returns them as the run's (the nothing-instrumented
/// check first, then every point), with the plan's slot units set.
pub(crate) fn fit(
    plan: &mut AttributionPlan,
    catalog: &mut Catalog,
    server: &SetupState,
) -> Result<Fitted> {
    let mut notes = Vec::new();
    let mut kept = Vec::new();
    for group in plan.groups.drain(..) {
        if let Some(kind) = group.missing_kind(server) {
            if plan.need.contains(&group.name) {
                return Err(ControllerError::Groups {
                    reason: format!(
                        "--need {}: this server has none of its {kind} ({}); it cannot be \
                         measured or recommended here",
                        group.name,
                        group
                            .instruments
                            .iter()
                            .chain(&group.consumers)
                            .cloned()
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                });
            }
            notes.push(format!(
                "group {} left out: this server has none of its {kind}",
                group.name
            ));
        } else {
            kept.push(group);
        }
    }
    if kept.is_empty() {
        return Err(ControllerError::Groups {
            reason: "this server has rows of none of the groups asked for".into(),
        });
    }
    plan.groups = kept;
    let design = Design::new(plan.groups.len()).map_err(|e| ControllerError::Groups {
        reason: e.to_string(),
    })?;
    // Which group takes which column decides which interactions share an alias chain, and
    // the points' names: it is shuffled by a seed every probe of a fleet derives alike from
    // the groups (a follower that takes over must run the leader's design points).
    let names: Vec<&str> = plan.groups.iter().map(|g| g.name.as_str()).collect();
    let column_of = block_order(plan.groups.len(), u64::MAX, design_seed(&names));
    let mut scenarios = vec![NONE_POINT.to_string(), BASE_CHECK.to_string()];
    let mut check = point_scenario(&[]);
    check.name = BASE_CHECK.to_string();
    check.description =
        "global and thread instrumentation only (the base), beside nothing instrumented".into();
    catalog.add_generated(check);
    let mut index_of_run = Vec::with_capacity(design.runs());
    for run in 0..design.runs() {
        let mask = design.point(run);
        let on: Vec<&Group> = plan
            .groups
            .iter()
            .enumerate()
            .filter(|(g, _)| mask & (1 << column_of[*g]) != 0)
            .map(|(_, g)| g)
            .collect();
        let scenario = point_scenario(&on);
        index_of_run.push(scenarios.len());
        scenarios.push(scenario.name.clone());
        catalog.add_generated(scenario);
    }
    plan.units = design
        .mirror_pairs()
        .into_iter()
        .map(|(a, b)| vec![index_of_run[a], index_of_run[b]])
        .chain((0..BASE_PAIRS).map(|_| vec![0, 1]))
        .collect();
    plan.runs = design.runs();
    plan.resolution = design.resolution();
    plan.consumers = server.consumers.iter().map(|c| c.name.clone()).collect();
    Ok(Fitted { scenarios, notes })
}

/// FNV-1a over the groups' names, in order: the same design for every probe given them.
fn design_seed(names: &[&str]) -> u64 {
    names
        .iter()
        .flat_map(|n| n.bytes().chain(std::iter::once(0)))
        .fold(0xcbf2_9ce4_8422_2325, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::model::groups::Groups;
    use crate::controller::model::setup_tables::tests::{c, i};
    use crate::controller::schedule::settings::ControllerSettings;
    use crate::phase_log::group_names::point_groups;

    fn server() -> SetupState {
        SetupState {
            consumers: vec![
                c("global_instrumentation", true),
                c("thread_instrumentation", true),
                c("events_statements_current", false),
                c("statements_digest", true),
                c("events_stages_current", false),
                c("events_waits_current", false),
            ],
            instruments: vec![
                i("statement/sql/select", true, Some(true)),
                i("stage/sql/init", false, Some(false)),
                i("wait/synch/mutex/sql/LOCK_open", false, Some(false)),
                i("memory/sql/THD", false, None),
            ],
        }
    }

    fn settings(groups: &[&str], need: &[&str]) -> ControllerSettings {
        let names: Vec<String> = groups.iter().map(|s| s.to_string()).collect();
        let mut s = super::super::settings::tests::settings(std::path::Path::new("/tmp"));
        s.attribution = Some(AttributionPlan::new(
            Groups::builtin().select(&names).unwrap(),
            Some(2.0),
            need.iter().map(|s| s.to_string()).collect(),
        ));
        s
    }

    #[test]
    fn fits_the_design_to_the_server_and_orders_slots_in_mirror_pairs() {
        let mut s = settings(
            &[
                "statements",
                "stages",
                "sync_waits",
                "memory",
                "transactions",
            ],
            &[],
        );
        let notes = s.fit_attribution(&server()).unwrap();
        assert_eq!(
            notes,
            ["group transactions left out: this server has none of its instruments"]
        );
        let plan = s.attribution.as_ref().unwrap();
        assert_eq!(plan.groups.len(), 4);
        assert_eq!((plan.runs, plan.resolution), (8, Some(4)));
        assert_eq!(s.scenarios.len(), 10, "none, base check + 8 points");
        assert_eq!(s.scenarios[..2], [NONE_POINT, BASE_CHECK]);
        // Every point is in the catalog and names its groups.
        for name in &s.scenarios[2..] {
            assert!(s.catalog.get(name).is_ok(), "{name}");
            assert!(point_groups(name).is_some(), "{name}");
        }
        let check = s.catalog.get(BASE_CHECK).unwrap();
        assert_eq!(check.settings, s.catalog.get("g:base").unwrap().settings);
        // Units: four mirror pairs, then four (none, base check) pairs.
        assert_eq!(plan.units.len(), 4 + BASE_PAIRS);
        let mut points: Vec<usize> = plan.units[..4].concat();
        points.sort_unstable();
        assert_eq!(points, (2..10).collect::<Vec<_>>());
        assert!(plan.units[4..].iter().all(|u| u == &[0, 1]));
        let mut saw_base = false;
        for u in &plan.units[..4] {
            let on: Vec<Vec<&str>> = u
                .iter()
                .map(|&i| point_groups(&s.scenarios[i]).unwrap())
                .collect();
            assert_eq!(on[0].len() + on[1].len(), 4, "mirrors: {on:?}");
            saw_base |= on[0].is_empty();
        }
        assert!(saw_base, "g:base pairs with every group on");
        assert_eq!(s.segment, s.phase, "one replicate per segment");
        assert_eq!(s.timeline().blocks_per_segment(), 1);
    }

    #[test]
    fn every_probe_derives_the_same_points_whatever_its_seed() {
        let groups = ["statements", "stages", "sync_waits", "memory"];
        let points = |seed: u64| {
            let mut s = settings(&groups, &[]);
            s.seed = seed;
            s.fit_attribution(&server()).unwrap();
            let mut names = s.scenarios.clone();
            names.sort();
            names
        };
        assert_eq!(points(1), points(99), "a leader and a follower agree");
    }

    #[test]
    fn a_needed_group_the_server_lacks_is_refused() {
        let mut s = settings(&["statements", "transactions"], &["transactions"]);
        let e = s.fit_attribution(&server()).unwrap_err().to_string();
        assert!(
            e.contains("--need transactions") && e.contains("none of its instruments"),
            "{e}"
        );
        let mut s = settings(&["transactions"], &[]);
        let e = s.fit_attribution(&server()).unwrap_err().to_string();
        assert!(e.contains("none of the groups"), "{e}");
    }
}
