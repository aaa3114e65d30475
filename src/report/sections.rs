//! The report's sections as a document (doc.rs), built from its model: the headline tables
//! per design with their warnings, restarts, instrument groups and advice, startup against
//! runtime settings, carryover, what the switches cost, the digests, the traffic, settings
//! someone else changed, and the timeline. Markdown and HTML both render this.
//!
//! Must not: compute an estimate (that is `analysis`) or write markdown or HTML itself.

use crate::analysis::{Analysis, CarryoverProfile, Estimate};

use super::doc::{
    code, column, level_percent, statement, strong, text, Align, Block, Cell, Span, Table,
};
use super::model::{HeadlineRow, Interval, Report};
use super::traffic::Traffic;

/// The report's title: the first heading of the markdown, the `<h1>` of the page.
pub(super) const TITLE: &str = "performance_schema overhead";

fn opt(i: &Option<Interval>) -> String {
    i.as_ref()
        .map_or_else(|| "baseline".to_string(), Interval::text)
}

/// What a design is, in a heading.
pub(super) fn design_title(schedule: &str) -> &'static str {
    if schedule == "slow" {
        "Scenarios entered by a server restart (slow blocks)"
    } else {
        "Scenarios switched at runtime (fast schedule)"
    }
}

/// One design's headline table: a row per scenario.
pub(super) fn headline_table(rows: &[&HeadlineRow], baseline: &str, level: f64) -> Table {
    let cpu = rows.iter().any(|h| h.server_cpu_us_per_statement.is_some());
    let l = level_percent(level);
    let mut columns = vec![
        column("scenario", Align::Left),
        column("statements/s", Align::Right),
        column(
            format!("statements/s change vs {baseline} ({l}% CI)"),
            Align::Left,
        ),
        column("p99 ms", Align::Right),
        column(format!("p99 change ({l}% CI)"), Align::Left),
        column(format!("mean latency change ({l}% CI)"), Align::Left),
    ];
    if cpu {
        columns.push(column("server CPU µs/statement", Align::Right));
        columns.push(column(format!("server CPU change ({l}% CI)"), Align::Left));
    }
    let mut t = Table::new(columns);
    for h in rows {
        let mut cells: Vec<Cell> = vec![
            h.scenario.as_str().into(),
            format!("{:.0}", h.qps).into(),
            opt(&h.qps_change).into(),
            format!("{:.3}", h.p99_ms).into(),
            opt(&h.p99_change).into(),
            opt(&h.mean_change).into(),
        ];
        if cpu {
            cells.push(
                h.server_cpu_us_per_statement
                    .map_or_else(|| "-".to_string(), |v| format!("{v:.1}"))
                    .into(),
            );
            cells.push(
                h.cpu_change
                    .as_ref()
                    .map_or_else(|| "-".to_string(), Interval::text)
                    .into(),
            );
        }
        t.row(cells);
    }
    t
}

/// The rows of one design's headline table.
pub(super) fn headline_rows<'a>(r: &'a Report, a: &Analysis) -> Vec<&'a HeadlineRow> {
    r.headline
        .iter()
        .filter(|h| h.schedule == a.schedule)
        .collect()
}

fn design_intro(a: &Analysis) -> Block {
    let unit = if a.schedule == "slow" {
        "slow blocks"
    } else {
        "segments"
    };
    Block::Paragraph(vec![
        text("Baseline: "),
        strong(a.baseline.as_str()),
        text(format!(
            " ({:?}). {} {unit} ({} complete), {}% intervals; ",
            a.baseline_rule,
            a.blocks,
            a.complete_blocks,
            level_percent(a.level)
        )),
        code("*"),
        text(" marks a significant change (the interval excludes 0). Latency changes are mix-adjusted."),
    ])
}

fn warnings(doc: &mut Vec<Block>, a: &Analysis) {
    for w in &a.warnings {
        doc.push(Block::Note(format!("warning: {w}")));
    }
    for d in a.flagged_drift() {
        doc.push(Block::Note(format!(
            "drift: {} {}: the paired difference moves {:+.2}% per block (p = {:.3}); the average hides a trend.",
            d.scenario,
            d.metric.label(),
            d.slope_per_block * 100.0,
            d.p_value
        )));
    }
}

fn change(e: &Option<Estimate>) -> String {
    e.as_ref()
        .map_or_else(|| "-".to_string(), |e| Interval::of(e).text())
}

fn carryover(doc: &mut Vec<Block>, p: &CarryoverProfile) {
    doc.push(Block::Heading("Carryover after a switch".into()));
    doc.push(Block::para(match p.carryover_ms {
        None => format!(
            "No carryover seen: from the first {} ms bin after a switch on, each scenario's latency and statement rate against {} are what they are in the steady state (the second half of the slots), within {:.0}% or their 99% interval. The settle time this supports: {} ms.",
            p.bin_ms,
            p.baseline,
            crate::analysis::carryover::TOLERANCE * 100.0,
            p.suggested_settle_ms
        ),
        Some(ms) => format!(
            "Carryover seen: in the first {ms} ms after a switch, a scenario's latency or statement rate against {} differs from the steady state (99% interval, beyond {:.0}%). The settle time this supports: {} ms{}.",
            p.baseline,
            crate::analysis::carryover::TOLERANCE * 100.0,
            p.suggested_settle_ms,
            if p.reaches_steady {
                "; the effect lasts into the second half of the slot: use a longer --phase"
            } else {
                ""
            }
        ),
    }));
    doc.push(Block::para(format!(
        "Mean latency against {} in the same bin after the switch (the latency ratio in {} ms bins, over all switches) next to the steady ratio, and how the scenario's own statement rate dips after any switch (a disturbance every scenario shares, not carryover):",
        p.baseline, p.bin_ms
    )));
    let mut t = Table::new(vec![
        column("scenario", Align::Left),
        column("ms after switch", Align::Right),
        column(format!("latency vs {}", p.baseline), Align::Left),
        column(format!("steady latency vs {}", p.baseline), Align::Left),
        column("rate vs own steady state", Align::Left),
    ]);
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
            t.row(vec![
                sp.scenario.as_str().into(),
                format!("{}-{}", point.from_ms, point.from_ms + p.bin_ms).into(),
                pct(&point.vs_baseline).into(),
                pct(&sp.steady_vs_baseline).into(),
                pct(&point.rate).into(),
            ]);
        }
    }
    doc.push(Block::Table(t));
}

fn startup(doc: &mut Vec<Block>, a: &crate::analysis::RunAnalysis) {
    let Some(first) = a.startup.first() else {
        return;
    };
    doc.push(Block::Heading("Startup against runtime settings".into()));
    doc.push(Block::Paragraph(vec![
        text("The same settings set by server options at startup ("),
        code("NAME@startup"),
        text(format!(
            ", slow blocks) and flipped at runtime (fast schedule), each against {}. Instruments created at startup are only instrumented when enabled then, so the runtime figure can understate the cost.",
            first.reference
        )),
    ]));
    let mut t = Table::new(vec![
        column("scenario", Align::Left),
        column("metric", Align::Left),
        column("at runtime", Align::Left),
        column("at startup", Align::Left),
    ]);
    for c in &a.startup {
        t.row(vec![
            c.scenario.as_str().into(),
            c.metric.label().into(),
            change(&c.runtime).into(),
            change(&c.startup).into(),
        ]);
    }
    doc.push(Block::Table(t));
}

fn switches(doc: &mut Vec<Block>, a: &crate::analysis::RunAnalysis) {
    if a.switches.is_empty() {
        return;
    }
    doc.push(Block::Heading("What the switches cost".into()));
    doc.push(Block::para(
        "Each switch (the scenario's UPDATEs on the setup tables, then a read-back check) runs at the start of a slot, before the settle time, and is never measured.",
    ));
    let mut t = Table::new(vec![
        column("into scenario", Align::Left),
        column("switches", Align::Right),
        column("mean ms", Align::Right),
        column("max ms", Align::Right),
        column("statements per switch", Align::Right),
        column("share of its slots", Align::Right),
    ]);
    for w in &a.switches {
        t.row(vec![
            w.scenario.as_str().into(),
            w.switches.to_string().into(),
            format!("{:.1}", w.mean_ms).into(),
            format!("{:.1}", w.max_ms).into(),
            format!("{:.1}", w.statements_per_switch).into(),
            w.share_of_slot
                .map_or_else(|| "-".to_string(), |v| format!("{:.1}%", v * 100.0))
                .into(),
        ]);
    }
    doc.push(Block::Table(t));
    if let [first, .., last] = a.slot_lengths_ms.as_slice() {
        doc.push(Block::Paragraph(vec![
            text(format!(
                "The slots were lengthened as the run went, {first} ms to {last} ms ({}), \
                 so that switching takes about a fifth of a slot (the share above counts every \
                 slot; ",
                a.slot_lengths_ms
                    .iter()
                    .map(|ms| format!("{ms} ms"))
                    .collect::<Vec<_>>()
                    .join(" -> ")
            )),
            code("--phase"),
            text(" keeps one length)."),
        ]));
    }
}

fn digests(doc: &mut Vec<Block>, r: &Report) {
    doc.push(Block::Heading("Digests hurt most".into()));
    let mut t = Table::new(vec![
        column("scenario", Align::Left),
        column("digest", Align::Left),
        column("statement", Align::Left),
        column("baseline mean ms", Align::Right),
        column("mean ms", Align::Right),
        column("change", Align::Right),
        column("added ms/s", Align::Right),
    ]);
    for d in &r.digests {
        t.row(vec![
            d.scenario.as_str().into(),
            d.digest.as_str().into(),
            statement(&d.text).into(),
            format!("{:.3}", d.baseline_mean_ms).into(),
            format!("{:.3}", d.scenario_mean_ms).into(),
            format!("{:+.1}%", d.change_percent).into(),
            format!("{:.2}", d.added_ms_per_s).into(),
        ]);
    }
    doc.push(Block::Table(t));
}

/// Where `psprobe report --format json` has every row a table leaves out.
fn all_in_json() -> Span {
    code("psprobe report --format json")
}

fn timeline(doc: &mut Vec<Block>, r: &Report) {
    const TIMELINE_ROWS: usize = 60;
    doc.push(Block::Heading("Timeline".into()));
    if r.timeline.len() > TIMELINE_ROWS {
        doc.push(Block::Paragraph(vec![
            text(format!(
                "The first {TIMELINE_ROWS} of {} records (a record is one scenario's slots in one segment); ",
                r.timeline.len()
            )),
            all_in_json(),
            text(" has them all."),
        ]));
    }
    let mut t = Table::new(vec![
        column("schedule", Align::Left),
        column("phase", Align::Right),
        column("block", Align::Right),
        column("scenario", Align::Left),
        column("from s", Align::Right),
        column("to s", Align::Right),
        column("statements/s", Align::Right),
        column("mean ms", Align::Right),
        column("restarted", Align::Left),
    ]);
    for row in r.timeline.iter().take(TIMELINE_ROWS) {
        t.row(vec![
            row.schedule.as_str().into(),
            row.phase.to_string().into(),
            row.block.to_string().into(),
            row.scenario.as_str().into(),
            format!("{:.1}", row.from_s).into(),
            format!("{:.1}", row.to_s).into(),
            format!("{:.0}", row.qps).into(),
            format!("{:.3}", row.mean_ms).into(),
            row.restarted.to_string().into(),
        ]);
    }
    doc.push(Block::Table(t));
}

/// Every section of the report, in order, below its title.
pub(super) fn document(r: &Report) -> Vec<Block> {
    let a = &r.analysis;
    let mut doc = Vec::new();
    for (log, lines) in &r.torn {
        doc.push(Block::Note(format!(
            "warning: {}: they were left out (a crash or a full disk tears the last line it \
             was writing).",
            crate::phase_log::describe_torn(lines, &log.display().to_string())
        )));
    }
    if r.probes > 1 {
        doc.push(Block::para(format!(
            "Merged from the phase logs of {} probes of one schedule: each slot's counts and \
             histograms summed over the probes that saw it.",
            r.probes
        )));
    }
    for analysis in a.analyses() {
        if a.slow.is_some() {
            doc.push(Block::Heading(design_title(&analysis.schedule).into()));
        }
        doc.push(design_intro(analysis));
        doc.push(Block::Table(headline_table(
            &headline_rows(r, analysis),
            &analysis.baseline,
            a.level,
        )));
        warnings(&mut doc, analysis);
    }
    if let Some(restarts) = &a.restarts {
        doc.extend(super::restarts::section(restarts));
    }
    if let Some(attribution) = &a.attribution {
        doc.extend(super::attribution::section(attribution, &r.runs));
    }
    if let Some(recommendation) = &a.recommendation {
        doc.extend(super::attribution::recommendation_section(recommendation));
    }
    for w in &a.warnings {
        doc.push(Block::Note(format!("warning: {w}")));
    }
    startup(&mut doc, a);
    if let Some(p) = &a.carryover {
        carryover(&mut doc, p);
    }
    switches(&mut doc, a);
    digests(&mut doc, r);
    if let Some(t) = &r.traffic {
        traffic(&mut doc, t);
    }
    claims(&mut doc, &r.claims);
    timeline(&mut doc, r);
    doc
}

/// Rows someone else set during the run: kept as set, left out of every later switch (the
/// scenarios measured after it differ from their definition in those rows), never restored.
fn claims(doc: &mut Vec<Block>, claims: &[crate::phase_log::ClaimRecord]) {
    if claims.is_empty() {
        return;
    }
    doc.push(Block::Heading(
        "Settings someone else changed during the run".into(),
    ));
    doc.push(Block::para(format!(
        "{} setup-table row(s) were set by \
         someone other than psprobe while it ran (at runtime, or by a restart psprobe did not \
         make). psprobe kept each as it was set, left it out of every later switch (so the \
         scenarios measured after it hold that value there, whatever their definition says) and \
         did not put it back at the end.",
        claims.len()
    )));
    let mut t = Table::new(vec![
        column("seen at (UTC)", Align::Left),
        column("setting", Align::Left),
        column("set to", Align::Left),
        column("psprobe had", Align::Left),
        column("how", Align::Left),
    ]);
    for c in claims {
        t.row(vec![
            crate::timestamp::rfc3339(c.at_ms / 1000).into(),
            c.setting.as_str().into(),
            c.value.as_str().into(),
            c.psprobe_left.as_str().into(),
            c.origin.replace('_', " ").into(),
        ]);
    }
    doc.push(Block::Table(t));
}

/// The run's traffic: the exact counts, measured or not (the JSON has every digest).
fn traffic(doc: &mut Vec<Block>, t: &Traffic) {
    const ROWS: usize = 15;
    let probes = if t.probes == 1 {
        "the probe".to_string()
    } else {
        format!("{} probes", t.probes)
    };
    doc.push(Block::Heading("Traffic during the run".into()));
    doc.push(Block::para(format!(
        "Every command {probes} relayed while taking part in the schedule, in every scenario and outside the measured windows too: {} statements ({} commands, {} errors) over {:.0} s, {} digests. These counts are exact: summed over a fleet they are what the server's statement digest table counts from the same clients.",
        t.statements,
        t.commands,
        t.errors,
        t.to_ms.saturating_sub(t.from_ms) as f64 / 1000.0,
        t.digests.len()
    )));
    for missing in &t.missing {
        doc.push(Block::Note(format!(
            "warning: {} has no traffic record (its probe did not end its run: killed?); these counts leave out what it relayed.",
            missing.display()
        )));
    }
    if t.digests.len() > ROWS {
        doc.push(Block::Paragraph(vec![
            text(format!("The {ROWS} most frequent; ")),
            all_in_json(),
            text(" has them all."),
        ]));
    }
    let mut table = Table::new(vec![
        column("digest", Align::Left),
        column("statement", Align::Left),
        column("count", Align::Right),
        column("errors", Align::Right),
        column("mean ms", Align::Right),
    ]);
    for d in t.digests.iter().take(ROWS) {
        table.row(vec![
            d.digest.as_str().into(),
            statement(&d.text).into(),
            d.count.to_string().into(),
            d.errors.to_string().into(),
            format!("{:.3}", d.mean_ms).into(),
        ]);
    }
    doc.push(Block::Table(table));
}
