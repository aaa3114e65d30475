//! A throwaway mariadbd's files and command lines: one directory that holds its datadir, its
//! temporary files, pid file, socket and logs; the `mariadb-install-db` that fills the datadir;
//! the options every throwaway server runs with; and the `mariadb-admin ping` that tells it
//! serves.
//!
//! Starting, waiting and stopping stay with the callers, because they differ for a reason: the
//! tests run mariadbd as their own child (inside network namespaces too), the demo through a
//! control script that doubles as the controller's restart hook, so a restart it did not make
//! is still its server.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::mariadb::is_root;

/// The Debian package's datadir installer.
pub const INSTALL_DB: &str = "/usr/bin/mariadb-install-db";
/// The Debian package's admin client (`ping`).
pub const ADMIN: &str = "/usr/bin/mariadb-admin";

/// Where a throwaway server keeps its files, all below one directory (removing it removes the
/// server's every trace).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    root: PathBuf,
}

impl Layout {
    /// The layout below `root` (nothing is created).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Layout { root: root.into() }
    }

    /// The directory everything is below.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The data directory (`data/`).
    pub fn datadir(&self) -> PathBuf {
        self.root.join("data")
    }

    /// Temporary files of the installer and the server (`tmp/`).
    pub fn tmpdir(&self) -> PathBuf {
        self.root.join("tmp")
    }

    /// The server's pid file.
    pub fn pid_file(&self) -> PathBuf {
        self.root.join("mariadbd.pid")
    }

    /// The server's error log.
    pub fn error_log(&self) -> PathBuf {
        self.root.join("error.log")
    }

    /// Where the server's stdout and stderr go.
    pub fn console_log(&self) -> PathBuf {
        self.root.join("console.log")
    }

    /// The server's Unix socket (clients here use TCP; a socket path of its own keeps it from
    /// colliding with a system server's).
    pub fn socket(&self) -> PathBuf {
        self.root.join("mysqld.sock")
    }

    /// `mariadb-install-db` into [`Layout::datadir`], with the root account reachable over TCP
    /// without a password and no test database; `extra` options follow (a caller's sizing).
    /// Creates [`Layout::tmpdir`] first; the caller runs the command with its own timeout.
    pub fn install_db(&self, extra: &[&str]) -> std::io::Result<Command> {
        std::fs::create_dir_all(self.tmpdir())?;
        let mut cmd = Command::new(INSTALL_DB);
        cmd.arg("--no-defaults")
            .arg(format!("--datadir={}", self.datadir().display()))
            .arg(format!("--tmpdir={}", self.tmpdir().display()))
            .args(["--auth-root-authentication-method=normal", "--skip-test-db"])
            .args(extra);
        if is_root() {
            cmd.arg("--user=root");
        }
        Ok(cmd)
    }

    /// The options every throwaway mariadbd runs with: no option files, this layout's files,
    /// `port` on `bind`, no binary log, packets up to 256 MiB, and `--user=root` when this
    /// process is root (mariadbd refuses to run as root otherwise). performance_schema and
    /// sizing are the caller's.
    pub fn mariadbd_args(&self, port: u16, bind: &str) -> Vec<String> {
        let mut args = vec![
            "--no-defaults".to_string(),
            format!("--datadir={}", self.datadir().display()),
            format!("--port={port}"),
            format!("--bind-address={bind}"),
            format!("--socket={}", self.socket().display()),
            format!("--pid-file={}", self.pid_file().display()),
            format!("--log-error={}", self.error_log().display()),
            "--skip-log-bin".to_string(),
            "--max-allowed-packet=256M".to_string(),
        ];
        if is_root() {
            args.push("--user=root".to_string());
        }
        args
    }
}

/// Arguments of `mariadb-admin` that ask the server on `127.0.0.1:port` whether it serves (as
/// root over TCP, giving up on a connection after 2 s).
pub fn ping_args(port: u16) -> Vec<String> {
    [
        "--no-defaults",
        "--protocol=TCP",
        "-h127.0.0.1",
        "-uroot",
        "--connect-timeout=2",
    ]
    .into_iter()
    .map(String::from)
    .chain([format!("-P{port}"), "ping".to_string()])
    .collect()
}

/// `text` quoted for a POSIX shell (for control scripts that start a server).
pub fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_file_is_below_the_root() {
        let l = Layout::new("/tmp/x");
        for p in [
            l.datadir(),
            l.tmpdir(),
            l.pid_file(),
            l.error_log(),
            l.console_log(),
            l.socket(),
        ] {
            assert!(p.starts_with("/tmp/x") && p != Path::new("/tmp/x"), "{p:?}");
        }
    }

    #[test]
    fn mariadbd_args_name_the_layout_and_the_port() {
        let l = Layout::new("/tmp/x");
        let args = l.mariadbd_args(3307, "0.0.0.0");
        assert_eq!(
            args[0], "--no-defaults",
            "option files must not be read first"
        );
        assert!(args.contains(&"--datadir=/tmp/x/data".to_string()));
        assert!(args.contains(&"--port=3307".to_string()));
        assert!(args.contains(&"--bind-address=0.0.0.0".to_string()));
        assert!(args.contains(&"--log-error=/tmp/x/error.log".to_string()));
        assert_eq!(args.contains(&"--user=root".to_string()), is_root());
    }

    #[test]
    fn install_db_creates_the_tmpdir_and_names_the_datadir() {
        let root = std::env::temp_dir().join(format!("harness-layout-{}", std::process::id()));
        let l = Layout::new(&root);
        let cmd = l.install_db(&["--innodb-log-file-size=48M"]).unwrap();
        assert!(l.tmpdir().is_dir());
        let args: Vec<String> = cmd
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert_eq!(args[0], "--no-defaults");
        assert!(args.contains(&format!("--datadir={}", l.datadir().display())));
        assert!(args.contains(&"--innodb-log-file-size=48M".to_string()));
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn ping_args_end_with_the_port_and_ping() {
        let args = ping_args(3307);
        assert_eq!(&args[args.len() - 2..], ["-P3307", "ping"]);
    }

    #[test]
    fn shell_quote_survives_single_quotes() {
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
    }
}
