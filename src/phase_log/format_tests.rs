//! The phase log's JSON text, pinned: restructuring the record types (a field moved into a
//! shared struct, serde attributes) must not change a byte of what is written, nor what older
//! logs read back as.

use super::*;

/// A version-2 phase record with every field, and aggregates of each kind (per command, per
/// digest, the rest), as docs/phase-log.md describes it: read, then written again to the letter.
const VERSION_2_PHASE: &str = concat!(
    r#"{"version":2,"kind":"phase","scenario":"pfs_on","block":3,"phase":7,"#,
    r#""switched_at_ms":1764441290000,"measure_from_ms":1764441290150,"#,
    r#""measure_to_ms":1764441294000,"restarted":false,"verified":true,"#,
    r#""commands":[{"command":"query","count":5,"errors":1,"rows_sent":10,"#,
    r#""rows_affected":3,"timed":4,"latency_sum_ns":4000000,"latency_min_ns":500000,"#,
    r#""latency_max_ns":2000000,"histogram":[[150,4],[151,1]]}],"#,
    r#""digests":[{"digest":"CC0F42D4205D5441","text":"select c from sbtest1 where id=?","#,
    r#""count":4,"errors":1,"rows_sent":8,"rows_affected":3,"timed":3,"#,
    r#""latency_sum_ns":4000000,"latency_min_ns":500000,"latency_max_ns":2000000,"#,
    r#""histogram":[[150,3]]},{"text":"(rest)","count":2,"errors":1,"rows_sent":4,"#,
    r#""rows_affected":3,"timed":1,"latency_sum_ns":4000000,"latency_min_ns":500000,"#,
    r#""latency_max_ns":2000000,"histogram":[[151,1]]}],"server_cpu_ms":1234,"#,
    r#""schedule":"fast","slots":2,"measured_ms":3700,"settle_ms":150,"#,
    r#""switch":{"count":2,"sum_ms":12.5,"max_ms":7.25,"statements":6},"#,
    r#""since_switch":[{"bin":1,"slots":2,"count":9,"timed":9,"latency_sum_ns":18000000}],"#,
    r#""merged_from":3}"#,
);

#[test]
fn a_version_2_phase_record_is_read_and_written_exactly() {
    let phases = parse_log(VERSION_2_PHASE).phases;
    assert_eq!(phases.len(), 1);
    assert_eq!(serde_json::to_string(&phases[0]).unwrap(), VERSION_2_PHASE);
    let rest = &phases[0].digests[1];
    assert_eq!(
        (rest.digest.as_deref(), rest.text.as_deref()),
        (None, Some(REST))
    );
    assert_eq!(
        rest.totals,
        Totals {
            count: 2,
            errors: 1,
            rows_sent: 4,
            rows_affected: 3,
            timed: 1,
            latency_sum_ns: 4_000_000,
            latency_min_ns: 500_000,
            latency_max_ns: 2_000_000,
        }
    );
    assert_eq!(rest.histogram, vec![(151, 1)]);
}

/// Every line of a version-1 log (tests/data/phases-v1.jsonl, written by psprobe 0.1) reads
/// back as a record that is written again as the same line: nothing read is lost or changed.
#[test]
fn a_version_1_log_reads_back_to_the_same_text() {
    let text = include_str!("../../tests/data/phases-v1.jsonl");
    let log = parse_log(text);
    let written: Vec<String> = log
        .runs
        .iter()
        .map(|r| serde_json::to_string(r).unwrap())
        .chain(log.phases.iter().map(|p| serde_json::to_string(p).unwrap()))
        .collect();
    assert_eq!(written, text.lines().collect::<Vec<_>>());
}

/// The traffic record's aggregates are the phase records' (same fields, same order).
#[test]
fn a_traffic_record_is_read_and_written_exactly() {
    let text = concat!(
        r#"{"version":2,"kind":"traffic","from_ms":5,"to_ms":9,"#,
        r#""commands":[{"command":"ping","count":1,"errors":0,"rows_sent":0,"#,
        r#""rows_affected":0,"timed":1,"latency_sum_ns":900,"latency_min_ns":900,"#,
        r#""latency_max_ns":900,"histogram":[[0,1]]}],"#,
        r#""digests":[{"digest":"0000000000000001","text":"select ?","count":4,"errors":0,"#,
        r#""rows_sent":4,"rows_affected":0,"timed":4,"latency_sum_ns":4000000,"#,
        r#""latency_min_ns":1000000,"latency_max_ns":1000000,"histogram":[[141,4]]}]}"#,
    );
    let traffic = parse_log(text).traffic;
    assert_eq!(traffic.len(), 1);
    assert_eq!(serde_json::to_string(&traffic[0]).unwrap(), text);
}
