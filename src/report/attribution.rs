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

use super::doc::{code, column, strong, text, Align, Block, Cell, Table};
use super::doc::{level_percent, statement};
use super::svg::{bars_with_whiskers, Bar};

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
pub(super) fn section(a: &Attribution, runs: &[RunRecord]) -> Vec<Block> {
    let (groups, _) = groups_of(runs);
    let plan = runs.iter().find_map(|r| r.attribution.as_ref());
    let design = match plan.and_then(|p| p.resolution) {
        Some(r) => format!("a two-level fractional factorial design of resolution {r}"),
        None => "a full two-level factorial design".to_string(),
    };
    let l = level_percent(a.level);
    let mut doc = vec![
        Block::Heading("Cost by instrument group".into()),
        Block::Paragraph(vec![
            text(format!(
                "{} groups measured together in {design}: {} design points a replicate, each run next to its mirror (every group flipped), {} replicates (segments) used{}. A group's cost is its main effect: the change when it is on, averaged over every setting of the others. {l}% intervals; ",
                a.groups.len(),
                a.points,
                a.segments,
                if a.incomplete_segments > 0 {
                    format!(", {} left out", a.incomplete_segments)
                } else {
                    String::new()
                }
            )),
            code("*"),
            text(" marks a significant change."),
        ]),
    ];
    let cpu = a.effects.iter().any(|e| e.metric == Metric::ServerCpu);
    let mut columns = vec![
        column("group", Align::Left),
        column("turns on", Align::Left),
        column(format!("statements/s change ({l}% CI)"), Align::Left),
        column(format!("mean latency change ({l}% CI)"), Align::Left),
    ];
    if cpu {
        columns.push(column("server CPU per statement change", Align::Left));
    }
    let mut t = Table::new(columns);
    let mut row = |name: &str, what: Cell, throughput: String, mean: String, server: String| {
        let mut cells = vec![name.into(), what, throughput.into(), mean.into()];
        if cpu {
            cells.push(server.into());
        }
        t.row(cells);
    };
    for e in a.by_cost() {
        let what = groups
            .iter()
            .find(|g| g.name == e.group)
            .map_or_else(String::new, |g| g.instruments.join(", "));
        row(
            &e.group,
            code(what).into(),
            pct(&e.effect),
            cell(a, &e.group, Metric::MeanLatency),
            cell(a, &e.group, Metric::ServerCpu),
        );
    }
    row(
        "base",
        "global and thread instrumentation (with any group)".into(),
        named(&a.base, Metric::Throughput),
        named(&a.base, Metric::MeanLatency),
        named(&a.base, Metric::ServerCpu),
    );
    row(
        "all groups (measured)",
        "every group above".into(),
        named(&a.all_on, Metric::Throughput),
        named(&a.all_on, Metric::MeanLatency),
        named(&a.all_on, Metric::ServerCpu),
    );
    doc.push(Block::Table(t));
    doc.push(Block::Paragraph(vec![
        text("The base and every group are measured against nothing instrumented ("),
        code("pfson_conoff_insoff"),
        text(format!(
            "), next to it in the same segments.{}",
            a.widest_halfwidth().map_or_else(String::new, |w| format!(
                " The widest group interval (statements/s, mean latency) is +-{w:.1} points."
            ))
        )),
    ]));
    if let Some(x) = a.additivity.iter().find(|x| x.metric == Metric::Throughput) {
        doc.push(Block::para(format!(
            "Additivity: every group on against no group on measured {:+.1}%, the sum of the main effects predicts {:+.1}%; {}",
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
        )));
    }
    let flagged: Vec<_> = a.interactions.iter().filter(|i| i.flagged).collect();
    if flagged.is_empty() {
        doc.push(Block::para(format!(
            "No two-factor interaction stands out ({} alias chains tested at a Bonferroni-corrected level, none both significant and half a point or more).",
            a.interactions.len()
        )));
    } else {
        doc.push(Block::para(
            "Interactions that matter (pairs that cost more, or less, together than apart; the design sees only each chain's sum):",
        ));
        let mut t = Table::new(vec![
            column("pairs (one alias chain)", Align::Left),
            column("statements/s effect", Align::Left),
        ]);
        for i in flagged {
            let pairs: Vec<String> = i.pairs.iter().map(|(a, b)| format!("{a} x {b}")).collect();
            t.row(vec![pairs.join(" = ").into(), pct(&i.effect).into()]);
        }
        doc.push(Block::Table(t));
    }
    if !a.digests.is_empty() {
        doc.push(Block::para(
            "Statements that pay most for the costliest groups (each statement's own mean latency change when the group is on):",
        ));
        let mut t = Table::new(vec![
            column("group", Align::Left),
            column("digest", Align::Left),
            column("statement", Align::Left),
            column("mean latency change", Align::Left),
        ]);
        for d in &a.digests {
            t.row(vec![
                d.group.as_str().into(),
                d.digest.as_str().into(),
                statement(d.text.as_deref().unwrap_or_default()).into(),
                pct(&d.effect).into(),
            ]);
        }
        doc.push(Block::Table(t));
    }
    for w in &a.warnings {
        doc.push(Block::Note(format!("warning: {w}")));
    }
    doc
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
pub(super) fn recommendation_section(r: &Recommendation) -> Vec<Block> {
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
    let mut doc = vec![
        Block::Heading("Recommendation".into()),
        Block::Paragraph(vec![
            text(format!(
                "Within a budget of {}% of statements/s{need}: ",
                r.budget
            )),
            strong(groups),
            text(format!(
                ", predicted to cost {} {} of throughput.",
                cost(r.predicted),
                cost_range(r.ci_low, r.ci_high)
            )),
        ]),
    ];
    if r.within_budget {
        doc.push(Block::para(format!(
            "Its cost at the upper end of its interval ({}) is within the budget; no richer set of groups is. The cheapest configuration with what is needed: {} at {} {}.",
            r.ci_high.map_or_else(|| "-".to_string(), cost),
            if r.cheapest.groups.is_empty() {
                "nothing".to_string()
            } else {
                r.cheapest.groups.join(", ")
            },
            cost(r.cheapest.predicted),
            cost_range(r.cheapest.ci_low, r.cheapest.ci_high)
        )));
    } else {
        doc.push(Block::Paragraph(vec![
            strong("Over the budget"),
            text(format!(
                ": what is needed alone may cost up to {}; nothing that holds it fits {}%. Raise the budget or need less.",
                r.ci_high.map_or_else(|| "-".to_string(), cost),
                r.budget
            )),
        ]));
    }
    if let Some(c) = &r.confirmed {
        let agree = match (c.ci_low, c.ci_high, r.ci_low, r.ci_high) {
            (Some(a), Some(b), Some(x), Some(y)) => a <= y && x <= b,
            _ => false,
        };
        doc.push(Block::para(format!(
            "Confirmed in this run: measured against nothing instrumented, it cost {} {} (predicted {}): {}.",
            cost(c.predicted),
            cost_range(c.ci_low, c.ci_high),
            cost(r.predicted),
            if agree {
                "the two intervals overlap"
            } else {
                "the measurement and the prediction disagree: trust the measurement"
            }
        )));
    }
    doc.extend([
        Block::para("At runtime (lost at the next restart):"),
        Block::Code {
            lang: "sql",
            lines: r.sql.clone(),
        },
        Block::para(
            "In my.cnf (instruments created at startup are only instrumented when enabled then):",
        ),
        Block::Code {
            lang: "ini",
            lines: r.mycnf.clone(),
        },
    ]);
    doc
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

/// What a terminal shows of an attribution: each group's cost, how precise the run's
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
