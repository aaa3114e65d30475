//! Which server `psprobe demo` and `psprobe experiment` start (`--server`): MariaDB or Oracle
//! MySQL, the host's own or one in a Debian tree run with chroot (as `scripts/setup-sid-mysql.sh`
//! makes for MySQL 9.7). Checked before anything starts: a missing or broken server, or a
//! program that is no MySQL or MariaDB server, is one line naming what to do.
//!
//! Must not: start a server (the throwaway does); know the command lines beyond choosing the
//! harness's flavor whose lines fit.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::bail;

use psprobe_harness::flavor::Flavor;

/// The host's servers, as Debian installs them.
const HOST_MARIADBD: &str = "/usr/sbin/mariadbd";
const HOST_MYSQLD: &str = "/usr/sbin/mysqld";

/// MariaDB or Oracle MySQL: their installers and options differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    MariaDb,
    MySql,
}

/// A server to run: what it is, where (a tree run with chroot, or the host), its program as it
/// is run (inside the tree for a tree), and what `--version` said.
#[derive(Debug, Clone)]
pub(crate) struct ServerChoice {
    pub kind: Kind,
    pub tree: Option<PathBuf>,
    pub program: String,
    pub version: String,
}

impl ServerChoice {
    /// `mariadb` (the host's, the default), `mysql` (the host's), a Debian tree holding either
    /// (`usr/sbin/mysqld` or `usr/sbin/mariadbd`), or a server program's path; checked by
    /// running it with `--version`.
    pub(crate) fn resolve(text: &str) -> anyhow::Result<Self> {
        let (kind, tree, program) = match text {
            "mariadb" => (Some(Kind::MariaDb), None, HOST_MARIADBD.to_string()),
            "mysql" => {
                if !Path::new(HOST_MYSQLD).exists() {
                    bail!(
                        "--server mysql: this host has no {HOST_MYSQLD}: install MySQL \
                         (Debian: mysql-server-core), or give --server DIR, a Debian tree with \
                         usr/sbin/mysqld (scripts/setup-sid-mysql.sh makes one at target/sid-mysql)"
                    );
                }
                (Some(Kind::MySql), None, HOST_MYSQLD.to_string())
            }
            path if Path::new(path).is_dir() => {
                // Absolute and canonical: the throwaway's files are named below it, and their
                // paths inside the tree are what follows it.
                let tree = std::fs::canonicalize(path)
                    .map_err(|e| anyhow::anyhow!("--server {path}: {e}"))?;
                let found = [(Kind::MySql, HOST_MYSQLD), (Kind::MariaDb, HOST_MARIADBD)]
                    .into_iter()
                    .find(|(_, p)| tree.join(p.trim_start_matches('/')).exists());
                let Some((kind, program)) = found else {
                    bail!(
                        "--server {path}: the folder holds no usr/sbin/mysqld or usr/sbin/mariadbd \
                         (a Debian tree with a server: scripts/setup-sid-mysql.sh makes MySQL's at \
                         target/sid-mysql)"
                    );
                };
                (Some(kind), Some(tree), program.to_string())
            }
            path if Path::new(path).is_file() => (None, None, path.to_string()),
            other => bail!(
                "--server {other}: not mariadb, mysql, a Debian tree or a server program (no such \
                 file or folder)"
            ),
        };
        let said = version_of(tree.as_deref(), &program)?;
        let is_mariadb = said.contains("MariaDB");
        let looks_like_a_server = said.contains(" Ver ");
        let kind = match kind {
            _ if !looks_like_a_server => bail!(
                "--server {text}: {program} is not a MySQL or MariaDB server (`--version` said: \
                 {})",
                if said.is_empty() { "nothing" } else { &said }
            ),
            Some(Kind::MySql) if is_mariadb => Kind::MariaDb,
            Some(kind) => kind,
            None if is_mariadb => Kind::MariaDb,
            None => Kind::MySql,
        };
        Ok(ServerChoice {
            kind,
            tree,
            program,
            version: said,
        })
    }

    /// "MySQL" or "MariaDB", for messages.
    pub(crate) fn name(&self) -> &'static str {
        match self.kind {
            Kind::MariaDb => "MariaDB",
            Kind::MySql => "MySQL",
        }
    }

    /// The harness's flavor whose command lines fit this server.
    pub(crate) fn flavor(&self) -> Flavor {
        match (self.kind, &self.tree) {
            (Kind::MySql, _) => Flavor::MySql97,
            (Kind::MariaDb, None) => Flavor::MariaDb1011,
            (Kind::MariaDb, Some(_)) => Flavor::MariaDb118,
        }
    }

    /// `program` run where the server runs (`chroot TREE program`, or on the host).
    pub(crate) fn command(&self, program: &str) -> Command {
        Flavor::command_in(self.tree.as_deref(), program)
    }

    /// Where the throwaway's folder goes: the tree's /tmp (the server sees it there), or the
    /// host's temporary folder.
    pub(crate) fn temp_parent(&self) -> PathBuf {
        self.tree
            .as_ref()
            .map_or_else(std::env::temp_dir, |t| t.join("tmp"))
    }

    /// `path` (on the host) as the server sees it.
    pub(crate) fn seen(&self, path: &Path) -> PathBuf {
        match &self.tree {
            Some(tree) => path
                .strip_prefix(tree)
                .map_or_else(|_| path.to_path_buf(), |rel| Path::new("/").join(rel)),
            None => path.to_path_buf(),
        }
    }
}

/// The first line `program --version` prints (run in `tree`), or one line saying why it does
/// not run.
fn version_of(tree: Option<&Path>, program: &str) -> anyhow::Result<String> {
    let mut cmd = Flavor::command_in(tree, program);
    cmd.arg("--version");
    let where_ = tree.map_or(String::new(), |t| format!(" in {}", t.display()));
    let out = match cmd.output() {
        Ok(out) => out,
        Err(e) => bail!("cannot run {program}{where_}: {e}"),
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let first = text.lines().next().unwrap_or("").trim().to_string();
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let why = err.lines().next().unwrap_or("no output").trim().to_string();
        let again = if tree.is_some() {
            " (a MySQL tree made by scripts/setup-sid-mysql.sh: run it again)"
        } else {
            ""
        };
        bail!(
            "{program}{where_} does not run ({}: {why}){again}",
            out.status
        );
    }
    Ok(first)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_that_is_no_server_is_one_line() {
        let e = ServerChoice::resolve("postgres").unwrap_err().to_string();
        assert!(e.contains("--server postgres") && !e.contains('\n'), "{e}");
        let dir = tempfile::tempdir().unwrap();
        let e = ServerChoice::resolve(&dir.path().display().to_string())
            .unwrap_err()
            .to_string();
        assert!(e.contains("no usr/sbin/mysqld"), "{e}");
    }

    #[test]
    fn a_program_that_is_not_a_server_is_refused() {
        let e = ServerChoice::resolve("/bin/echo").unwrap_err().to_string();
        assert!(e.contains("is not a MySQL or MariaDB server"), "{e}");
        let e = ServerChoice::resolve("/bin/false").unwrap_err().to_string();
        assert!(e.contains("does not run"), "{e}");
    }

    #[test]
    fn paths_inside_a_tree_are_seen_from_its_root() {
        let c = ServerChoice {
            kind: Kind::MySql,
            tree: Some(PathBuf::from("/t")),
            program: HOST_MYSQLD.into(),
            version: String::new(),
        };
        assert_eq!(c.seen(Path::new("/t/tmp/x")), Path::new("/tmp/x"));
        assert_eq!(c.temp_parent(), Path::new("/t/tmp"));
        assert_eq!(c.flavor(), Flavor::MySql97);
    }
}
