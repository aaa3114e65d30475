//! The report's "Cost by instrument group" and "Recommendation" sections: the attribution's
//! table (costliest group first), the base and every group on, the additivity check, flagged
//! interactions, the statements that pay most, and the advice with the SQL and my.cnf lines
//! that set it (made here from the run record's group definitions, so a report needs no config
//! file); and the HTML chart of the groups' costs.
//!
//! Must not: compute estimates (that is `analysis::attribution`).

use std::fmt::Write;

use crate::analysis::attribution::{Attribution, Effect, Recommendation};
use crate::analysis::Metric;
use crate::controller::model::groups::{advice_scenario, Group, Groups};
use crate::controller::model::scenario::Source;
use crate::controller::model::startup::{options, startup_of};
use crate::phase_log::{GroupRecord, RunRecord};

use super::svg::{bars_with_whiskers, Bar};
use super::text::level_percent;

/// The group definitions of the run (its run record's), else the built-in ones.
fn groups_of(runs: &[RunRecord]) -> (Vec<Group>, Vec<String>) {
    let Some(plan) = runs.iter().find_map(|r| r.attribution.as_ref()) else {
        return (Groups::builtin().iter().cloned().collect(), Vec::new());
    };
    let groups = plan
        .groups
        .iter()
        .map(|g: &GroupRecord| Group {
            name: g.name.clone(),
            description: g.description.clone(),
            source: Source::Builtin,
            consumers: g.consumers.clone(),
            instruments: g.instruments.clone(),
        })
        .collect();
    (groups, plan.consumers.clone())
}

/// Fills the recommendation's SQL (runtime) and my.cnf lines (startup) from the groups.
pub(super) fn complete(recommendation: &mut Recommendation, runs: &[RunRecord]) {
    let (groups, consumers) = groups_of(runs);
    let on: Vec<&Group> = recommendation
        .groups
        .iter()
        .filter_map(|n| groups.iter().find(|g| g.name == *n))
        .collect();
    let scenario = advice_scenario(&on);
    recommendation.sql = scenario
        .sql()
        .unwrap_or_default()
        .into_iter()
        .map(|s| format!("{s};"))
        .collect();
    let consumers = if consumers.is_empty() {
        // An older log without the server's consumers: the ones the groups name.
        let mut names: Vec<String> = crate::controller::model::groups::ALWAYS_WITH_A_GROUP
            .iter()
            .map(|s| s.to_string())
            .collect();
        for g in &groups {
            names.extend(g.consumers.iter().filter(|c| !c.contains('%')).cloned());
        }
        names.dedup();
        names
    } else {
        consumers
    };
    recommendation.mycnf = match startup_of(&scenario).and_then(|s| options(&s, &consumers)) {
        Ok(opts) => std::iter::once("[mysqld]".to_string())
            .chain(opts.iter().map(|o| o.trim_start_matches("--").to_string()))
            .collect(),
        Err(e) => vec![format!("# no my.cnf form: {e}")],
    };
}

fn pct(e: &Effect) -> String {
    match (e.ci_low, e.ci_high) {
        (Some(lo), Some(hi)) => format!(
            "{:+.1}% ({:+.1}..{:+.1}){}",
            e.ratio * 100.0,
            lo * 100.0,
            hi * 100.0,
            if e.significant { " *" } else { "" }
        ),
        _ => format!("{:+.1}% (no interval)", e.ratio * 100.0),
    }
}

fn cell(a: &Attribution, group: &str, metric: Metric) -> String {
    a.effect(group, metric)
        .map_or_else(|| "-".to_string(), |e| pct(&e.effect))
}

fn named(list: &[crate::analysis::attribution::GroupEffect], metric: Metric) -> String {
    list.iter()
        .find(|e| e.metric == metric)
        .map_or_else(|| "-".to_string(), |e| pct(&e.effect))
}

/// "Cost by instrument group".
pub(super) fn markdown(s: &mut String, a: &Attribution, runs: &[RunRecord]) {
    let (groups, _) = groups_of(runs);
    let plan = runs.iter().find_map(|r| r.attribution.as_ref());
    let design = match plan.and_then(|p| p.resolution) {
        Some(r) => format!("a two-level fractional factorial design of resolution {r}"),
        None => "a full two-level factorial design".to_string(),
    };
    let l = level_percent(a.level);
    let _ = writeln!(
        s,
        "\n## Cost by instrument group\n\n{} groups measured together in {design}: {} design points a replicate, each run next to its mirror (every group flipped), {} replicates (segments) used{}. A group's cost is its main effect: the change when it is on, averaged over every setting of the others. {l}% intervals; `*` marks a significant change.\n",
        a.groups.len(),
        a.points,
        a.segments,
        if a.incomplete_segments > 0 {
            format!(", {} left out", a.incomplete_segments)
        } else {
            String::new()
        }
    );
    let cpu = a.effects.iter().any(|e| e.metric == Metric::ServerCpu);
    let _ = writeln!(
        s,
        "| group | turns on | statements/s change ({l}% CI) | mean latency change ({l}% CI) |{}\n| --- | --- | --- | --- |{}",
        if cpu { " server CPU per statement change |" } else { "" },
        if cpu { " --- |" } else { "" }
    );
    let row = |s: &mut String, name: &str, what: &str, t: String, m: String, c: String| {
        let _ = write!(s, "| {name} | {what} | {t} | {m} |");
        if cpu {
            let _ = write!(s, " {c} |");
        }
        s.push('\n');
    };
    for e in a.by_cost() {
        let what = groups
            .iter()
            .find(|g| g.name == e.group)
            .map_or_else(String::new, |g| g.instruments.join(", "));
        row(
            s,
            &e.group,
            &format!("`{what}`"),
            pct(&e.effect),
            cell(a, &e.group, Metric::MeanLatency),
            cell(a, &e.group, Metric::ServerCpu),
        );
    }
    row(
        s,
        "base",
        "global and thread instrumentation (with any group)",
        named(&a.base, Metric::Throughput),
        named(&a.base, Metric::MeanLatency),
        named(&a.base, Metric::ServerCpu),
    );
    row(
        s,
        "all groups (measured)",
        "every group above",
        named(&a.all_on, Metric::Throughput),
        named(&a.all_on, Metric::MeanLatency),
        named(&a.all_on, Metric::ServerCpu),
    );
    let _ = writeln!(
        s,
        "\nThe base and every group are measured against nothing instrumented (`pfson_conoff_insoff`), next to it in the same segments.{}",
        a.widest_halfwidth().map_or_else(String::new, |w| format!(
            " The widest group interval (statements/s, mean latency) is +-{w:.1} points."
        ))
    );
    if let Some(x) = a.additivity.iter().find(|x| x.metric == Metric::Throughput) {
        let _ = writeln!(
            s,
            "\nAdditivity: every group on against no group on measured {:+.1}%, the sum of the main effects predicts {:+.1}%; {}",
            x.measured * 100.0,
            x.predicted * 100.0,
            if x.agrees {
                format!(
                    "they agree (difference {}). Two-factor interactions cancel from this check in a fold-over design; those that matter are below.",
                    pct(&x.difference)
                )
            } else {
                format!(
                    "they differ by {}: groups interact beyond pairs, so a configuration's predicted cost is approximate; confirm it (--confirm).",
                    pct(&x.difference)
                )
            }
        );
    }
    let flagged: Vec<_> = a.interactions.iter().filter(|i| i.flagged).collect();
    if flagged.is_empty() {
        let _ = writeln!(
            s,
            "\nNo two-factor interaction stands out ({} alias chains tested at a Bonferroni-corrected level, none both significant and half a point or more).",
            a.interactions.len()
        );
    } else {
        let _ = writeln!(
            s,
            "\nInteractions that matter (pairs that cost more, or less, together than apart; the design sees only each chain's sum):\n\n| pairs (one alias chain) | statements/s effect |\n| --- | --- |"
        );
        for i in flagged {
            let pairs: Vec<String> = i.pairs.iter().map(|(a, b)| format!("{a} x {b}")).collect();
            let _ = writeln!(s, "| {} | {} |", pairs.join(" = "), pct(&i.effect));
        }
    }
    if !a.digests.is_empty() {
        let _ = writeln!(
            s,
            "\nStatements that pay most for the costliest groups (each statement's own mean latency change when the group is on):\n\n| group | digest | statement | mean latency change |\n| --- | --- | --- | --- |"
        );
        for d in &a.digests {
            let text: String = d
                .text
                .clone()
                .unwrap_or_default()
                .chars()
                .take(80)
                .collect();
            let _ = writeln!(
                s,
                "| {} | {} | `{}` | {} |",
                d.group,
                d.digest,
                text.replace('|', "\\|").replace('`', "'"),
                pct(&d.effect)
            );
        }
    }
    for w in &a.warnings {
        let _ = writeln!(s, "\n> warning: {w}");
    }
}

fn cost(p: f64) -> String {
    format!("{:.1}%", p * 100.0)
}

fn cost_range(lo: Option<f64>, hi: Option<f64>) -> String {
    match (lo, hi) {
        (Some(lo), Some(hi)) => format!("({}..{})", cost(lo), cost(hi)),
        _ => "(no interval)".to_string(),
    }
}

/// "Recommendation".
pub(super) fn recommendation_markdown(s: &mut String, r: &Recommendation) {
    let need = if r.need.is_empty() {
        String::new()
    } else {
        format!(", holding {}", r.need.join(", "))
    };
    let groups = if r.groups.is_empty() {
        "no group at all (performance_schema on, nothing instrumented)".to_string()
    } else {
        r.groups.join(", ")
    };
    let _ = writeln!(
        s,
        "\n## Recommendation\n\nWithin a budget of {}% of statements/s{need}: **{groups}**, predicted to cost {} {} of throughput.",
        r.budget,
        cost(r.predicted),
        cost_range(r.ci_low, r.ci_high)
    );
    if r.within_budget {
        let _ = writeln!(
            s,
            "\nIts cost at the upper end of its interval ({}) is within the budget; no richer set of groups is. The cheapest configuration with what is needed: {} at {} {}.",
            r.ci_high.map_or_else(|| "-".to_string(), cost),
            if r.cheapest.groups.is_empty() {
                "nothing".to_string()
            } else {
                r.cheapest.groups.join(", ")
            },
            cost(r.cheapest.predicted),
            cost_range(r.cheapest.ci_low, r.cheapest.ci_high)
        );
    } else {
        let _ = writeln!(
            s,
            "\n**Over the budget**: what is needed alone may cost up to {}; nothing that holds it fits {}%. Raise the budget or need less.",
            r.ci_high.map_or_else(|| "-".to_string(), cost),
            r.budget
        );
    }
    if let Some(c) = &r.confirmed {
        let agree = match (c.ci_low, c.ci_high, r.ci_low, r.ci_high) {
            (Some(a), Some(b), Some(x), Some(y)) => a <= y && x <= b,
            _ => false,
        };
        let _ = writeln!(
            s,
            "\nConfirmed in this run: measured against nothing instrumented, it cost {} {} (predicted {}): {}.",
            cost(c.predicted),
            cost_range(c.ci_low, c.ci_high),
            cost(r.predicted),
            if agree {
                "the two intervals overlap"
            } else {
                "the measurement and the prediction disagree: trust the measurement"
            }
        );
    }
    let _ = writeln!(
        s,
        "\nAt runtime (lost at the next restart):\n\n```sql\n{}\n```\n\nIn my.cnf (instruments created at startup are only instrumented when enabled then):\n\n```ini\n{}\n```",
        r.sql.join("\n"),
        r.mycnf.join("\n")
    );
}

/// The groups' throughput costs as sorted bars with whiskers.
pub(super) fn chart(a: &Attribution) -> String {
    let mut bars: Vec<Bar> = a
        .by_cost()
        .iter()
        .map(|e| Bar {
            label: e.group.clone(),
            value: e.effect.ratio * 100.0,
            low: e.effect.ci_low.map(|v| v * 100.0),
            high: e.effect.ci_high.map(|v| v * 100.0),
            note: None,
        })
        .collect();
    for (label, list) in [("base", &a.base), ("all groups (measured)", &a.all_on)] {
        if let Some(e) = list.iter().find(|e| e.metric == Metric::Throughput) {
            bars.push(Bar {
                label: label.to_string(),
                value: e.effect.ratio * 100.0,
                low: e.effect.ci_low.map(|v| v * 100.0),
                high: e.effect.ci_high.map(|v| v * 100.0),
                note: None,
            });
        }
    }
    bars_with_whiskers(
        &format!(
            "Cost by instrument group: statements/s change when the group is on ({}% interval)",
            level_percent(a.level)
        ),
        "%",
        &bars,
    )
}

/// What `psprobe demo` prints of an attribution: each group's cost, how precise the run's
/// minutes made it, and the advice.
pub(super) fn summary(a: &crate::analysis::RunAnalysis) -> String {
    let mut s = String::new();
    let Some(att) = &a.attribution else {
        return "no instrument group measured (no complete replicate of the design)".into();
    };
    let _ = writeln!(
        s,
        "Cost by instrument group ({} replicates of a {}-point design; statements/s change when the group is on, {}% interval):\n",
        att.segments,
        att.points,
        level_percent(att.level)
    );
    let _ = writeln!(
        s,
        "| group | statements/s change | mean latency change |\n| --- | --- | --- |"
    );
    for e in att.by_cost() {
        let _ = writeln!(
            s,
            "| {} | {} | {} |",
            e.group,
            pct(&e.effect),
            cell(att, &e.group, Metric::MeanLatency)
        );
    }
    let _ = writeln!(
        s,
        "| base (global + thread instrumentation) | {} | {} |",
        named(&att.base, Metric::Throughput),
        named(&att.base, Metric::MeanLatency)
    );
    if let Some(w) = att.widest_halfwidth() {
        let _ = writeln!(
            s,
            "\nPrecision: every group within +-{w:.1} points after these minutes; intervals narrow with the square root of the time (four times as long: half as wide)."
        );
    }
    if let Some(r) = &a.recommendation {
        let _ = writeln!(
            s,
            "\nAdvice within {}% of statements/s: {} (predicted {} {}){}.",
            r.budget,
            if r.groups.is_empty() {
                "no group".to_string()
            } else {
                r.groups.join(", ")
            },
            cost(r.predicted),
            cost_range(r.ci_low, r.ci_high),
            r.confirmed.as_ref().map_or_else(String::new, |c| format!(
                "; measured when confirmed: {} {}",
                cost(c.predicted),
                cost_range(c.ci_low, c.ci_high)
            ))
        );
    }
    s
}
