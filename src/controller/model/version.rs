//! Which server we talk to, from `SELECT VERSION(), @@version_comment`. Parsing never fails: a
//! string we do not recognise is `Series::Unknown`, and the controller still works from the rows
//! the setup tables actually hold.

use std::fmt;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavor {
    /// Oracle MySQL and builds of it (Percona Server, cloud variants).
    MySql,
    MariaDb,
}

/// Release lines whose performance_schema differs in ways the controller cares about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Series {
    MySql56,
    MySql57,
    MySql80,
    /// 8.1 to 8.4 and later (innovation releases and the 8.4 LTS line).
    MySql84,
    MariaDb10,
    MariaDb11,
    Unknown,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerVersion {
    /// `VERSION()` as the server reported it, e.g. "10.11.19-MariaDB-0+deb12u1".
    pub raw: String,
    /// `@@version_comment`, e.g. "Debian 12" or "MySQL Community Server - GPL".
    pub comment: String,
    pub flavor: Flavor,
    pub major: u32,
    pub minor: u32,
    pub patch: u32,
}

impl ServerVersion {
    pub fn parse(version: &str, comment: &str) -> Self {
        let lower = format!("{version} {comment}").to_ascii_lowercase();
        let flavor = if lower.contains("mariadb") {
            Flavor::MariaDb
        } else {
            Flavor::MySql
        };
        // MariaDB once prefixed its version with "5.5.5-" to satisfy old replication clients.
        let numbers = match (flavor, version.strip_prefix("5.5.5-")) {
            (Flavor::MariaDb, Some(rest)) => rest,
            _ => version,
        };
        let mut parts = numbers
            .split(|c: char| !c.is_ascii_digit() && c != '.')
            .next()
            .unwrap_or("")
            .split('.')
            .map(|p| p.parse::<u32>().ok());
        let mut next = || parts.next().flatten().unwrap_or(0);
        let (major, minor, patch) = (next(), next(), next());
        ServerVersion {
            raw: version.to_string(),
            comment: comment.to_string(),
            flavor,
            major,
            minor,
            patch,
        }
    }

    pub fn series(&self) -> Series {
        match (self.flavor, self.major, self.minor) {
            (Flavor::MySql, 5, 6) => Series::MySql56,
            (Flavor::MySql, 5, 7) => Series::MySql57,
            (Flavor::MySql, 8, 0) => Series::MySql80,
            (Flavor::MySql, 8, _) | (Flavor::MySql, 9..=99, _) => Series::MySql84,
            (Flavor::MariaDb, 10, _) => Series::MariaDb10,
            (Flavor::MariaDb, 11, _) => Series::MariaDb11,
            _ => Series::Unknown,
        }
    }

    /// "MariaDB 10.11.19" / "MySQL 8.0.36".
    pub fn short(&self) -> String {
        let name = match self.flavor {
            Flavor::MySql => "MySQL",
            Flavor::MariaDb => "MariaDB",
        };
        format!("{name} {}.{}.{}", self.major, self.minor, self.patch)
    }
}

impl fmt::Display for ServerVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({}", self.short(), self.raw)?;
        if !self.comment.is_empty() {
            write!(f, ", {}", self.comment)?;
        }
        f.write_str(")")
    }
}

impl fmt::Display for Series {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Series::MySql56 => "MySQL 5.6",
            Series::MySql57 => "MySQL 5.7",
            Series::MySql80 => "MySQL 8.0",
            Series::MySql84 => "MySQL 8.4",
            Series::MariaDb10 => "MariaDB 10.x",
            Series::MariaDb11 => "MariaDB 11.x",
            Series::Unknown => "unknown server",
        })
    }
}

/// Whether `Innodb_buffer_pool_load_status` says the server is still loading its buffer pool
/// back after a start (MariaDB and MySQL: `Loading buffer pool(s) from ...`, `Loaded N/M
/// pages`). MySQL with the load at startup off says `Loading of buffer pool not started`: that
/// is no load to wait for (waiting on it ran into --restart-timeout).
pub(crate) fn buffer_pool_still_loading(status: &str) -> bool {
    (status.starts_with("Loading") && !status.contains("not started"))
        || status.starts_with("Loaded ")
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_load_not_started_is_no_load_to_wait_for() {
        use super::buffer_pool_still_loading as loading;
        assert!(loading(
            "Loading buffer pool(s) from /var/lib/mysql/ib_buffer_pool"
        ));
        assert!(loading("Loaded 1024/8192 pages"));
        assert!(!loading("Loading of buffer pool not started"));
        assert!(!loading("Buffer pool(s) load completed at 261206 15:28:16"));
        assert!(!loading("Buffer pool(s) load aborted on demand"));
        assert!(!loading(""));
    }

    use super::*;

    fn v(version: &str, comment: &str) -> ServerVersion {
        ServerVersion::parse(version, comment)
    }

    #[test]
    fn mariadb_versions() {
        let d = v("10.11.19-MariaDB-0+deb12u1", "Debian 12");
        assert_eq!(
            (d.flavor, d.major, d.minor, d.patch),
            (Flavor::MariaDb, 10, 11, 19)
        );
        assert_eq!(d.series(), Series::MariaDb10);
        assert_eq!(d.short(), "MariaDB 10.11.19");
        assert_eq!(
            d.to_string(),
            "MariaDB 10.11.19 (10.11.19-MariaDB-0+deb12u1, Debian 12)"
        );
        let r = v("5.5.5-10.6.16-MariaDB-log", "");
        assert_eq!((r.major, r.minor, r.patch), (10, 6, 16));
        let e = v("11.4.2-MariaDB-ubu2404", "mariadb.org binary distribution");
        assert_eq!(e.series(), Series::MariaDb11);
        // Flavor from the comment alone.
        assert_eq!(v("10.5.8", "MariaDB Server").flavor, Flavor::MariaDb);
    }

    #[test]
    fn mysql_versions() {
        let cases = [
            ("5.6.51", "MySQL Community Server (GPL)", Series::MySql56),
            (
                "5.7.44-log",
                "MySQL Community Server (GPL)",
                Series::MySql57,
            ),
            ("8.0.36", "MySQL Community Server - GPL", Series::MySql80),
            (
                "8.0.36-28",
                "Percona Server (GPL), Release 28, Revision 47601f19",
                Series::MySql80,
            ),
            ("8.4.0", "MySQL Community Server - GPL", Series::MySql84),
            (
                "8.2.0-commercial",
                "MySQL Enterprise Server",
                Series::MySql84,
            ),
            ("9.1.0", "MySQL Community Server - GPL", Series::MySql84),
            ("5.5.62", "MySQL Community Server (GPL)", Series::Unknown),
        ];
        for (version, comment, series) in cases {
            let parsed = v(version, comment);
            assert_eq!(parsed.flavor, Flavor::MySql, "{version}");
            assert_eq!(parsed.series(), series, "{version}");
        }
        assert_eq!(v("8.0.36-28", "").patch, 36);
    }

    #[test]
    fn garbage_is_unknown_not_an_error() {
        for s in ["", "abc", "x.y.z", "-"] {
            let parsed = v(s, "");
            assert_eq!(parsed.series(), Series::Unknown, "{s:?}");
            assert_eq!((parsed.major, parsed.minor, parsed.patch), (0, 0, 0));
        }
    }
}
