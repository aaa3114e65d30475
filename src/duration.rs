//! Durations as operators write them (`500ms`, `5s`, `2m`, `1h`, or bare seconds), parsed in
//! one place for the command line, the TOML file and the controller. A leaf: it depends on
//! nothing else in the crate.

use std::time::Duration;

/// A setting whose value is not a duration; names the setting so the user knows which flag or
/// key to fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{setting} = {value:?} is not a duration (examples: 5s, 500ms, 2m)")]
pub(crate) struct DurationError {
    pub setting: &'static str,
    pub value: String,
}

/// Parses `500ms`, `5s`, `2m`, `1h`, or a bare number of seconds.
pub(crate) fn parse_duration(
    setting: &'static str,
    value: &str,
) -> Result<Duration, DurationError> {
    let bad = || DurationError {
        setting,
        value: value.to_string(),
    };
    let v = value.trim();
    let split = v
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(v.len());
    let (number, unit) = v.split_at(split);
    let number: f64 = number.parse().map_err(|_| bad())?;
    let seconds = match unit.trim() {
        "ms" => number / 1000.0,
        "" | "s" => number,
        "m" => number * 60.0,
        "h" => number * 3600.0,
        _ => return Err(bad()),
    };
    Duration::try_from_secs_f64(seconds).map_err(|_| bad())
}

/// clap's value parser for `DURATION` flags, so they arrive typed; clap's error names the
/// flag and quotes the value.
pub(crate) fn duration_arg(value: &str) -> Result<Duration, String> {
    parse_duration("value", value)
        .map_err(|_| "not a duration (examples: 5s, 500ms, 2m)".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_and_bare_seconds() {
        assert_eq!(
            parse_duration("x", "500ms").unwrap(),
            Duration::from_millis(500)
        );
        assert_eq!(parse_duration("x", "2m").unwrap(), Duration::from_secs(120));
        assert_eq!(
            parse_duration("x", "1h").unwrap(),
            Duration::from_secs(3600)
        );
        assert_eq!(
            parse_duration("x", "1.5").unwrap(),
            Duration::from_millis(1500)
        );
    }

    #[test]
    fn the_flag_parser_agrees() {
        assert_eq!(duration_arg("250ms"), Ok(Duration::from_millis(250)));
        assert!(duration_arg("soon").unwrap_err().contains("not a duration"));
    }

    #[test]
    fn rejects_what_is_not_a_duration() {
        for bad in ["-1s", "5 parsecs", "", "s", "1e400"] {
            let e = parse_duration("phase", bad).unwrap_err();
            assert_eq!(e.setting, "phase");
            assert!(e.to_string().contains("is not a duration"), "{e}");
        }
    }
}
