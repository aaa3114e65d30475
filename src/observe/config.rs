//! Observation's options: how many query shapes (digests) are tracked and how they are
//! fingerprinted, with their defaults and checks; [`Config::build`] makes the [`Observer`]
//! every connection records into.
//!
//! Must not: read flags or files itself, or know another module's options (how many digests
//! the metrics export comes in as a number).

use std::sync::Arc;

use psprobe_core::digest::{DigestStyle, FingerprintOptions, ParseDigestStyleError};

use crate::metrics::{DigestCollector, ProxyMetrics};
use crate::setting::ConfigError;
use crate::stats::{DigestStore, Scenarios, DEFAULT_MAX_DIGESTS};

use super::Observer;

/// Observation's options as given (each the flag's, else the file's).
#[derive(Debug, Default)]
pub(crate) struct Options {
    pub max_digests: Option<usize>,
    pub fold_digits: bool,
    pub style: Option<String>,
}

/// Observation's options, checked and with their defaults.
#[derive(Debug, Clone)]
pub(crate) struct Config {
    pub max_digests: usize,
    pub fold_digits: bool,
    pub style: DigestStyle,
}

impl Options {
    pub(crate) fn max_digests(&self) -> Result<usize, ConfigError> {
        let max_digests = self.max_digests.unwrap_or(DEFAULT_MAX_DIGESTS);
        if max_digests == 0 {
            return Err(ConfigError::Invalid(
                "max_digests must be at least 1".into(),
            ));
        }
        Ok(max_digests)
    }

    pub(crate) fn resolve(self) -> Result<Config, ConfigError> {
        let max_digests = self.max_digests()?;
        let style = match self.style {
            Some(v) => v.parse().map_err(|e: ParseDigestStyleError| {
                ConfigError::Invalid(format!("digest_style: {e}"))
            })?,
            None => DigestStyle::default(),
        };
        Ok(Config {
            max_digests,
            fold_digits: self.fold_digits,
            style,
        })
    }
}

impl Config {
    /// The observer of `psprobe proxy`: a fresh digest store and scenarios, the Prometheus
    /// registry with the digest collector exporting the `top_digests` busiest digests.
    pub(crate) fn build(&self, top_digests: usize) -> prometheus::Result<Observer> {
        let scenarios = Arc::new(Scenarios::default());
        let digests = Arc::new(DigestStore::new(self.max_digests));
        let metrics = ProxyMetrics::new(Arc::clone(&scenarios))?;
        let collector =
            DigestCollector::new(Arc::clone(&digests), Arc::clone(&scenarios), top_digests)?;
        metrics.registry().register(Box::new(collector))?;
        Ok(Observer {
            metrics,
            digests,
            scenarios,
            connections: Default::default(),
            setting_changes: Default::default(),
            fingerprint: FingerprintOptions {
                fold_identifier_digits: self.fold_digits,
                style: self.style,
                ..FingerprintOptions::default()
            },
        })
    }
}
