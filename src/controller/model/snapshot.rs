//! A snapshot of the setup tables, tagged with the server it came from so it is never restored
//! onto another one, and versioned (`local::state_file` keeps it on disk across crashes).

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::ownership::Claim;
use super::setup_tables::SetupState;
use crate::controller::error::{ControllerError, Result};
use crate::timestamp::rfc3339;

/// Bumped whenever the file's shape changes incompatibly.
pub(crate) const FORMAT_VERSION: u32 = 1;

/// Which server a snapshot belongs to.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerIdentity {
    /// host:port as the controller DSN names it.
    pub address: String,
    /// `@@hostname` and `@@port`, as the server reports them.
    pub hostname: String,
    pub port: u16,
    /// `@@server_uuid` (MySQL 5.6+; MariaDB has none).
    pub server_uuid: Option<String>,
    /// `VERSION()`.
    pub version: String,
    /// When the server process started (its clock minus `Uptime`), to tell a restart (which
    /// resets the setup tables to my.cnf defaults) from a mere reconnect.
    #[serde(default)]
    pub started_at_unix: Option<u64>,
}

impl ServerIdentity {
    /// Same server: equal `@@server_uuid` where both have one, else equal `@@hostname:@@port`.
    pub fn same_server(&self, other: &ServerIdentity) -> bool {
        match (&self.server_uuid, &other.server_uuid) {
            (Some(a), Some(b)) => a == b,
            _ => self.hostname == other.hostname && self.port == other.port,
        }
    }

    /// The same server, started again after `earlier` was taken (a few seconds of slack for
    /// clock and rounding).
    pub fn restarted_since(&self, earlier: &ServerIdentity) -> bool {
        const SLACK_SECS: u64 = 2;
        match (self.started_at_unix, earlier.started_at_unix) {
            (Some(now), Some(then)) => now > then + SLACK_SECS,
            _ => false,
        }
    }

    pub fn describe(&self) -> String {
        let mut s = format!("{} ({}:{}", self.address, self.hostname, self.port);
        if let Some(uuid) = &self.server_uuid {
            s.push_str(&format!(", server_uuid {uuid}"));
        }
        s.push(')');
        s
    }
}

/// [`RestartIntent::into`] of a restart with the server's own options.
pub(crate) const OWN_OPTIONS: &str = "own options";

/// A restart psprobe is about to make: recorded before the command runs, so a psprobe killed
/// meanwhile is told apart from a DBA's restart by the next start.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RestartIntent {
    /// The scenario it restarts into (`pfsoff`, `NAME@startup`), or [`OWN_OPTIONS`].
    pub into: String,
    /// When the command started (Unix seconds, this host's clock).
    pub since_unix: u64,
    /// How long the restart may take (`--restart-timeout`), in seconds.
    pub timeout_s: u64,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Snapshot {
    pub format_version: u32,
    pub server: ServerIdentity,
    /// RFC 3339, UTC.
    pub taken_at: String,
    pub taken_at_unix: u64,
    /// The scheduled run that answers for this snapshot (`HOST:PID@MS`); `None` for `ps apply`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// That run's name in `psprobe.phase.leader`: the row it publishes at each switch says
    /// which scenario it last applied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leader: Option<String>,
    /// The server start time the run last saw (its own restarts, for slow phases, move it);
    /// `None`: `server.started_at_unix`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub known_start_unix: Option<u64>,
    /// The scenario `ps apply` last applied over this snapshot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub applied: Option<String>,
    /// Rows someone else set while the run went on: theirs, never written back.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub claims: Vec<Claim>,
    /// The scenarios the run schedules (what it may have written, for a later recovery).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scenarios: Vec<String>,
    /// A restart the run began and has not seen through (written before its command runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restart: Option<RestartIntent>,
    /// What the run's last restart left the server running as (`pfsoff`, `NAME@startup`);
    /// `None`: its own options.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    #[serde(flatten)]
    pub state: SetupState,
}

impl Snapshot {
    /// A snapshot of `state` on `server`, taken at `secs` (Unix seconds).
    pub fn new(server: ServerIdentity, state: SetupState, secs: u64) -> Self {
        Snapshot {
            format_version: FORMAT_VERSION,
            server,
            taken_at: rfc3339(secs),
            taken_at_unix: secs,
            run_id: None,
            leader: None,
            known_start_unix: None,
            applied: None,
            claims: Vec::new(),
            scenarios: Vec::new(),
            restart: None,
            mode: None,
            state,
        }
    }

    /// Marks this snapshot as the one the scheduled run `leader` (started at `started_ms`)
    /// answers for.
    pub fn for_run(mut self, leader: &str, started_ms: u64) -> Self {
        self.run_id = Some(format!("{leader}@{started_ms}"));
        self.leader = Some(leader.to_string());
        self
    }

    /// When the server last started, as psprobe last saw it.
    pub fn known_start(&self) -> Option<u64> {
        self.known_start_unix.or(self.server.started_at_unix)
    }

    /// Whether `server` started again since psprobe last saw it (the snapshot was taken, or
    /// the run restarted it itself).
    pub fn restarted_since(&self, server: &ServerIdentity) -> bool {
        let seen = ServerIdentity {
            started_at_unix: self.known_start(),
            ..self.server.clone()
        };
        server.restarted_since(&seen)
    }

    /// Error unless this snapshot was taken on `server`.
    pub fn check_server(&self, server: &ServerIdentity, path: &Path) -> Result<()> {
        if self.server.same_server(server) {
            Ok(())
        } else {
            Err(ControllerError::WrongServer {
                path: path.into(),
                saved: self.server.describe(),
                found: server.describe(),
            })
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::controller::model::setup_tables::tests::{c, i};

    pub(crate) fn identity(uuid: Option<&str>) -> ServerIdentity {
        ServerIdentity {
            address: "db:3306".into(),
            hostname: "db1".into(),
            port: 3306,
            server_uuid: uuid.map(str::to_string),
            version: "10.11.19-MariaDB".into(),
            started_at_unix: Some(1_000_000),
        }
    }

    pub(crate) fn snapshot() -> Snapshot {
        Snapshot::new(
            identity(None),
            SetupState {
                consumers: vec![c("statements_digest", true)],
                instruments: vec![i("memory/x", true, None), i("wait/y", false, Some(false))],
            },
            1_000_100,
        )
    }

    #[test]
    fn server_identity() {
        let a = identity(Some("u1"));
        let mut b = identity(Some("u1"));
        b.hostname = "renamed".into();
        assert!(a.same_server(&b), "uuid decides");
        b.server_uuid = Some("u2".into());
        assert!(!a.same_server(&b));
        let (m1, mut m2) = (identity(None), identity(None));
        assert!(m1.same_server(&m2));
        m2.port = 3307;
        assert!(!m1.same_server(&m2));
        let mut later = identity(None);
        assert!(!later.restarted_since(&m1));
        later.started_at_unix = Some(1_000_002);
        assert!(!later.restarted_since(&m1), "within the slack");
        later.started_at_unix = Some(1_000_600);
        assert!(later.restarted_since(&m1));
        later.started_at_unix = None;
        assert!(!later.restarted_since(&m1), "unknown: assume not");
        let e = snapshot()
            .check_server(&m2, Path::new("f.json"))
            .unwrap_err();
        assert!(e.to_string().contains("db1:3307"), "{e}");
    }
}
