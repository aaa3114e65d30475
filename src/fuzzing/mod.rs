//! Fuzzing entry points: one function per target, taking arbitrary bytes, shared by the
//! cargo-fuzz crate in `fuzz/` (coverage-guided, nightly) and `tests/fuzz_corpus.rs` (stable,
//! in CI: the kept corpus plus seeded random mutations). Not part of psprobe's API.
//!
//! A target panics only when psprobe misbehaves: a panic in the code under test, or a broken
//! invariant the target checks (chunk boundaries changing what is parsed, a command that never
//! finishes, ...). [`run_checked`] adds the memory rule: one input may not make psprobe hold
//! more than [`MAX_INPUT_MEMORY`] bytes at once, whatever its length fields say.
//!
//! Targets (see docs/reliability.md for what each feeds and the figures):
//! `frame`, `handshake`, `command`, `compress`, `session`, `digest`, `admin_sql`, `config`,
//! `phase_log`.

pub mod alloc;
mod input;
mod session;
mod text;
mod wire;

pub use input::Input;

/// The most bytes one input may make psprobe hold at once (over what was live before it):
/// libFuzzer's `-malloc_limit_mb=64`, enforced by [`alloc::CountingAlloc`] without a
/// sanitizer. A zstd frame may make the decoder reserve its window, at most the 16 MiB of one
/// compressed packet per direction; nothing else comes close.
pub const MAX_INPUT_MEMORY: usize = 64 << 20;

/// A fuzz target: consumes arbitrary bytes, panics only on a bug.
pub type Target = fn(&[u8]);

/// Every target by name, in the order the docs and `scripts/fuzz.sh` list them.
pub const TARGETS: &[(&str, Target)] = &[
    ("frame", wire::frame),
    ("handshake", wire::handshake),
    ("command", wire::command),
    ("compress", wire::compress),
    ("session", session::session),
    ("digest", text::digest),
    ("admin_sql", text::admin_sql),
    ("config", text::config),
    ("phase_log", text::phase_log),
];

/// The target called `name`.
pub fn target(name: &str) -> Option<Target> {
    TARGETS.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
}

/// Runs `target` on `data` and panics if it made psprobe hold more than
/// [`MAX_INPUT_MEMORY`] bytes at once. Returns the peak bytes it held. Only meaningful when
/// [`alloc::CountingAlloc`] is the global allocator (otherwise the peak reads 0).
pub fn run_checked(target: Target, data: &[u8]) -> usize {
    alloc::set_single_limit(MAX_INPUT_MEMORY);
    let before = alloc::live();
    alloc::reset_peak();
    target(data);
    let held = alloc::peak().saturating_sub(before);
    assert!(
        held <= MAX_INPUT_MEMORY,
        "a {}-byte input made psprobe hold {held} bytes at once",
        data.len()
    );
    held
}
