//! `report`: the tables of a throughput run (`bench.sh`, `--quick`), from DIR/results.jsonl
//! (one line per sysbench run, written by `run-one`), DIR/machine.json and DIR/setup.json.
//! Writes DIR/results.csv (every run) and DIR/summary.json (per workload and thread count) and
//! prints the markdown tables on stdout.
//!
//! Ratios are taken per round (the runs of a round ran back to back, so each ratio compares
//! like with like), then summarised as median (min..max) over the rounds.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::Serialize;
use serde_json::Value;

use crate::jsonl::{self, Field};
use crate::pyfmt::{self, Ordered};
use crate::stats::{cell, ratio, Stats};

#[derive(clap::Args)]
pub struct Args {
    /// The run's directory (results.jsonl in, results.csv and summary.json out).
    #[arg(long)]
    dir: PathBuf,
}

/// The three targets every round has; others are extra psprobe builds (BENCH_EXTRA_PSPROBE)
/// and the bare relay (`bench.sh --bare-relay`).
const TARGETS: [&str; 3] = ["direct", "haproxy", "psprobe"];
// Issue 6 targets, checked (not asserted) against the medians.
const TARGET_QPS_VS_HAPROXY: f64 = 1.05;
const TARGET_CPU_VS_HAPROXY: f64 = 0.9;
const TARGET_P99_VS_HAPROXY: f64 = 1.0;

/// The columns of results.csv, in order.
const CSV_FIELDS: [&str; 30] = [
    "workload",
    "threads",
    "round",
    "target",
    "queries",
    "qps",
    "transactions",
    "tps",
    "lat_avg_ms",
    "lat_p99_ms",
    "lat_max_ms",
    "ignored_errors",
    "reconnects",
    "total_time_s",
    "wall_s",
    "proxy_cpu_us",
    "proxy_cpu_us_per_query",
    "proxy_user_us_per_query",
    "proxy_sys_us_per_query",
    "proxy_ctxsw_per_query",
    "proxy_peak_rss_kib",
    "proxy_rss_kib",
    "server_cpu_us_per_query",
    "sysbench_cpu_us_per_query",
    "sysbench_ctxsw_per_query",
    "machine_busy_pct",
    "machine_irq_pct",
    "machine_steal_pct",
    "other_cpu_pct_of_machine",
    "lat_p99_ms_sysbench",
];

/// The fields of a results.jsonl line the tables use (a missing one is absent).
#[derive(Debug, Clone, Default)]
pub struct Run {
    pub workload: String,
    pub threads: u64,
    pub round: u64,
    pub target: String,
    pub qps: Option<f64>,
    pub lat_p99_ms: Option<f64>,
    pub lat_avg_ms: Option<f64>,
    pub proxy_cpu_us_per_query: Option<f64>,
    pub proxy_user_us_per_query: Option<f64>,
    pub proxy_sys_us_per_query: Option<f64>,
    pub proxy_ctxsw_per_query: Option<f64>,
    pub server_cpu_us_per_query: Option<f64>,
    pub sysbench_cpu_us_per_query: Option<f64>,
    pub sysbench_ctxsw_per_query: Option<f64>,
    pub proxy_peak_rss_kib: Option<f64>,
    pub ignored_errors: Option<u64>,
    pub reconnects: Option<u64>,
    pub other_cpu_pct_of_machine: Option<f64>,
}

impl Run {
    /// The run of one results.jsonl line; workload, threads, round and target must be there.
    fn from_line(line: &Ordered<Field>) -> Result<Run, String> {
        let f = |key: &str| line.get(key).and_then(Field::as_f64);
        let n = |key: &str| line.get(key).and_then(Field::as_u64);
        let text = |key: &str| {
            line.get(key)
                .and_then(Field::as_str)
                .map(String::from)
                .ok_or_else(|| format!("no {key}"))
        };
        Ok(Run {
            workload: text("workload")?,
            threads: n("threads").ok_or("no threads")?,
            round: n("round").ok_or("no round")?,
            target: text("target")?,
            qps: f("qps"),
            lat_p99_ms: f("lat_p99_ms"),
            lat_avg_ms: f("lat_avg_ms"),
            proxy_cpu_us_per_query: f("proxy_cpu_us_per_query"),
            proxy_user_us_per_query: f("proxy_user_us_per_query"),
            proxy_sys_us_per_query: f("proxy_sys_us_per_query"),
            proxy_ctxsw_per_query: f("proxy_ctxsw_per_query"),
            server_cpu_us_per_query: f("server_cpu_us_per_query"),
            sysbench_cpu_us_per_query: f("sysbench_cpu_us_per_query"),
            sysbench_ctxsw_per_query: f("sysbench_ctxsw_per_query"),
            proxy_peak_rss_kib: f("proxy_peak_rss_kib"),
            ignored_errors: n("ignored_errors"),
            reconnects: n("reconnects"),
            other_cpu_pct_of_machine: f("other_cpu_pct_of_machine"),
        })
    }
}

/// One target's figures in one cell, over its rounds.
#[derive(Debug, Serialize)]
struct TargetStats {
    qps: Option<Stats>,
    p99_ms: Option<Stats>,
    avg_ms: Option<Stats>,
    proxy_cpu_us_per_query: Option<Stats>,
    proxy_user_us_per_query: Option<Stats>,
    proxy_sys_us_per_query: Option<Stats>,
    proxy_ctxsw_per_query: Option<Stats>,
    server_cpu_us_per_query: Option<Stats>,
    sysbench_cpu_us_per_query: Option<Stats>,
    sysbench_ctxsw_per_query: Option<Stats>,
    proxy_peak_rss_mib: Option<Stats>,
    errors: u64,
    reconnects: u64,
    other_cpu_pct: Option<Stats>,
}

/// An extra build against HAProxy and the main psprobe, per round.
#[derive(Debug, Serialize)]
struct ExtraRatios {
    qps_vs_haproxy: Option<Stats>,
    qps_vs_psprobe: Option<Stats>,
    p99_vs_haproxy: Option<Stats>,
    cpu_vs_haproxy: Option<Stats>,
    cpu_vs_psprobe: Option<Stats>,
}

#[derive(Debug, Serialize)]
struct Ratios {
    qps_vs_haproxy: Option<Stats>,
    qps_vs_direct: Option<Stats>,
    haproxy_qps_vs_direct: Option<Stats>,
    p99_vs_haproxy: Option<Stats>,
    p99_vs_direct: Option<Stats>,
    cpu_vs_haproxy: Option<Stats>,
    /// One entry per extra build, under its target name.
    #[serde(flatten)]
    extras: Ordered<ExtraRatios>,
}

/// One workload at one thread count.
#[derive(Debug, Serialize)]
struct Cell {
    workload: String,
    threads: u64,
    /// Rounds that have all three targets (the ones the ratios come from).
    rounds: usize,
    targets: Ordered<TargetStats>,
    ratios: Ratios,
}

pub fn run(args: &Args) -> Result<()> {
    let (rows, runs) = load(&args.dir.join("results.jsonl"))?;
    let machine = read_object(&args.dir.join("machine.json"))?;
    let setup = read_object(&args.dir.join("setup.json"))?;
    let csv_path = args.dir.join("results.csv");
    fs::write(&csv_path, csv(&rows))
        .with_context(|| format!("cannot write {}", csv_path.display()))?;
    let summary = summarise(&runs);
    let json = pyfmt::pretty(&SummaryFile {
        machine: machine.as_ref(),
        setup: setup.as_ref(),
        cells: &summary,
    })?;
    let summary_path = args.dir.join("summary.json");
    fs::write(&summary_path, json)
        .with_context(|| format!("cannot write {}", summary_path.display()))?;
    println!("{}", render(&summary, machine.as_ref(), setup.as_ref()));
    Ok(())
}

#[derive(Serialize)]
struct SummaryFile<'a> {
    machine: Option<&'a Ordered<Value>>,
    setup: Option<&'a Ordered<Value>>,
    cells: &'a [Cell],
}

/// results.jsonl as raw objects (for the CSV) and as runs (for the tables).
pub fn load(path: &Path) -> Result<(Vec<Ordered<Field>>, Vec<Run>)> {
    let text = fs::read_to_string(path).with_context(|| {
        format!(
            "cannot read {} (did the runs of bench.sh write it?)",
            path.display()
        )
    })?;
    let mut rows = Vec::new();
    let mut runs = Vec::new();
    for (i, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let what = |e: String| anyhow::anyhow!("{} line {}: {e}", path.display(), i + 1);
        let row = jsonl::parse_line(line).map_err(what)?;
        runs.push(Run::from_line(&row).map_err(what)?);
        rows.push(row);
    }
    Ok((rows, runs))
}

/// A JSON object file, keys in file order; `None` when the file does not exist.
fn read_object(path: &Path) -> Result<Option<Ordered<Value>>> {
    if !path.exists() {
        return Ok(None);
    }
    let text =
        fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let object = serde_json::from_str(&text).with_context(|| format!("{}", path.display()))?;
    Ok(Some(object))
}

/// results.csv as Python's csv.DictWriter wrote it: the header, one line per run, missing and
/// null fields empty, CRLF line ends, a field quoted when it holds a comma, quote or newline.
fn csv(rows: &[Ordered<Field>]) -> String {
    let mut out = CSV_FIELDS.join(",") + "\r\n";
    for row in rows {
        let fields: Vec<String> = CSV_FIELDS
            .iter()
            .map(|f| match row.get(f) {
                None | Some(Field::Null) => String::new(),
                Some(v) => quote(&v.python_str()),
            })
            .collect();
        out += &fields.join(",");
        out += "\r\n";
    }
    out
}

fn quote(field: &str) -> String {
    if field.contains([',', '"', '\r', '\n']) {
        format!("\"{}\"", field.replace('"', "\"\""))
    } else {
        field.to_string()
    }
}

/// Other targets run alongside (BENCH_EXTRA_PSPROBE builds, the bare relay), in order of
/// appearance.
fn extra_targets(runs: &[Run]) -> Vec<String> {
    let mut seen: Vec<String> = Vec::new();
    for r in runs {
        if !TARGETS.contains(&r.target.as_str()) && !seen.contains(&r.target) {
            seen.push(r.target.clone());
        }
    }
    seen
}

/// Round number -> target -> run, in order of appearance (a repeated run replaces the earlier).
type Rounds<'a> = Ordered<Ordered<&'a Run>>;

fn summarise(runs: &[Run]) -> Vec<Cell> {
    let extras = extra_targets(runs);
    let mut cells: Ordered<Rounds> = Ordered::default();
    for r in runs {
        let key = format!("{}\0{}", r.workload, r.threads);
        let round = cells
            .entry(&key, Ordered::default)
            .entry(&r.round.to_string(), Ordered::default);
        *round.entry(&r.target, || r) = r;
    }
    let all_targets: Vec<&str> = TARGETS
        .iter()
        .copied()
        .chain(extras.iter().map(String::as_str))
        .collect();
    cells
        .0
        .iter()
        .map(|(_, rounds)| {
            let first = rounds.0[0].1 .0[0].1;
            let complete: Vec<&Ordered<&Run>> = rounds
                .0
                .iter()
                .map(|(_, rd)| rd)
                .filter(|rd| TARGETS.iter().all(|t| rd.get(t).is_some()))
                .collect();
            let mut targets = Ordered::default();
            for t in &all_targets {
                let of_t: Vec<&Run> = rounds
                    .0
                    .iter()
                    .filter_map(|(_, rd)| rd.get(t).copied())
                    .collect();
                targets.0.push((t.to_string(), target_stats(&of_t)));
            }
            let per_round =
                |a: &str, b: &str, f: fn(&Run) -> Option<f64>| {
                    Stats::of(complete.iter().map(|rd| {
                        ratio(rd.get(a).and_then(|r| f(r)), rd.get(b).and_then(|r| f(r)))
                    }))
                };
            let qps = |r: &Run| r.qps;
            let p99 = |r: &Run| r.lat_p99_ms;
            let cpu = |r: &Run| r.proxy_cpu_us_per_query;
            let mut extra_ratios = Ordered::default();
            for t in &extras {
                let ok: Vec<&&Ordered<&Run>> =
                    complete.iter().filter(|rd| rd.get(t).is_some()).collect();
                let vs = |b: &str, f: fn(&Run) -> Option<f64>| {
                    Stats::of(ok.iter().map(|rd| {
                        ratio(rd.get(t).and_then(|r| f(r)), rd.get(b).and_then(|r| f(r)))
                    }))
                };
                extra_ratios.0.push((
                    t.clone(),
                    ExtraRatios {
                        qps_vs_haproxy: vs("haproxy", qps),
                        qps_vs_psprobe: vs("psprobe", qps),
                        p99_vs_haproxy: vs("haproxy", p99),
                        cpu_vs_haproxy: vs("haproxy", cpu),
                        cpu_vs_psprobe: vs("psprobe", cpu),
                    },
                ));
            }
            Cell {
                workload: first.workload.clone(),
                threads: first.threads,
                rounds: complete.len(),
                targets,
                ratios: Ratios {
                    qps_vs_haproxy: per_round("psprobe", "haproxy", qps),
                    qps_vs_direct: per_round("psprobe", "direct", qps),
                    haproxy_qps_vs_direct: per_round("haproxy", "direct", qps),
                    p99_vs_haproxy: per_round("psprobe", "haproxy", p99),
                    p99_vs_direct: per_round("psprobe", "direct", p99),
                    cpu_vs_haproxy: per_round("psprobe", "haproxy", cpu),
                    extras: extra_ratios,
                },
            }
        })
        .collect()
}

fn target_stats(runs: &[&Run]) -> TargetStats {
    let of = |f: fn(&Run) -> Option<f64>| Stats::of(runs.iter().map(|r| f(r)));
    TargetStats {
        qps: of(|r| r.qps),
        p99_ms: of(|r| r.lat_p99_ms),
        avg_ms: of(|r| r.lat_avg_ms),
        proxy_cpu_us_per_query: of(|r| r.proxy_cpu_us_per_query),
        proxy_user_us_per_query: of(|r| r.proxy_user_us_per_query),
        proxy_sys_us_per_query: of(|r| r.proxy_sys_us_per_query),
        proxy_ctxsw_per_query: of(|r| r.proxy_ctxsw_per_query),
        server_cpu_us_per_query: of(|r| r.server_cpu_us_per_query),
        sysbench_cpu_us_per_query: of(|r| r.sysbench_cpu_us_per_query),
        sysbench_ctxsw_per_query: of(|r| r.sysbench_ctxsw_per_query),
        // A peak of 0 means "not read", as before.
        proxy_peak_rss_mib: of(|r| {
            r.proxy_peak_rss_kib
                .filter(|k| *k != 0.0)
                .map(|k| k / 1024.0)
        }),
        errors: runs.iter().map(|r| r.ignored_errors.unwrap_or(0)).sum(),
        reconnects: runs.iter().map(|r| r.reconnects.unwrap_or(0)).sum(),
        other_cpu_pct: of(|r| r.other_cpu_pct_of_machine),
    }
}

fn verdict(s: Option<&Stats>, limit: f64, higher_is_better: bool) -> String {
    let Some(s) = s else {
        return "n/a".to_string();
    };
    let ok = if higher_is_better {
        s.median >= limit
    } else {
        s.median <= limit
    };
    format!("{} ({:.3})", if ok { "met" } else { "MISSED" }, s.median)
}

fn user_sys(t: &TargetStats) -> String {
    match (&t.proxy_user_us_per_query, &t.proxy_sys_us_per_query) {
        (Some(u), Some(s)) => format!("{:.1} / {:.1}", u.median, s.median),
        _ => "n/a".to_string(),
    }
}

fn peak(t: &TargetStats) -> String {
    t.proxy_peak_rss_mib
        .map_or("n/a".to_string(), |s| format!("{:.1}", s.max))
}

/// A setup.json field as Python's str() printed it ("?" when the file lacks it).
fn field(o: &Ordered<Value>, key: &str) -> String {
    o.get(key).map_or("?".to_string(), pyfmt::display)
}

fn render(
    summary: &[Cell],
    machine: Option<&Ordered<Value>>,
    setup: Option<&Ordered<Value>>,
) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut w = |s: String| out.push(s);
    w("## psprobe vs HAProxy vs direct".into());
    w(String::new());
    if let Some(m) = machine {
        w(format!("Machine: {}.", field(m, "summary")));
    }
    if let Some(s) = setup {
        let haproxy = field(s, "haproxy_version");
        let haproxy = haproxy.split(" - ").next().unwrap_or("");
        let mariadb = field(s, "mariadb_version");
        let mariadb = mariadb
            .split(" for ")
            .next()
            .unwrap_or("")
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        w(format!(
            "Method: {} round(s) x {} s per target, interleaved (direct, HAProxy, psprobe; then again); {}, default \
             --db-ps-mode (prepared statements), 4 tables x 10,000 rows; {haproxy} mode tcp; psprobe {} with full \
             observation and metrics, controller idle; {mariadb}.",
            field(s, "rounds"),
            field(s, "seconds"),
            field(s, "sysbench_version"),
            field(s, "psprobe_commit"),
        ));
    }
    w("Ratios: median over rounds of the per-round ratio, (min..max) over rounds. p99 from sysbench's latency \
       histogram (per event: a query for point_select, a transaction of 14 queries for read_only). CPU = \
       user+sys of the proxy process / queries. Peak RSS = VmHWM during the run."
        .into());
    w(String::new());
    w("| workload | threads | q/s psprobe/HAProxy | q/s psprobe/direct | p99 psprobe/HAProxy | p99 psprobe/direct \
       | CPU µs/query psprobe | CPU µs/query HAProxy | CPU psprobe/HAProxy | peak RSS MiB psprobe | peak RSS MiB \
       HAProxy |"
        .into());
    w("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|".into());
    let missing = || TargetStats {
        qps: None,
        p99_ms: None,
        avg_ms: None,
        proxy_cpu_us_per_query: None,
        proxy_user_us_per_query: None,
        proxy_sys_us_per_query: None,
        proxy_ctxsw_per_query: None,
        server_cpu_us_per_query: None,
        sysbench_cpu_us_per_query: None,
        sysbench_ctxsw_per_query: None,
        proxy_peak_rss_mib: None,
        errors: 0,
        reconnects: 0,
        other_cpu_pct: None,
    };
    let none = missing();
    for c in summary {
        let (r, t) = (&c.ratios, &c.targets);
        let pp = t.get("psprobe").unwrap_or(&none);
        let ha = t.get("haproxy").unwrap_or(&none);
        w(format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            c.workload,
            c.threads,
            cell(r.qps_vs_haproxy.as_ref(), 2),
            cell(r.qps_vs_direct.as_ref(), 2),
            cell(r.p99_vs_haproxy.as_ref(), 2),
            cell(r.p99_vs_direct.as_ref(), 2),
            cell(pp.proxy_cpu_us_per_query.as_ref(), 1),
            cell(ha.proxy_cpu_us_per_query.as_ref(), 1),
            cell(r.cpu_vs_haproxy.as_ref(), 2),
            peak(pp),
            peak(ha),
        ));
    }
    w(String::new());
    w("### Per target (median of rounds, min..max)".into());
    w(String::new());
    w("| workload | threads | target | queries/s | p99 ms | avg ms | proxy CPU µs/query | proxy user / sys µs/query \
       | proxy context switches/query | mariadbd CPU µs/query | sysbench CPU µs/query | sysbench context \
       switches/query | peak RSS MiB | errors | other processes' CPU % |"
        .into());
    w("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|".into());
    for c in summary {
        for (name, t) in &c.targets.0 {
            let proxy = name != "direct";
            let if_proxy = |s: String| if proxy { s } else { "-".to_string() };
            w(format!(
                "| {} | {} | {name} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                c.workload,
                c.threads,
                cell(t.qps.as_ref(), 0),
                cell(t.p99_ms.as_ref(), 2),
                cell(t.avg_ms.as_ref(), 3),
                if_proxy(cell(t.proxy_cpu_us_per_query.as_ref(), 1)),
                if_proxy(user_sys(t)),
                if_proxy(cell(t.proxy_ctxsw_per_query.as_ref(), 2)),
                cell(t.server_cpu_us_per_query.as_ref(), 1),
                cell(t.sysbench_cpu_us_per_query.as_ref(), 1),
                cell(t.sysbench_ctxsw_per_query.as_ref(), 2),
                if_proxy(peak(t)),
                t.errors + t.reconnects,
                cell(t.other_cpu_pct.as_ref(), 0),
            ));
        }
    }
    let extras: Vec<&String> = summary
        .first()
        .map(|c| {
            c.targets
                .0
                .iter()
                .map(|(n, _)| n)
                .filter(|n| !TARGETS.contains(&n.as_str()))
                .collect()
        })
        .unwrap_or_default();
    if !extras.is_empty() {
        w(String::new());
        w("### Other targets (BENCH_EXTRA_PSPROBE builds, --bare-relay), per-round ratios".into());
        w(String::new());
        w("| workload | threads | target | q/s vs HAProxy | q/s vs psprobe | p99 vs HAProxy | CPU µs/query | CPU vs \
           HAProxy | CPU vs psprobe | peak RSS MiB |"
            .into());
        w("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|".into());
        for c in summary {
            for name in &extras {
                let (Some(r), Some(t)) = (c.ratios.extras.get(name), c.targets.get(name)) else {
                    continue;
                };
                w(format!(
                    "| {} | {} | {name} | {} | {} | {} | {} | {} | {} | {} |",
                    c.workload,
                    c.threads,
                    cell(r.qps_vs_haproxy.as_ref(), 2),
                    cell(r.qps_vs_psprobe.as_ref(), 2),
                    cell(r.p99_vs_haproxy.as_ref(), 2),
                    cell(t.proxy_cpu_us_per_query.as_ref(), 1),
                    cell(r.cpu_vs_haproxy.as_ref(), 2),
                    cell(r.cpu_vs_psprobe.as_ref(), 2),
                    peak(t),
                ));
            }
        }
    }
    w(String::new());
    w("### Issue 6 targets (checked on the medians; informational, never asserted)".into());
    w(String::new());
    w(format!(
        "| workload | threads | q/s >= {}x HAProxy | CPU/query <= {}x HAProxy | p99 <= HAProxy |",
        pyfmt::repr(TARGET_QPS_VS_HAPROXY),
        pyfmt::repr(TARGET_CPU_VS_HAPROXY)
    ));
    w("|---|---:|---|---|---|".into());
    for c in summary {
        let r = &c.ratios;
        w(format!(
            "| {} | {} | {} | {} | {} |",
            c.workload,
            c.threads,
            verdict(r.qps_vs_haproxy.as_ref(), TARGET_QPS_VS_HAPROXY, true),
            verdict(r.cpu_vs_haproxy.as_ref(), TARGET_CPU_VS_HAPROXY, false),
            verdict(r.p99_vs_haproxy.as_ref(), TARGET_P99_VS_HAPROXY, false),
        ));
    }
    out.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(threads: u64, round: u64, target: &str, qps: f64, p99: f64, cpu: Option<f64>) -> Run {
        Run {
            workload: "oltp_point_select".into(),
            threads,
            round,
            target: target.into(),
            qps: Some(qps),
            lat_p99_ms: Some(p99),
            proxy_cpu_us_per_query: cpu,
            proxy_peak_rss_kib: cpu.map(|_| 11776.0),
            ignored_errors: Some(1),
            reconnects: Some(0),
            ..Run::default()
        }
    }

    /// Three rounds at 16 threads (round 3 lacks haproxy), one at 1 thread, an extra build.
    fn runs() -> Vec<Run> {
        vec![
            run(16, 1, "direct", 2000.0, 1.0, None),
            run(16, 1, "haproxy", 1000.0, 2.0, Some(20.0)),
            run(16, 1, "psprobe", 1100.0, 1.0, Some(10.0)),
            run(16, 1, "psprobe:new", 1300.0, 1.0, Some(5.0)),
            run(16, 2, "direct", 2000.0, 1.0, None),
            run(16, 2, "haproxy", 1000.0, 2.0, Some(20.0)),
            run(16, 2, "psprobe", 900.0, 3.0, Some(30.0)),
            run(16, 2, "psprobe:new", 900.0, 3.0, Some(30.0)),
            run(16, 3, "direct", 2000.0, 1.0, None),
            run(16, 3, "psprobe", 5000.0, 1.0, Some(1.0)),
            run(1, 1, "direct", 100.0, 0.1, None),
            run(1, 1, "haproxy", 50.0, 0.2, Some(40.0)),
            run(1, 1, "psprobe", 50.0, 0.2, Some(40.0)),
        ]
    }

    #[test]
    fn ratios_per_complete_round_then_median_min_max() {
        let cells = summarise(&runs());
        assert_eq!(cells.len(), 2);
        let c = &cells[0];
        assert_eq!((c.threads, c.rounds), (16, 2));
        // Rounds 1 and 2 only: 1.1 and 0.9 (round 3's 5.0 has no haproxy to compare with).
        let q = c.ratios.qps_vs_haproxy.unwrap();
        assert!(
            (q.median - 1.0).abs() < 1e-12 && q.min == 0.9 && (q.max - 1.1).abs() < 1e-12,
            "{q:?}"
        );
        assert_eq!(c.ratios.p99_vs_haproxy.unwrap().max, 1.5);
        assert_eq!(c.ratios.cpu_vs_haproxy.unwrap().min, 0.5);
        assert_eq!(c.ratios.haproxy_qps_vs_direct.unwrap().median, 0.5);
        // Per target, every round counts, round 3 included.
        let pp = c.targets.get("psprobe").unwrap();
        assert_eq!(
            (
                pp.qps.unwrap().n,
                pp.qps.unwrap().median,
                pp.qps.unwrap().max
            ),
            (3, 1100.0, 5000.0)
        );
        assert_eq!((pp.errors, pp.reconnects), (3, 0));
        assert_eq!(pp.proxy_peak_rss_mib.unwrap().max, 11.5);
        assert_eq!(
            c.targets.get("direct").unwrap().proxy_cpu_us_per_query,
            None
        );
        // The extra build: 1.1 and 1.0 against psprobe.
        let new = c.ratios.extras.get("psprobe:new").unwrap();
        assert_eq!(new.qps_vs_psprobe.unwrap().min, 1.0);
        assert_eq!(new.cpu_vs_psprobe.unwrap().min, 0.5);
        let targets: Vec<&str> = c.targets.0.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(targets, ["direct", "haproxy", "psprobe", "psprobe:new"]);
    }

    #[test]
    fn tables_have_a_row_per_cell_and_target() {
        let cells = summarise(&runs());
        let text = render(&cells, None, None);
        assert!(
            text.contains("| oltp_point_select | 16 | 1.00 (0.90..1.10) | 0.50 (0.45..0.55) | "),
            "{text}"
        );
        assert!(text.contains("| oltp_point_select | 1 | 1.00 | 0.50 | 1.00 | 2.00 | 40.0 | 40.0 | 1.00 | 11.5 | 11.5 |"), "{text}");
        assert!(text.contains("| oltp_point_select | 16 | direct | 2000 | 1.00 | n/a | - | - | - | n/a | n/a | n/a | - | 3 | n/a |"), "{text}");
        assert!(text.contains("### Other targets"), "{text}");
        assert!(
            text.contains(
                "| oltp_point_select | 16 | psprobe:new | 1.10 (0.90..1.30) | 1.09 (1.00..1.18) |"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "| oltp_point_select | 1 | MISSED (1.000) | MISSED (1.000) | met (1.000) |"
            ),
            "{text}"
        );
        assert!(
            text.contains("| q/s >= 1.05x HAProxy | CPU/query <= 0.9x HAProxy |"),
            "{text}"
        );
    }

    #[test]
    fn csv_as_dictwriter_wrote_it() {
        let rows = vec![jsonl::parse_line(
            r#"{"workload": "a,b", "threads": 1, "qps": 10.0, "proxy_cpu_us": null, "extra": 1}"#,
        )
        .unwrap()];
        let text = csv(&rows);
        let mut lines = text.split("\r\n");
        assert!(lines
            .next()
            .unwrap()
            .starts_with("workload,threads,round,target,queries,qps,"));
        assert_eq!(
            lines.next().unwrap(),
            format!("\"a,b\",1,,,,10.0{}", ",".repeat(24))
        );
    }

    #[test]
    fn the_method_line_quotes_the_setup() {
        let setup: Ordered<Value> = serde_json::from_str(
            r#"{"rounds": 3, "seconds": 20, "haproxy_version": "HAProxy version 2.6.12 2026/10/17 - https://haproxy.org/",
               "mariadb_version": "mariadbd  Ver 10.11.19-MariaDB for debian-linux-gnu", "sysbench_version": "sysbench 1.0.20",
               "psprobe_commit": "f0ccb7c"}"#,
        )
        .unwrap();
        let text = render(&[], None, Some(&setup));
        assert!(
            text.contains("Method: 3 round(s) x 20 s per target"),
            "{text}"
        );
        assert!(
            text.contains("; HAProxy version 2.6.12 2026/10/17 mode tcp; psprobe f0ccb7c with"),
            "{text}"
        );
        assert!(
            text.contains("controller idle; mariadbd Ver 10.11.19-MariaDB."),
            "{text}"
        );
    }
}
