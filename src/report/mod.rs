//! `psprobe report PHASE_LOG`: the overhead of each scenario against the baseline, as
//! markdown, CSV, JSON or a self-contained HTML page with inline SVG charts.

mod html;
mod model;
pub mod svg;
mod text;

use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::{Args, ValueEnum};

use crate::analysis::analyze;
use crate::controller::phase_log::{read_phases, PhaseRecord};

pub use model::{build, Report};
pub use text::headline_markdown;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Md,
    Csv,
    Json,
    Html,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// The phase log written by `psprobe proxy --scenarios ...` (JSON Lines).
    pub phase_log: PathBuf,
    /// Output format [default: from the -o extension, else md].
    #[arg(long, value_enum)]
    pub format: Option<Format>,
    /// Write here instead of standard output.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// The scenario others are compared with [default: pfsoff if present, else the least
    /// instrumented scheduled].
    #[arg(long, value_name = "SCENARIO")]
    pub baseline: Option<String>,
}

fn format_of(args: &ReportArgs) -> Format {
    args.format.unwrap_or_else(|| {
        match args
            .output
            .as_ref()
            .and_then(|p| p.extension())
            .and_then(|e| e.to_str())
        {
            Some("html") | Some("htm") => Format::Html,
            Some("csv") => Format::Csv,
            Some("json") => Format::Json,
            _ => Format::Md,
        }
    })
}

pub fn render(report: &Report, format: Format) -> anyhow::Result<String> {
    Ok(match format {
        Format::Md => text::markdown(report),
        Format::Csv => text::csv(report),
        Format::Json => text::json(report)?,
        Format::Html => html::html(report),
    })
}

pub fn report_of(phases: &[PhaseRecord], baseline: Option<&str>) -> anyhow::Result<Report> {
    let analysis = analyze(phases, baseline)?;
    Ok(build(analysis, phases))
}

pub fn run(args: &ReportArgs) -> anyhow::Result<()> {
    let phases = read_phases(&args.phase_log)
        .with_context(|| format!("cannot read the phase log {}", args.phase_log.display()))?;
    let report = report_of(&phases, args.baseline.as_deref())?;
    let text = render(&report, format_of(args))?;
    match &args.output {
        Some(path) => std::fs::write(path, text)
            .with_context(|| format!("cannot write {}", path.display()))?,
        None => print!("{text}"),
    }
    Ok(())
}

/// `psprobe demo`'s ending: the HTML report to `output`, the headline table to stdout.
pub fn write_demo_report(phases: &[PhaseRecord], output: &Path) -> anyhow::Result<()> {
    let report = report_of(phases, Some("pfsoff"))?;
    std::fs::write(output, html::html(&report))
        .with_context(|| format!("cannot write {}", output.display()))?;
    println!("\n{}", headline_markdown(&report));
    let shown = std::fs::canonicalize(output).unwrap_or_else(|_| output.to_path_buf());
    println!("report: {}", shown.display());
    Ok(())
}
