//! The three servers psprobe is tested on, and the facts that differ between them: where each
//! lives (the host, or a Debian tree under `target/` run with chroot), its programs, how its
//! data directory is made, and the options a throwaway one runs with.
//!
//! MariaDB 10.11 is the host's package (Debian 12); MariaDB 11.8 is Debian 13's
//! (`scripts/setup-trixie-mariadb.sh` unpacks it into `target/trixie-mariadb`); Oracle MySQL
//! 9.7 is Debian sid's `mysql-server-core` (`scripts/setup-sid-mysql.sh`, `target/sid-mysql`).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::mariadb::is_root;
use crate::server::Layout;

/// Which server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Flavor {
    /// The host's mariadb-server (Debian 12).
    MariaDb1011,
    /// Debian 13's, from `target/trixie-mariadb`.
    MariaDb118,
    /// Oracle MySQL from Debian sid, from `target/sid-mysql`.
    MySql97,
}

impl Flavor {
    /// Every flavor, the host's first.
    pub const ALL: [Flavor; 3] = [Flavor::MariaDb1011, Flavor::MariaDb118, Flavor::MySql97];

    /// "MariaDB 10.11", "MariaDB 11.8", "MySQL 9.7".
    pub fn name(self) -> &'static str {
        match self {
            Flavor::MariaDb1011 => "MariaDB 10.11",
            Flavor::MariaDb118 => "MariaDB 11.8",
            Flavor::MySql97 => "MySQL 9.7",
        }
    }

    /// Whether it is Oracle MySQL (else MariaDB).
    pub fn is_mysql(self) -> bool {
        self == Flavor::MySql97
    }

    /// What `VERSION()` starts with.
    pub fn version_prefix(self) -> &'static str {
        match self {
            Flavor::MariaDb1011 => "10.11.",
            Flavor::MariaDb118 => "11.8.",
            // sid moves on within the 9.x line; the tests need a 9.x server, not one release.
            Flavor::MySql97 => "9.",
        }
    }

    /// The Debian tree it runs in with chroot, as the project's folder names it; `None`: the
    /// host's own server.
    pub fn tree(self, project: &Path) -> Option<PathBuf> {
        let (var, dir) = match self {
            Flavor::MariaDb1011 => return None,
            Flavor::MariaDb118 => ("PSPROBE_TRIXIE_ROOT", "target/trixie-mariadb"),
            Flavor::MySql97 => ("PSPROBE_SID_ROOT", "target/sid-mysql"),
        };
        Some(
            std::env::var_os(var)
                .map(PathBuf::from)
                .unwrap_or_else(|| project.join(dir)),
        )
    }

    /// The script that makes its tree.
    pub fn setup_script(self) -> &'static str {
        match self {
            Flavor::MariaDb1011 => "scripts/setup.sh",
            Flavor::MariaDb118 => "scripts/setup-trixie-mariadb.sh",
            Flavor::MySql97 => "scripts/setup-sid-mysql.sh",
        }
    }

    /// The server program (a path inside its tree for the chroot flavors).
    pub fn server_program(self) -> &'static str {
        match self {
            Flavor::MariaDb1011 | Flavor::MariaDb118 => "/usr/sbin/mariadbd",
            Flavor::MySql97 => "/usr/sbin/mysqld",
        }
    }

    /// Its own command-line client.
    pub fn client_program(self) -> &'static str {
        match self {
            Flavor::MariaDb1011 | Flavor::MariaDb118 => "/usr/bin/mariadb",
            Flavor::MySql97 => "/usr/bin/mysql",
        }
    }

    /// Why its tree cannot serve, in one line (`None`: the programs are there). Whether they
    /// run is for the caller to find out (it needs chroot, so root).
    pub fn tree_problem(self, tree: &Path) -> Option<String> {
        let missing = [self.server_program(), self.client_program()]
            .into_iter()
            .find(|p| !tree.join(p.trim_start_matches('/')).exists())?;
        Some(format!(
            "{} has no {} ({missing} is missing): run {} (it debootstraps the tree there)",
            tree.display(),
            self.name(),
            self.setup_script()
        ))
    }

    /// `program` run in the flavor's tree (`chroot TREE program`), or on the host.
    pub fn command_in(tree: Option<&Path>, program: &str) -> Command {
        match tree {
            Some(tree) => {
                let mut cmd = Command::new("chroot");
                cmd.arg(tree).arg(program);
                cmd
            }
            None => Command::new(program),
        }
    }

    /// Options of the server's data directory maker that size the redo log as the server
    /// runs it, so its first start need not resize it.
    pub fn redo_log_option(self) -> &'static str {
        match self {
            Flavor::MariaDb1011 | Flavor::MariaDb118 => "--innodb-log-file-size=48M",
            Flavor::MySql97 => "--innodb-redo-log-capacity=32M",
        }
    }

    /// The arguments (after the program) that fill `layout`'s datadir with a fresh server's
    /// files, the root account reachable over TCP without a password: `mysqld
    /// --initialize-insecure` (it also makes the server's TLS certificates and RSA key pair in
    /// the datadir) or `mariadb-install-db`. `layout` holds paths as the server sees them.
    pub fn initialize_args(self, layout: &Layout) -> (String, Vec<String>) {
        let datadir = format!("--datadir={}", layout.datadir().display());
        let mut out = match self {
            Flavor::MySql97 => (
                self.server_program().to_string(),
                vec![
                    "--no-defaults".into(),
                    "--initialize-insecure".into(),
                    datadir,
                    format!("--log-error={}", layout.root().join("init.log").display()),
                    self.redo_log_option().into(),
                ],
            ),
            Flavor::MariaDb1011 | Flavor::MariaDb118 => (
                "/usr/bin/mariadb-install-db".into(),
                vec![
                    "--no-defaults".into(),
                    datadir,
                    format!("--tmpdir={}", layout.tmpdir().display()),
                    "--auth-root-authentication-method=normal".into(),
                    "--skip-test-db".into(),
                    // A tree has no resolver set up for the host name; nothing here needs it.
                    "--force".into(),
                    self.redo_log_option().into(),
                ],
            ),
        };
        if is_root() {
            out.1.push("--user=root".into());
        }
        out
    }

    /// The options every throwaway server of this flavor runs with (see
    /// [`Layout::mariadbd_args`]), plus MySQL's own: no X Protocol listener (its fixed port
    /// 33060 would collide between servers), `secure_file_priv` in the layout (Debian's
    /// build has /var/lib/mysql-files compiled in and refuses to start without it), and no
    /// buffer pool dump and load around restarts (a throwaway server's pages are not worth
    /// the time). `layout` holds paths as the server sees them.
    pub fn server_args(self, layout: &Layout, port: u16, bind: &str) -> Vec<String> {
        let mut args = layout.mariadbd_args(port, bind);
        if self.is_mysql() {
            args.extend([
                "--mysqlx=OFF".to_string(),
                format!("--secure-file-priv={}", layout.tmpdir().display()),
                "--innodb-buffer-pool-dump-at-shutdown=OFF".to_string(),
                "--innodb-buffer-pool-load-at-startup=OFF".to_string(),
            ]);
        }
        args
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_host_flavor_has_no_tree() {
        let project = Path::new("/p");
        assert_eq!(Flavor::MariaDb1011.tree(project), None);
        for f in [Flavor::MariaDb118, Flavor::MySql97] {
            assert!(f.tree(project).is_some(), "{f:?}");
        }
        assert_eq!(Flavor::ALL.iter().filter(|f| f.is_mysql()).count(), 1);
    }

    #[test]
    fn a_missing_tree_is_one_line_naming_its_script() {
        let why = Flavor::MySql97
            .tree_problem(Path::new("/nonexistent/tree"))
            .unwrap();
        assert!(!why.contains('\n'), "{why}");
        assert!(
            why.contains("/usr/sbin/mysqld") && why.contains("scripts/setup-sid-mysql.sh"),
            "{why}"
        );
    }

    #[test]
    fn mysql_runs_without_x_protocol_and_with_its_own_file_folder() {
        let l = Layout::new("/tmp/x");
        let args = Flavor::MySql97.server_args(&l, 3307, "127.0.0.1");
        assert!(args.contains(&"--mysqlx=OFF".to_string()));
        assert!(args.contains(&"--secure-file-priv=/tmp/x/tmp".to_string()));
        let maria = Flavor::MariaDb118.server_args(&l, 3307, "127.0.0.1");
        assert!(!maria.iter().any(|a| a.starts_with("--mysqlx")));
        let (program, init) = Flavor::MySql97.initialize_args(&l);
        assert_eq!(program, "/usr/sbin/mysqld");
        assert!(init.contains(&"--initialize-insecure".to_string()));
        assert!(init.contains(&"--datadir=/tmp/x/data".to_string()));
    }
}
