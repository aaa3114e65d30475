//! The controller's TOML config file (`psprobe ps --config FILE`):
//!
//! ```toml
//! [controller]
//! dsn = "mysql://USER:PASS@HOST:PORT/"   # or the PSPROBE_CONTROLLER_DSN environment variable
//! state_dir = "/var/lib/psprobe"         # optional: where snapshots are kept
//!
//! [[scenario]]                           # any number of user scenarios, see catalog.rs
//! name = "waits"
//! consumers = { enable = ["events_waits_%"] }
//! ```
//!
//! Other tables (such as `[proxy]`) are ignored, so one file can serve every subcommand. Parse
//! errors give the line and the parser's message, never the offending text, which could be the DSN.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde::Deserialize;

use crate::controller::error::{ControllerError, Result};

pub(crate) struct PsConfig {
    pub path: PathBuf,
    /// The raw DSN; parse it with `ControllerDsn::resolve`, never print it.
    pub dsn: Option<String>,
    pub state_dir: Option<PathBuf>,
    /// The whole file, for `Catalog::add_toml`.
    pub text: String,
}

impl fmt::Debug for PsConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PsConfig")
            .field("path", &self.path)
            .field("dsn", &self.dsn.as_ref().map(|_| "<redacted>"))
            .field("state_dir", &self.state_dir)
            .finish_non_exhaustive()
    }
}

#[derive(Deserialize)]
struct Top {
    #[serde(default)]
    controller: ControllerTable,
}

#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ControllerTable {
    dsn: Option<String>,
    state_dir: Option<PathBuf>,
}

impl PsConfig {
    /// The config file's text, parsed; `path` only names it in errors.
    pub(crate) fn parse(text: String, path: &Path) -> Result<Self> {
        let top: Top = parse_toml(&text, path)?;
        Ok(PsConfig {
            path: path.into(),
            dsn: top.controller.dsn,
            state_dir: top.controller.state_dir,
            text,
        })
    }
}

/// Deserialize TOML, reporting errors by line number and message only.
pub(crate) fn parse_toml<T: DeserializeOwned>(text: &str, path: &Path) -> Result<T> {
    toml::from_str(text).map_err(|e| {
        let line = e
            .span()
            .map(|s| text[..s.start.min(text.len())].matches('\n').count() + 1);
        let message = e.message().trim().replace('\n', " ");
        ControllerError::Config {
            path: path.into(),
            reason: match line {
                Some(l) => format!("line {l}: {message}"),
                None => message,
            },
        }
    })
}
