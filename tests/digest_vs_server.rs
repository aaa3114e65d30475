//! Per-digest numbers against the server's own: after a sysbench run through psprobe, every
//! statement shape in performance_schema's `events_statements_summary_by_digest` has a psprobe
//! digest with exactly the same count, and psprobe's mean latency (client side, so including
//! the network and protocol work) is at least the server's.

mod common;

use std::collections::BTreeMap;

use common::mariadb::MariaDb;
use common::probe::Probe;
use common::sysbench;

/// Compares statement texts across the two normalizations: the server quotes identifiers,
/// spaces out operators, writes value lists as `(...)` and DISTINCT as its synonym DISTINCTROW;
/// psprobe keeps the client's spacing and words and writes `(?+)`.
fn comparable(text: &str) -> String {
    text.to_lowercase()
        .replace('`', "")
        .replace("distinctrow", "distinct")
        .replace("(?+)", "(...)")
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect()
}

struct Shape {
    count: u64,
    mean_seconds: f64,
}

fn server_digests(db: &MariaDb) -> BTreeMap<String, Shape> {
    let rows = db.sql(
        "SELECT DIGEST_TEXT, COUNT_STAR, AVG_TIMER_WAIT FROM performance_schema.events_statements_summary_by_digest \
         WHERE SCHEMA_NAME = 'psprobe_test' AND DIGEST_TEXT IS NOT NULL",
    );
    rows.lines()
        .map(|line| {
            let mut f = line.split('\t');
            let text = f.next().expect("digest text");
            let count = f.next().and_then(|c| c.parse().ok()).expect("COUNT_STAR");
            let avg_ps: f64 = f
                .next()
                .and_then(|c| c.parse().ok())
                .expect("AVG_TIMER_WAIT");
            (
                comparable(text),
                Shape {
                    count,
                    mean_seconds: avg_ps / 1e12,
                },
            )
        })
        .collect()
}

fn probe_digests(probe: &Probe) -> BTreeMap<String, Shape> {
    let m = probe.scrape();
    let mut out: BTreeMap<String, (u64, f64, f64)> = BTreeMap::new();
    for s in m.series("psprobe_digest_commands_total") {
        let text = &s.labels["digest_text"];
        assert_ne!(
            text, "other",
            "every sysbench shape has its own digest\n{}",
            m.text
        );
        let digest = [("digest", s.labels["digest"].as_str())];
        let e = out.entry(comparable(text)).or_default();
        e.0 += s.value as u64;
        e.1 += m.get("psprobe_digest_latency_seconds_sum", &digest);
        e.2 += m.get("psprobe_digest_latency_seconds_count", &digest);
    }
    out.into_iter()
        .map(|(text, (count, sum, timed))| {
            (
                text,
                Shape {
                    count,
                    mean_seconds: sum / timed,
                },
            )
        })
        .collect()
}

fn run(ps_mode: &str) {
    let db = MariaDb::start_default();
    let tables = ["--tables=2", "--table-size=5000"];
    sysbench::run(&db.addr(), "oltp_read_write", "prepare", &tables);
    let probe = Probe::start(&db.addr(), &[]);
    db.sql("TRUNCATE TABLE performance_schema.events_statements_summary_by_digest");
    let mode = format!("--db-ps-mode={ps_mode}");
    // One client thread: performance_schema adds to a digest's counters without atomics, so
    // under concurrency the server itself loses an occasional count (seen: 1989 vs 1990).
    let mut opts = vec!["--threads=1", "--events=300", "--time=0", mode.as_str()];
    opts.extend(tables);
    let summary = sysbench::run(probe.proxy_addr(), "oltp_read_write", "run", &opts);
    assert_eq!(summary.ignored_errors, 0, "{}", summary.text);

    let server = server_digests(&db);
    let lost = db.sql("SHOW GLOBAL STATUS LIKE 'Performance_schema_digest_lost'");
    assert_eq!(
        lost.trim(),
        "Performance_schema_digest_lost\t0",
        "the server dropped digests"
    );
    let probe = probe_digests(&probe);
    assert!(
        server.len() >= 10,
        "the server saw sysbench's shapes: {:?}",
        server.keys()
    );
    let server_shapes: Vec<_> = server.keys().collect();
    let probe_shapes: Vec<_> = probe.keys().collect();
    assert_eq!(
        server_shapes, probe_shapes,
        "the same statement shapes on both sides"
    );
    for (text, s) in &server {
        let p = &probe[text];
        assert_eq!(p.count, s.count, "count of {text}");
        // The server's timer can stop a little after its response left (COMMIT: the
        // statement's end event follows the OK), so the proxy's mean may trail it by a hair;
        // more than 2% + 20 µs below would mean psprobe times the wrong span.
        assert!(
            p.mean_seconds >= s.mean_seconds * 0.98 - 20e-6,
            "{text}: psprobe's mean {:.6}s is below the server's {:.6}s",
            p.mean_seconds,
            s.mean_seconds
        );
    }
    let total: u64 = probe.values().map(|s| s.count).sum();
    assert_eq!(
        total, summary.total,
        "every statement sysbench counted has a digest"
    );
}

/// Text protocol only: MariaDB 10.11 records no digest for COM_STMT_EXECUTE in
/// events_statements_summary_by_digest, so there is nothing to compare binary-protocol runs
/// against (their counts are checked against sysbench in sysbench_counts.rs).
#[test]
fn text_protocol_digests_match_the_server() {
    run("disable");
}
