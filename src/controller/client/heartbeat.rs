//! The leader's heartbeat, in server time: proof that the psprobe holding the controller lock
//! is alive and reaches the server. The lock alone cannot tell: a leader that is stopped
//! (SIGSTOP, a frozen VM) or cut off from the server keeps its connections open on the server
//! for as long as TCP lets it, and with them the lock, while nothing measures and nothing
//! restores.
//!
//! The leader beats every [`BEAT`] on a connection of its own, writing the ids of its
//! connections and `NOW(6)`; the write only happens while one of those connections holds the
//! lock, so a leader that lost it cannot beat for its successor. A follower that finds the
//! holder's beat older than [`STALE_AFTER`] ends the holder's connections (`KILL`, which the
//! same account may do), takes the lock and resolves the snapshot, as after a crash. The
//! leader itself stops changing anything once it could not beat for [`FENCE_AFTER`] unless its
//! lock connection still answers as the holder: it may already have been taken over.
//!
//! Must not: decide anything about the schedule; it only reports whether the lead still holds.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mysql_async::prelude::Queryable;
use mysql_async::Conn;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::dsn::ControllerDsn;
use super::LOCK_NAME;

/// How often the leader beats.
pub(crate) const BEAT: Duration = Duration::from_millis(500);
/// A beat this old (server time) while the lock is held: the leader is taken for gone.
pub(crate) const STALE_AFTER: Duration = Duration::from_secs(3);
/// A leader that could not beat for this long checks it still holds the lock before any
/// change (well under [`STALE_AFTER`], so it stops before a follower may take over).
pub(crate) const FENCE_AFTER: Duration = Duration::from_secs(2);
/// One beat (connect or write) that takes longer than this failed.
const BEAT_TIMEOUT: Duration = Duration::from_secs(1);

/// `CREATE TABLE` of the heartbeat with `$options` after the columns: the MEMORY table and its
/// InnoDB fallback are one definition, so their columns cannot drift apart.
macro_rules! create_heartbeat_table {
    ($options:literal) => {
        concat!(
            "CREATE TABLE IF NOT EXISTS psprobe.heartbeat (id TINYINT PRIMARY KEY, \
             leader VARCHAR(255) NOT NULL, conns VARCHAR(255) NOT NULL, \
             beat DATETIME(6) NOT NULL) ",
            $options
        )
    };
}

/// The statement that creates the table (with the other `psprobe` tables). A beat is proof of
/// life, not data: in a MEMORY table it commits without the redo log. An InnoDB beat waits for
/// the log's flush like every commit, and on a busy server that took 1-2 s (MySQL 9.7 on 2
/// CPUs: every committer asleep behind one `fdatasync`, the stats thread's), long enough for a
/// live leader to miss its fence. The row is lost with a server restart, when the leader
/// writes it again at once.
pub(crate) const CREATE_TABLE: &str = create_heartbeat_table!("ENGINE=MEMORY");

/// The same table where the MEMORY engine is disabled (`disabled_storage_engines`, as Group
/// Replication setups do): InnoDB, without persistent statistics, so that the stats thread
/// does not commit recalculated statistics of it after every few beats.
pub(crate) const CREATE_TABLE_INNODB: &str =
    create_heartbeat_table!("ENGINE=InnoDB STATS_PERSISTENT=0");

/// The heartbeat table's engine and create options, as the server has them (a table made by an
/// older psprobe is InnoDB with persistent statistics, and stays so: psprobe's account may not
/// alter it).
pub(crate) const ENGINE_QUERY: &str =
    "SELECT ENGINE, CREATE_OPTIONS FROM information_schema.TABLES \
    WHERE TABLE_SCHEMA = 'psprobe' AND TABLE_NAME = 'heartbeat'";

/// The connection ids as the heartbeat row holds them.
fn id_list(conns: &[u32]) -> String {
    let ids: Vec<String> = conns.iter().map(u32::to_string).collect();
    ids.join(",")
}

/// The beat (parameters: leader, conns): written only while one of `conns` holds the lock.
fn beat_sql(conns: &[u32]) -> String {
    let ids = id_list(conns);
    let ids = if ids.is_empty() {
        "NULL".to_string()
    } else {
        ids
    };
    format!(
        "REPLACE INTO psprobe.heartbeat (id, leader, conns, beat) SELECT 1, ?, ?, NOW(6) \
         FROM DUAL WHERE IS_USED_LOCK('{LOCK_NAME}') IN ({ids})"
    )
}

/// What a follower reads of the holder: its name, its connections and the beat's age.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Holder {
    /// The connection holding the lock.
    pub connection: u64,
    /// The holder's beat, if the heartbeat row is the holder's (older psprobes do not beat).
    pub beat: Option<Beat>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Beat {
    pub leader: String,
    pub conns: Vec<u64>,
    pub age: Duration,
}

impl Holder {
    /// Parses `IS_USED_LOCK`, and the heartbeat row's leader, conns and age in microseconds.
    pub(crate) fn from_columns(
        connection: Option<u64>,
        leader: Option<String>,
        conns: Option<String>,
        age_us: Option<i64>,
    ) -> Option<Holder> {
        let connection = connection?;
        let conns: Vec<u64> = conns
            .as_deref()
            .unwrap_or("")
            .split(',')
            .filter_map(|c| c.trim().parse().ok())
            .collect();
        let beat = match (leader, age_us) {
            (Some(leader), Some(age)) if conns.contains(&connection) => Some(Beat {
                leader,
                conns,
                age: Duration::from_micros(u64::try_from(age).unwrap_or(0)),
            }),
            _ => None,
        };
        Some(Holder { connection, beat })
    }

    /// The holder's beat when it is older than `stale_after` (the holder is taken for gone).
    pub(crate) fn stalled(&self, stale_after: Duration) -> Option<&Beat> {
        self.beat.as_ref().filter(|b| b.age >= stale_after)
    }
}

/// Who holds the lock and the age of the heartbeat row (columns of a `SELECT`, one round
/// trip): holder, leader, conns, age in microseconds.
pub(crate) const HOLDER_COLUMNS: &str = "IS_USED_LOCK('psprobe_controller'), \
    (SELECT leader FROM psprobe.heartbeat WHERE id = 1), \
    (SELECT conns FROM psprobe.heartbeat WHERE id = 1), \
    (SELECT TIMESTAMPDIFF(MICROSECOND, beat, NOW(6)) FROM psprobe.heartbeat WHERE id = 1)";

/// The running heartbeat of a leader; stops when dropped.
pub(crate) struct Heartbeat {
    task: JoinHandle<()>,
    conns: watch::Sender<Vec<u32>>,
    /// Milliseconds from `base` to the last beat that was written.
    last_ok_ms: Arc<AtomicU64>,
    base: Instant,
    /// The leader restarts the server on purpose now: failed beats are expected.
    planned: Arc<AtomicBool>,
}

impl Heartbeat {
    /// Starts beating for `leader`, whose connections are `conns` (the lock holder among them).
    /// The first beat is written before this returns, when the server answers.
    pub(crate) async fn start(dsn: &ControllerDsn, leader: &str, conns: Vec<u32>) -> Heartbeat {
        let base = Instant::now();
        let last_ok_ms = Arc::new(AtomicU64::new(u64::MAX));
        let (tx, rx) = watch::channel(conns);
        let planned = Arc::new(AtomicBool::new(false));
        let mut beater = Beater {
            dsn: dsn.clone(),
            leader: leader.to_string(),
            conns: rx,
            conn: None,
            base,
            last_ok_ms: Arc::clone(&last_ok_ms),
            warned_at: None,
            planned: Arc::clone(&planned),
        };
        beater.beat().await;
        let task = tokio::spawn(async move { beater.run().await });
        Heartbeat {
            task,
            conns: tx,
            last_ok_ms,
            base,
            planned,
        }
    }

    /// The leader is restarting the server on purpose (true), or has it back (false): beats
    /// that fail meanwhile are logged at debug, not warned about.
    pub(crate) fn planned_absence(&self, planned: bool) {
        self.planned.store(planned, Ordering::Relaxed);
    }

    /// The leader's connections changed (a restart): beats now name these.
    pub(crate) fn set_conns(&self, conns: Vec<u32>) {
        let _ = self.conns.send(conns);
    }

    /// Whether a beat was written within [`FENCE_AFTER`].
    pub(crate) fn fresh(&self) -> bool {
        match self.last_ok_ms.load(Ordering::Relaxed) {
            u64::MAX => false,
            ms => self.base.elapsed() < Duration::from_millis(ms) + FENCE_AFTER,
        }
    }
}

impl Heartbeat {
    /// Resolves once a statement has waited [`FENCE_AFTER`] and no beat was written for as
    /// long: it is abandoned (the server may have been taken over meanwhile). Beats that were
    /// already missing when it started (just after a restart) do not count against it.
    pub(crate) async fn lost(&self) {
        let start = Instant::now();
        loop {
            tokio::time::sleep(BEAT / 5).await;
            if start.elapsed() >= FENCE_AFTER && !self.fresh() {
                return;
            }
        }
    }
}

impl Drop for Heartbeat {
    fn drop(&mut self) {
        self.task.abort();
    }
}

struct Beater {
    dsn: ControllerDsn,
    leader: String,
    conns: watch::Receiver<Vec<u32>>,
    conn: Option<Conn>,
    base: Instant,
    last_ok_ms: Arc<AtomicU64>,
    warned_at: Option<Instant>,
    planned: Arc<AtomicBool>,
}

impl Beater {
    async fn run(&mut self) {
        let mut tick = tokio::time::interval(BEAT);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        tick.tick().await;
        loop {
            tokio::select! {
                _ = tick.tick() => {}
                changed = self.conns.changed() => {
                    if changed.is_err() {
                        return;
                    }
                }
            }
            self.beat().await;
        }
    }

    /// One beat; a failed one drops the connection (a new one is made for the next).
    async fn beat(&mut self) {
        let (sql, ids) = {
            let conns = self.conns.borrow_and_update();
            (beat_sql(&conns), id_list(&conns))
        };
        let reused = self.conn.is_some();
        let mut outcome = self.try_beat(&sql, &ids).await;
        if reused && matches!(outcome, Ok(Err(_))) {
            // A connection made before a server restart is dead at its first use after it:
            // one try on a new connection before that is news.
            self.conn = None;
            outcome = self.try_beat(&sql, &ids).await;
        }
        match outcome {
            Ok(Ok(written)) if written > 0 => {
                let ms = self.base.elapsed().as_millis() as u64;
                self.last_ok_ms.store(ms, Ordering::Relaxed);
            }
            Ok(Ok(_)) if self.conns.has_changed().unwrap_or(false) => {
                // A beat that began with the connections from before a restart: the lock is
                // held by the new ones, which the next beat (at once) names.
                tracing::debug!("heartbeat named the connections from before a restart; again");
            }
            Ok(Ok(_)) => {
                // The lock is not held by this leader's connections (any more): not a beat.
                self.warn("the leader lock is not held by this psprobe's connections; not beating");
            }
            Ok(Err(e)) => {
                self.conn = None;
                self.warn(&format!("heartbeat failed: {e}"));
            }
            Err(_) => {
                self.conn = None;
                self.warn(&format!("heartbeat: no answer within {BEAT_TIMEOUT:?}"));
            }
        }
    }
}

impl Beater {
    /// One beat on the connection kept (made first if there is none): rows written.
    async fn try_beat(
        &mut self,
        sql: &str,
        ids: &str,
    ) -> Result<Result<u64, mysql_async::Error>, tokio::time::error::Elapsed> {
        let leader = self.leader.clone();
        let slot = &mut self.conn;
        let dsn = &self.dsn;
        tokio::time::timeout(BEAT_TIMEOUT, async move {
            let conn = match slot {
                Some(conn) => conn,
                None => slot.insert(Conn::new(dsn.opts()).await?),
            };
            conn.exec_drop(sql, (leader, ids)).await?;
            Ok::<u64, mysql_async::Error>(conn.affected_rows())
        })
        .await
    }

    /// At most one line every 10 s: a leader that cannot beat would otherwise log twice a second.
    fn warn(&mut self, line: &str) {
        if self.planned.load(Ordering::Relaxed) {
            tracing::debug!("{line} (the leader is restarting the server)");
            return;
        }
        let now = Instant::now();
        if self
            .warned_at
            .is_none_or(|at| now.duration_since(at) >= Duration::from_secs(10))
        {
            self.warned_at = Some(now);
            tracing::warn!("{line} (followers take over after {STALE_AFTER:?} without a beat)");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_beat_counts_only_when_it_is_the_holders() {
        let row = |conns: &str, age: i64| {
            Holder::from_columns(Some(12), Some("a".into()), Some(conns.into()), Some(age))
        };
        let held = row("11,12,13", 3_500_000).unwrap();
        assert_eq!(
            held.stalled(STALE_AFTER).map(|b| b.conns.clone()),
            Some(vec![11, 12, 13])
        );
        assert!(row("11,12,13", 2_900_000)
            .unwrap()
            .stalled(STALE_AFTER)
            .is_none());
        // Someone else's row (a leader that just took over and has not beaten yet).
        assert!(row("7,8", 9_000_000)
            .unwrap()
            .stalled(STALE_AFTER)
            .is_none());
        // No row at all (an older psprobe leads), and no lock at all.
        let none = Holder::from_columns(Some(12), None, None, None).unwrap();
        assert_eq!(none.beat, None);
        assert_eq!(Holder::from_columns(None, None, None, None), None);
        // A clock step backwards on the server: never stale.
        assert!(row("12", -5_000_000)
            .unwrap()
            .stalled(STALE_AFTER)
            .is_none());
    }

    #[test]
    fn the_table_and_its_fallback_differ_only_in_engine() {
        let columns = |sql: &str| sql[..sql.rfind(')').unwrap()].to_string();
        assert_eq!(columns(CREATE_TABLE), columns(CREATE_TABLE_INNODB));
        assert!(CREATE_TABLE.ends_with(") ENGINE=MEMORY"), "{CREATE_TABLE}");
        assert!(
            CREATE_TABLE_INNODB.ends_with(") ENGINE=InnoDB STATS_PERSISTENT=0"),
            "{CREATE_TABLE_INNODB}"
        );
    }

    #[test]
    fn the_beat_is_conditional_on_the_lock() {
        let sql = beat_sql(&[4, 5]);
        assert!(
            sql.contains("IS_USED_LOCK('psprobe_controller') IN (4,5)"),
            "{sql}"
        );
        assert!(beat_sql(&[]).ends_with("IN (NULL)"));
    }
}
