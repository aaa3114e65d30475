//! `run-one`: one sysbench measurement, appended as one JSON line to the results file.
//!
//! Around the run it samples, from /proc: the proxy's CPU time (utime + stime of every thread),
//! its peak RSS during the run (VmHWM, reset before the run), its threads' context switches,
//! mariadbd's CPU time, sysbench's own CPU time and context switches (this process's children),
//! and the whole machine's busy time, so interference from other processes shows up.
//! sysbench's report (read by `psprobe_harness::sysbench`) gives queries, transactions, rates,
//! average latency and the p99 from its latency histogram.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use psprobe_harness::sysbench::{parse_summary, Summary};
use serde::Serialize;

use crate::procfs::{self, MachineTicks};
use crate::pyfmt;

#[derive(clap::Args)]
pub struct Args {
    /// The JSON-lines file to append the run's line to.
    #[arg(long)]
    results: PathBuf,
    /// Directory for sysbench's output (WORKLOAD-tTHREADS-rROUND-TARGET.txt).
    #[arg(long)]
    raw: PathBuf,
    /// sysbench workload, for the record (e.g. oltp_point_select).
    #[arg(long)]
    workload: String,
    /// sysbench threads, for the record.
    #[arg(long)]
    threads: u32,
    /// Round number, for the record.
    #[arg(long)]
    round: u32,
    /// Which path the run went through (direct, haproxy, psprobe, psprobe:NAME, ...).
    #[arg(long)]
    target: String,
    /// The proxy's process id, or 0 for a direct run (no proxy figures).
    #[arg(long, default_value_t = 0)]
    proxy_pid: u32,
    /// mariadbd's process id, or 0 to leave out its CPU time.
    #[arg(long, default_value_t = 0)]
    server_pid: u32,
    /// The sysbench command line, after `--`.
    #[arg(last = true, required = true)]
    command: Vec<String>,
}

/// One line of results.jsonl, keys in the order the Python script wrote them (the ones a direct
/// run leaves out are skipped, not null, as before).
#[derive(Debug, Serialize, Default)]
pub struct Row {
    workload: String,
    threads: u32,
    round: u32,
    target: String,
    wall_s: f64,
    queries: u64,
    qps: Option<f64>,
    transactions: u64,
    tps: Option<f64>,
    ignored_errors: u64,
    reconnects: u64,
    total_time_s: Option<f64>,
    lat_avg_ms: Option<f64>,
    lat_p99_ms_sysbench: Option<f64>,
    lat_p99_ms: Option<f64>,
    lat_max_ms: Option<f64>,
    proxy_cpu_us: Option<f64>,
    proxy_cpu_us_per_query: Option<f64>,
    proxy_peak_rss_kib: Option<u64>,
    proxy_rss_kib: Option<u64>,
    proxy_peak_rss_reset: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    proxy_user_us_per_query: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    proxy_sys_us_per_query: Option<f64>,
    /// Present (maybe null) whenever there is a proxy.
    #[serde(skip_serializing_if = "Option::is_none")]
    proxy_ctxsw_per_query: Option<Option<f64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    server_cpu_us_per_query: Option<f64>,
    sysbench_cpu_us_per_query: f64,
    sysbench_ctxsw_per_query: f64,
    machine_busy_pct: f64,
    machine_irq_pct: f64,
    machine_steal_pct: f64,
    other_cpu_pct_of_machine: f64,
}

/// What was sampled just before or just after the run.
struct Sample {
    proxy: Option<(u64, u64)>,
    proxy_ctxsw: Option<u64>,
    server: Option<u64>,
    machine: MachineTicks,
    children: (f64, u64),
}

impl Sample {
    fn take(proxy_pid: u32, server_pid: u32) -> Result<Sample> {
        let cpu = |pid: u32, what: &str| -> Result<Option<(u64, u64)>> {
            if pid == 0 {
                return Ok(None);
            }
            procfs::cpu_split(pid)
                .map(Some)
                .with_context(|| format!("the {what}'s CPU time"))
        };
        Ok(Sample {
            proxy: cpu(proxy_pid, "proxy")?,
            proxy_ctxsw: (proxy_pid != 0)
                .then(|| procfs::context_switches(proxy_pid))
                .flatten(),
            server: cpu(server_pid, "server")?.map(|(u, s)| u + s),
            machine: procfs::machine_ticks()?,
            children: procfs::children_usage().context("getrusage of the children")?,
        })
    }
}

pub fn run(args: &Args) -> Result<()> {
    let name = format!(
        "{}-t{}-r{}-{}.txt",
        args.workload, args.threads, args.round, args.target
    );
    let raw_path = args.raw.join(&name);
    let pid = args.proxy_pid;
    let hwm_reset = pid != 0 && procfs::reset_peak_rss(pid);
    let before = Sample::take(pid, args.server_pid)?;
    let started = Instant::now();
    let status = sysbench(&args.command, &raw_path)?;
    let wall = started.elapsed().as_secs_f64();
    let after = Sample::take(pid, args.server_pid)?;

    let text = fs::read_to_string(&raw_path).with_context(|| {
        format!(
            "cannot read sysbench's output back from {}",
            raw_path.display()
        )
    })?;
    if !status.success() {
        eprint!("{}", tail(&text, 4000));
        bail!("sysbench exited with {status} ({name})");
    }
    let summary = parse_summary(&text);
    let peak = (pid != 0)
        .then(|| procfs::status_kib(pid, "VmHWM"))
        .flatten();
    let rss = (pid != 0)
        .then(|| procfs::status_kib(pid, "VmRSS"))
        .flatten();
    let row = build_row(
        args,
        wall,
        &summary,
        &before,
        &after,
        (peak, rss, hwm_reset),
    )
    .map_err(|e| {
        eprint!("{}", tail(&text, 4000));
        e.context(format!("{name}: sysbench's report"))
    })?;

    let mut file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&args.results)
        .with_context(|| format!("cannot append to {}", args.results.display()))?;
    writeln!(file, "{}", pyfmt::line(&row)?)
        .with_context(|| format!("cannot append to {}", args.results.display()))?;
    eprintln!("{}", progress_line(&row));
    Ok(())
}

/// Runs sysbench with stdout and stderr both into `raw` (as the Python script kept them, one
/// stream), and waits.
fn sysbench(command: &[String], raw: &PathBuf) -> Result<std::process::ExitStatus> {
    let out = File::create(raw).with_context(|| format!("cannot create {}", raw.display()))?;
    let err = out.try_clone()?;
    let (program, rest) = command
        .split_first()
        .context("no sysbench command after --")?;
    Command::new(program)
        .args(rest)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .status()
        .with_context(|| format!("cannot run {program} (is it installed and on PATH?)"))
}

/// The numbers of one run; an error when sysbench's report has no queries or no latency.
fn build_row(
    args: &Args,
    wall: f64,
    s: &Summary,
    before: &Sample,
    after: &Sample,
    (peak, rss, hwm_reset): (Option<u64>, Option<u64>, bool),
) -> Result<Row> {
    let lat_p99 = s.histogram_quantile(0.99).or(s.latency_percentile_ms);
    if s.qps.is_none() || lat_p99.is_none() {
        bail!("no queries line or no latency in it");
    }
    let queries = s.total.max(1) as f64;
    let to_us = 1e6 / procfs::clock_ticks_per_second();
    let mut row = Row {
        workload: args.workload.clone(),
        threads: args.threads,
        round: args.round,
        target: args.target.clone(),
        wall_s: pyfmt::round(wall, 3),
        queries: s.total,
        qps: s.qps,
        transactions: s.transactions,
        tps: s.tps,
        ignored_errors: s.ignored_errors,
        reconnects: s.reconnects,
        total_time_s: s.total_time_s,
        lat_avg_ms: s.latency_avg_ms,
        lat_p99_ms_sysbench: s.latency_percentile_ms,
        lat_p99_ms: lat_p99,
        lat_max_ms: s.latency_max_ms,
        ..Row::default()
    };
    if let (Some(p0), Some(p1)) = (before.proxy, after.proxy) {
        let cpu_us = ((p1.0 + p1.1).saturating_sub(p0.0 + p0.1)) as f64 * to_us;
        row.proxy_cpu_us = Some(cpu_us);
        row.proxy_cpu_us_per_query = Some(cpu_us / queries);
        row.proxy_peak_rss_kib = peak;
        row.proxy_rss_kib = rss;
        row.proxy_peak_rss_reset = Some(hwm_reset);
        row.proxy_user_us_per_query = Some(p1.0.saturating_sub(p0.0) as f64 * to_us / queries);
        row.proxy_sys_us_per_query = Some(p1.1.saturating_sub(p0.1) as f64 * to_us / queries);
        row.proxy_ctxsw_per_query = Some(match (before.proxy_ctxsw, after.proxy_ctxsw) {
            (Some(c0), Some(c1)) => Some(c1.saturating_sub(c0) as f64 / queries),
            _ => None,
        });
    }
    if let (Some(s0), Some(s1)) = (before.server, after.server) {
        row.server_cpu_us_per_query = Some(s1.saturating_sub(s0) as f64 * to_us / queries);
    }
    let sysbench_cpu_s = after.children.0 - before.children.0;
    row.sysbench_cpu_us_per_query = sysbench_cpu_s * 1e6 / queries;
    row.sysbench_ctxsw_per_query =
        after.children.1.saturating_sub(before.children.1) as f64 / queries;
    let d = after.machine.since(&before.machine);
    let total = d.total.max(1) as f64;
    row.machine_busy_pct = pyfmt::round(100.0 * (d.tasks + d.irq + d.steal) as f64 / total, 1);
    row.machine_irq_pct = pyfmt::round(100.0 * d.irq as f64 / total, 1);
    row.machine_steal_pct = pyfmt::round(100.0 * d.steal as f64 / total, 1);
    // Task CPU used during the run by processes other than the three measured ones (others'
    // builds on a shared machine): all task time minus server, proxy and sysbench.
    let own_us = row.server_cpu_us_per_query.unwrap_or(0.0) * queries
        + row.proxy_cpu_us.unwrap_or(0.0)
        + sysbench_cpu_s * 1e6;
    row.other_cpu_pct_of_machine = pyfmt::round(
        100.0 * (d.tasks as f64 * to_us - own_us).max(0.0) / (total * to_us),
        1,
    );
    Ok(row)
}

/// "bench:   12071 q/s, p99 8.581 ms, proxy 22.6 us/query, peak RSS 11.5 MiB, machine busy ..."
fn progress_line(row: &Row) -> String {
    let mut line = format!(
        "bench:   {:.0} q/s, p99 {} ms",
        row.qps.unwrap_or(0.0),
        row.lat_p99_ms.map_or("None".to_string(), pyfmt::repr)
    );
    if let Some(cpu) = row.proxy_cpu_us_per_query {
        let peak = row.proxy_peak_rss_kib.map_or("n/a".to_string(), |kib| {
            format!("{:.1}", kib as f64 / 1024.0)
        });
        line += &format!(", proxy {cpu:.1} us/query, peak RSS {peak} MiB");
    }
    line += &format!(
        ", machine busy {}% (softirq {}%, steal {}%, other processes {}%)",
        pyfmt::repr(row.machine_busy_pct),
        pyfmt::repr(row.machine_irq_pct),
        pyfmt::repr(row.machine_steal_pct),
        pyfmt::repr(row.other_cpu_pct_of_machine)
    );
    line
}

/// The last `n` bytes of `text`, cut at a character boundary.
fn tail(text: &str, n: usize) -> &str {
    let mut start = text.len().saturating_sub(n);
    while !text.is_char_boundary(start) {
        start += 1;
    }
    &text[start..]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args() -> Args {
        Args {
            results: "r.jsonl".into(),
            raw: "raw".into(),
            workload: "oltp_point_select".into(),
            threads: 16,
            round: 1,
            target: "psprobe".into(),
            proxy_pid: 42,
            server_pid: 7,
            command: vec!["sysbench".into()],
        }
    }

    const REPORT: &str = "Latency histogram (values are in milliseconds)
       value  ------------- distribution ------------- count
       0.100 |**************************************** 99
       0.200 |                                         1
 
SQL statistics:
    transactions:                        1000  (500.00 per sec.)
    queries:                             1000  (500.00 per sec.)
    ignored errors:                      0      (0.00 per sec.)
    reconnects:                          0      (0.00 per sec.)
        total:                           1000

General statistics:
    total time:                          2.0001s

Latency (ms):
         min:                                    0.09
         avg:                                    0.11
         max:                                    0.20
         99th percentile:                        0.10
         sum:                                  110.00
";

    fn sample(
        proxy: (u64, u64),
        ctxsw: u64,
        server: u64,
        machine: MachineTicks,
        children: (f64, u64),
    ) -> Sample {
        Sample {
            proxy: Some(proxy),
            proxy_ctxsw: Some(ctxsw),
            server: Some(server),
            machine,
            children,
        }
    }

    #[test]
    fn per_query_figures_and_machine_shares() {
        let before = sample(
            (100, 200),
            1000,
            500,
            MachineTicks {
                tasks: 0,
                irq: 0,
                steal: 0,
                total: 0,
            },
            (1.0, 10),
        );
        // 2 s on 2 CPUs at 100 ticks/s: 400 ticks, 300 of them in tasks, 40 in softirq.
        let after = sample(
            (110, 230),
            3000,
            600,
            MachineTicks {
                tasks: 300,
                irq: 40,
                steal: 0,
                total: 400,
            },
            (1.5, 1010),
        );
        let row = build_row(
            &args(),
            2.00049,
            &parse_summary(REPORT),
            &before,
            &after,
            (Some(12000), Some(11000), true),
        )
        .unwrap();
        let to_us = 1e6 / procfs::clock_ticks_per_second();
        assert_eq!(row.wall_s, 2.0);
        assert_eq!(
            (row.queries, row.qps, row.tps),
            (1000, Some(500.0), Some(500.0))
        );
        // The histogram's 99th event (0.100), not sysbench's rounded line.
        assert_eq!(row.lat_p99_ms, Some(0.1));
        assert_eq!(row.lat_avg_ms, Some(0.11));
        assert_eq!(row.proxy_cpu_us, Some(40.0 * to_us));
        assert_eq!(row.proxy_user_us_per_query, Some(10.0 * to_us / 1000.0));
        assert_eq!(row.proxy_sys_us_per_query, Some(30.0 * to_us / 1000.0));
        assert_eq!(row.proxy_ctxsw_per_query, Some(Some(2.0)));
        assert_eq!(row.server_cpu_us_per_query, Some(100.0 * to_us / 1000.0));
        assert_eq!(row.sysbench_cpu_us_per_query, 500.0);
        assert_eq!(row.sysbench_ctxsw_per_query, 1.0);
        assert_eq!(row.machine_busy_pct, 85.0);
        assert_eq!(row.machine_irq_pct, 10.0);
        let line = pyfmt::line(&row).unwrap();
        assert!(line.starts_with(r#"{"workload": "oltp_point_select", "threads": 16, "round": 1, "target": "psprobe", "wall_s": 2.0, "queries": 1000"#), "{line}");
        assert!(line.contains(r#""proxy_peak_rss_kib": 12000, "proxy_rss_kib": 11000, "proxy_peak_rss_reset": true"#), "{line}");
    }

    #[test]
    fn a_direct_run_leaves_the_proxy_out() {
        let m = MachineTicks {
            tasks: 1,
            irq: 0,
            steal: 0,
            total: 2,
        };
        let direct = Sample {
            proxy: None,
            proxy_ctxsw: None,
            server: None,
            machine: m,
            children: (0.0, 0),
        };
        let row = build_row(
            &args(),
            1.0,
            &parse_summary(REPORT),
            &direct,
            &direct,
            (None, None, false),
        )
        .unwrap();
        let line = pyfmt::line(&row).unwrap();
        assert!(line.contains(r#""proxy_cpu_us": null, "proxy_cpu_us_per_query": null, "proxy_peak_rss_kib": null, "proxy_rss_kib": null, "proxy_peak_rss_reset": null, "sysbench_cpu_us_per_query""#), "{line}");
        assert!(
            !line.contains("proxy_user_us_per_query") && !line.contains("server_cpu"),
            "{line}"
        );
        assert!(progress_line(&row).starts_with("bench:   500 q/s, p99 0.1 ms, machine busy"));
    }

    #[test]
    fn a_report_without_queries_is_an_error() {
        let m = MachineTicks::default();
        let s = Sample {
            proxy: None,
            proxy_ctxsw: None,
            server: None,
            machine: m,
            children: (0.0, 0),
        };
        let err = build_row(
            &args(),
            1.0,
            &parse_summary("FATAL: cannot connect"),
            &s,
            &s,
            (None, None, false),
        );
        assert!(err.is_err());
    }
}
