//! The metrics endpoint's options: its address, how many digests get series of their own, the
//! bound on a request, and whether it serves the live page, with their defaults and checks.
//!
//! Must not: read flags or files itself, or know another module's options (the digest store's
//! size comes in as a number).

use std::net::SocketAddr;
use std::time::Duration;

use crate::setting::{parse_addr, positive, ConfigError, GivenDuration};

use super::http::DEFAULT_REQUEST_TIMEOUT;
use super::DEFAULT_TOP_DIGESTS;

pub(crate) const DEFAULT_METRICS: &str = "127.0.0.1:9898";

/// The endpoint's options as given (each the flag's, else the file's).
#[derive(Debug, Default)]
pub(crate) struct Options {
    pub listen: Option<String>,
    pub top_digests: Option<usize>,
    pub timeout: GivenDuration,
    pub live_page: bool,
}

/// The endpoint's options, checked and with their defaults.
#[derive(Debug, Clone)]
pub(crate) struct Config {
    pub listen: SocketAddr,
    /// Digests exported as their own series; the rest under digest="other".
    pub top_digests: usize,
    /// Bound on a request's head arriving, and on its answer being written.
    pub timeout: Duration,
    /// Serves the live page (`/`, `/report.json`) too.
    pub live_page: bool,
}

impl Options {
    /// The endpoint's address alone (checked before the rest: other modules' checks compare
    /// addresses with it).
    pub(crate) fn listen(&self) -> Result<SocketAddr, ConfigError> {
        parse_addr("metrics", self.listen.as_deref().unwrap_or(DEFAULT_METRICS))
    }

    /// Checked against the digest store's size, `max_digests`.
    pub(crate) fn resolve(self, max_digests: usize) -> Result<Config, ConfigError> {
        let listen = self.listen()?;
        let top_digests = self.top_digests.unwrap_or(DEFAULT_TOP_DIGESTS);
        if top_digests > max_digests {
            return Err(ConfigError::Invalid(format!(
                "metrics_top_digests ({top_digests}) cannot exceed max_digests ({max_digests})"
            )));
        }
        let timeout = match self.timeout.read("metrics_timeout")? {
            Some(d) => positive("metrics_timeout", d)?,
            None => DEFAULT_REQUEST_TIMEOUT,
        };
        Ok(Config {
            listen,
            top_digests,
            timeout,
            live_page: self.live_page,
        })
    }
}
