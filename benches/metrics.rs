//! Cost of recording one finished command: `ConnectionRecorder` (what the relay's sink is)
//! receiving `command_started` + `command_finished` for a sysbench point select, built with the
//! same `Observer` wiring as `psprobe proxy` (Prometheus registry with the digest collector,
//! digest store, scenarios). Per event pair:
//!   - stmt_execute: COM_STMT_EXECUTE of a prepared point select (digest cached per statement
//!     id, as sysbench's default --db-ps-mode=auto produces)
//!   - query: COM_QUERY of a literal point select (fingerprinted on every command, as
//!     --db-ps-mode=disable produces)
//!   - prometheus_only: the two Prometheus updates alone (counter + histogram) for comparison
//!   - stmt_execute_all_threads: stmt_execute on every CPU at once, into one shared Observer
//!     (contention on the shared counters); time per event pair per thread
//!
//! `cargo bench --bench metrics -- --warm-up-time 1 --measurement-time 3`

use std::hint::black_box;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use psprobe::white_box::{ConnectionRecorder, Observer};
use psprobe::white_box::{DigestCollector, ProxyMetrics, DEFAULT_TOP_DIGESTS};
use psprobe::white_box::{DigestStore, Scenarios, DEFAULT_MAX_DIGESTS};
use psprobe_core::digest::FingerprintOptions;
use psprobe_core::protocol::CommandKind;
use psprobe_core::session::{CommandFinished, CommandStarted, EventSink, Outcome, Statement};

const PREPARED: &[u8] = b"SELECT c FROM sbtest1 WHERE id=?";

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

fn finished(seq: u64, kind: CommandKind) -> CommandFinished {
    CommandFinished {
        seq,
        kind,
        outcome: Outcome::Rows,
        rows: 1,
        affected_rows: 0,
        request_bytes: 27,
        response_bytes: 190,
        latency: Some(Duration::from_micros(87 + seq % 64)),
    }
}

fn execute(rec: &mut ConnectionRecorder<'_>, seq: u64, at: Instant) {
    rec.command_started(&CommandStarted {
        seq,
        kind: CommandKind::StmtExecute,
        statement: Statement::Prepared {
            id: 1,
            sql: Some(PREPARED),
        },
        at,
    });
    rec.command_finished(&finished(seq, CommandKind::StmtExecute));
}

fn bench_single(c: &mut Criterion) {
    let mut group = c.benchmark_group("record_command");
    group.throughput(Throughput::Elements(1));
    let at = Instant::now();

    let obs = observer();
    let mut rec = ConnectionRecorder::new(&obs);
    let mut seq = 0u64;
    group.bench_function("stmt_execute", |b| {
        b.iter(|| {
            execute(&mut rec, seq, black_box(at));
            seq += 1;
        })
    });

    let obs = observer();
    let mut rec = ConnectionRecorder::new(&obs);
    let queries: Vec<Vec<u8>> = (0..64)
        .map(|i| {
            format!(
                "SELECT c FROM sbtest{} WHERE id={}",
                i % 4 + 1,
                5012 + i * 37
            )
            .into_bytes()
        })
        .collect();
    let mut seq = 0u64;
    group.bench_function("query", |b| {
        b.iter(|| {
            let sql = &queries[(seq % 64) as usize];
            rec.command_started(&CommandStarted {
                seq,
                kind: CommandKind::Query,
                statement: Statement::Text {
                    sql: black_box(sql),
                    truncated: false,
                },
                at,
            });
            rec.command_finished(&finished(seq, CommandKind::Query));
            seq += 1;
        })
    });

    let obs = observer();
    let scenario = obs.scenarios.current();
    let mut seq = 0u64;
    group.bench_function("prometheus_only", |b| {
        b.iter(|| {
            let m = &obs.metrics;
            m.command(scenario, CommandKind::StmtExecute, Outcome::Rows)
                .inc();
            m.duration(scenario, CommandKind::StmtExecute)
                .observe(black_box(87e-6 + (seq % 64) as f64 * 1e-6));
            seq += 1;
        })
    });
    group.finish();
}

fn bench_all_threads(c: &mut Criterion) {
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    let mut group = c.benchmark_group("record_command");
    group.throughput(Throughput::Elements(1));
    let obs = Arc::new(observer());
    group.bench_function(format!("stmt_execute_{threads}_threads"), |b| {
        b.iter_custom(|iters| {
            let barrier = Arc::new(Barrier::new(threads));
            let handles: Vec<_> = (0..threads)
                .map(|_| {
                    let obs = Arc::clone(&obs);
                    let barrier = Arc::clone(&barrier);
                    std::thread::spawn(move || {
                        let mut rec = ConnectionRecorder::new(&obs);
                        let at = Instant::now();
                        barrier.wait();
                        let start = Instant::now();
                        for seq in 0..iters {
                            execute(&mut rec, seq, at);
                        }
                        start.elapsed()
                    })
                })
                .collect();
            // Every thread did `iters` pairs; report the slowest thread's time.
            handles
                .into_iter()
                .map(|h| h.join().expect("bench thread"))
                .max()
                .unwrap_or_default()
        })
    });
    group.finish();
}

criterion_group!(metrics, bench_single, bench_all_threads);
criterion_main!(metrics);
