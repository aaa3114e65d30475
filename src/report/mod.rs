//! `psprobe report PHASE_LOG...`: the overhead of each scenario against the baseline, as
//! markdown, CSV, JSON or a self-contained HTML page with inline SVG charts. Several logs of
//! one schedule (a fleet of probes) are merged slot by slot first (merge.rs).
//!
//! Must not: compute estimates itself (that is `analysis`) or talk to a server.

mod attribution;
pub(crate) mod curves;
pub(crate) mod doc;
pub(crate) mod duet;
mod html;
mod merge;
mod model;
mod restarts;
mod sections;
pub(crate) mod svg;
mod text;
mod traffic;

use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::{Args, ValueEnum};

use crate::analysis::{analyze_run, Options};
use crate::phase_log::{parse_log, PhaseRecord, RunRecord};

/// The report page's look, for pages that look like it.
pub(crate) use html::STYLE;
pub(crate) use model::{build, Interval, Report};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Format {
    Md,
    Csv,
    Json,
    Html,
}

#[derive(Debug, Args)]
pub(crate) struct ReportArgs {
    /// Phase logs written by `psprobe proxy --scenarios ...` (JSON Lines): one, or those of
    /// every probe of one schedule (leader and followers), merged slot by slot; or the two
    /// logs of a duet run (side a's and side b's: the duet's report, markdown or JSON); a
    /// directory stands for its *.jsonl files, `-` for standard input. Logs of different runs
    /// are refused.
    #[arg(required = true, value_name = "PHASE_LOG")]
    pub phase_logs: Vec<PathBuf>,
    /// Output format [default: from the -o extension, else md].
    #[arg(long, value_enum)]
    pub format: Option<Format>,
    /// Write here instead of standard output.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// The scenario the runtime-switched ones are compared with [default: the least
    /// instrumented scheduled]. Scenarios entered by restart are compared with pfsoff, else
    /// with their reference.
    #[arg(long, value_name = "SCENARIO")]
    pub baseline: Option<String>,
    /// Confidence level of every interval, and so of every "significant" call: between 0.5
    /// and 0.999. At 0.95 a scenario with no real effect is called significant 5% of the time.
    #[arg(long, value_name = "LEVEL", default_value_t = 0.95, value_parser = parse_level)]
    pub confidence: f64,
    /// For a log of `psprobe proxy --attribute`: recommend the richest set of instrument
    /// groups whose predicted throughput cost, at the upper end of its interval, stays within
    /// P percent [default: the run's --budget, if it had one].
    #[arg(long, value_name = "P")]
    pub budget: Option<f64>,
    /// With --budget: groups the recommendation must hold [default: the run's --need].
    #[arg(long, value_delimiter = ',', value_name = "GROUP,...")]
    pub need: Vec<String>,
}

fn parse_level(s: &str) -> Result<f64, String> {
    let level: f64 = s
        .parse()
        .map_err(|_| format!("{s:?} is not a number; give a level such as 0.95"))?;
    if (0.5..=0.999).contains(&level) {
        Ok(level)
    } else {
        Err(format!(
            "{level} is outside 0.5..0.999; give a level such as 0.95 (not 95)"
        ))
    }
}

/// `format`, else the one `path`'s extension names, else markdown.
fn format_for(format: Option<Format>, path: Option<&Path>) -> Format {
    format.unwrap_or_else(
        || match path.and_then(|p| p.extension()).and_then(|e| e.to_str()) {
            Some("html") | Some("htm") => Format::Html,
            Some("csv") => Format::Csv,
            Some("json") => Format::Json,
            _ => Format::Md,
        },
    )
}

fn format_of(args: &ReportArgs) -> Format {
    format_for(args.format, args.output.as_deref())
}

pub(crate) fn render(report: &Report, format: Format) -> anyhow::Result<String> {
    Ok(match format {
        Format::Md => text::markdown(report),
        Format::Csv => text::csv(report),
        Format::Json => text::json(report)?,
        Format::Html => html::html(report),
    })
}

/// The HTML report as a page of its own: `head` in its head (a title at least), `top` first in
/// its body (the live page's title, script and status line around the same charts).
pub(crate) fn html_page(report: &Report, head: &str, top: &str) -> String {
    html::page(report, head, top)
}

pub(crate) fn report_of(phases: &[PhaseRecord], baseline: Option<&str>) -> anyhow::Result<Report> {
    report_at(phases, &[], baseline, &Options::default())
}

/// The report of a run: its phases analysed, and what its run records say (an attribution's
/// groups, its budget and needs when `options` gives none).
fn report_of_run(
    phases: &[PhaseRecord],
    runs: &[RunRecord],
    baseline: Option<&str>,
) -> anyhow::Result<Report> {
    report_at(phases, runs, baseline, &Options::default())
}

fn report_at(
    phases: &[PhaseRecord],
    runs: &[RunRecord],
    baseline: Option<&str>,
    options: &Options,
) -> anyhow::Result<Report> {
    let mut options = options.clone();
    if options.budget.is_none() {
        if let Some(plan) = runs.iter().find_map(|r| r.attribution.as_ref()) {
            options.budget = plan.budget;
            if options.need.is_empty() {
                options.need = plan.need.clone();
            }
        }
    }
    if options.budget.is_none() && !options.need.is_empty() {
        anyhow::bail!("--need goes with --budget (the throughput percent the advice may spend)");
    }
    let mut analysis = analyze_run(phases, baseline, &options)?;
    if let Some(r) = analysis.recommendation.as_mut() {
        attribution::complete(r, runs);
    }
    let mut report = build(analysis, phases);
    report.runs = runs.to_vec();
    Ok(report)
}

/// Every log named on the command line: files, the *.jsonl files of directories, stdin.
fn read_logs(paths: &[PathBuf]) -> anyhow::Result<Vec<merge::NamedLog>> {
    let mut files = Vec::new();
    for path in paths {
        if path.is_dir() {
            let mut inside: Vec<PathBuf> = std::fs::read_dir(path)
                .with_context(|| format!("cannot list {}", path.display()))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
                .collect();
            if inside.is_empty() {
                anyhow::bail!("{} holds no *.jsonl phase log", path.display());
            }
            inside.sort();
            files.extend(inside);
        } else {
            files.push(path.clone());
        }
    }
    files
        .into_iter()
        .map(|name| {
            let text = if name.as_os_str() == "-" {
                std::io::read_to_string(std::io::stdin()).context("cannot read standard input")?
            } else {
                std::fs::read_to_string(&name)
                    .with_context(|| format!("cannot read the phase log {}", name.display()))?
            };
            Ok(merge::NamedLog {
                name,
                contents: parse_log(&text),
            })
        })
        .collect()
}

pub(crate) fn run(args: &ReportArgs) -> anyhow::Result<()> {
    let logs = read_logs(&args.phase_logs)?;
    let traffic = traffic::sum(&logs);
    let torn: Vec<(PathBuf, Vec<usize>)> = logs
        .iter()
        .filter(|l| !l.contents.torn.is_empty())
        .map(|l| (l.name.clone(), l.contents.torn.clone()))
        .collect();
    for (log, lines) in &torn {
        eprintln!(
            "psprobe: warning: {}: left out of the report",
            crate::phase_log::describe_torn(lines, &log.display().to_string())
        );
    }
    let claims: Vec<crate::phase_log::ClaimRecord> = logs
        .iter()
        .flat_map(|l| l.contents.claims.iter().cloned())
        .collect();
    let runs: Vec<RunRecord> = logs
        .iter()
        .flat_map(|l| l.contents.runs.iter().cloned())
        .collect();
    let sides: std::collections::BTreeSet<&str> =
        runs.iter().filter_map(|r| r.duet_side.as_deref()).collect();
    if sides.len() > 1 {
        return duet_report(args, &logs);
    }
    let phases = merge::merge(logs)?;
    if let Some(p) = args.budget {
        if !(p > 0.0 && p <= 100.0) {
            anyhow::bail!("--budget {p}: give the percent of throughput you accept to lose, more than 0 and at most 100 (e.g. 2)");
        }
    }
    let options = Options {
        level: args.confidence,
        budget: args.budget,
        need: args.need.clone(),
        ..Options::default()
    };
    let mut report = report_at(&phases, &runs, args.baseline.as_deref(), &options)?;
    report.traffic = traffic;
    report.claims = claims;
    report.torn = torn;
    let text = render(&report, format_of(args))?;
    match &args.output {
        Some(path) => std::fs::write(path, text)
            .with_context(|| format!("cannot write {}", path.display()))?,
        None => print!("{text}"),
    }
    Ok(())
}

/// Both sides' logs of a duet run (`psprobe proxy --duet-upstream`, `psprobe duet`): the
/// duet's report, markdown or JSON.
fn duet_report(args: &ReportArgs, logs: &[merge::NamedLog]) -> anyhow::Result<()> {
    let side = |label: &str| {
        let of: Vec<&merge::NamedLog> = logs
            .iter()
            .filter(|l| {
                l.contents
                    .runs
                    .iter()
                    .any(|r| r.duet_side.as_deref() == Some(label))
            })
            .collect();
        match of[..] {
            [one] => Ok(&one.contents),
            _ => Err(anyhow::anyhow!(
                "these logs are sides of a duet run: give its two logs, side a's and side b's, and nothing else ({} of side {label} given)",
                of.len()
            )),
        }
    };
    let (a, b) = (side("a")?, side("b")?);
    if logs.len() != 2 {
        anyhow::bail!("these logs are sides of a duet run: give its two logs, side a's and side b's, and nothing else ({} given)", logs.len());
    }
    if let (Some(asked), Some(reference)) = (&args.baseline, duet::reference(a)) {
        if asked != reference {
            anyhow::bail!("--baseline {asked}: a duet compares every scenario with its reference, {reference}, in the same seconds; leave --baseline out");
        }
    }
    let (doc, comparisons) = duet::render([a, b], "");
    let text = match format_of(args) {
        Format::Md => doc,
        Format::Json => {
            serde_json::to_string_pretty(&comparisons).context("cannot encode the duet")? + "\n"
        }
        other => anyhow::bail!(
            "a duet's report is markdown or JSON, not {}; give --format md or json (or one side's log alone for its phases as sequential restart pairs)",
            format!("{other:?}").to_lowercase()
        ),
    };
    match &args.output {
        Some(path) => std::fs::write(path, text)
            .with_context(|| format!("cannot write {}", path.display()))?,
        None => print!("{text}"),
    }
    Ok(())
}

/// A report written to a file, and what a terminal shows of it: for a run of instrument
/// groups each group's cost, the precision and the advice, else the headline tables.
pub(crate) struct WrittenReport {
    pub path: PathBuf,
    pub summary: String,
}

/// The summary, then where the report is.
impl std::fmt::Display for WrittenReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "\n{}\nreport: {}", self.summary, self.path.display())
    }
}

/// The report of a phase log's phases and runs, written to `path` in `format` (else the one
/// its extension names, else markdown).
pub(crate) fn write_report(
    phases: &[PhaseRecord],
    runs: &[RunRecord],
    path: &Path,
    format: Option<Format>,
) -> anyhow::Result<WrittenReport> {
    let report = report_of_run(phases, runs, None)?;
    let text = render(&report, format_for(format, Some(path)))?;
    std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))?;
    let summary = if runs.iter().any(|r| r.attribution.is_some()) {
        attribution::summary(&report.analysis)
    } else {
        text::headline_markdown(&report)
    };
    Ok(WrittenReport {
        path: std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf()),
        summary,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::Metric;
    use crate::phase_log::parse_log;

    /// A phase log written by psprobe 0.1 (format version 1: one record per 30 s phase, no
    /// segment fields) reads and reports as it did: throughput -10.0% (the geometric mean of
    /// the three blocks' ratios 0.90, 0.92, 0.88), mean latency +10%.
    #[test]
    fn version_1_logs_still_report() {
        let log = parse_log(include_str!("../../tests/data/phases-v1.jsonl"));
        assert_eq!((log.runs.len(), log.phases.len()), (1, 6));
        assert!(log
            .phases
            .iter()
            .all(|p| p.version == 1 && p.schedule.is_none()));
        let report = report_of(&log.phases, None).unwrap();
        let fast = report.analysis.fast.as_ref().expect("one design");
        assert!(report.analysis.slow.is_none());
        assert_eq!(fast.baseline, "pfson_conoff_insoff");
        assert_eq!(fast.blocks, 3);
        let t = fast
            .estimate("pfson_conon_inson", Metric::Throughput)
            .unwrap();
        assert!((t.ratio * 100.0 + 10.0148).abs() < 0.01, "{}", t.ratio);
        assert!(t.significant);
        let l = fast
            .estimate("pfson_conon_inson", Metric::MeanLatency)
            .unwrap();
        assert!((l.ratio - 0.1).abs() < 1e-9, "{}", l.ratio);
        let md = render(&report, Format::Md).unwrap();
        assert!(
            md.contains("| pfson_conon_inson |") && md.contains("-10.0%"),
            "{md}"
        );
        assert!(render(&report, Format::Html).unwrap().contains("<svg"));
    }

    /// One writer for every report file: the format the argument or else the extension
    /// says, and the summary a terminal shows: the headline tables, or for a run of
    /// instrument groups (its run record says so) the groups' summary.
    #[test]
    fn a_report_file_in_the_format_asked_with_its_summary() {
        let log = parse_log(include_str!("../../tests/data/phases-v1.jsonl"));
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, format: Option<Format>, runs: &[RunRecord]| {
            let path = dir.path().join(name);
            let written = write_report(&log.phases, runs, &path, format).unwrap();
            (std::fs::read_to_string(&path).unwrap(), written)
        };
        let (page, written) = write("r.html", None, &log.runs);
        assert!(page.starts_with("<!DOCTYPE html>"), "{page}");
        let said = written.to_string();
        assert!(
            said.starts_with("\n| scenario | statements/s |")
                && said.contains("| pfson_conon_inson |"),
            "{said}"
        );
        let shown = std::fs::canonicalize(dir.path().join("r.html")).unwrap();
        assert!(
            said.ends_with(&format!("\nreport: {}", shown.display())),
            "{said}"
        );
        assert!(write("r.md", None, &log.runs)
            .0
            .starts_with("# performance_schema overhead\n"));
        assert!(write("r.csv", None, &log.runs)
            .0
            .starts_with("schedule,scenario,"));
        assert!(write("r", Some(Format::Html), &log.runs)
            .0
            .starts_with("<!DOCTYPE html>"));
        let groups = vec![RunRecord {
            attribution: Some(crate::phase_log::AttributionRecord::default()),
            ..log.runs[0].clone()
        }];
        let (_, written) = write("groups.html", None, &groups);
        assert!(
            written.summary.starts_with("no instrument group measured"),
            "{}",
            written.summary
        );
    }

    /// Three restart pairs are too few for an honest interval: every rendering says what more
    /// it needs instead of an absurd interval, the same in markdown, JSON and HTML.
    #[test]
    fn too_few_restarts_say_what_they_need_in_every_format() {
        use crate::phase_log::{test_aggregate as agg, PhaseRecord, SLOW};
        let record = |scenario: &str, block: u64, count: u64| PhaseRecord {
            version: 2,
            kind: "phase".into(),
            scenario: scenario.into(),
            block,
            phase: block * 2,
            switched_at_ms: 1_000_000 + block * 25_000,
            measure_from_ms: 1_005_000 + block * 25_000,
            measure_to_ms: 1_012_000 + block * 25_000,
            restarted: true,
            verified: true,
            commands: vec![agg(Some("query"), None, count)],
            digests: vec![agg(None, Some("aa"), count)],
            schedule: Some(SLOW.into()),
            measured_ms: Some(7000),
            ..PhaseRecord::default()
        };
        let mut phases = Vec::new();
        for (block, (off, on)) in [(7000, 6300), (7100, 6900), (6800, 6500)]
            .iter()
            .enumerate()
        {
            phases.push(record("pfsoff", block as u64, *off));
            phases.push(record("pfson_conoff_insoff", block as u64, *on));
        }
        let report = report_of(&phases, None).unwrap();
        let e = report
            .analysis
            .slow
            .as_ref()
            .unwrap()
            .estimate("pfson_conoff_insoff", Metric::Throughput)
            .unwrap()
            .clone();
        assert!(e.ci_low.is_none() && !e.significant, "{e:?}");
        let needs = e.needs.clone().expect("what it needs");
        assert!(needs.blocks >= 2 && needs.minutes > 0.0 && needs.halfwidth_points == 3.0);
        let said = needs.text();
        assert!(
            said.starts_with("not enough restarts for an interval: about "),
            "{said}"
        );
        let md = render(&report, Format::Md).unwrap();
        assert!(md.contains(&said), "{md}");
        let json: serde_json::Value =
            serde_json::from_str(&render(&report, Format::Json).unwrap()).unwrap();
        let estimates = json["analysis"]["slow"]["estimates"].as_array().unwrap();
        let t = estimates
            .iter()
            .find(|e| e["metric"] == "throughput")
            .unwrap();
        assert_eq!(t["needs"]["blocks"], needs.blocks);
        assert!(t["ci_low"].is_null());
        let html = render(&report, Format::Html).unwrap();
        assert!(html.contains(&said), "the chart says it too");
        // No whisker is drawn for it: the chart's only whiskers would be other bars'.
        assert_eq!(html.matches("class=\"whisker\"").count(), 0);
    }
}
