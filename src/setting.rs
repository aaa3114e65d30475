//! What every module's configuration shares: the one error type a bad setting is reported
//! with, and the readers of the values settings are written in (addresses, sizes, durations).
//! Each module owns its options, defaults and checks (`proxy::config`, `observe::config`,
//! `metrics::config`, `admin::config`); `config` composes them from the flags and the file.
//!
//! Must not: know any module's options, or depend on anything but `duration`.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use crate::duration::{parse_duration, DurationError};

#[derive(Debug, thiserror::Error)]
pub(crate) enum ConfigError {
    #[error("cannot read config file {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("config file {path} is not valid: {message}")]
    Parse { path: PathBuf, message: String },
    #[error("{setting} = {value:?} is not an IP:PORT address (example: 127.0.0.1:6033)")]
    Address {
        setting: &'static str,
        value: String,
    },
    #[error("upstream = {0:?} needs a host and a port (example: 127.0.0.1:3306)")]
    Upstream(String),
    #[error("{setting} = {value:?} is not a size in bytes (examples: 65536, 64KiB, 4MiB)")]
    Size {
        setting: &'static str,
        value: String,
    },
    #[error(transparent)]
    Duration(#[from] DurationError),
    #[error("listen and upstream are the same address {0}: the proxy would connect to itself")]
    Loop(SocketAddr),
    #[error("listen and metrics are the same address {0}: give each its own port")]
    SamePort(SocketAddr),
    #[error("{0}")]
    Invalid(String),
}

/// A duration setting as given: the flag (typed by clap, which names the flag in its own
/// error), else the config file's text (named by its key when it is not a duration).
#[derive(Debug, Default, Clone)]
pub(crate) struct GivenDuration {
    pub flag: Option<Duration>,
    pub file: Option<String>,
}

impl GivenDuration {
    pub(crate) fn new(flag: Option<Duration>, file: Option<String>) -> Self {
        GivenDuration { flag, file }
    }

    /// The flag's value, else the file's, else `None`.
    pub(crate) fn read(self, setting: &'static str) -> Result<Option<Duration>, ConfigError> {
        match self.flag {
            Some(d) => Ok(Some(d)),
            None => Ok(self.file.map(|v| parse_duration(setting, &v)).transpose()?),
        }
    }
}

pub(crate) fn parse_addr(setting: &'static str, value: &str) -> Result<SocketAddr, ConfigError> {
    value.parse().map_err(|_| ConfigError::Address {
        setting,
        value: value.to_string(),
    })
}

pub(crate) fn positive(setting: &'static str, d: Duration) -> Result<Duration, ConfigError> {
    if d.is_zero() {
        return Err(ConfigError::Invalid(format!(
            "{setting} must be longer than 0s"
        )));
    }
    Ok(d)
}

/// Parses a byte count: `65536`, `64k`, `64KiB`, `4M`, `4MiB`, `1G` (binary multiples).
pub(crate) fn parse_size(setting: &'static str, value: &str) -> Result<usize, ConfigError> {
    let bad = || ConfigError::Size {
        setting,
        value: value.to_string(),
    };
    let v = value.trim();
    let split = v.find(|c: char| !c.is_ascii_digit()).unwrap_or(v.len());
    let (number, unit) = v.split_at(split);
    let number: usize = number.parse().map_err(|_| bad())?;
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        _ => return Err(bad()),
    };
    number.checked_mul(1 << shift).ok_or_else(bad)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("x", "65536").unwrap(), 65536);
        assert_eq!(parse_size("x", "64KiB").unwrap(), 64 << 10);
        assert_eq!(parse_size("x", "4M").unwrap(), 4 << 20);
        assert_eq!(parse_size("x", "1 mib").unwrap(), 1 << 20);
        assert!(parse_size("x", "1.5M").is_err());
        assert!(parse_size("x", "lots").is_err());
        assert!(parse_size("x", "99999999999999999999G").is_err());
    }
}
