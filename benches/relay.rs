//! The relay path per chunk, sockets aside: recorded sysbench connections (see
//! crates/psprobe-core/benches/session.rs for the recordings) replayed through psprobe's relay
//! between two in-memory peers that read the recording in order and take every write whole.
//! Each chunk is read into the relay's scratch buffer, forwarded, counted, fed to the session
//! machine, and its events recorded (live connection entry, digests, Prometheus series) into
//! an `Observer` wired as `psprobe proxy` wires it: what psprobe adds to every chunk it relays.
//!
//! `cargo bench --bench relay -- --warm-up-time 1 --measurement-time 5`

use std::sync::Arc;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use psprobe::white_box::relay_recording;
use psprobe::white_box::Observer;
use psprobe::white_box::{DigestCollector, ProxyMetrics, DEFAULT_TOP_DIGESTS};
use psprobe::white_box::{DigestStore, Scenarios, DEFAULT_MAX_DIGESTS};
use psprobe_core::digest::FingerprintOptions;

const POINT_SELECT_PS: &[u8] =
    include_bytes!("../scripts/bench/traffic/sysbench_point_select_ps.bin");
const POINT_SELECT_TEXT: &[u8] =
    include_bytes!("../scripts/bench/traffic/sysbench_point_select_text.bin");
const READ_ONLY_PS: &[u8] = include_bytes!("../scripts/bench/traffic/sysbench_read_only_ps.bin");

/// Splits a recording: direction byte (`C` / `S`), u32 LE length, bytes; repeated.
fn chunks(mut file: &[u8]) -> Vec<(bool, &[u8])> {
    let mut out = Vec::new();
    while !file.is_empty() {
        let from_client = match file[0] {
            b'C' => true,
            b'S' => false,
            other => panic!("bad direction byte {other:#x} in recording"),
        };
        let len = u32::from_le_bytes(file[1..5].try_into().expect("4 bytes")) as usize;
        out.push((from_client, &file[5..5 + len]));
        file = &file[5 + len..];
    }
    out
}

/// As `app::observer` builds it for `psprobe proxy` with default options.
fn observer() -> Observer {
    let scenarios = Arc::new(Scenarios::default());
    let digests = Arc::new(DigestStore::new(DEFAULT_MAX_DIGESTS));
    let metrics = ProxyMetrics::new(Arc::clone(&scenarios)).expect("metrics");
    let collector = DigestCollector::new(
        Arc::clone(&digests),
        Arc::clone(&scenarios),
        DEFAULT_TOP_DIGESTS,
    )
    .expect("collector");
    metrics
        .registry()
        .register(Box::new(collector))
        .expect("register collector");
    Observer {
        metrics,
        digests,
        scenarios,
        fingerprint: FingerprintOptions::default(),
        connections: Default::default(),
        setting_changes: Default::default(),
    }
}

fn bench_recording(c: &mut Criterion, name: &str, file: &[u8]) {
    let chunks = chunks(file);
    let bytes: usize = chunks.iter().map(|(_, d)| d.len()).sum();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    let obs = observer();
    assert!(
        runtime.block_on(relay_recording(&obs, &chunks)),
        "{name}: the recording must be observed to the end"
    );
    let mut group = c.benchmark_group("relay");
    group.throughput(Throughput::Bytes(bytes as u64));
    group.bench_function(name, |b| {
        b.iter(|| runtime.block_on(relay_recording(&obs, &chunks)))
    });
    group.finish();
}

fn benches(c: &mut Criterion) {
    bench_recording(c, "point_select_ps", POINT_SELECT_PS);
    bench_recording(c, "point_select_text", POINT_SELECT_TEXT);
    bench_recording(c, "read_only_ps", READ_ONLY_PS);
}

criterion_group!(relay, benches);
criterion_main!(relay);
