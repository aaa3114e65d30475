//! `memory report`: the markdown table of memory.jsonl, each row against its issue 6 target
//! (psprobe only; HAProxy and direct rows are for comparison). When fewer idle connections
//! could be opened than asked for (descriptor limit), the RSS extrapolated to the target count
//! is judged and the verdict says so.

use std::fs;
use std::path::Path;

use anyhow::{anyhow, Context, Result};

use crate::jsonl::{self, Field};
use crate::pyfmt::{thousands, Ordered};

type Row = Ordered<Field>;

const IDLE_RSS_TARGET_MIB: f64 = 200.0;
const STREAM_GROWTH_TARGET_MIB: f64 = 64.0;

pub fn run(results: &Path) -> Result<()> {
    let text = fs::read_to_string(results).with_context(|| {
        format!(
            "cannot read {} (did memory idle / stream write it?)",
            results.display()
        )
    })?;
    let mut rows = Vec::new();
    for (i, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let row = jsonl::parse_line(line)
            .map_err(|e| anyhow!("{} line {}: {e}", results.display(), i + 1))?;
        rows.push(row);
    }
    print!(
        "{}",
        render(&rows).with_context(|| format!("{}", results.display()))?
    );
    Ok(())
}

/// A field of a row that must be there.
fn num(r: &Row, key: &str) -> Result<f64> {
    r.get(key).and_then(Field::as_f64).with_context(|| {
        format!(
            "a {} row without {key}",
            r.get("test").map_or("?".into(), Field::python_str)
        )
    })
}

fn count(r: &Row, key: &str) -> Result<u64> {
    Ok(num(r, key)? as u64)
}

/// A float field as Python printed it.
fn shown(r: &Row, key: &str) -> Result<String> {
    num(r, key)?;
    Ok(r.get(key).map(Field::python_str).unwrap_or_default())
}

fn render(rows: &[Row]) -> Result<String> {
    let mut out = String::from("## Memory\n\n| test | through | result | issue 6 target | verdict |\n|---|---|---|---|---|\n");
    for r in rows {
        let target = r.get("target").map_or("?".into(), Field::python_str);
        let psprobe = target == "psprobe";
        if r.get("test").and_then(Field::as_str) == Some("idle") {
            let (opened, connections) = (count(r, "opened")?, count(r, "connections")?);
            let mut result = format!(
                "{} of {} held (server: {} connections); RSS {} MiB = {} KiB/connection, peak {} MiB, {} MiB after close",
                thousands(opened),
                thousands(connections),
                thousands(count(r, "upstream_threads_connected")?),
                shown(r, "rss_held_mib")?,
                shown(r, "kib_per_connection")?,
                shown(r, "peak_rss_mib")?,
                shown(r, "rss_after_close_mib")?,
            );
            let goal = r
                .get("target_connections")
                .and_then(Field::as_u64)
                .filter(|g| *g != 0)
                .unwrap_or(connections);
            let scaled = opened < goal;
            if scaled {
                result += &format!(
                    "; extrapolated to {}: {} MiB",
                    thousands(goal),
                    shown(r, "rss_at_target_mib")?
                );
            }
            let (goal_text, verdict) = if psprobe {
                let ok =
                    num(r, "rss_at_target_mib")? <= IDLE_RSS_TARGET_MIB && opened == connections;
                let verdict = format!(
                    "{}{}",
                    if ok { "met" } else { "MISSED" },
                    if scaled { " (extrapolated)" } else { "" }
                );
                (
                    format!(
                        "RSS <= {} MiB with {} held",
                        IDLE_RSS_TARGET_MIB as u64,
                        thousands(goal)
                    ),
                    verdict,
                )
            } else {
                ("(comparison)".to_string(), String::new())
            };
            out += &format!(
                "| {} idle connections | {target} | {result} | {goal_text} | {verdict} |\n",
                thousands(goal)
            );
        } else {
            let mut result = format!(
                "{} rows, {:.0} MiB in {} s ({} MiB/s)",
                count(r, "rows")?,
                num(r, "client_bytes")? / 1048576.0,
                shown(r, "seconds")?,
                shown(r, "mib_per_s")?,
            );
            if r.get("rss_growth_mib").is_some() {
                result += &format!(
                    "; RSS growth {} MiB (peak {} MiB)",
                    shown(r, "rss_growth_mib")?,
                    shown(r, "peak_rss_mib")?
                );
            }
            if let Some(b) = r
                .get("proxy_server_to_client_bytes")
                .and_then(Field::as_f64)
                .filter(|b| *b != 0.0)
            {
                result += &format!(
                    "; psprobe counted {:.0} MiB server to client",
                    b / 1048576.0
                );
            }
            let (goal_text, verdict) = if psprobe {
                let ok = num(r, "rss_growth_mib")? < STREAM_GROWTH_TARGET_MIB;
                (
                    format!("RSS growth < {} MiB", STREAM_GROWTH_TARGET_MIB as u64),
                    if ok { "met" } else { "MISSED" }.to_string(),
                )
            } else {
                ("(comparison)".to_string(), String::new())
            };
            out += &format!(
                "| 1 GiB of 17 MiB rows | {target} | {result} | {goal_text} | {verdict} |\n"
            );
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(text: &str) -> Vec<Row> {
        text.lines()
            .map(|l| jsonl::parse_line(l).unwrap())
            .collect()
    }

    #[test]
    fn idle_rows_judge_psprobe_and_extrapolate_when_short() {
        let text = r#"{"test": "idle", "target": "psprobe", "connections": 500, "opened": 500, "failed": 0, "first_error": null, "open_s": 0.4, "close_s": 0.3, "upstream_threads_connected": 500, "connections_active_metric": 500.0, "rss_before_mib": 11.0, "rss_held_mib": 12.2, "rss_held_later_mib": 12.2, "peak_rss_mib": 12.5, "rss_after_close_mib": 12.0, "kib_per_connection": 2.5, "target_connections": 10000, "rss_at_target_mib": 35.4}
{"test": "idle", "target": "haproxy", "connections": 10000, "opened": 10000, "failed": 0, "first_error": null, "open_s": 4.0, "close_s": 1.0, "upstream_threads_connected": 10000, "connections_active_metric": null, "rss_before_mib": 14.6, "rss_held_mib": 48.0, "rss_held_later_mib": 48.0, "peak_rss_mib": 48.0, "rss_after_close_mib": 20.0, "kib_per_connection": 3.4, "target_connections": 10000, "rss_at_target_mib": 48.0}"#;
        let table = render(&rows(text)).unwrap();
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(
            lines[4],
            "| 10,000 idle connections | psprobe | 500 of 500 held (server: 500 connections); RSS 12.2 MiB = 2.5 KiB/connection, peak 12.5 MiB, 12.0 MiB after close; extrapolated to 10,000: 35.4 MiB | RSS <= 200 MiB with 10,000 held | met (extrapolated) |"
        );
        assert_eq!(
            lines[5],
            "| 10,000 idle connections | haproxy | 10,000 of 10,000 held (server: 10,000 connections); RSS 48.0 MiB = 3.4 KiB/connection, peak 48.0 MiB, 20.0 MiB after close | (comparison) |  |"
        );
    }

    #[test]
    fn a_failed_connection_misses_the_idle_target() {
        let text = r#"{"test": "idle", "target": "psprobe", "connections": 10, "opened": 9, "failed": 1, "upstream_threads_connected": 9, "rss_held_mib": 1.0, "kib_per_connection": 1.0, "peak_rss_mib": 1.0, "rss_after_close_mib": 1.0, "target_connections": 10, "rss_at_target_mib": 1.1}"#;
        let table = render(&rows(text)).unwrap();
        assert!(table.contains("| MISSED (extrapolated) |"), "{table}");
    }

    #[test]
    fn stream_rows_show_growth_and_psprobe_counts() {
        let text = r#"{"test": "stream", "target": "direct", "rows": 64, "client_bytes": 1140850752, "seconds": 2.31, "mib_per_s": 471.0}
{"test": "stream", "target": "psprobe", "rows": 64, "client_bytes": 1140850752, "seconds": 4.5, "mib_per_s": 241.8, "rss_before_mib": 11.2, "peak_rss_mib": 11.7, "rss_after_mib": 11.5, "rss_growth_mib": 0.5, "proxy_server_to_client_bytes": 1140852000.0}"#;
        let table = render(&rows(text)).unwrap();
        assert!(table.contains("| 1 GiB of 17 MiB rows | direct | 64 rows, 1088 MiB in 2.31 s (471.0 MiB/s) | (comparison) |  |"), "{table}");
        assert!(table.contains("| psprobe | 64 rows, 1088 MiB in 4.5 s (241.8 MiB/s); RSS growth 0.5 MiB (peak 11.7 MiB); psprobe counted 1088 MiB server to client | RSS growth < 64 MiB | met |"), "{table}");
    }

    #[test]
    fn a_row_missing_a_field_is_an_error_not_a_panic() {
        let err = render(&rows(
            r#"{"test": "stream", "target": "psprobe", "rows": 64}"#,
        ))
        .unwrap_err();
        assert!(
            format!("{err:#}").contains("without client_bytes"),
            "{err:#}"
        );
    }
}
