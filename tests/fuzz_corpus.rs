//! The fuzz targets on stable Rust, in CI: every input of the kept corpus (fuzz/corpus/TARGET/
//! and fuzz/corpus/TARGET.tar.zst, found and minimized by cargo-fuzz, see scripts/fuzz.sh and
//! fuzz/corpus.sh) and a few thousand mutations of it from a fixed seed, through the same
//! target bodies libFuzzer runs (`psprobe::fuzzing`).
//! Asserts that none panics and that no input makes psprobe hold more than
//! `fuzzing::MAX_INPUT_MEMORY` bytes at once. A failing input is written to
//! target/fuzz-failures/ for `cargo +nightly fuzz run -s none -a TARGET FILE`.
//!
//! Needs psprobe's `fuzzing` feature (Cargo.toml's `required-features`):
//! `cargo test --release --locked --features fuzzing --test fuzz_corpus`; scripts/test.sh
//! enables it for CI.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::Read;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::sync::Mutex;

use psprobe::fuzzing::{self, alloc::CountingAlloc, Target};

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc;

/// Memory is counted process-wide: one target at a time.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Mutated inputs per target, so the whole test stays under 30 s in release: fewer for the
/// targets that run a whole parser or report per input (a few hundred inputs a second).
fn mutations(name: &str) -> usize {
    match name {
        "digest" | "config" | "phase_log" => 1000,
        _ => 3000,
    }
}

/// xorshift64*: the same inputs on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Bytes a length field or a marker often holds.
const INTERESTING: &[u8] = &[0, 1, 0x03, 0x0A, 0x7F, 0x80, 0xFB, 0xFC, 0xFD, 0xFE, 0xFF];

fn mutate(rng: &mut Rng, seed: &[u8]) -> Vec<u8> {
    let mut v = seed.to_vec();
    for _ in 0..1 + rng.below(4) {
        let at = rng.below(v.len() + 1);
        match rng.below(7) {
            0 if !v.is_empty() => {
                let i = at.min(v.len() - 1);
                v[i] ^= 1 << rng.below(8);
            }
            1 if !v.is_empty() => {
                let i = at.min(v.len() - 1);
                v[i] = INTERESTING[rng.below(INTERESTING.len())];
            }
            2 => {
                let n = 1 + rng.below(16);
                let bytes: Vec<u8> = (0..n).map(|_| rng.next() as u8).collect();
                v.splice(at..at, bytes);
            }
            3 => {
                let end = (at + 1 + rng.below(64)).min(v.len());
                v.drain(at.min(end)..end);
            }
            4 if !v.is_empty() => {
                let start = rng.below(v.len());
                let end = (start + 1 + rng.below(64)).min(v.len());
                let copy = v[start..end].to_vec();
                v.splice(at..at, copy);
            }
            5 => v.truncate(at),
            _ => {
                // Three 0xFF: the largest 3-byte length, where one is read.
                let i = at.min(v.len());
                v.splice(i..i, [0xFF, 0xFF, 0xFF]);
            }
        }
    }
    v
}

/// The kept corpus of target `name`, by file name (the order libFuzzer's names give, which the
/// mutations below draw from): the files in fuzz/corpus/NAME/ (named inputs and the seed set)
/// and the inputs archived in fuzz/corpus/NAME.tar.zst, read from the archive as they are (see
/// fuzz/corpus.sh). Each with where it came from, for a failure's message.
fn corpus(name: &str) -> Vec<(String, Vec<u8>)> {
    let kept = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus");
    let mut inputs = BTreeMap::new();
    let dir = kept.join(name);
    let entries = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("the kept corpus {} is missing: {e}", dir.display()));
    for entry in entries {
        let path = entry.expect("a corpus entry").path();
        let file = path
            .file_name()
            .expect("a file name")
            .to_string_lossy()
            .into_owned();
        let bytes = std::fs::read(&path).expect("a readable corpus file");
        inputs.insert(file, (path.display().to_string(), bytes));
    }
    let archive = kept.join(format!("{name}.tar.zst"));
    let file = File::open(&archive)
        .unwrap_or_else(|e| panic!("the kept corpus {} is missing: {e}", archive.display()));
    let zstd = zstd::Decoder::new(file).expect("a zstd decoder");
    let mut tar = tar::Archive::new(zstd);
    for entry in tar.entries().expect("a tar archive") {
        let mut entry = entry.expect("an archive entry");
        let file = entry.path().expect("an entry name").display().to_string();
        assert!(
            entry.header().entry_type().is_file(),
            "{}: {file} is not a file",
            archive.display()
        );
        let mut bytes = Vec::new();
        entry.read_to_end(&mut bytes).expect("a readable entry");
        let origin = format!("{}:{file}", archive.display());
        // fuzz/corpus.sh packs only what is not kept as a file: a name in both is a mistake.
        if let Some((first, _)) = inputs.insert(file, (origin.clone(), bytes)) {
            panic!("{origin} is also {first}");
        }
    }
    inputs.into_values().collect()
}

/// Runs one input; on a panic, saves it and says where, then fails.
fn run_one(name: &str, target: Target, data: &[u8], origin: &str) -> usize {
    match catch_unwind(AssertUnwindSafe(|| fuzzing::run_checked(target, data))) {
        Ok(held) => held,
        Err(panic) => {
            let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/fuzz-failures");
            let _ = std::fs::create_dir_all(&dir);
            let file = dir.join(format!("{name}-{:016x}", fxhash(data)));
            let _ = std::fs::write(&file, data);
            eprintln!(
                "target {name} panicked on {origin}; input saved to {}",
                file.display()
            );
            std::panic::resume_unwind(panic)
        }
    }
}

fn fxhash(data: &[u8]) -> u64 {
    data.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}

fn replay_and_mutate(name: &str) {
    let _guard = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let target = fuzzing::target(name).expect("a listed target");
    let inputs = corpus(name);
    assert!(!inputs.is_empty(), "fuzz/corpus/{name} is empty");
    eprintln!("{name}: {} kept inputs", inputs.len());
    let mut peak = 0;
    for (origin, data) in &inputs {
        peak = peak.max(run_one(name, target, data, origin));
    }
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ fxhash(name.as_bytes()));
    for i in 0..mutations(name) {
        let seed = &inputs[rng.below(inputs.len())].1;
        let data = if i % 10 == 0 {
            (0..rng.below(512)).map(|_| rng.next() as u8).collect()
        } else {
            mutate(&mut rng, seed)
        };
        peak = peak.max(run_one(name, target, &data, &format!("mutation {i}")));
    }
    // Coarse: nothing the targets feed needs more than a few MiB (a zstd window at most).
    assert!(
        peak <= fuzzing::MAX_INPUT_MEMORY,
        "{name}: peak {peak} bytes"
    );
}

#[test]
fn every_target_has_a_test_and_a_corpus() {
    let names: Vec<&str> = fuzzing::TARGETS.iter().map(|(n, _)| *n).collect();
    assert_eq!(
        names,
        [
            "frame",
            "handshake",
            "command",
            "compress",
            "session",
            "digest",
            "admin_sql",
            "config",
            "phase_log"
        ],
        "a new target needs its test below, its corpus and its line in docs/reliability.md"
    );
    // Reading a corpus allocates (the archive's decoder, the inputs): not while a target's
    // memory is being measured.
    let _guard = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    for name in names {
        assert!(!corpus(name).is_empty(), "fuzz/corpus/{name} is empty");
    }
}

#[test]
fn frame() {
    replay_and_mutate("frame");
}

#[test]
fn handshake() {
    replay_and_mutate("handshake");
}

#[test]
fn command() {
    replay_and_mutate("command");
}

#[test]
fn compress() {
    replay_and_mutate("compress");
}

#[test]
fn session() {
    replay_and_mutate("session");
}

#[test]
fn digest() {
    replay_and_mutate("digest");
}

#[test]
fn admin_sql() {
    replay_and_mutate("admin_sql");
}

#[test]
fn config() {
    replay_and_mutate("config");
}

#[test]
fn phase_log() {
    replay_and_mutate("phase_log");
}
