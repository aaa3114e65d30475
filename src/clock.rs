//! The wall clock, read in one place: phase records, snapshots, restart windows and the admin
//! tables all take their time from here (so a room documented as pure takes the time as an
//! argument instead of reading it).
//!
//! Must not: be used for durations (those are `std::time::Instant`, which never steps).

use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch (0 if the clock is before it).
pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// The wall clock now, for what keeps a `SystemTime` (a connection's start, a file's age).
pub(crate) fn system_now() -> SystemTime {
    SystemTime::now()
}

/// Seconds since the Unix epoch (0 if the clock is before it).
pub(crate) fn unix_now() -> u64 {
    now_ms() / 1000
}
