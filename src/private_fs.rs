//! Files psprobe keeps for itself (the settings snapshot, phase logs, TLS keys) are private to
//! its user: directories it creates are 0700 and files it creates 0600 (before the umask, which
//! can only remove bits). The snapshot holds the server's settings and the phase log its query
//! shapes; neither is anyone else's business on a shared host.
//!
//! Directories that already exist are left as they are (`--state-dir /tmp` must not chmod
//! /tmp); so are files that already exist.

use std::fs::{DirBuilder, File, OpenOptions};
use std::io;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::Path;

pub(crate) const DIR_MODE: u32 = 0o700;
pub(crate) const FILE_MODE: u32 = 0o600;

/// `mkdir -p -m 0700 dir`: every directory it creates is 0700.
pub(crate) fn create_dir_all(dir: &Path) -> io::Result<()> {
    DirBuilder::new().recursive(true).mode(DIR_MODE).create(dir)
}

/// Creates (or truncates) `path` for writing; 0600 when created.
pub(crate) fn create(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(FILE_MODE)
        .open(path)
}

/// Opens `path` for appending, creating it 0600 if it does not exist.
pub(crate) fn append(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .create(true)
        .append(true)
        .mode(FILE_MODE)
        .open(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::unix::fs::PermissionsExt;

    fn mode(p: &Path) -> u32 {
        std::fs::metadata(p).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn created_private() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("a/b");
        create_dir_all(&dir).unwrap();
        assert_eq!(mode(&root.path().join("a")), 0o700);
        assert_eq!(mode(&dir), 0o700);
        let file = dir.join("state.json");
        create(&file).unwrap().write_all(b"{}").unwrap();
        assert_eq!(mode(&file), 0o600);
        let log = dir.join("phases.jsonl");
        append(&log).unwrap().write_all(b"{}\n").unwrap();
        append(&log).unwrap().write_all(b"{}\n").unwrap();
        assert_eq!(mode(&log), 0o600);
        assert_eq!(std::fs::read(&log).unwrap(), b"{}\n{}\n");
    }

    #[test]
    fn existing_directories_keep_their_mode() {
        let root = tempfile::tempdir().unwrap();
        std::fs::set_permissions(root.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        create_dir_all(root.path()).unwrap();
        assert_eq!(mode(root.path()), 0o755);
    }
}
