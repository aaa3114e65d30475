//! Session machine throughput on recorded sysbench traffic (bytes of both directions per
//! second), with a no-op event sink: the cost psprobe adds per byte relayed, before metrics.
//!
//! The traffic is real: `scripts/bench.sh --record` ran sysbench 1.0.20 (one thread) against a
//! throwaway MariaDB 10.11 through a TCP tee (`psprobe-bench record-traffic`) that wrote
//! every chunk as `recv()` returned it, so packets arrive split and batched as a relay sees
//! them. Each iteration replays one whole connection (greeting, login, commands, QUIT) into a
//! fresh `Session`:
//!   - point_select_ps: oltp_point_select, 1000 events, prepared statements (COM_STMT_EXECUTE,
//!     binary result rows, MariaDB metadata caching)
//!   - point_select_text: the same with --db-ps-mode=disable (COM_QUERY, text rows)
//!   - read_only_ps: oltp_read_only, 10 transactions (point selects and 100-row ranges)
//!
//! `cargo bench --bench session -- --warm-up-time 1 --measurement-time 3`

use std::hint::black_box;
use std::time::Instant;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use psprobe_core::session::{
    CommandFinished, CommandStarted, EventSink, Session, UnobservedReason,
};

const POINT_SELECT_PS: &[u8] =
    include_bytes!("../../../scripts/bench/traffic/sysbench_point_select_ps.bin");
const POINT_SELECT_TEXT: &[u8] =
    include_bytes!("../../../scripts/bench/traffic/sysbench_point_select_text.bin");
const READ_ONLY_PS: &[u8] =
    include_bytes!("../../../scripts/bench/traffic/sysbench_read_only_ps.bin");

/// One recorded chunk: `true` for client to server.
struct Chunk<'a> {
    from_client: bool,
    data: &'a [u8],
}

/// Splits a recording: direction byte (`C` / `S`), u32 LE length, bytes; repeated.
fn chunks(mut file: &[u8]) -> Vec<Chunk<'_>> {
    let mut out = Vec::new();
    while !file.is_empty() {
        let from_client = match file[0] {
            b'C' => true,
            b'S' => false,
            other => panic!("bad direction byte {other:#x} in recording"),
        };
        let len = u32::from_le_bytes(file[1..5].try_into().expect("4 bytes")) as usize;
        out.push(Chunk {
            from_client,
            data: &file[5..5 + len],
        });
        file = &file[5 + len..];
    }
    out
}

/// Counts events; the counts keep the optimizer honest and check the replay was followed.
#[derive(Default)]
struct CountingSink {
    started: u64,
    finished: u64,
    unobserved: u64,
}

impl EventSink for CountingSink {
    fn command_started(&mut self, event: &CommandStarted<'_>) {
        black_box(event);
        self.started += 1;
    }
    fn command_finished(&mut self, event: &CommandFinished) {
        black_box(event);
        self.finished += 1;
    }
    fn unobserved(&mut self, _reason: UnobservedReason) {
        self.unobserved += 1;
    }
}

fn replay(chunks: &[Chunk<'_>], now: Instant) -> CountingSink {
    let mut session = Session::new(now);
    let mut sink = CountingSink::default();
    for c in chunks {
        if c.from_client {
            session.on_client_bytes(black_box(c.data), now, &mut sink);
        } else {
            session.on_server_bytes(black_box(c.data), now, &mut sink);
        }
    }
    session.on_close(&mut sink);
    sink
}

fn bench_recording(c: &mut Criterion, name: &str, file: &[u8]) {
    let chunks = chunks(file);
    let bytes: usize = chunks.iter().map(|c| c.data.len()).sum();
    let now = Instant::now();
    let check = replay(&chunks, now);
    assert_eq!(
        check.unobserved, 0,
        "{name}: the recording must be observed"
    );
    assert!(check.finished >= 100, "{name}: {} commands", check.finished);
    eprintln!(
        "{name}: {} chunks, {bytes} bytes, {} commands",
        chunks.len(),
        check.finished
    );

    let mut group = c.benchmark_group("session");
    group.throughput(Throughput::Bytes(bytes as u64));
    group.bench_function(name, |b| b.iter(|| replay(&chunks, now).finished));
    group.finish();
}

fn benches(c: &mut Criterion) {
    bench_recording(c, "point_select_ps", POINT_SELECT_PS);
    bench_recording(c, "point_select_text", POINT_SELECT_TEXT);
    bench_recording(c, "read_only_ps", READ_ONLY_PS);
}

criterion_group!(session, benches);
criterion_main!(session);
