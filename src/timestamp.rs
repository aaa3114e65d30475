//! Timestamps as psprobe prints them (snapshots, admin tables, reports): RFC 3339 in UTC, whole
//! seconds (humantime's formatting). A leaf: no I/O, no dependency on the rest of the crate.

/// The last second humantime formats (9999-12-31T23:59:59Z).
const LAST_FORMATTED: u64 = 253_402_300_799;

/// Seconds since the epoch as `YYYY-MM-DDTHH:MM:SSZ`. Times past the year 9999 (only a corrupt
/// phase log holds them) print as its last second rather than fail.
pub(crate) fn rfc3339(secs: u64) -> String {
    let at = std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs.min(LAST_FORMATTED));
    humantime::format_rfc3339_seconds(at).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn epoch_leap_day_and_end_of_year() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339(1_764_441_296), "2025-11-29T18:34:56Z");
        assert_eq!(rfc3339(1_798_761_599), "2026-12-31T23:59:59Z");
        assert_eq!(rfc3339(u64::MAX), "9999-12-31T23:59:59Z");
    }
}
