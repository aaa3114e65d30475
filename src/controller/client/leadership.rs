//! One leader per server: the controller that holds `GET_LOCK('psprobe_controller', 0)` on its
//! connection switches scenarios and publishes the current phase in `psprobe.phase`; every
//! other psprobe reads that row to label its commands with the same phase, and tries the lock
//! again so it takes over when the leader's connection dies (the server releases the lock).

use std::time::Duration;

use mysql_async::prelude::Queryable;
use mysql_async::{Conn, Row};

use super::dsn::ControllerDsn;
use super::heartbeat::{self, Holder, HOLDER_COLUMNS};
use super::server::code;
use super::statement::{Failure, StatementGuard, STATEMENT_TIMEOUT};
use crate::controller::error::{ControllerError, Result};
use crate::controller::model::phase_row::{PhaseRow, SwitchIntent};
use crate::controller::model::snapshot::Snapshot;

use super::LOCK_NAME;

/// Where a leader records a switch before its statements (crash consistency, see
/// [`SwitchIntent`]).
const INTENT_TABLE: &str = "CREATE TABLE IF NOT EXISTS psprobe.switch_intent (\
    id TINYINT PRIMARY KEY, leader VARCHAR(255) NOT NULL, from_scenario VARCHAR(64) NOT NULL, \
    to_scenario VARCHAR(64) NOT NULL, phase BIGINT NOT NULL) ENGINE=InnoDB STATS_PERSISTENT=0";

/// `REPLACE INTO target VALUES (values)`, or with `only_if`, `... SELECT values FROM DUAL WHERE
/// only_if`.
fn guarded_replace(target: &str, values: &str, only_if: Option<&str>) -> String {
    match only_if {
        None => format!("REPLACE INTO {target} VALUES ({values})"),
        Some(condition) => {
            format!("REPLACE INTO {target} SELECT {values} FROM DUAL WHERE {condition}")
        }
    }
}
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

pub(crate) struct Leadership {
    conn: Conn,
    target: String,
    pub leader: bool,
    guard: StatementGuard,
}

/// Who holds the leader lock, as the server says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum LockHolder {
    /// One of this psprobe's connections.
    Me,
    /// Another psprobe, as its heartbeat names it (or its connection, if it does not beat).
    Other {
        leader: String,
    },
    Nobody,
}

/// What one poll of the lock found.
#[derive(Debug)]
pub(crate) enum LockPoll {
    /// This connection holds the lock now.
    Acquired,
    /// Another connection holds it (`None`: it was released between the two reads).
    Held(Option<Holder>),
}

fn sql_error(target: &str, what: &str, e: mysql_async::Error) -> ControllerError {
    match e {
        mysql_async::Error::Server(s) if code::is_missing_privilege(s.code) => {
            // `target` is `user@host:port`; the account's host part is not known here.
            let user = target.rsplit_once('@').map_or(target, |(user, _)| user);
            ControllerError::NoPrivilege {
                target: target.to_string(),
                account: format!("'{user}'@'%'"),
                action: what.to_string(),
                code: s.code,
                message: s.message,
            }
        }
        mysql_async::Error::Server(s) if code::ends_the_connection(s.code) => {
            ControllerError::Connection {
                target: target.to_string(),
                action: what.to_string(),
                reason: format!("MySQL error {}: {}", s.code, s.message),
            }
        }
        mysql_async::Error::Server(s) => ControllerError::Sql {
            target: target.to_string(),
            action: what.to_string(),
            code: s.code,
            message: s.message,
        },
        other => ControllerError::Connection {
            target: target.to_string(),
            action: what.to_string(),
            reason: other.to_string(),
        },
    }
}

/// MariaDB/MySQL ER_NO_SUCH_THREAD: the connection to kill is already gone.
const UNKNOWN_THREAD: u16 = 1094;

impl Leadership {
    pub(crate) async fn connect(dsn: &ControllerDsn) -> Result<Self> {
        let target = dsn.redacted();
        let conn = match tokio::time::timeout(CONNECT_TIMEOUT, Conn::new(dsn.opts())).await {
            Ok(Ok(conn)) => conn,
            Ok(Err(e)) => return Err(sql_error(&target, "connect for leadership", e)),
            Err(_) => {
                return Err(ControllerError::Unreachable {
                    target,
                    reason: format!("no answer within {CONNECT_TIMEOUT:?}"),
                })
            }
        };
        let mut me = Leadership {
            conn,
            target,
            leader: false,
            guard: StatementGuard::default(),
        };
        me.ensure_table().await?;
        Ok(me)
    }

    async fn ensure_table(&mut self) -> Result<()> {
        for sql in [
            "CREATE DATABASE IF NOT EXISTS psprobe",
            "CREATE TABLE IF NOT EXISTS psprobe.phase (\
               id TINYINT PRIMARY KEY, scenario VARCHAR(64) NOT NULL, block BIGINT NOT NULL, \
               phase BIGINT NOT NULL, state VARCHAR(16) NOT NULL, leader VARCHAR(255) NOT NULL, \
               updated_at TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3) \
               ON UPDATE CURRENT_TIMESTAMP(3)) ENGINE=InnoDB STATS_PERSISTENT=0",
            "CREATE TABLE IF NOT EXISTS psprobe.snapshot (\
               id TINYINT PRIMARY KEY, body LONGTEXT NOT NULL) ENGINE=InnoDB STATS_PERSISTENT=0",
            INTENT_TABLE,
        ] {
            let done = self.guard.run(self.conn.query_drop(sql)).await;
            self.answer(done, "create the psprobe tables")?;
        }
        self.ensure_heartbeat_table().await
    }

    /// The heartbeat's table: MEMORY, or InnoDB where that engine is disabled (the server's
    /// error answer leaves the connection usable). One made by an older psprobe is kept.
    async fn ensure_heartbeat_table(&mut self) -> Result<()> {
        let what = "create the psprobe tables";
        let memory = self
            .guard
            .run(self.conn.query_drop(heartbeat::CREATE_TABLE))
            .await;
        if let Err(Failure::Sql(mysql_async::Error::Server(e))) = &memory {
            tracing::debug!(
                "the MEMORY engine is refused ({}: {}); the heartbeat table is InnoDB",
                e.code,
                e.message
            );
            let done = self
                .guard
                .run(self.conn.query_drop(heartbeat::CREATE_TABLE_INNODB))
                .await;
            return self.answer(done, what);
        }
        self.answer(memory, what)?;
        let done = self
            .guard
            .run(self.conn.query_first::<Row, _>(heartbeat::ENGINE_QUERY))
            .await;
        let row = self.answer(done, "read the heartbeat table's engine")?;
        let table =
            row.and_then(|r| mysql_async::from_row_opt::<(Option<String>, Option<String>)>(r).ok());
        if let Some((Some(engine), options)) = table {
            // The fallback's own InnoDB table (MEMORY refused at an earlier start) has no
            // persistent statistics; an older psprobe's has them.
            let older = engine.eq_ignore_ascii_case("InnoDB")
                && !options
                    .unwrap_or_default()
                    .to_ascii_lowercase()
                    .contains("stats_persistent=0");
            // Said once a process: the table is checked at every (re)connect of the lead.
            static SAID: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
            if older && !SAID.swap(true, std::sync::atomic::Ordering::Relaxed) {
                tracing::info!(
                    "psprobe.heartbeat is an InnoDB table (made by an older psprobe): its beats \
                     wait for the redo log's flush, which can make a busy leader look stalled; \
                     with no psprobe running, DROP TABLE psprobe.heartbeat and the next start \
                     makes it a MEMORY table"
                );
            }
        }
        Ok(())
    }

    /// The server's id of this connection (what `IS_USED_LOCK` names when it holds the lock).
    pub(crate) fn connection_id(&self) -> u32 {
        self.conn.id()
    }

    /// A guarded statement's outcome as the user reads it.
    fn answer<T>(&self, done: std::result::Result<T, Failure>, what: &str) -> Result<T> {
        let target = &self.target;
        done.map_err(|f| f.into_error(target, what, |e| sql_error(target, what, e)))
    }

    /// Polls the lock in one round trip: takes it if free, or reads who holds it and how
    /// old that holder's heartbeat is.
    pub(crate) async fn poll_lock(&mut self) -> Result<LockPoll> {
        if self.leader {
            return Ok(LockPoll::Acquired);
        }
        let what = "take the leader lock";
        let sql = format!("SELECT GET_LOCK('{LOCK_NAME}', 0), {HOLDER_COLUMNS}");
        let done = self.guard.run(self.conn.query_first(sql)).await;
        let row: Option<Row> = self.answer(done, what)?;
        type Columns = (
            Option<i64>,
            Option<u64>,
            Option<String>,
            Option<String>,
            Option<i64>,
        );
        let columns = row.and_then(|r| mysql_async::from_row_opt::<Columns>(r).ok());
        let Some((got, holder, leader, conns, age)) = columns else {
            return Ok(LockPoll::Held(None));
        };
        if got == Some(1) {
            self.leader = true;
            return Ok(LockPoll::Acquired);
        }
        Ok(LockPoll::Held(Holder::from_columns(
            holder, leader, conns, age,
        )))
    }

    /// Who holds the lock: `mine` are this psprobe's connection ids (the lock's and any it
    /// held the lock on before, which the server may still keep open).
    pub(crate) async fn holder(&mut self, mine: &[u32]) -> Result<LockHolder> {
        let what = "find the leader";
        let sql = format!("SELECT {HOLDER_COLUMNS}");
        let done = self.guard.run(self.conn.query_first(sql)).await;
        let row: Option<Row> = self.answer(done, what)?;
        type Columns = (Option<u64>, Option<String>, Option<String>, Option<i64>);
        let columns = row.and_then(|r| mysql_async::from_row_opt::<Columns>(r).ok());
        let Some((holder, leader, conns, age)) = columns else {
            return Ok(LockHolder::Nobody);
        };
        let Some(holder) = Holder::from_columns(holder, leader, conns, age) else {
            return Ok(LockHolder::Nobody);
        };
        if mine.iter().any(|&id| u64::from(id) == holder.connection) {
            return Ok(LockHolder::Me);
        }
        Ok(LockHolder::Other {
            leader: holder.beat.map_or_else(
                || format!("the psprobe on connection {}", holder.connection),
                |b| b.leader,
            ),
        })
    }

    /// Whether this connection holds the lock (asked of the server, not remembered).
    pub(crate) async fn holds_lock(&mut self) -> Result<bool> {
        let what = "check the leader lock";
        let sql = format!("SELECT IS_USED_LOCK('{LOCK_NAME}') = CONNECTION_ID()");
        let done = self.guard.run(self.conn.query_first(sql)).await;
        let held: Option<Option<i64>> = self.answer(done, what)?;
        Ok(held.flatten() == Some(1))
    }

    /// Ends a stalled leader's connections (`KILL CONNECTION`; the same account may). An id
    /// already gone is no error.
    pub(crate) async fn kill(&mut self, connections: &[u64]) -> Result<()> {
        let what = "end the stalled leader's connections";
        for id in connections {
            let sql = format!("KILL CONNECTION {id}");
            match self.guard.run(self.conn.query_drop(sql)).await {
                Err(Failure::Sql(mysql_async::Error::Server(e))) if e.code == UNKNOWN_THREAD => {}
                done => self.answer(done, what)?,
            }
        }
        Ok(())
    }

    /// Tries to become the leader (never waits). True when this connection holds the lock.
    pub(crate) async fn try_acquire(&mut self) -> Result<bool> {
        if self.leader {
            return Ok(true);
        }
        let what = "take the leader lock";
        let sql = format!("SELECT GET_LOCK('{LOCK_NAME}', 0)");
        let done = self.guard.run(self.conn.query_first(sql)).await;
        let got: Option<Option<i64>> = self.answer(done, what)?;
        self.leader = got.flatten() == Some(1);
        Ok(self.leader)
    }

    /// The statement that publishes `row`, for a batch sent on another connection (the
    /// controller's, in the NO_BACKSLASH_ESCAPES session the quoting assumes); with `only_if`,
    /// written only where that SQL condition holds (a batch that goes on only if the rows it
    /// started from held).
    pub(crate) fn publish_sql(row: &PhaseRow, only_if: Option<&str>) -> String {
        use crate::controller::model::pattern::quote;
        guarded_replace(
            "psprobe.phase (id, scenario, block, phase, state, leader)",
            &format!(
                "1, {}, {}, {}, {}, {}",
                quote(&row.scenario),
                row.block,
                row.phase,
                quote(&row.state),
                quote(&row.leader_column())
            ),
            only_if,
        )
    }

    /// The statement that records a switch before its statements (see [`SwitchIntent`]), for
    /// the same batch; `only_if` as in [`Leadership::publish_sql`].
    pub(crate) fn intent_sql(intent: &SwitchIntent, only_if: Option<&str>) -> String {
        use crate::controller::model::pattern::quote;
        guarded_replace(
            "psprobe.switch_intent (id, leader, from_scenario, to_scenario, phase)",
            &format!(
                "1, {}, {}, {}, {}",
                quote(&intent.leader),
                quote(&intent.from),
                quote(&intent.to),
                intent.phase
            ),
            only_if,
        )
    }

    pub(crate) async fn publish(&mut self, row: &PhaseRow) -> Result<()> {
        let what = "publish the phase";
        let sent = self.conn.exec_drop(
            "REPLACE INTO psprobe.phase (id, scenario, block, phase, state, leader) \
             VALUES (1, ?, ?, ?, ?, ?)",
            (
                &row.scenario,
                row.block,
                row.phase,
                &row.state,
                row.leader_column(),
            ),
        );
        let done = self.guard.run(sent).await;
        self.answer(done, what)
    }

    pub(crate) async fn read(&mut self) -> Result<Option<PhaseRow>> {
        let what = "read the phase";
        let sql = "SELECT scenario, block, phase, state, leader FROM psprobe.phase WHERE id = 1";
        let done = self.guard.run(self.conn.query_first(sql)).await;
        let row: Option<Row> = self.answer(done, what)?;
        Ok(row.and_then(|r| {
            mysql_async::from_row_opt::<(String, u64, u64, String, String)>(r)
                .ok()
                .map(PhaseRow::from_columns)
        }))
    }

    /// Keeps the leader's snapshot on the server, so a leader taking over after a crash
    /// restores the original settings rather than snapshotting a scenario.
    pub(crate) async fn save_snapshot(&mut self, snapshot: &Snapshot) -> Result<()> {
        let json = serde_json::to_string(snapshot).map_err(|e| ControllerError::Connection {
            target: self.target.clone(),
            action: "encode the snapshot".into(),
            reason: e.to_string(),
        })?;
        let what = "save the snapshot on the server";
        let sent = self.conn.exec_drop(
            "REPLACE INTO psprobe.snapshot (id, body) VALUES (1, ?)",
            (json,),
        );
        let done = self.guard.run(sent).await;
        self.answer(done, what)
    }

    pub(crate) async fn clear_snapshot(&mut self) -> Result<()> {
        let what = "clear the snapshot on the server";
        let sent = self
            .conn
            .query_drop("DELETE FROM psprobe.snapshot WHERE id = 1");
        let done = self.guard.run(sent).await;
        self.answer(done, what)
    }

    /// The session's round trip to the server (one cheap query).
    pub(crate) async fn ping(&mut self) -> Result<Duration> {
        let t = std::time::Instant::now();
        let done = self.guard.run(self.conn.ping()).await;
        self.answer(done, "ping")?;
        Ok(t.elapsed())
    }

    pub(crate) async fn release(mut self) {
        if self.guard.is_broken() {
            // The server ends the session (and frees the lock) when the socket closes.
            return;
        }
        let released = async {
            if self.leader {
                let _ = self
                    .conn
                    .query_drop(format!("DO RELEASE_LOCK('{LOCK_NAME}')"))
                    .await;
            }
            let _ = self.conn.disconnect().await;
        };
        let _ = tokio::time::timeout(STATEMENT_TIMEOUT, released).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timing_rides_in_the_leader_column() {
        let row = PhaseRow {
            scenario: "a".into(),
            leader: "host:12".into(),
            schedule: "fast".into(),
            settle_ms: 100,
            measure_ms: 880,
            ..PhaseRow::default()
        };
        let mut back = PhaseRow::default();
        back.parse_leader_column(&row.leader_column());
        assert_eq!(
            (
                back.leader.as_str(),
                back.schedule.as_str(),
                back.settle_ms,
                back.measure_ms
            ),
            ("host:12", "fast", 100, 880)
        );
        let mut old = PhaseRow::default();
        old.parse_leader_column("host:12");
        assert_eq!(
            (old.leader.as_str(), old.schedule.as_str()),
            ("host:12", "")
        );
        let mut odd = PhaseRow::default();
        odd.parse_leader_column("a b c d");
        assert_eq!(odd.leader, "a b c d");
    }
}
