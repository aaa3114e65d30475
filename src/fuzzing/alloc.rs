//! A counting global allocator for the fuzz targets and `tests/fuzz_corpus.rs`: it tracks the
//! bytes live and their peak, so a harness can prove that no input makes psprobe allocate far
//! more than it received (a length field taken at its word). It works without a sanitizer,
//! which libFuzzer's `-malloc_limit_mb` needs.
//!
//! Install it in a binary with `#[global_allocator] static A: CountingAlloc = CountingAlloc;`.
//! Counts are process-wide: measure one input at a time.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);
/// A single allocation larger than this aborts at once (0: no limit).
static SINGLE_LIMIT: AtomicUsize = AtomicUsize::new(0);

/// [`System`], counting.
pub struct CountingAlloc;

fn grew(by: usize) {
    let live = LIVE.fetch_add(by, Ordering::Relaxed) + by;
    PEAK.fetch_max(live, Ordering::Relaxed);
}

fn check_single(size: usize) {
    let limit = SINGLE_LIMIT.load(Ordering::Relaxed);
    if limit != 0 && size > limit {
        // No formatting here: it could allocate, inside the allocator.
        let msg = b"psprobe fuzzing: one allocation over the limit (a length field was trusted)\n";
        // SAFETY: writing a static buffer to stderr.
        unsafe { libc::write(2, msg.as_ptr().cast(), msg.len()) };
        std::process::abort();
    }
}

// SAFETY: every call is forwarded to `System` unchanged; only counters are added.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        check_single(layout.size());
        let p = System.alloc(layout);
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        check_single(layout.size());
        let p = System.alloc_zeroed(layout);
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout);
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        check_single(new_size);
        let p = System.realloc(ptr, layout, new_size);
        if !p.is_null() {
            LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
            grew(new_size);
        }
        p
    }
}

/// Aborts the process on any single allocation over `bytes` (0: no limit).
pub fn set_single_limit(bytes: usize) {
    SINGLE_LIMIT.store(bytes, Ordering::Relaxed);
}

/// Bytes live now.
pub fn live() -> usize {
    LIVE.load(Ordering::Relaxed)
}

/// Starts a new peak measurement at the current live bytes.
pub fn reset_peak() {
    PEAK.store(LIVE.load(Ordering::Relaxed), Ordering::Relaxed);
}

/// Highest live bytes since [`reset_peak`].
pub fn peak() -> usize {
    PEAK.load(Ordering::Relaxed)
}
