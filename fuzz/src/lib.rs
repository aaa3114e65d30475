//! Glue between libFuzzer and psprobe's fuzz targets (`psprobe::fuzzing`): the counting
//! allocator that enforces the per-input memory limit without a sanitizer.

use psprobe::fuzzing::{self, alloc::CountingAlloc};

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc;

/// Runs the target called `name` on `data` under the memory rule.
pub fn run(name: &str, data: &[u8]) {
    let target = fuzzing::target(name).expect("a target psprobe::fuzzing lists");
    fuzzing::run_checked(target, data);
}
