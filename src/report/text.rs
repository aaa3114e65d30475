//! Markdown, CSV and JSON renderings of the report.

use std::fmt::Write;

use crate::analysis::{Analysis, CarryoverProfile, Estimate};

use super::model::{HeadlineRow, Interval, Report};
use super::traffic::Traffic;

fn opt(i: &Option<Interval>) -> String {
    i.as_ref()
        .map_or_else(|| "baseline".to_string(), Interval::text)
}

/// A confidence level as people write it: 0.95 → "95", 0.999 → "99.9".
pub(super) fn level_percent(level: f64) -> String {
    let p = format!("{:.3}", level * 100.0);
    p.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// What a design is, in a heading.
pub(super) fn design_title(schedule: &str) -> &'static str {
    if schedule == "slow" {
        "Scenarios entered by a server restart (slow blocks)"
    } else {
        "Scenarios switched at runtime (fast schedule)"
    }
}

fn table(rows: &[&HeadlineRow], baseline: &str, level: f64) -> String {
    let cpu = rows.iter().any(|h| h.server_cpu_us_per_statement.is_some());
    let mut s = String::new();
    let l = level_percent(level);
    let _ = writeln!(
        s,
        "| scenario | statements/s | statements/s change vs {baseline} ({l}% CI) | p99 ms | p99 change ({l}% CI) | mean latency change ({l}% CI) |{}\n| --- | ---: | --- | ---: | --- | --- |{}",
        if cpu {
            format!(" server CPU µs/statement | server CPU change ({l}% CI) |")
        } else {
            String::new()
        },
        if cpu { " ---: | --- |" } else { "" },
    );
    for h in rows {
        let _ = write!(
            s,
            "| {} | {:.0} | {} | {:.3} | {} | {} |",
            h.scenario,
            h.qps,
            opt(&h.qps_change),
            h.p99_ms,
            opt(&h.p99_change),
            opt(&h.mean_change)
        );
        if cpu {
            let _ = write!(
                s,
                " {} | {} |",
                h.server_cpu_us_per_statement
                    .map_or_else(|| "-".to_string(), |v| format!("{v:.1}")),
                h.cpu_change
                    .as_ref()
                    .map_or_else(|| "-".to_string(), Interval::text)
            );
        }
        s.push('\n');
    }
    s
}

/// The headline tables alone (printed by `psprobe demo`): one per design.
pub(crate) fn headline_markdown(r: &Report) -> String {
    let mut s = String::new();
    for a in r.analysis.analyses() {
        let rows: Vec<&HeadlineRow> = r
            .headline
            .iter()
            .filter(|h| h.schedule == a.schedule)
            .collect();
        if r.analysis.slow.is_some() {
            let _ = writeln!(s, "{}:\n", design_title(&a.schedule));
        }
        s.push_str(&table(&rows, &a.baseline, r.analysis.level));
        s.push('\n');
    }
    s
}

fn design_intro(a: &Analysis) -> String {
    let unit = if a.schedule == "slow" {
        "slow blocks"
    } else {
        "segments"
    };
    format!(
        "Baseline: **{}** ({:?}). {} {unit} ({} complete), {}% intervals; `*` marks a significant change (the interval excludes 0). Latency changes are mix-adjusted.",
        a.baseline,
        a.baseline_rule,
        a.blocks,
        a.complete_blocks,
        level_percent(a.level)
    )
}

fn warnings(s: &mut String, a: &Analysis) {
    for w in &a.warnings {
        let _ = writeln!(s, "\n> warning: {w}");
    }
    for d in a.flagged_drift() {
        let _ = writeln!(
            s,
            "\n> drift: {} {}: the paired difference moves {:+.2}% per block (p = {:.3}); the average hides a trend.",
            d.scenario,
            d.metric.label(),
            d.slope_per_block * 100.0,
            d.p_value
        );
    }
}

fn change(e: &Option<Estimate>) -> String {
    e.as_ref()
        .map_or_else(|| "-".to_string(), |e| Interval::of(e).text())
}

fn carryover(s: &mut String, p: &CarryoverProfile) {
    let _ = writeln!(s, "\n## Carryover after a switch\n");
    match p.carryover_ms {
        None => {
            let _ = writeln!(
                s,
                "No carryover seen: from the first {} ms bin after a switch on, each scenario's latency and statement rate against {} are what they are in the steady state (the second half of the slots), within {:.0}% or their 99% interval. The settle time this supports: {} ms.",
                p.bin_ms,
                p.baseline,
                crate::analysis::carryover::TOLERANCE * 100.0,
                p.suggested_settle_ms
            );
        }
        Some(ms) => {
            let _ = writeln!(
                s,
                "Carryover seen: in the first {ms} ms after a switch, a scenario's latency or statement rate against {} differs from the steady state (99% interval, beyond {:.0}%). The settle time this supports: {} ms{}.",
                p.baseline,
                crate::analysis::carryover::TOLERANCE * 100.0,
                p.suggested_settle_ms,
                if p.reaches_steady {
                    "; the effect lasts into the second half of the slot: use a longer --phase"
                } else {
                    ""
                }
            );
        }
    }
    let _ = writeln!(
        s,
        "\nMean latency against {} in the same bin after the switch (the latency ratio in {} ms bins, over all switches) next to the steady ratio, and how the scenario's own statement rate dips after any switch (a disturbance every scenario shares, not carryover):\n",
        p.baseline, p.bin_ms
    );
    let _ = writeln!(
        s,
        "| scenario | ms after switch | latency vs {} | steady latency vs {} | rate vs own steady state |\n| --- | ---: | --- | --- | --- |",
        p.baseline, p.baseline
    );
    let pct = |c: &Option<crate::analysis::carryover::Change>| {
        c.map_or_else(
            || "-".to_string(),
            |c| {
                format!(
                    "{:+.1}% ({:+.1}..{:+.1}){}",
                    c.change * 100.0,
                    c.low * 100.0,
                    c.high * 100.0,
                    if c.deviates() { " †" } else { "" }
                )
            },
        )
    };
    for sp in &p.scenarios {
        for point in sp.points.iter().take(6) {
            let _ = writeln!(
                s,
                "| {} | {}-{} | {} | {} | {} |",
                sp.scenario,
                point.from_ms,
                point.from_ms + p.bin_ms,
                pct(&point.vs_baseline),
                pct(&sp.steady_vs_baseline),
                pct(&point.rate)
            );
        }
    }
}

pub(super) fn markdown(r: &Report) -> String {
    let a = &r.analysis;
    let mut s = String::new();
    let _ = writeln!(s, "# performance_schema overhead\n");
    for (log, lines) in &r.torn {
        let _ = writeln!(
            s,
            "> warning: {}: they were left out (a crash or a full disk tears the last line it \
             was writing).\n",
            crate::phase_log::describe_torn(lines, &log.display().to_string())
        );
    }
    if r.probes > 1 {
        let _ = writeln!(
            s,
            "Merged from the phase logs of {} probes of one schedule: each slot's counts and \
             histograms summed over the probes that saw it.\n",
            r.probes
        );
    }
    for analysis in a.analyses() {
        if a.slow.is_some() {
            let _ = writeln!(s, "## {}\n", design_title(&analysis.schedule));
        }
        let _ = writeln!(s, "{}\n", design_intro(analysis));
        let rows: Vec<&HeadlineRow> = r
            .headline
            .iter()
            .filter(|h| h.schedule == analysis.schedule)
            .collect();
        s.push_str(&table(&rows, &analysis.baseline, a.level));
        warnings(&mut s, analysis);
        s.push('\n');
    }
    if let Some(restarts) = &a.restarts {
        super::restarts::markdown(&mut s, restarts);
    }
    if let Some(attribution) = &a.attribution {
        super::attribution::markdown(&mut s, attribution, &r.runs);
    }
    if let Some(recommendation) = &a.recommendation {
        super::attribution::recommendation_markdown(&mut s, recommendation);
    }
    for w in &a.warnings {
        let _ = writeln!(s, "\n> warning: {w}");
    }
    if !a.startup.is_empty() {
        let _ = writeln!(
            s,
            "\n## Startup against runtime settings\n\nThe same settings set by server options at startup (`NAME@startup`, slow blocks) and flipped at runtime (fast schedule), each against {}. Instruments created at startup are only instrumented when enabled then, so the runtime figure can understate the cost.\n\n| scenario | metric | at runtime | at startup |\n| --- | --- | --- | --- |",
            a.startup[0].reference
        );
        for c in &a.startup {
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} |",
                c.scenario,
                c.metric.label(),
                change(&c.runtime),
                change(&c.startup)
            );
        }
    }
    if let Some(p) = &a.carryover {
        carryover(&mut s, p);
    }
    if !a.switches.is_empty() {
        let _ = writeln!(
            s,
            "\n## What the switches cost\n\nEach switch (the scenario's UPDATEs on the setup tables, then a read-back check) runs at the start of a slot, before the settle time, and is never measured.\n\n| into scenario | switches | mean ms | max ms | statements per switch | share of its slots |\n| --- | ---: | ---: | ---: | ---: | ---: |"
        );
        for w in &a.switches {
            let _ = writeln!(
                s,
                "| {} | {} | {:.1} | {:.1} | {:.1} | {} |",
                w.scenario,
                w.switches,
                w.mean_ms,
                w.max_ms,
                w.statements_per_switch,
                w.share_of_slot
                    .map_or_else(|| "-".to_string(), |v| format!("{:.1}%", v * 100.0))
            );
        }
        if let [first, .., last] = a.slot_lengths_ms.as_slice() {
            let _ = writeln!(
                s,
                "\nThe slots were lengthened as the run went, {first} ms to {last} ms ({}), \
                 so that switching takes about a fifth of a slot (the share above counts every \
                 slot; `--phase` keeps one length).",
                a.slot_lengths_ms
                    .iter()
                    .map(|ms| format!("{ms} ms"))
                    .collect::<Vec<_>>()
                    .join(" -> ")
            );
        }
    }
    let _ = writeln!(s, "\n## Digests hurt most\n\n| scenario | digest | statement | baseline mean ms | mean ms | change | added ms/s |\n| --- | --- | --- | ---: | ---: | ---: | ---: |");
    for d in &r.digests {
        let text: String = d.text.chars().take(80).collect();
        let _ = writeln!(
            s,
            "| {} | {} | `{}` | {:.3} | {:.3} | {:+.1}% | {:.2} |",
            d.scenario,
            d.digest,
            text.replace('|', "\\|").replace('`', "'"),
            d.baseline_mean_ms,
            d.scenario_mean_ms,
            d.change_percent,
            d.added_ms_per_s
        );
    }
    if let Some(t) = &r.traffic {
        traffic(&mut s, t);
    }
    claims(&mut s, &r.claims);
    const TIMELINE_ROWS: usize = 60;
    let _ = writeln!(s, "\n## Timeline\n");
    if r.timeline.len() > TIMELINE_ROWS {
        let _ = writeln!(
            s,
            "The first {TIMELINE_ROWS} of {} records (a record is one scenario's slots in one segment); `psprobe report --format json` has them all.\n",
            r.timeline.len()
        );
    }
    let _ = writeln!(s, "| schedule | phase | block | scenario | from s | to s | statements/s | mean ms | restarted |\n| --- | ---: | ---: | --- | ---: | ---: | ---: | ---: | --- |");
    for t in r.timeline.iter().take(TIMELINE_ROWS) {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {:.1} | {:.1} | {:.0} | {:.3} | {} |",
            t.schedule,
            t.phase,
            t.block,
            t.scenario,
            t.from_s,
            t.to_s,
            t.qps,
            t.mean_ms,
            t.restarted
        );
    }
    s
}

/// Rows someone else set during the run: kept as set, left out of every later switch (the
/// scenarios measured after it differ from their definition in those rows), never restored.
fn claims(s: &mut String, claims: &[crate::phase_log::ClaimRecord]) {
    if claims.is_empty() {
        return;
    }
    let _ = writeln!(
        s,
        "\n## Settings someone else changed during the run\n\n{} setup-table row(s) were set by \
         someone other than psprobe while it ran (at runtime, or by a restart psprobe did not \
         make). psprobe kept each as it was set, left it out of every later switch (so the \
         scenarios measured after it hold that value there, whatever their definition says) and \
         did not put it back at the end.\n\n| seen at (UTC) | setting | set to | psprobe had | how |\n| --- | --- | --- | --- | --- |",
        claims.len()
    );
    for c in claims {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} |",
            crate::timestamp::rfc3339(c.at_ms / 1000),
            c.setting.replace('|', "\\|"),
            c.value,
            c.psprobe_left,
            c.origin.replace('_', " ")
        );
    }
}

/// The run's traffic: the exact counts, measured or not (the JSON has every digest).
fn traffic(s: &mut String, t: &Traffic) {
    const ROWS: usize = 15;
    let probes = if t.probes == 1 {
        "the probe".to_string()
    } else {
        format!("{} probes", t.probes)
    };
    let _ = writeln!(
        s,
        "\n## Traffic during the run\n\nEvery command {probes} relayed while taking part in the schedule, in every scenario and outside the measured windows too: {} statements ({} commands, {} errors) over {:.0} s, {} digests. These counts are exact: summed over a fleet they are what the server's statement digest table counts from the same clients.\n",
        t.statements,
        t.commands,
        t.errors,
        t.to_ms.saturating_sub(t.from_ms) as f64 / 1000.0,
        t.digests.len()
    );
    for missing in &t.missing {
        let _ = writeln!(
            s,
            "> warning: {} has no traffic record (its probe did not end its run: killed?); these counts leave out what it relayed.\n",
            missing.display()
        );
    }
    if t.digests.len() > ROWS {
        let _ = writeln!(
            s,
            "The {ROWS} most frequent; `psprobe report --format json` has them all.\n"
        );
    }
    let _ = writeln!(
        s,
        "| digest | statement | count | errors | mean ms |\n| --- | --- | ---: | ---: | ---: |"
    );
    for d in t.digests.iter().take(ROWS) {
        let text: String = d.text.chars().take(80).collect();
        let _ = writeln!(
            s,
            "| {} | `{}` | {} | {} | {:.3} |",
            d.digest,
            text.replace('|', "\\|").replace('`', "'"),
            d.count,
            d.errors,
            d.mean_ms
        );
    }
}

pub(super) fn csv(r: &Report) -> String {
    let mut s = String::from("schedule,scenario,metric,baseline,ratio,ci_low,ci_high,significant,n_blocks,baseline_value,scenario_value\n");
    for e in r.analysis.estimates() {
        let f = |v: Option<f64>| v.map_or(String::new(), |v| format!("{v}"));
        let _ = writeln!(
            s,
            "{},{},{},{},{},{},{},{},{},{},{}",
            e.schedule,
            e.scenario,
            e.metric.label(),
            e.baseline,
            e.ratio,
            f(e.ci_low),
            f(e.ci_high),
            e.significant,
            e.n_blocks,
            e.baseline_value,
            e.scenario_value
        );
    }
    s
}

/// The report as JSON. An attribution's group costs are `analysis.attribution` (a list of
/// objects with `group`, `metric`, `ratio`, `ci_low`, `ci_high`, like the estimates), the rest
/// of it (base, all on, interactions, additivity, digests) `analysis.attribution_details`.
pub(super) fn json(r: &Report) -> anyhow::Result<String> {
    let mut value = serde_json::to_value(r)?;
    if let Some(analysis) = value.get_mut("analysis").and_then(|a| a.as_object_mut()) {
        if let Some(mut details) = analysis.remove("attribution").filter(|d| !d.is_null()) {
            let effects = details
                .as_object_mut()
                .and_then(|d| d.remove("effects"))
                .unwrap_or_default();
            analysis.insert("attribution".into(), effects);
            analysis.insert("attribution_details".into(), details);
        }
    }
    Ok(serde_json::to_string_pretty(&value)?)
}
