//! The SQL engine behind the admin interface: an in-memory SQLite database per admin
//! connection, with psprobe's tables in a schema named `psprobe`.
//!
//! A query runs in four steps, all on the calling (blocking) thread:
//! 1. prepare it with an authorizer that allows reading only (SELECT, reads of any table,
//!    functions but `load_extension`, read-only pragmas) and notes which psprobe tables it reads;
//! 2. take one [`AdminData::snapshot`] of those tables and load it (so a query sees one
//!    consistent state, and a query that reads `status` does not copy the digest tables);
//! 3. step it under a deadline (a progress handler interrupts it, and paces a long query to a
//!    quarter of a core: [`super::pacing`]) and row / byte limits;
//! 4. empty the tables again, so an idle connection holds no copy of the data.
//!
//! Writes, ATTACH, DETACH, transactions and pragma writes are refused at prepare time with an
//! error naming what was refused; `sqlite3_limit`s bound statement length, expression depth,
//! LIKE patterns and the like; a process-wide heap limit bounds SQLite's memory.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, MutexGuard, Once};
use std::time::Instant;

use rusqlite::functions::FunctionFlags;
use rusqlite::hooks::{AuthAction, AuthContext, Authorization};
use rusqlite::limits::Limit;
use rusqlite::types::{Value as SqlValue, ValueRef};
use rusqlite::{Connection, ErrorCode};

use super::error::AdminError;
use super::limits::Limits;
use super::pacing::{Running, Verdict};
use super::session::SessionInfo;
use super::tables::{AdminData, ColumnKind, Table, Value, FLOAT_DECIMALS};
use super::variables;

/// The schema psprobe's tables live in (`SELECT * FROM psprobe.digests` works, as does the
/// unqualified name).
pub(crate) const SCHEMA: &str = "psprobe";

/// SQLite's memory, all admin connections together.
const HEAP_LIMIT_BYTES: i64 = 512 << 20;
/// Virtual-machine steps between two checks of the deadline.
const PROGRESS_STEPS: i32 = 10_000;

/// Pragmas that only read, with or without an argument.
const READ_ONLY_PRAGMAS: &[&str] = &[
    "collation_list",
    "compile_options",
    "database_list",
    "function_list",
    "index_info",
    "index_list",
    "index_xinfo",
    "module_list",
    "pragma_list",
    "table_info",
    "table_list",
    "table_xinfo",
];

/// How a result column is typed towards the client, and so rendered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ResultKind {
    /// BIGINT.
    Int,
    /// DOUBLE; `fixed` (a psprobe REAL column): with [`FLOAT_DECIMALS`] decimals, else the
    /// shortest text that reads back the same number.
    Float { fixed: bool },
    /// VARCHAR.
    Text,
    /// BLOB.
    Blob,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ResultColumn {
    pub name: String,
    pub kind: ResultKind,
}

/// A result set, values already rendered as the text protocol sends them (`None`: NULL).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ResultSet {
    pub columns: Vec<ResultColumn>,
    pub rows: Vec<Vec<Option<Vec<u8>>>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// psprobe itself: creating and filling tables.
    Setup,
    /// A client's statement: read only.
    Client,
}

#[derive(Debug)]
struct AuthState {
    mode: Mode,
    reads: BTreeSet<Table>,
    /// What the authorizer refused first, for the error message.
    refused: Option<String>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn refusal(action: &AuthAction<'_>) -> String {
    use AuthAction::*;
    // SQLite's own bookkeeping comes first (DROP TABLE deletes from sqlite_master before
    // it asks about the table): name the schema change it stands for.
    match action {
        Insert { table_name } if table_name.starts_with("sqlite_") => return "CREATE".into(),
        Delete { table_name } if table_name.starts_with("sqlite_") => return "DROP".into(),
        Update { table_name, .. } if table_name.starts_with("sqlite_") => return "ALTER".into(),
        _ => {}
    }
    match action {
        Insert { table_name } => format!("INSERT into {table_name}"),
        Update { table_name, .. } => format!("UPDATE of {table_name}"),
        Delete { table_name } => format!("DELETE from {table_name}"),
        CreateTable { .. } | CreateTempTable { .. } => "CREATE TABLE".into(),
        CreateIndex { .. } | CreateTempIndex { .. } => "CREATE INDEX".into(),
        CreateView { .. } | CreateTempView { .. } => "CREATE VIEW".into(),
        CreateTrigger { .. } | CreateTempTrigger { .. } => "CREATE TRIGGER".into(),
        CreateVtable { .. } => "CREATE VIRTUAL TABLE".into(),
        DropTable { .. } | DropTempTable { .. } => "DROP TABLE".into(),
        DropIndex { .. } | DropTempIndex { .. } => "DROP INDEX".into(),
        DropView { .. } | DropTempView { .. } => "DROP VIEW".into(),
        DropTrigger { .. } | DropTempTrigger { .. } => "DROP TRIGGER".into(),
        DropVtable { .. } => "DROP VIRTUAL TABLE".into(),
        AlterTable { .. } => "ALTER TABLE".into(),
        Attach { .. } => "ATTACH".into(),
        Detach { .. } => "DETACH".into(),
        Pragma {
            pragma_name,
            pragma_value,
        } => match pragma_value {
            Some(v) => format!("PRAGMA {pragma_name} = {v}"),
            None => format!("PRAGMA {pragma_name}"),
        },
        Function { function_name } => format!("the function {function_name}()"),
        Transaction { .. } | Savepoint { .. } => "a transaction statement".into(),
        Reindex { .. } => "REINDEX".into(),
        Analyze { .. } => "ANALYZE".into(),
        other => format!("{other:?}"),
    }
}

fn authorize(state: &Mutex<AuthState>, ctx: AuthContext<'_>) -> Authorization {
    let mut state = lock(state);
    if state.mode == Mode::Setup {
        return Authorization::Allow;
    }
    let allowed = match &ctx.action {
        AuthAction::Select | AuthAction::Recursive => true,
        AuthAction::Read { table_name, .. } => {
            // `SELECT count(*) FROM t` reads no column: SQLite then names the table with an
            // empty column and no database.
            if matches!(ctx.database_name, None | Some(SCHEMA)) {
                if let Some(table) = Table::from_name(table_name) {
                    state.reads.insert(table);
                }
            }
            true
        }
        AuthAction::Function { function_name } => {
            !function_name.eq_ignore_ascii_case("load_extension")
        }
        AuthAction::Pragma { pragma_name, .. } => READ_ONLY_PRAGMAS
            .iter()
            .any(|p| p.eq_ignore_ascii_case(pragma_name)),
        _ => false,
    };
    if allowed {
        Authorization::Allow
    } else {
        if state.refused.is_none() {
            state.refused = Some(refusal(&ctx.action));
        }
        Authorization::Deny
    }
}

fn sql_type(kind: ColumnKind) -> &'static str {
    match kind {
        ColumnKind::Int => "INTEGER",
        ColumnKind::Float => "REAL",
        ColumnKind::Text => "TEXT COLLATE NOCASE",
        ColumnKind::Any => "ANY",
    }
}

/// `CREATE TABLE` of one of psprobe's tables.
pub(crate) fn create_table_sql(table: Table) -> String {
    let columns: Vec<String> = table
        .columns()
        .iter()
        .map(|c| format!("\"{}\" {}", c.name, sql_type(c.kind)))
        .collect();
    format!(
        "CREATE TABLE {SCHEMA}.\"{}\" ({}) STRICT",
        table.name(),
        columns.join(", ")
    )
}

fn insert_sql(table: Table) -> String {
    let params: Vec<String> = (1..=table.columns().len())
        .map(|i| format!("?{i}"))
        .collect();
    format!(
        "INSERT INTO {SCHEMA}.\"{}\" VALUES ({})",
        table.name(),
        params.join(", ")
    )
}

fn to_sql(value: &Value) -> SqlValue {
    match value {
        Value::Null => SqlValue::Null,
        Value::Int(v) => SqlValue::Integer(*v),
        Value::UInt(v) => SqlValue::Integer(i64::try_from(*v).unwrap_or(i64::MAX)),
        Value::Float(v) if v.is_finite() => SqlValue::Real(*v),
        Value::Float(_) => SqlValue::Null,
        Value::Text(s) => SqlValue::Text(s.clone()),
    }
}

fn set_heap_limit() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // SAFETY: sets a process-wide soft limit; callable at any time (SQLite docs).
        unsafe {
            rusqlite::ffi::sqlite3_hard_heap_limit64(HEAP_LIMIT_BYTES);
        }
    });
}

/// One admin connection's SQLite database.
pub(crate) struct Engine {
    conn: Connection,
    auth: Arc<Mutex<AuthState>>,
    /// The query being stepped, if any: its time limit and CPU pacing.
    running: Arc<Mutex<Option<Running>>>,
    limits: Limits,
}

impl Engine {
    pub(crate) fn new(limits: Limits, session: Arc<SessionInfo>) -> Result<Engine, AdminError> {
        set_heap_limit();
        let conn = Connection::open_in_memory().map_err(AdminError::internal)?;
        let auth = Arc::new(Mutex::new(AuthState {
            mode: Mode::Setup,
            reads: BTreeSet::new(),
            refused: None,
        }));
        let engine = Engine {
            conn,
            auth,
            running: Arc::default(),
            limits,
        };
        engine.setup(session).map_err(AdminError::internal)?;
        Ok(engine)
    }

    fn setup(&self, session: Arc<SessionInfo>) -> rusqlite::Result<()> {
        let conn = &self.conn;
        use rusqlite::config::DbConfig;
        conn.set_db_config(DbConfig::SQLITE_DBCONFIG_DEFENSIVE, true)?;
        conn.set_db_config(DbConfig::SQLITE_DBCONFIG_TRUSTED_SCHEMA, false)?;
        conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_TRIGGER, false)?;
        conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_VIEW, false)?;
        conn.execute_batch(&format!(
            "PRAGMA temp_store = MEMORY; ATTACH DATABASE ':memory:' AS {SCHEMA};"
        ))?;
        for table in Table::ALL {
            conn.execute_batch(&create_table_sql(table))?;
        }
        let query_bytes = i32::try_from(self.limits.max_query_bytes).unwrap_or(i32::MAX);
        for (limit, value) in [
            (Limit::SQLITE_LIMIT_SQL_LENGTH, query_bytes.max(64 << 10)),
            (Limit::SQLITE_LIMIT_LENGTH, 16 << 20),
            (Limit::SQLITE_LIMIT_COLUMN, 1000),
            (Limit::SQLITE_LIMIT_EXPR_DEPTH, 200),
            (Limit::SQLITE_LIMIT_COMPOUND_SELECT, 100),
            (Limit::SQLITE_LIMIT_VDBE_OP, 250_000),
            (Limit::SQLITE_LIMIT_FUNCTION_ARG, 100),
            (Limit::SQLITE_LIMIT_ATTACHED, 1),
            (Limit::SQLITE_LIMIT_LIKE_PATTERN_LENGTH, 1000),
            (Limit::SQLITE_LIMIT_VARIABLE_NUMBER, 100),
            (Limit::SQLITE_LIMIT_TRIGGER_DEPTH, 1),
            (Limit::SQLITE_LIMIT_WORKER_THREADS, 0),
        ] {
            conn.set_limit(limit, value)?;
        }
        register_functions(conn, session)?;
        let auth = Arc::clone(&self.auth);
        conn.authorizer(Some(move |ctx: AuthContext<'_>| authorize(&auth, ctx)));
        let running = Arc::clone(&self.running);
        conn.progress_handler(
            PROGRESS_STEPS,
            Some(move || {
                let verdict = lock(&running).map_or(Verdict::Go, |r| r.check(Instant::now()));
                match verdict {
                    Verdict::Interrupt => true,
                    Verdict::Pause(pause) => {
                        std::thread::sleep(pause);
                        if let Some(r) = lock(&running).as_mut() {
                            r.resume(Instant::now());
                        }
                        false
                    }
                    Verdict::Go => false,
                }
            }),
        );
        lock(&self.auth).mode = Mode::Client;
        Ok(())
    }

    /// Runs one client statement (SQLite's dialect) with `params` bound to `?1`, `?2`, ...
    #[cfg(test)]
    pub(crate) fn query(
        &mut self,
        sql: &str,
        params: &[String],
        data: &dyn AdminData,
    ) -> Result<ResultSet, AdminError> {
        self.query_within(sql, params, data, self.limits.max_result_bytes)
    }

    /// `Engine::query` with at most `max_result_bytes` of result (what the admin's shared
    /// result budget could give this query; never more than [`Limits::max_result_bytes`]).
    pub(crate) fn query_within(
        &mut self,
        sql: &str,
        params: &[String],
        data: &dyn AdminData,
        max_result_bytes: usize,
    ) -> Result<ResultSet, AdminError> {
        let max_result_bytes = max_result_bytes.min(self.limits.max_result_bytes);
        {
            let mut auth = lock(&self.auth);
            auth.mode = Mode::Client;
            auth.reads.clear();
            auth.refused = None;
        }
        let result = self.run(sql, params, data, max_result_bytes);
        // Empty what was loaded, whatever happened.
        let loaded: Vec<Table> = lock(&self.auth).reads.iter().copied().collect();
        *lock(&self.running) = None;
        lock(&self.auth).mode = Mode::Setup;
        for table in loaded {
            let _ = self
                .conn
                .execute(&format!("DELETE FROM {SCHEMA}.\"{}\"", table.name()), []);
        }
        lock(&self.auth).mode = Mode::Client;
        result
    }

    fn run(
        &self,
        sql: &str,
        params: &[String],
        data: &dyn AdminData,
        max_result_bytes: usize,
    ) -> Result<ResultSet, AdminError> {
        let mut stmt = match self.conn.prepare(sql) {
            Ok(stmt) => stmt,
            Err(e) => return Err(self.prepare_error(e)),
        };
        if !stmt.readonly() {
            return Err(AdminError::read_only("this statement"));
        }
        let columns: Vec<(String, Option<String>)> = stmt
            .columns()
            .iter()
            .map(|c| (c.name().to_string(), c.decl_type().map(str::to_string)))
            .collect();
        let tables: Vec<Table> = lock(&self.auth).reads.iter().copied().collect();
        if !tables.is_empty() {
            lock(&self.auth).mode = Mode::Setup;
            let loaded = self.load(&tables, data);
            lock(&self.auth).mode = Mode::Client;
            loaded.map_err(AdminError::internal)?;
        }
        *lock(&self.running) = Some(Running::new(Instant::now(), self.limits.timeout));
        let mut values: Vec<Vec<SqlValue>> = Vec::new();
        let mut bytes = 0usize;
        let bound = rusqlite::params_from_iter(params.iter());
        let mut rows = stmt.query(bound).map_err(|e| self.step_error(e))?;
        while let Some(row) = rows.next().map_err(|e| self.step_error(e))? {
            if values.len() == self.limits.max_rows {
                return Err(AdminError::too_many_rows(self.limits.max_rows));
            }
            let mut out = Vec::with_capacity(columns.len());
            for i in 0..columns.len() {
                let value = match row.get_ref(i).map_err(AdminError::internal)? {
                    ValueRef::Null => SqlValue::Null,
                    ValueRef::Integer(v) => SqlValue::Integer(v),
                    ValueRef::Real(v) => SqlValue::Real(v),
                    ValueRef::Text(t) => {
                        bytes += t.len();
                        SqlValue::Text(String::from_utf8_lossy(t).into_owned())
                    }
                    ValueRef::Blob(b) => {
                        bytes += b.len();
                        SqlValue::Blob(b.to_vec())
                    }
                };
                bytes += 8;
                out.push(value);
            }
            if bytes > max_result_bytes {
                return Err(if max_result_bytes < self.limits.max_result_bytes {
                    AdminError::results_budget_full(max_result_bytes)
                } else {
                    AdminError::result_too_large(max_result_bytes)
                });
            }
            values.push(out);
        }
        Ok(render(columns, values))
    }

    /// Loads the snapshot of `tables` (in one transaction: one state for the whole query).
    fn load(&self, tables: &[Table], data: &dyn AdminData) -> rusqlite::Result<()> {
        let snapshot = data.snapshot(tables);
        self.conn.execute_batch("BEGIN")?;
        let result = (|| {
            for (table, rows) in tables.iter().zip(snapshot) {
                self.conn
                    .execute(&format!("DELETE FROM {SCHEMA}.\"{}\"", table.name()), [])?;
                let mut insert = self.conn.prepare_cached(&insert_sql(*table))?;
                for row in rows {
                    insert.execute(rusqlite::params_from_iter(row.iter().map(to_sql)))?;
                }
            }
            Ok(())
        })();
        match result {
            Ok(()) => self.conn.execute_batch("COMMIT"),
            Err(e) => {
                let _ = self.conn.execute_batch("ROLLBACK");
                Err(e)
            }
        }
    }

    fn prepare_error(&self, e: rusqlite::Error) -> AdminError {
        if let Some(what) = lock(&self.auth).refused.take() {
            return AdminError::read_only(&what);
        }
        match e {
            rusqlite::Error::MultipleStatement => AdminError::syntax(
                "psprobe admin runs one statement per query; send them one at a time",
            ),
            e => AdminError::from_sqlite(&e),
        }
    }

    fn step_error(&self, e: rusqlite::Error) -> AdminError {
        match e.sqlite_error_code() {
            Some(ErrorCode::OperationInterrupted) => AdminError::timeout(self.limits.timeout),
            Some(ErrorCode::OutOfMemory) => AdminError::out_of_memory(HEAP_LIMIT_BYTES as u64),
            _ => AdminError::from_sqlite(&e),
        }
    }
}

/// The functions MySQL clients call on connect and in their status commands.
fn register_functions(conn: &Connection, session: Arc<SessionInfo>) -> rusqlite::Result<()> {
    let flags = FunctionFlags::SQLITE_UTF8;
    let s = Arc::clone(&session);
    for name in ["database", "schema"] {
        let s = Arc::clone(&s);
        conn.create_scalar_function(name, 0, flags, move |_| Ok(s.database()))?;
    }
    for name in ["user", "current_user", "session_user", "system_user"] {
        let s = Arc::clone(&s);
        conn.create_scalar_function(name, 0, flags, move |_| Ok(s.user_at_host()))?;
    }
    conn.create_scalar_function("version", 0, flags, |_| Ok(variables::server_version()))?;
    let s = Arc::clone(&session);
    conn.create_scalar_function("connection_id", 0, flags, move |_| {
        Ok(i64::from(s.connection_id))
    })?;
    conn.create_scalar_function("now", 0, flags, |_| Ok(variables::now_text()))?;
    conn.create_scalar_function(
        "unix_timestamp",
        0,
        flags,
        |_| Ok(variables::unix_seconds()),
    )?;
    // `@@name` is rewritten to this (see `dialect`); unknown names are refused before.
    conn.create_scalar_function(variables::FUNCTION, 1, flags, |ctx| {
        let name: String = ctx.get(0)?;
        Ok(match variables::lookup(&name) {
            Some(Value::Int(v)) => SqlValue::Integer(v),
            Some(Value::UInt(v)) => SqlValue::Integer(i64::try_from(v).unwrap_or(i64::MAX)),
            Some(Value::Float(v)) => SqlValue::Real(v),
            Some(Value::Text(t)) => SqlValue::Text(t),
            Some(Value::Null) | None => SqlValue::Null,
        })
    })?;
    Ok(())
}

/// Types the columns (declared type first, else what the values are) and renders the values.
fn render(columns: Vec<(String, Option<String>)>, values: Vec<Vec<SqlValue>>) -> ResultSet {
    let kinds: Vec<ResultKind> = columns
        .iter()
        .enumerate()
        .map(|(i, (_, decl))| {
            let declared = decl.as_deref().map(str::to_ascii_uppercase);
            match declared.as_deref() {
                Some("INTEGER" | "INT") => ResultKind::Int,
                Some("REAL") => ResultKind::Float { fixed: true },
                Some(t) if t.starts_with("TEXT") => ResultKind::Text,
                _ => infer(values.iter().map(|row| &row[i])),
            }
        })
        .collect();
    let rows = values
        .into_iter()
        .map(|row| {
            row.into_iter()
                .zip(&kinds)
                .map(|(v, kind)| render_value(v, *kind))
                .collect()
        })
        .collect();
    ResultSet {
        columns: columns
            .into_iter()
            .zip(kinds)
            .map(|((name, _), kind)| ResultColumn { name, kind })
            .collect(),
        rows,
    }
}

/// The type of an expression column from its values: integers only -> BIGINT, numbers ->
/// DOUBLE, any text -> VARCHAR, any blob -> BLOB (NULLs do not count; all NULL -> VARCHAR).
fn infer<'a>(values: impl Iterator<Item = &'a SqlValue>) -> ResultKind {
    let mut kind: Option<ResultKind> = None;
    for v in values {
        let this = match v {
            SqlValue::Null => continue,
            SqlValue::Integer(_) => ResultKind::Int,
            SqlValue::Real(_) => ResultKind::Float { fixed: false },
            SqlValue::Text(_) => ResultKind::Text,
            SqlValue::Blob(_) => ResultKind::Blob,
        };
        kind = Some(match (kind, this) {
            (None, k) => k,
            (Some(ResultKind::Blob), _) | (_, ResultKind::Blob) => ResultKind::Blob,
            (Some(ResultKind::Text), _) | (_, ResultKind::Text) => ResultKind::Text,
            (Some(ResultKind::Int), ResultKind::Int) => ResultKind::Int,
            _ => ResultKind::Float { fixed: false },
        });
    }
    kind.unwrap_or(ResultKind::Text)
}

fn render_value(v: SqlValue, kind: ResultKind) -> Option<Vec<u8>> {
    Some(match v {
        SqlValue::Null => return None,
        SqlValue::Integer(i) => match kind {
            ResultKind::Float { fixed: true } => format!("{:.*}", FLOAT_DECIMALS, i as f64),
            _ => i.to_string(),
        }
        .into_bytes(),
        SqlValue::Real(f) => match kind {
            ResultKind::Float { fixed: true } => format!("{f:.FLOAT_DECIMALS$}"),
            _ if f.is_finite() => format!("{f}"),
            _ => return None,
        }
        .into_bytes(),
        SqlValue::Text(t) => t.into_bytes(),
        SqlValue::Blob(b) => b,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admin::tables::{status_row, Row};
    use std::time::Duration;

    struct Data;
    impl AdminData for Data {
        fn snapshot(&self, tables: &[Table]) -> Vec<Vec<Row>> {
            tables
                .iter()
                .map(|t| match t {
                    Table::Status => vec![
                        status_row("uptime_seconds", 42u64),
                        status_row("current_scenario", "pfs_on"),
                    ],
                    Table::Scenarios => (0..300u64)
                        .map(|i| {
                            crate::admin::tables::scenario_row(
                                i as u16,
                                &format!("s{i}"),
                                i == 0,
                                &Default::default(),
                            )
                        })
                        .collect(),
                    _ => vec![],
                })
                .collect()
        }
    }

    fn engine(limits: Limits) -> Engine {
        Engine::new(limits, Arc::new(SessionInfo::new("admin", "127.0.0.1", 7))).unwrap()
    }

    fn text(rs: &ResultSet) -> Vec<Vec<String>> {
        rs.rows
            .iter()
            .map(|r| {
                r.iter()
                    .map(|v| {
                        v.as_deref()
                            .map_or("NULL".into(), |b| String::from_utf8_lossy(b).into())
                    })
                    .collect()
            })
            .collect()
    }

    #[test]
    fn reads_typed_results() {
        let mut e = engine(Limits::default());
        let rs = e
            .query(
                "SELECT variable_name, value, 1.5 * 2, count(*) OVER () FROM status ORDER BY 1",
                &[],
                &Data,
            )
            .unwrap();
        assert_eq!(
            text(&rs),
            [
                ["current_scenario", "pfs_on", "3", "2"],
                ["uptime_seconds", "42", "3", "2"]
            ]
        );
        let kinds: Vec<_> = rs.columns.iter().map(|c| c.kind).collect();
        assert_eq!(
            kinds,
            [
                ResultKind::Text,
                ResultKind::Text,
                ResultKind::Float { fixed: false },
                ResultKind::Int
            ]
        );
        let rs = e
            .query(
                "SELECT measured_seconds, id FROM psprobe.scenarios WHERE scenario = 'S1'",
                &[],
                &Data,
            )
            .unwrap();
        assert_eq!(text(&rs), [["0.000", "1"]]);
        assert_eq!(rs.columns[0].kind, ResultKind::Float { fixed: true });
    }

    #[test]
    fn writes_and_escapes_are_refused() {
        let mut e = engine(Limits::default());
        for (sql, what) in [
            ("DELETE FROM status", "DELETE from status"),
            ("INSERT INTO status VALUES ('a', 1)", "INSERT into status"),
            ("UPDATE scenarios SET active = 0", "UPDATE of scenarios"),
            ("DROP TABLE digests", "DROP"),
            ("CREATE TABLE x (a)", "CREATE"),
            ("ATTACH DATABASE '/tmp/x.db' AS x", "ATTACH"),
            ("DETACH psprobe", "DETACH"),
            ("PRAGMA writable_schema = 1", "PRAGMA writable_schema = 1"),
            ("PRAGMA journal_mode", "PRAGMA journal_mode"),
            (
                "SELECT load_extension('x')",
                "the function load_extension()",
            ),
            ("BEGIN", "a transaction statement"),
            (
                "WITH x AS (SELECT 1) DELETE FROM status",
                "DELETE from status",
            ),
        ] {
            let err = e.query(sql, &[], &Data).unwrap_err();
            assert_eq!(err.code, 1290, "{sql}: {err}");
            assert!(err.message.contains(what), "{sql}: {err}");
        }
        // Still usable, and the data is intact.
        let rs = e.query("SELECT count(*) FROM status", &[], &Data).unwrap();
        assert_eq!(text(&rs), [["2"]]);
        let rs = e.query("PRAGMA table_info(status)", &[], &Data).unwrap();
        assert_eq!(rs.rows.len(), 2);
    }

    #[test]
    fn long_queries_are_bounded() {
        let mut e = engine(Limits {
            timeout: Duration::from_millis(200),
            ..Limits::default()
        });
        let started = Instant::now();
        let err = e
            .query(
                "SELECT count(*) FROM scenarios a, scenarios b, scenarios c, scenarios d",
                &[],
                &Data,
            )
            .unwrap_err();
        assert_eq!(err.code, 1317, "{err}");
        assert!(started.elapsed() < Duration::from_secs(5));
        let mut e = engine(Limits {
            max_rows: 1000,
            ..Limits::default()
        });
        let err = e
            .query("SELECT a.id FROM scenarios a, scenarios b", &[], &Data)
            .unwrap_err();
        assert_eq!(err.code, 1104, "{err}");
        let rs = e
            .query(
                "SELECT a.id FROM scenarios a, scenarios b LIMIT 1000",
                &[],
                &Data,
            )
            .unwrap();
        assert_eq!(rs.rows.len(), 1000);
        // LIKE patterns are linear in SQLite, and bounded in length.
        let pattern = format!("{}#", "%".repeat(900));
        let started = Instant::now();
        let rs = e
            .query(
                "SELECT count(*) FROM scenarios WHERE scenario LIKE ?1",
                &[pattern],
                &Data,
            )
            .unwrap();
        assert_eq!(text(&rs), [["0"]]);
        assert!(started.elapsed() < Duration::from_secs(2));
        let err = e
            .query("SELECT 1 WHERE 'a' LIKE ?1", &["%".repeat(5000)], &Data)
            .unwrap_err();
        assert!(err.message.contains("LIKE"), "{err}");
    }

    #[test]
    fn errors_map_to_mysql_codes() {
        let mut e = engine(Limits::default());
        let err = e.query("SELECT * FROM nope", &[], &Data).unwrap_err();
        assert_eq!(err.code, 1146, "{err}");
        let err = e.query("SELECT nope FROM status", &[], &Data).unwrap_err();
        assert_eq!(err.code, 1054, "{err}");
        let err = e.query("SELEC 1", &[], &Data).unwrap_err();
        assert_eq!(err.code, 1064, "{err}");
        let err = e.query("SELECT 1; SELECT 2", &[], &Data).unwrap_err();
        assert_eq!(err.code, 1064, "{err}");
    }
}
