//! What psprobe saw, from its /metrics: per-digest and per-command counts, TLS and
//! compression counters. Used to compare the same workload carried different ways.

use super::probe::Probe;
use super::prom::Scrape;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// `digest_text -> commands` (nonzero only).
pub fn digests(s: &Scrape) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for x in s.series("psprobe_digest_commands_total") {
        if x.value > 0.0 {
            let text = x.labels.get("digest_text").cloned().unwrap_or_default();
            *out.entry(text).or_insert(0) += x.value as u64;
        }
    }
    out
}

/// `command/outcome -> commands` (nonzero only).
pub fn commands(s: &Scrape) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for x in s.series("psprobe_commands_total") {
        if x.value > 0.0 {
            let key = format!(
                "{}/{}",
                x.labels.get("command").map_or("", String::as_str),
                x.labels.get("outcome").map_or("", String::as_str)
            );
            *out.entry(key).or_insert(0) += x.value as u64;
        }
    }
    out
}

pub fn unobserved(s: &Scrape) -> f64 {
    s.get("psprobe_unobserved_connections_total", &[])
}

pub fn transport(s: &Scrape, tls: &str, compression: &str) -> f64 {
    s.get(
        "psprobe_connections_by_transport_total",
        &[("tls", tls), ("compression", compression)],
    )
}

pub fn handshake_failures(s: &Scrape, leg: &str, cause: &str) -> f64 {
    s.get(
        "psprobe_tls_handshake_failures_total",
        &[("leg", leg), ("cause", cause)],
    )
}

/// Scrapes until `done` holds (counters move after the client has gone: the connection's
/// end is recorded when psprobe notices it). Panics with the last scrape after 10 s.
pub fn wait_for(probe: &Probe, what: &str, done: impl Fn(&Scrape) -> bool) -> Scrape {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let s = probe.scrape();
        if done(&s) {
            return s;
        }
        if Instant::now() > deadline {
            panic!("{what}: not seen in 10 s; metrics:\n{}", s.text);
        }
        std::thread::sleep(Duration::from_millis(20)); // poll interval
    }
}
