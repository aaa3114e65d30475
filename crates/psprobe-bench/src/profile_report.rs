//! `profile-report`: the tables of `bench.sh --profile` for psprobe and HAProxy, from the
//! files it left in DIR:
//!
//! - syscalls per query (strace.TARGET, `strace -c -f` output, divided by the queries sysbench
//!   ran meanwhile, raw/strace-TARGET.txt),
//! - the top symbols of a perf cpu-clock sample (perf.TARGET.txt, kernel [k] and user [.]),
//! - user-space instructions per query and top functions (callgrind.TARGET through
//!   callgrind_annotate; the whole process is counted, startup included, so both figures are
//!   slight overestimates).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};
use psprobe_harness::sysbench::parse_summary;

use crate::pyfmt::{thousands, thousands_f};

#[derive(clap::Args)]
pub struct Args {
    /// The run's directory.
    #[arg(long)]
    dir: PathBuf,
    /// Rows of each top-N table (psprobe's; HAProxy's callgrind table has 12).
    #[arg(long, default_value_t = 25)]
    top: usize,
}

const TARGETS: [&str; 2] = ["psprobe", "haproxy"];

pub fn run(args: &Args) -> Result<()> {
    let mut out = String::from("## Profile of the proxies\n\n");
    out += &report_strace(&args.dir)?;
    out += &report_perf(&args.dir, args.top)?;
    out += &report_callgrind(&args.dir, args.top)?;
    print!("{out}");
    Ok(())
}

/// Queries sysbench ran, from its report in DIR/raw/NAME; `None` without one.
fn queries(dir: &Path, name: &str) -> Option<u64> {
    let text = fs::read_to_string(dir.join("raw").join(name)).ok()?;
    Some(parse_summary(&text).total).filter(|q| *q > 0)
}

fn read(path: &Path) -> Result<String> {
    let bytes = fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

// --- strace ----------------------------------------------------------------------------------

/// (syscall, calls, failed calls).
type Calls = Vec<(String, u64, u64)>;

/// One proxy's syscalls and the queries sysbench ran while they were counted.
struct Traced<'a> {
    target: &'a str,
    calls: Calls,
    queries: u64,
}

/// Syscall -> (calls, errors) of `strace -c` output ("% time seconds usecs/call calls
/// [errors] syscall" rows; the total row left out).
fn strace_calls(text: &str) -> Calls {
    let mut calls = Vec::new();
    for line in text.lines() {
        let parts: Vec<&str> = line.split_whitespace().collect();
        let numeric = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_digit() || c == '.');
        let Some(name) = parts.last() else { continue };
        if parts.len() < 5 || !numeric(parts[0]) || *name == "total" {
            continue;
        }
        let Ok(n) = parts[3].parse() else { continue };
        let errors = if parts.len() == 6 {
            parts[4].parse().unwrap_or(0)
        } else {
            0
        };
        calls.push((name.to_string(), n, errors));
    }
    calls
}

fn report_strace(dir: &Path) -> Result<String> {
    let mut per = Vec::new();
    for target in TARGETS {
        let path = dir.join(format!("strace.{target}"));
        if let (true, Some(queries)) =
            (path.exists(), queries(dir, &format!("strace-{target}.txt")))
        {
            per.push(Traced {
                target,
                calls: strace_calls(&read(&path)?),
                queries,
            });
        }
    }
    Ok(strace_table(&per))
}

fn strace_table(per: &[Traced]) -> String {
    if per.is_empty() {
        return String::new();
    }
    let get = |calls: &[(String, u64, u64)], name: &str| {
        calls
            .iter()
            .find(|(n, _, _)| n == name)
            .map_or((0, 0), |(_, c, e)| (*c, *e))
    };
    let mut names: Vec<&String> = per
        .iter()
        .flat_map(|p| p.calls.iter().map(|(n, _, _)| n))
        .collect();
    names.sort();
    names.dedup();
    // Most calls per query (in any target) first; ties by name.
    let weight = |name: &str| {
        per.iter()
            .map(|p| get(&p.calls, name).0 as f64 / p.queries as f64)
            .fold(0.0, f64::max)
    };
    names.sort_by(|a, b| weight(b).total_cmp(&weight(a)).then(a.cmp(b)));
    let mut out =
        String::from("### Syscalls per query (strace -c -f; oltp_point_select, 16 threads)\n\n");
    out += &format!(
        "| syscall | {} |\n",
        per.iter().map(|p| p.target).collect::<Vec<_>>().join(" | ")
    );
    out += &format!("|---|{}\n", "---:|".repeat(per.len()));
    let mut totals = vec![0.0; per.len()];
    for name in names {
        let mut cells = Vec::new();
        let mut show = false;
        for (i, p) in per.iter().enumerate() {
            let (c, e) = get(&p.calls, name);
            let q = p.queries as f64;
            totals[i] += c as f64 / q;
            show |= c as f64 / q >= 0.01;
            let failed = if e > 0 {
                format!(" ({:.2} failed)", e as f64 / q)
            } else {
                String::new()
            };
            cells.push(format!("{:.2}{failed}", c as f64 / q));
        }
        if show {
            out += &format!("| {name} | {} |\n", cells.join(" | "));
        }
    }
    let totals: Vec<String> = totals.iter().map(|t| format!("**{t:.2}**")).collect();
    out += &format!("| **total** | {} |\n\n", totals.join(" | "));
    out
}

// --- perf ------------------------------------------------------------------------------------

/// The first `n` rows of `perf report --sort sym --stdio`: (percent, "[k]" or "[.]", symbol).
fn perf_top(text: &str, n: usize) -> Vec<(f64, String, String)> {
    let mut rows = Vec::new();
    for line in text.lines() {
        if !line.starts_with(char::is_whitespace) {
            continue;
        }
        let mut parts = line.trim_start().splitn(2, char::is_whitespace);
        let (Some(pct), Some(rest)) = (parts.next(), parts.next()) else {
            continue;
        };
        let Some(Ok(pct)) = pct.strip_suffix('%').map(str::parse::<f64>) else {
            continue;
        };
        let rest = rest.trim_start();
        let kind = &rest[..rest.len().min(3)];
        if kind != "[k]" && kind != "[.]" {
            continue;
        }
        let symbol = rest[3..].trim();
        if rest[3..].chars().next().is_some_and(|c| !c.is_whitespace()) {
            continue;
        }
        rows.push((pct, kind.to_string(), symbol.to_string()));
        if rows.len() >= n {
            break;
        }
    }
    rows
}

fn report_perf(dir: &Path, n: usize) -> Result<String> {
    let mut out = String::new();
    for t in TARGETS {
        let path = dir.join(format!("perf.{t}.txt"));
        if !path.exists() {
            continue;
        }
        out += &perf_table(t, &read(&path)?, n);
    }
    Ok(out)
}

fn perf_table(target: &str, text: &str, n: usize) -> String {
    let rows = perf_top(text, n);
    if rows.is_empty() {
        return String::new();
    }
    let kernel: f64 = perf_top(text, 10_000)
        .iter()
        .filter(|(_, k, _)| k == "[k]")
        .map(|(p, _, _)| p)
        .sum();
    let mut out = format!(
        "### {target}: CPU samples by symbol (perf, cpu-clock; oltp_point_select, 16 threads)\n\n"
    );
    out += &format!("Kernel symbols: {kernel:.0}% of the samples listed (>= 0.5% each).\n\n");
    out += "| % | where | symbol |\n|---:|---|---|\n";
    for (pct, kind, sym) in rows {
        let place = if kind == "[k]" { "kernel" } else { "user" };
        out += &format!("| {pct:.1} | {place} | `{}` |\n", short(&sym));
    }
    out + "\n"
}

// --- callgrind -------------------------------------------------------------------------------

/// Total instructions of a callgrind output file ("summary:" or "totals:" line).
fn total_ir(text: &str) -> Option<u64> {
    text.lines()
        .find(|l| l.starts_with("summary:") || l.starts_with("totals:"))
        .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
}

/// The function table of callgrind_annotate's output: (instructions, function), at most `n`,
/// the library in brackets after a name dropped.
fn callgrind_top(annotated: &str, n: usize) -> Vec<(u64, String)> {
    let mut rows = Vec::new();
    let mut started = false;
    for line in annotated.lines() {
        if line.contains("file:function") {
            started = true;
            continue;
        }
        if !started {
            continue;
        }
        if line.trim().is_empty() && !rows.is_empty() {
            break;
        }
        let line = line.trim();
        let Some((cost, rest)) = line.split_once(char::is_whitespace) else {
            continue;
        };
        if cost.is_empty() || !cost.chars().all(|c| c.is_ascii_digit() || c == ',') {
            continue;
        }
        let mut rest = rest.trim_start();
        // "( 8.98%)" after the count in newer callgrind_annotate.
        if let Some(after) = rest
            .strip_prefix('(')
            .and_then(|r| Some(r.split_once("%)")?.1))
        {
            rest = after.trim_start();
        }
        let mut name = rest.trim_end();
        if name.ends_with(']') {
            if let Some(open) = name.rfind('[') {
                name = name[..open].trim_end();
            }
        }
        let Ok(cost) = cost.replace(',', "").parse() else {
            continue;
        };
        if name.is_empty() {
            continue;
        }
        rows.push((cost, name.to_string()));
        if rows.len() >= n {
            break;
        }
    }
    rows
}

fn annotate(path: &Path, inclusive: bool) -> Result<String> {
    let out = Command::new("callgrind_annotate")
        .arg(format!(
            "--inclusive={}",
            if inclusive { "yes" } else { "no" }
        ))
        .arg(path)
        .output()
        .context("cannot run callgrind_annotate (part of valgrind: apt-get install valgrind)")?;
    if !out.status.success() {
        bail!(
            "callgrind_annotate {}: {}",
            path.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// "src/relay.rs:psprobe::relay::pump" -> "psprobe::relay::pump" (a file or "???" before the
/// first ':' is dropped), cut to `width` characters.
fn short(name: &str) -> String {
    const WIDTH: usize = 120;
    let name = match name.split_once(':') {
        Some((head, rest))
            if !rest.is_empty() && (head.starts_with(['/', '?', '.']) || head.contains('/')) =>
        {
            rest
        }
        _ => name,
    };
    if name.chars().count() <= WIDTH {
        name.to_string()
    } else {
        name.chars().take(WIDTH - 1).collect::<String>() + "…"
    }
}

fn report_callgrind(dir: &Path, n: usize) -> Result<String> {
    let mut per = Vec::new();
    for t in TARGETS {
        let path = dir.join(format!("callgrind.{t}"));
        let Some(q) = queries(dir, &format!("callgrind-{t}.txt")) else {
            continue;
        };
        if !path.exists() {
            continue;
        }
        let ir = total_ir(&read(&path)?)
            .with_context(|| format!("{}: no summary line", path.display()))?;
        per.push((t, path, ir, q));
    }
    if per.is_empty() {
        return Ok(String::new());
    }
    // bench.sh names the workload it ran under callgrind (BENCH_PROFILE_WORKLOAD).
    let workload = std::fs::read_to_string(dir.join("raw/callgrind-workload.txt"))
        .map(|w| w.trim().to_string())
        .unwrap_or_else(|_| "oltp_point_select".to_string());
    let mut out =
        format!("### User-space instructions per query (callgrind; {workload}, 1 thread)\n\n");
    out += "| proxy | queries | instructions | instructions/query |\n|---|---:|---:|---:|\n";
    for (t, _, ir, q) in &per {
        out += &format!(
            "| {t} | {} | {} | {} |\n",
            thousands(*q),
            thousands(*ir),
            thousands_f(*ir as f64 / *q as f64)
        );
    }
    out += "\n";
    for (t, path, ir, q) in &per {
        for inclusive in [false, true] {
            if *t != "psprobe" && inclusive {
                continue;
            }
            let rows = callgrind_top(
                &annotate(path, inclusive)?,
                if *t == "psprobe" { n } else { 12 },
            );
            out += &top_table(t, inclusive, &rows, *ir, *q);
        }
    }
    Ok(out)
}

fn top_table(target: &str, inclusive: bool, rows: &[(u64, String)], ir: u64, q: u64) -> String {
    let kind = if inclusive { "inclusive" } else { "self" };
    let mut out = format!("#### {target}: top functions by {kind} instructions\n\n");
    out += "| instr./query | % | function |\n|---:|---:|---|\n";
    for (cost, name) in rows {
        out += &format!(
            "| {} | {:.1} | `{}` |\n",
            thousands_f(*cost as f64 / q as f64),
            100.0 * *cost as f64 / ir as f64,
            short(name)
        );
    }
    out + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;

    const STRACE: &str = "% time     seconds  usecs/call     calls    errors syscall
------ ----------- ----------- --------- --------- ----------------
 52.10    0.812000          10     80000           sendto
 40.00    0.620000           7     80000      4000 recvfrom
  7.90    0.120000           1       100           epoll_wait
------ ----------- ----------- --------- --------- ----------------
100.00    1.552000           9    160100      4000 total
";

    #[test]
    fn strace_rows_and_table() {
        let calls = strace_calls(STRACE);
        assert_eq!(
            calls,
            [
                ("sendto".to_string(), 80000, 0),
                ("recvfrom".to_string(), 80000, 4000),
                ("epoll_wait".to_string(), 100, 0)
            ]
        );
        let haproxy = vec![
            ("sendto".to_string(), 40000, 0),
            ("recvfrom".to_string(), 60000, 0),
        ];
        let table = strace_table(&[
            Traced {
                target: "psprobe",
                calls,
                queries: 40000,
            },
            Traced {
                target: "haproxy",
                calls: haproxy,
                queries: 40000,
            },
        ]);
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(lines[2], "| syscall | psprobe | haproxy |");
        assert_eq!(lines[3], "|---|---:|---:|");
        // recvfrom and sendto tie at 2.00 per query in psprobe: by name.
        assert_eq!(lines[4], "| recvfrom | 2.00 (0.10 failed) | 1.50 |");
        assert_eq!(lines[5], "| sendto | 2.00 | 1.00 |");
        // epoll_wait: 0.0025 per query, under 0.01: counted in the total, not shown.
        assert_eq!(lines[6], "| **total** | **4.00** | **2.50** |");
    }

    const PERF: &str = "# Samples: 20K of event 'cpu-clock'
#
# Overhead  Symbol
# ........  ......................................
#
    12.50%  [k] do_syscall_64
     8.25%  [.] psprobe::relay::pump
     3.00%  [k] tcp_sendmsg_locked
     0.75%  [.] malloc

";

    #[test]
    fn perf_rows_and_kernel_share() {
        let top = perf_top(PERF, 2);
        assert_eq!(top.len(), 2);
        assert_eq!(
            top[1],
            (8.25, "[.]".to_string(), "psprobe::relay::pump".to_string())
        );
        let table = perf_table("psprobe", PERF, 3);
        assert!(
            table.contains("Kernel symbols: 16% of the samples listed"),
            "{table}"
        );
        assert!(
            table.contains("| 8.2 | user | `psprobe::relay::pump` |"),
            "{table}"
        );
        assert!(
            table.contains("| 3.0 | kernel | `tcp_sendmsg_locked` |"),
            "{table}"
        );
        assert!(!table.contains("malloc"), "{table}");
    }

    /// callgrind_annotate 3.19's function table (trimmed).
    const ANNOTATED: &str = "--------------------------------------------------------------------------------
Ir               
--------------------------------------------------------------------------------
631,025 (100.0%)  PROGRAM TOTALS

--------------------------------------------------------------------------------
Ir                file:function
--------------------------------------------------------------------------------
100,435 (15.92%)  ./elf/./elf/dl-lookup.c:do_lookup_x [/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2]
 56,653 ( 8.98%)  ???:0x0000000000014cb0 [/usr/bin/ls]
 31,944 ( 5.06%)  ./elf/../sysdeps/generic/dl-new-hash.h:_dl_lookup_symbol_x

--------------------------------------------------------------------------------
-- Auto-annotated source: ./elf/dl-lookup.c
--------------------------------------------------------------------------------
  1,000 ( 0.16%)  int x = 1;
";

    #[test]
    fn callgrind_functions_without_library_and_source_lines() {
        let rows = callgrind_top(ANNOTATED, 25);
        assert_eq!(
            rows,
            [
                (100435, "./elf/./elf/dl-lookup.c:do_lookup_x".to_string()),
                (56653, "???:0x0000000000014cb0".to_string()),
                (
                    31944,
                    "./elf/../sysdeps/generic/dl-new-hash.h:_dl_lookup_symbol_x".to_string()
                ),
            ]
        );
        assert_eq!(callgrind_top(ANNOTATED, 1).len(), 1);
        assert_eq!(
            total_ir("events: Ir\nsummary: 631025\ntotals: 631025\n"),
            Some(631025)
        );
        assert_eq!(total_ir("events: Ir\n"), None);
        let table = top_table("psprobe", false, &rows, 631025, 100);
        assert!(
            table.contains("| 1,004 | 15.9 | `do_lookup_x` |"),
            "{table}"
        );
        assert!(
            table.contains("| 567 | 9.0 | `0x0000000000014cb0` |"),
            "{table}"
        );
    }

    #[test]
    fn short_names_drop_the_file_and_are_cut() {
        assert_eq!(
            short("src/relay.rs:psprobe::relay::pump"),
            "psprobe::relay::pump"
        );
        assert_eq!(short("psprobe::relay::pump"), "psprobe::relay::pump");
        assert_eq!(short("do_syscall_64"), "do_syscall_64");
        let long = "x".repeat(200);
        let cut = short(&long);
        assert_eq!(cut.chars().count(), 120);
        assert!(cut.ends_with('…'));
    }
}
