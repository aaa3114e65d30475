//! 100,000 distinct statement shapes through psprobe: the digest table stays at its cap, the
//! exported series stay bounded, memory stays under the documented bound, and psprobe keeps
//! serving.

mod common;

use common::cli::mariadb_ok;
use common::mariadb::MariaDb;
use common::probe::Probe;

const SHAPES: usize = 100_000;
/// The bound README documents for the default `--max-digests 5000`.
const RSS_BOUND_MIB: u64 = 64;

fn rss_mib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("proc status");
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .expect("VmHWM in /proc/PID/status");
    kib / 1024
}

#[test]
fn distinct_shapes_stay_bounded() {
    let db = MariaDb::start_default();
    let probe = Probe::start(
        &db.addr(),
        &["--max-digests", "5000", "--metrics-top-digests", "50"],
    );
    // Distinct column aliases make distinct shapes: fingerprints never fold identifiers.
    let mut script = String::with_capacity(SHAPES * 40);
    for i in 0..SHAPES {
        script.push_str(&format!("SELECT {i} AS shape_{i};\n"));
    }
    mariadb_ok(probe.proxy_addr(), &["-N", "-B"], Some(script.as_bytes()));

    let m = probe.scrape();
    let queries = m.get("psprobe_commands_total", &[("command", "query")]);
    assert_eq!(queries as usize, SHAPES, "every statement counted");
    let digests: Vec<_> = m.series("psprobe_digest_commands_total");
    assert!(
        digests.len() <= 51,
        "top 50 + other per scenario, got {}",
        digests.len()
    );
    let other = m.get("psprobe_digest_commands_total", &[("digest", "other")]);
    assert!(
        other >= (SHAPES - 5000) as f64,
        "shapes past the cap are counted as other: {other}"
    );
    let exported: f64 = digests.iter().map(|s| s.value).sum();
    assert_eq!(
        exported as usize, SHAPES,
        "nothing lost between digests and other"
    );
    let series = m.samples.len();
    assert!(series < 3000, "exported series stay bounded: {series}");

    let rss = rss_mib(probe.pid());
    assert!(
        rss <= RSS_BOUND_MIB,
        "peak RSS {rss} MiB exceeds {RSS_BOUND_MIB} MiB"
    );
    eprintln!("peak RSS after {SHAPES} shapes: {rss} MiB, {series} samples exported");

    let out = mariadb_ok(probe.proxy_addr(), &["-N", "-B", "-e", "SELECT 42"], None);
    assert_eq!(out.trim(), "42", "psprobe keeps serving");
}
