//! Reading the config file (`--config`): its `[controller]` table and `[[scenario]]` /
//! `[[group]]` tables are parsed by `model::file` and the catalog; this is the one place the
//! file is read from disk.
//!
//! Must not: interpret the file (that is `model`).

use std::path::Path;

use crate::controller::error::{ControllerError, Result};
use crate::controller::model::file::PsConfig;

impl PsConfig {
    /// Reads and parses the config file at `path`.
    pub(crate) fn load(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|e| ControllerError::Config {
            path: path.into(),
            reason: format!("cannot read it: {e}"),
        })?;
        Self::parse(text, path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

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
