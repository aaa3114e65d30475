//! A controller connection to one server: what it is, reading the setup tables, applying a
//! scenario and checking every row afterwards, snapshot and restore. Async, for the scheduler;
//! the CLI drives it from a small runtime.

use std::path::Path;
use std::time::Duration;

use mysql_async::prelude::{FromRow, Queryable};
use mysql_async::{Conn, Error as MyError};

use super::dsn::ControllerDsn;
use super::statement::{Failure, StatementGuard, STATEMENT_TIMEOUT};
use crate::controller::error::{ControllerError, Result};
use crate::controller::model::scenario::{Plan, Scenario, Settings};
use crate::controller::model::setup_tables::{
    compare, ConsumerRow, InstrumentRow, Mismatch, SetupState, CONSUMERS, INSTRUMENTS,
};
use crate::controller::model::snapshot::{ServerIdentity, Snapshot};
use crate::controller::model::version::ServerVersion;

const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// MySQL error codes the controller explains.
pub(in crate::controller) mod code {
    pub(crate) const DBACCESS_DENIED: u16 = 1044;
    pub(crate) const ACCESS_DENIED: u16 = 1045;
    pub(crate) const TABLEACCESS_DENIED: u16 = 1142;
    pub(crate) const COLUMNACCESS_DENIED: u16 = 1143;
    pub(crate) const UNKNOWN_SYSTEM_VARIABLE: u16 = 1193;
    pub(crate) const SPECIFIC_ACCESS_DENIED: u16 = 1227;
    pub(crate) const ACCESS_DENIED_NO_PASSWORD: u16 = 1698;
    /// ER_SERVER_SHUTDOWN: MySQL answers a statement so as it shuts down (MariaDB closes the
    /// connection instead).
    pub(crate) const SERVER_SHUTDOWN: u16 = 1053;
    /// ER_CONNECTION_KILLED (MariaDB) and ER_SESSION_WAS_KILLED (MySQL): the connection was
    /// ended under the statement.
    pub(crate) const CONNECTION_KILLED: u16 = 1927;
    pub(crate) const SESSION_WAS_KILLED: u16 = 3169;

    /// The server ends the connection with this answer: a lost connection, not a failed
    /// statement (the schedule waits for the server, as when the connection drops).
    pub(crate) fn ends_the_connection(code: u16) -> bool {
        matches!(
            code,
            SERVER_SHUTDOWN | CONNECTION_KILLED | SESSION_WAS_KILLED
        )
    }

    /// The account may log in but lacks a privilege on what it touched.
    pub(crate) fn is_missing_privilege(code: u16) -> bool {
        matches!(
            code,
            TABLEACCESS_DENIED | COLUMNACCESS_DENIED | SPECIFIC_ACCESS_DENIED | DBACCESS_DENIED
        )
    }
}

#[derive(Clone, Debug)]
pub struct ServerInfo {
    pub version: ServerVersion,
    pub identity: ServerIdentity,
    /// `@@performance_schema`; `None` if the server has no such variable (built without it).
    pub performance_schema: Option<bool>,
    /// `CURRENT_USER()` quoted for a GRANT: `'user'@'host'`.
    pub account: String,
}

/// What an apply or restore did.
#[derive(Clone, Debug, Default)]
pub struct ApplyReport {
    pub scenario: String,
    /// The statements run, in order.
    pub statements: Vec<String>,
    /// Sum of the statements' affected-row counts.
    pub rows_changed: u64,
    /// Rows read back and found as expected.
    pub rows_verified: usize,
    /// Names the scenario lists that this server lacks, and the like (also logged with `warn!`).
    pub warnings: Vec<String>,
}

/// What [`Controller::ensure_snapshot`] found or made.
#[derive(Clone, Debug)]
pub struct SavedSnapshot {
    pub snapshot: Snapshot,
    /// Taken just now (there was no state file).
    pub created: bool,
    /// The server restarted after an existing snapshot was taken.
    pub server_restarted_since: bool,
}

pub struct Controller {
    conn: Conn,
    guard: StatementGuard,
    info: ServerInfo,
    /// `user@host:port`, for messages.
    target: String,
}

impl Controller {
    /// Connect and find out what the server is. Does not change anything.
    pub async fn connect(dsn: &ControllerDsn) -> Result<Self> {
        let target = dsn.redacted();
        let conn = match tokio::time::timeout(CONNECT_TIMEOUT, Conn::new(dsn.opts())).await {
            Err(_) => {
                return Err(ControllerError::Unreachable {
                    target,
                    reason: format!("no answer within {}s", CONNECT_TIMEOUT.as_secs()),
                })
            }
            Ok(Err(e)) => return Err(login_error(e, &target, dsn.origin())),
            Ok(Ok(conn)) => conn,
        };
        let address = format!("{}:{}", dsn.host(), dsn.port());
        let mut ctl = Controller {
            conn,
            guard: StatementGuard::default(),
            info: ServerInfo {
                version: ServerVersion::parse("", ""),
                identity: ServerIdentity {
                    address,
                    hostname: String::new(),
                    port: 0,
                    server_uuid: None,
                    version: String::new(),
                    started_at_unix: None,
                },
                performance_schema: None,
                account: format!("'{}'@'%'", dsn.user()),
            },
            target,
        };
        ctl.probe().await?;
        Ok(ctl)
    }

    async fn probe(&mut self) -> Result<()> {
        let what = "read the server version";
        let (version, comment): (String, Option<String>) = self
            .first("SELECT VERSION(), @@version_comment", what)
            .await?;
        self.info.version = ServerVersion::parse(&version, comment.as_deref().unwrap_or(""));
        self.info.identity.version = version;

        self.info.performance_schema = match self
            .first::<(Option<String>,)>("SELECT @@performance_schema", "read @@performance_schema")
            .await
        {
            Ok((v,)) => Some(matches!(v.as_deref(), Some("1" | "ON" | "on"))),
            Err(ControllerError::Sql { code, .. }) if code == code::UNKNOWN_SYSTEM_VARIABLE => None,
            Err(e) => return Err(e),
        };

        let (hostname, port, user): (String, u16, String) = self
            .first(
                "SELECT @@hostname, @@port, CURRENT_USER()",
                "read the server identity",
            )
            .await?;
        self.info.identity.hostname = hostname;
        self.info.identity.port = port;
        if let Some((name, host)) = user.rsplit_once('@') {
            self.info.account = format!("'{name}'@'{host}'");
        }
        self.info.identity.server_uuid = match self
            .first::<(Option<String>,)>("SELECT @@server_uuid", "read @@server_uuid")
            .await
        {
            Ok((uuid,)) => uuid,
            Err(ControllerError::Sql { code, .. }) if code == code::UNKNOWN_SYSTEM_VARIABLE => None,
            Err(e) => return Err(e),
        };
        let (now,): (Option<u64>,) = self
            .first("SELECT UNIX_TIMESTAMP()", "read the server clock")
            .await?;
        let uptime: Option<(String, String)> = self
            .query("SHOW GLOBAL STATUS LIKE 'Uptime'", "read the server uptime")
            .await?
            .into_iter()
            .next();
        let uptime = uptime.and_then(|(_, v)| v.parse::<u64>().ok());
        self.info.identity.started_at_unix = now.zip(uptime).map(|(n, u)| n.saturating_sub(u));
        // Quotes are doubled and backslashes are ordinary: see pattern.rs.
        self.exec(
            "SET SESSION sql_mode = 'NO_BACKSLASH_ESCAPES'",
            "set the session sql_mode",
        )
        .await?;
        Ok(())
    }

    pub fn info(&self) -> &ServerInfo {
        &self.info
    }

    /// `user@host:port`.
    pub fn target(&self) -> &str {
        &self.target
    }

    /// Error unless performance_schema is ON (runtime scenarios need it).
    pub fn require_ps(&self) -> Result<()> {
        if self.info.performance_schema == Some(true) {
            return Ok(());
        }
        Err(ControllerError::PsOff {
            target: self.target.clone(),
            version: match self.info.performance_schema {
                None => format!("{}, built without performance_schema", self.info.version),
                Some(_) => self.info.version.to_string(),
            },
        })
    }

    /// Every row of setup_consumers and setup_instruments.
    pub async fn read_state(&mut self) -> Result<SetupState> {
        let what = format!("read {CONSUMERS}");
        let rows: Vec<(String, String)> = self
            .query(&format!("SELECT NAME, ENABLED FROM {CONSUMERS}"), &what)
            .await?;
        let mut consumers = Vec::with_capacity(rows.len());
        for (name, enabled) in rows {
            let enabled = self.parse_yes_no(&enabled, &name, &what)?;
            consumers.push(ConsumerRow { name, enabled });
        }
        let what = format!("read {INSTRUMENTS}");
        let rows: Vec<(String, String, Option<String>)> = self
            .query(
                &format!("SELECT NAME, ENABLED, TIMED FROM {INSTRUMENTS}"),
                &what,
            )
            .await?;
        let mut instruments = Vec::with_capacity(rows.len());
        for (name, enabled, timed) in rows {
            let enabled = self.parse_yes_no(&enabled, &name, &what)?;
            let timed = match timed {
                None => None,
                Some(t) => Some(self.parse_yes_no(&t, &name, &what)?),
            };
            instruments.push(InstrumentRow {
                name,
                enabled,
                timed,
            });
        }
        Ok(SetupState {
            consumers,
            instruments,
        })
    }

    /// The current rows, tagged with this server's identity and the time.
    pub async fn snapshot(&mut self) -> Result<Snapshot> {
        self.require_ps()?;
        let state = self.read_state().await?;
        Ok(Snapshot::new(
            self.info.identity.clone(),
            state,
            crate::clock::unix_now(),
        ))
    }

    /// The snapshot to return to: the one in the state file at `path` if there is one (it must
    /// be of this server), else a new one, saved there first. Call before the first change.
    pub async fn ensure_snapshot(&mut self, path: &Path) -> Result<SavedSnapshot> {
        if let Some(snapshot) = Snapshot::load_if_exists(path)? {
            snapshot.check_server(&self.info.identity, path)?;
            let restarted = self.info.identity.restarted_since(&snapshot.server);
            if restarted {
                tracing::warn!(
                    target: "psprobe::controller",
                    "{} restarted after the snapshot in {} was taken ({}); its setup tables were \
                     reset to the server's defaults, and restore writes the snapshot back",
                    self.target,
                    path.display(),
                    snapshot.taken_at
                );
            }
            return Ok(SavedSnapshot {
                snapshot,
                created: false,
                server_restarted_since: restarted,
            });
        }
        let snapshot = self.snapshot().await?;
        snapshot.save(path)?;
        Ok(SavedSnapshot {
            snapshot,
            created: true,
            server_restarted_since: false,
        })
    }

    /// Apply `scenario`, where `original` means `snapshot` (see [`Controller::restore`]).
    pub async fn apply_or_restore(
        &mut self,
        scenario: &Scenario,
        snapshot: &Snapshot,
    ) -> Result<ApplyReport> {
        match scenario.settings {
            Settings::Original => self.restore(snapshot).await,
            _ => self.apply(scenario).await,
        }
    }

    /// Apply `scenario`, then read every row back and compare it with the plan. Fails with
    /// [`ControllerError::Verify`] if any row differs, and before touching anything if the
    /// scenario needs a restart or performance_schema is off.
    pub async fn apply(&mut self, scenario: &Scenario) -> Result<ApplyReport> {
        if scenario.requires_restart() {
            return Err(ControllerError::NeedsRestart {
                name: scenario.name.clone(),
            });
        }
        self.require_ps()?;
        let before = self.read_state().await?;
        let plan = scenario.plan(&before)?;
        self.apply_plan(&scenario.name, &plan, None, None).await
    }

    /// Runs `plan`'s statements (`before` and `after` them: statements of the caller's that
    /// ride along, the switch intent and the leader's phase row), then reads every row back
    /// and compares it with the plan: [`ControllerError::Verify`] if any differs.
    pub async fn apply_plan(
        &mut self,
        name: &str,
        plan: &Plan,
        before: Option<&str>,
        after: Option<&str>,
    ) -> Result<ApplyReport> {
        let (report, read_back) = self.run_plan(name, plan, before, after).await?;
        self.verified(name, plan, &read_back)?;
        Ok(report)
    }

    /// [`ControllerError::Verify`] unless `read_back` holds what `plan` expects.
    pub fn verified(&self, name: &str, plan: &Plan, read_back: &SetupState) -> Result<()> {
        let mismatches = compare(&plan.expected, read_back);
        if mismatches.is_empty() {
            return Ok(());
        }
        Err(ControllerError::Verify {
            what: format!("scenario '{name}'"),
            target: self.target.clone(),
            checked: plan.expected.rows(),
            mismatches: mismatches.iter().map(ToString::to_string).collect(),
        })
    }

    /// Runs `plan`'s statements as [`Controller::apply_plan`] does and returns what the rows
    /// hold afterwards, for the caller to compare.
    pub async fn run_plan(
        &mut self,
        name: &str,
        plan: &Plan,
        before: Option<&str>,
        after: Option<&str>,
    ) -> Result<(ApplyReport, SetupState)> {
        for w in &plan.warnings {
            tracing::warn!(target: "psprobe::controller", "{w}");
        }
        if let Some(sql) = before {
            self.exec(sql, "record the switch").await?;
        }
        let mut rows_changed = 0;
        for statement in &plan.statements {
            let table = if statement.contains(CONSUMERS) {
                CONSUMERS
            } else {
                INSTRUMENTS
            };
            rows_changed += self.exec(statement, &format!("update {table}")).await?;
        }
        if let Some(sql) = after {
            self.exec(sql, "publish the phase").await?;
        }
        let read_back = self.read_state().await?;
        tracing::info!(
            target: "psprobe::controller",
            "applied scenario {name} on {}: {} statement(s), {rows_changed} row(s) changed",
            self.target,
            plan.statements.len()
        );
        let report = ApplyReport {
            scenario: name.to_string(),
            statements: plan.statements.clone(),
            rows_changed,
            rows_verified: plan.expected.rows(),
            warnings: plan.warnings.clone(),
        };
        Ok((report, read_back))
    }

    /// The rows that do not hold what `scenario` sets (empty: the server is in that scenario).
    pub async fn verify(&mut self, scenario: &Scenario) -> Result<Vec<Mismatch>> {
        self.require_ps()?;
        let now = self.read_state().await?;
        let plan = scenario.plan(&now)?;
        Ok(compare(&plan.expected, &now))
    }

    /// Write the snapshot's values back (only rows that differ, batched), then verify every row.
    /// Refuses a snapshot taken on another server.
    pub async fn restore(&mut self, snapshot: &Snapshot) -> Result<ApplyReport> {
        self.restore_rows(snapshot, &snapshot.state).await
    }

    /// Like [`Controller::restore`], writing `target` (the snapshot's rows, someone else's
    /// kept as they are) instead of the snapshot's own.
    pub async fn restore_rows(
        &mut self,
        snapshot: &Snapshot,
        target: &SetupState,
    ) -> Result<ApplyReport> {
        self.check_snapshot_server(snapshot)?;
        self.apply(&Scenario::original_from(target)).await
    }

    fn check_snapshot_server(&self, snapshot: &Snapshot) -> Result<()> {
        if snapshot.server.same_server(&self.info.identity) {
            return Ok(());
        }
        Err(ControllerError::WrongServer {
            path: "(snapshot in memory)".into(),
            saved: snapshot.server.describe(),
            found: self.info.identity.describe(),
        })
    }

    /// `Innodb_buffer_pool_load_status` while the server is still loading its buffer pool back
    /// after a restart (`None` once done, or when the server does not say).
    pub async fn buffer_pool_loading(&mut self) -> Result<Option<String>> {
        let rows: Vec<(String, String)> = self
            .query(
                "SHOW GLOBAL STATUS LIKE 'Innodb_buffer_pool_load_status'",
                "read the buffer pool load status",
            )
            .await?;
        Ok(rows
            .into_iter()
            .next()
            .map(|(_, v)| v)
            .filter(|v| crate::controller::model::version::buffer_pool_still_loading(v)))
    }

    /// Close the connection politely (the server logs no aborted connection).
    pub async fn disconnect(self) {
        if !self.guard.is_broken() {
            let _ = tokio::time::timeout(STATEMENT_TIMEOUT, self.conn.disconnect()).await;
        }
    }

    async fn query<T: FromRow + Send + 'static>(
        &mut self,
        sql: &str,
        what: &str,
    ) -> Result<Vec<T>> {
        let done = self.guard.run(self.conn.query(sql)).await;
        self.answer(done, what)
    }

    /// The server's id of this connection (a leader names it in its heartbeat).
    pub fn connection_id(&self) -> u32 {
        self.conn.id()
    }

    /// A guarded statement's outcome as the user reads it.
    fn answer<T>(&self, done: std::result::Result<T, Failure>, what: &str) -> Result<T> {
        done.map_err(|f| f.into_error(&self.target, what, |e| self.sql_error(e, what)))
    }

    pub(in crate::controller) async fn first<T: FromRow + Send + 'static>(
        &mut self,
        sql: &str,
        what: &str,
    ) -> Result<T> {
        self.query(sql, what)
            .await?
            .into_iter()
            .next()
            .ok_or_else(|| ControllerError::Sql {
                target: self.target.clone(),
                action: what.into(),
                code: 0,
                message: format!("`{sql}` returned no row"),
            })
    }

    /// Runs several `;`-separated statements in one round trip and returns the first row of
    /// the first result set (statements after it only have to succeed).
    pub(in crate::controller) async fn batch_first_row<T: FromRow + Send + 'static>(
        &mut self,
        sql: &str,
        what: &str,
    ) -> Result<Option<T>> {
        let conn = &mut self.conn;
        let outcome = async {
            let mut result = conn.query_iter(sql).await?;
            let rows: Vec<T> = result.collect().await?;
            result.drop_result().await?;
            Ok::<_, MyError>(rows.into_iter().next())
        };
        let done = self.guard.run(outcome).await;
        self.answer(done, what)
    }

    /// Runs several `;`-separated statements in one round trip and returns the first row of
    /// whichever result set has one first (statements without a result set may come before).
    pub(in crate::controller) async fn batch_first_row_any<T: FromRow + Send + 'static>(
        &mut self,
        sql: &str,
        what: &str,
    ) -> Result<Option<T>> {
        let conn = &mut self.conn;
        let outcome = async {
            let mut result = conn.query_iter(sql).await?;
            let mut first = None;
            while !result.is_empty() {
                // try_collect: a row of another shape is no row here, never a panic.
                let rows = result.try_collect::<T>().await?;
                if first.is_none() {
                    first = rows.into_iter().find_map(|r| r.ok());
                }
            }
            Ok::<_, MyError>(first)
        };
        let done = self.guard.run(outcome).await;
        self.answer(done, what)
    }

    pub(in crate::controller) async fn exec(&mut self, sql: &str, what: &str) -> Result<u64> {
        let conn = &mut self.conn;
        let sent = async {
            conn.query_drop(sql).await?;
            Ok::<_, MyError>(conn.affected_rows())
        };
        let done = self.guard.run(sent).await;
        self.answer(done, what)
    }

    fn parse_yes_no(&self, value: &str, name: &str, what: &str) -> Result<bool> {
        match value {
            "YES" => Ok(true),
            "NO" => Ok(false),
            other => Err(ControllerError::Sql {
                target: self.target.clone(),
                action: what.into(),
                code: 0,
                message: format!("row '{name}' holds {other:?}, expected YES or NO"),
            }),
        }
    }

    fn sql_error(&self, e: MyError, what: &str) -> ControllerError {
        statement_error(e, &self.target, &self.info.account, what)
    }
}

/// A failed statement, as the controller acts on it: a missing privilege, a lost connection (the
/// schedule waits for the server: MySQL answers 1053 as it shuts down, where MariaDB closes the
/// connection), or the statement's own failure.
fn statement_error(e: MyError, target: &str, account: &str, what: &str) -> ControllerError {
    match e {
        MyError::Server(s) if code::is_missing_privilege(s.code) => ControllerError::NoPrivilege {
            target: target.to_string(),
            account: account.to_string(),
            action: what.into(),
            code: s.code,
            message: s.message,
        },
        MyError::Server(s) if code::ends_the_connection(s.code) => ControllerError::Connection {
            target: target.to_string(),
            action: what.into(),
            reason: format!("MySQL error {}: {}", s.code, s.message),
        },
        MyError::Server(s) => ControllerError::Sql {
            target: target.to_string(),
            action: what.into(),
            code: s.code,
            message: s.message,
        },
        other => ControllerError::Connection {
            target: target.to_string(),
            action: what.into(),
            reason: client_error_text(&other),
        },
    }
}

/// A failed login, explained.
fn login_error(e: MyError, target: &str, origin: &str) -> ControllerError {
    match e {
        MyError::Server(s)
            if matches!(
                s.code,
                code::ACCESS_DENIED | code::DBACCESS_DENIED | code::ACCESS_DENIED_NO_PASSWORD
            ) =>
        {
            ControllerError::AccessDenied {
                target: target.into(),
                code: s.code,
                message: s.message,
                origin: origin.into(),
            }
        }
        MyError::Server(s) if code::ends_the_connection(s.code) => ControllerError::Unreachable {
            target: target.into(),
            reason: format!("MySQL error {}: {}", s.code, s.message),
        },
        MyError::Server(s) => ControllerError::Sql {
            target: target.into(),
            action: "log in".into(),
            code: s.code,
            message: s.message,
        },
        other => ControllerError::Unreachable {
            target: target.into(),
            reason: client_error_text(&other),
        },
    }
}

/// The driver's own text for a non-server error, without its "Input/output error:" wrapping.
fn client_error_text(e: &MyError) -> String {
    match e {
        MyError::Io(mysql_async::IoError::Io(io)) => io.to_string(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The scheduler runs the controller inside `tokio::spawn`: its futures must be `Send`.
    #[allow(dead_code)]
    fn futures_are_send(ctl: &mut Controller, s: &Scenario, snap: &Snapshot, dsn: &ControllerDsn) {
        fn send<T: Send>(_: T) {}
        send(Controller::connect(dsn));
        send(ctl.apply(s));
        send(ctl.verify(s));
        send(ctl.restore(snap));
        send(ctl.apply_plan("x", &Plan::default(), None, None));
        send(ctl.run_plan("x", &Plan::default(), None, None));
        send(ctl.ensure_snapshot(Path::new("x")));
    }

    #[test]
    fn login_errors_are_classified() {
        let server = |code| {
            MyError::Server(mysql_async::ServerError {
                code,
                message: "Access denied for user 'u'@'h' (using password: YES)".into(),
                state: "28000".into(),
            })
        };
        let e = login_error(server(1045), "u@h:1", "PSPROBE_CONTROLLER_DSN");
        assert!(matches!(e, ControllerError::AccessDenied { .. }), "{e}");
        let e = login_error(server(1129), "u@h:1", "env");
        assert!(matches!(e, ControllerError::Sql { code: 1129, .. }), "{e}");
        // MySQL shutting down answers a login with 1053: the server is going away, as refused.
        let e = login_error(server(1053), "u@h:1", "env");
        assert!(matches!(e, ControllerError::Unreachable { .. }), "{e}");
        let io = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        let e = login_error(MyError::Io(io.into()), "u@h:1", "env").to_string();
        assert!(
            e.starts_with("cannot connect to u@h:1: connection refused"),
            "{e}"
        );
    }

    #[test]
    fn a_server_going_away_is_a_lost_connection_not_a_failed_statement() {
        let answer = |code: u16| {
            let e = MyError::Server(mysql_async::ServerError {
                code,
                message: "said".into(),
                state: "HY000".into(),
            });
            statement_error(e, "u@db:3306", "'u'@'%'", "apply a scenario")
        };
        for code in [
            code::SERVER_SHUTDOWN,
            code::CONNECTION_KILLED,
            code::SESSION_WAS_KILLED,
        ] {
            let e = answer(code);
            assert!(
                matches!(&e, ControllerError::Connection { reason, .. } if reason.contains(&code.to_string())),
                "{code}: {e:?}"
            );
        }
        // A KILL QUERY leaves the connection: the statement failed, not the server.
        assert!(
            matches!(answer(1317), ControllerError::Sql { code: 1317, .. }),
            "{:?}",
            answer(1317)
        );
        assert!(matches!(
            answer(1142),
            ControllerError::NoPrivilege { code: 1142, .. }
        ));
    }
}
