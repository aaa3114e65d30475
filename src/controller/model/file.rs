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

pub struct PsConfig {
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
    pub fn load(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|e| ControllerError::Config {
            path: path.into(),
            reason: format!("cannot read it: {e}"),
        })?;
        Self::parse(text, path)
    }

    /// The config file's text, parsed; `path` only names it in errors.
    pub fn parse(text: String, path: &Path) -> Result<Self> {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn load(text: &str) -> Result<PsConfig> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ps.toml");
        std::fs::write(&path, text).unwrap();
        PsConfig::load(&path)
    }

    #[test]
    fn reads_the_controller_table_and_ignores_others() {
        let c = load(
            "[proxy]\nlisten = \"x\"\n[controller]\ndsn = \"mysql://u:hunter2@h:1/\"\nstate_dir = \"/s\"\n",
        )
        .unwrap();
        assert_eq!(c.dsn.as_deref(), Some("mysql://u:hunter2@h:1/"));
        assert_eq!(c.state_dir, Some(PathBuf::from("/s")));
        assert!(!format!("{c:?}").contains("hunter2"));
        assert!(load("").unwrap().dsn.is_none());
    }

    #[test]
    fn errors_do_not_quote_the_file() {
        let e = load("[controller]\ndsn = \"mysql://u:hunter2@h:1/\nx = 1\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 2"), "{e}");
        assert!(!e.contains("hunter2"), "{e}");
        let e = load("[controller]\ndns = \"mysql://u:hunter2@h/\"\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown field `dns`"), "{e}");
        assert!(!e.contains("hunter2"), "{e}");
        let e = PsConfig::load(Path::new("/nonexistent/ps.toml"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("cannot read it"), "{e}");
    }
}
