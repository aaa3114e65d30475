//! Where snapshots live: `--state-file` if given; else `ps-snapshot-HOST-PORT.json` in
//! `--state-dir`, `[controller] state_dir`, `$XDG_STATE_HOME/psprobe` or `~/.local/state/psprobe`.

use std::path::{Path, PathBuf};

use super::error::{ControllerError, Result};

/// `ps-snapshot-HOST-PORT.json`, with anything but letters, digits, '.', '-' and '_' in the host
/// replaced by '_' (IPv6 colons, for instance).
pub(crate) fn state_file_name(host: &str, port: u16) -> String {
    let host: String = host
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("ps-snapshot-{host}-{port}.json")
}

/// The default directory from the environment (`XDG_STATE_HOME`, `HOME`), without touching it.
pub(crate) fn default_state_dir(
    xdg_state_home: Option<&str>,
    home: Option<&str>,
) -> Option<PathBuf> {
    let absolute = |v: Option<&str>| v.map(PathBuf::from).filter(|p| p.is_absolute());
    if let Some(xdg) = absolute(xdg_state_home) {
        return Some(xdg.join("psprobe"));
    }
    absolute(home).map(|h| h.join(".local/state/psprobe"))
}

/// Resolve the state file for the server at `host:port`.
pub(crate) fn state_file(
    explicit_file: Option<&Path>,
    dir: Option<&Path>,
    host: &str,
    port: u16,
) -> Result<PathBuf> {
    if let Some(f) = explicit_file {
        return Ok(f.to_path_buf());
    }
    let dir = match dir {
        Some(d) => d.to_path_buf(),
        None => default_state_dir(
            std::env::var("XDG_STATE_HOME").ok().as_deref(),
            std::env::var("HOME").ok().as_deref(),
        )
        .ok_or(ControllerError::NoStateDir)?,
    };
    Ok(dir.join(state_file_name(host, port)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_directories() {
        assert_eq!(
            state_file_name("127.0.0.1", 3306),
            "ps-snapshot-127.0.0.1-3306.json"
        );
        assert_eq!(state_file_name("::1", 3307), "ps-snapshot-__1-3307.json");
        assert_eq!(state_file_name("db/../x", 1), "ps-snapshot-db_.._x-1.json");
        assert_eq!(
            default_state_dir(Some("/xdg"), Some("/home/u")),
            Some(PathBuf::from("/xdg/psprobe"))
        );
        assert_eq!(
            default_state_dir(Some("relative"), Some("/home/u")),
            Some(PathBuf::from("/home/u/.local/state/psprobe")),
            "XDG says relative paths are to be ignored"
        );
        assert_eq!(default_state_dir(None, None), None);
        assert_eq!(
            state_file(None, Some(Path::new("/d")), "h", 1).unwrap(),
            PathBuf::from("/d/ps-snapshot-h-1.json")
        );
        assert_eq!(
            state_file(Some(Path::new("/f.json")), Some(Path::new("/d")), "h", 1).unwrap(),
            PathBuf::from("/f.json")
        );
    }
}
