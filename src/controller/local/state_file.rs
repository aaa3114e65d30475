//! The state file: the snapshot of the setup tables on this host's disk, so a crash of
//! psprobe never loses the settings it must put back. Written atomically (temp file, fsync,
//! rename, fsync of the directory) and versioned: a file of a newer format is refused, never
//! half read.
//!
//! Must not: talk to a server, or decide when a snapshot is written or restored (`client`,
//! `schedule` and `cli` do).

use std::fs::{self, File};
use std::io::Write;
use std::path::Path;

use serde::Deserialize;

use crate::controller::error::{ControllerError, Result};
use crate::controller::model::snapshot::{Snapshot, FORMAT_VERSION};

/// Just the version, read before the whole file (a newer shape would fail to parse with a
/// confusing message).
#[derive(Deserialize)]
struct VersionOnly {
    format_version: u32,
}

impl Snapshot {
    /// Write to `path` atomically, creating its directory if needed.
    pub fn save(&self, path: &Path) -> Result<()> {
        let fail = |action: &'static str, e: std::io::Error| ControllerError::StateFile {
            path: path.into(),
            action,
            reason: e.to_string(),
        };
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        crate::private_fs::create_dir_all(dir).map_err(|e| fail("create its directory", e))?;
        let file_name = path.file_name().map(|n| n.to_string_lossy().into_owned());
        let tmp = dir.join(format!(
            ".{}.tmp-{}",
            file_name.unwrap_or_else(|| "snapshot".into()),
            std::process::id()
        ));
        let json = serde_json::to_vec_pretty(self).expect("snapshot serializes");
        let written = (|| {
            let mut f = crate::private_fs::create(&tmp)?;
            f.write_all(&json)?;
            f.write_all(b"\n")?;
            f.sync_all()?;
            fs::rename(&tmp, path)
        })();
        if let Err(e) = written {
            let _ = fs::remove_file(&tmp);
            return Err(fail("write it", e));
        }
        // Make the rename itself durable.
        File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| fail("sync its directory", e))
    }

    /// The snapshot at `path`, or `None` if there is no file.
    pub fn load_if_exists(path: &Path) -> Result<Option<Self>> {
        let bytes = match fs::read(path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => {
                return Err(ControllerError::StateFile {
                    path: path.into(),
                    action: "read it",
                    reason: e.to_string(),
                })
            }
        };
        let bad = |reason: String| ControllerError::StateFormat {
            path: path.into(),
            reason,
        };
        let v: VersionOnly = serde_json::from_slice(&bytes).map_err(|e| bad(e.to_string()))?;
        if v.format_version != FORMAT_VERSION {
            return Err(bad(format!(
                "format_version {} (this psprobe reads {FORMAT_VERSION})",
                v.format_version
            )));
        }
        serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| bad(e.to_string()))
    }

    /// The snapshot at `path`; an error saying so if there is none.
    pub fn load(path: &Path) -> Result<Self> {
        Self::load_if_exists(path)?.ok_or_else(|| ControllerError::NoSnapshot { path: path.into() })
    }

    pub fn remove(path: &Path) -> Result<()> {
        fs::remove_file(path).map_err(|e| ControllerError::StateFile {
            path: path.into(),
            action: "remove it",
            reason: e.to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::model::snapshot::tests::snapshot;

    #[test]
    fn save_and_load_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("deeper/ps-snapshot-db-3306.json");
        assert!(Snapshot::load_if_exists(&path).unwrap().is_none());
        assert!(matches!(
            Snapshot::load(&path),
            Err(ControllerError::NoSnapshot { .. })
        ));
        let snap = snapshot();
        snap.save(&path).unwrap();
        assert_eq!(Snapshot::load(&path).unwrap(), snap);
        let text = fs::read_to_string(&path).unwrap();
        assert!(text.contains("\"format_version\": 1"), "{text}");
        assert!(text.contains("\"consumers\""), "{text}");
        // Only the file itself is left: no temp files.
        let names: Vec<_> = fs::read_dir(path.parent().unwrap()).unwrap().collect();
        assert_eq!(names.len(), 1);
        Snapshot::remove(&path).unwrap();
        assert!(!path.exists());
    }

    #[test]
    fn newer_or_broken_files_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.json");
        let mut value = serde_json::to_value(snapshot()).unwrap();
        value["format_version"] = 2.into();
        fs::write(&path, value.to_string()).unwrap();
        let e = Snapshot::load(&path).unwrap_err().to_string();
        assert!(e.contains("format_version 2"), "{e}");
        fs::write(&path, "{").unwrap();
        assert!(matches!(
            Snapshot::load(&path),
            Err(ControllerError::StateFormat { .. })
        ));
    }
}
