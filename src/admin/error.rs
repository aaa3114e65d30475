//! Errors the admin interface answers with: a MySQL error code, its SQLSTATE and one line that
//! says what failed and what works instead.

use std::fmt;
use std::time::Duration;

use super::tables::Table;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub(crate) struct AdminError {
    pub code: u16,
    pub sqlstate: [u8; 5],
    pub message: String,
}

fn table_names() -> String {
    Table::ALL.map(Table::name).join(", ")
}

impl AdminError {
    /// opensrv-mysql's name for the code (it sends the SQLSTATE that goes with it). Every code
    /// this module produces is listed; anything else is sent as 1105 (unknown error).
    pub(crate) fn kind(&self) -> opensrv_mysql::ErrorKind {
        use opensrv_mysql::ErrorKind as K;
        match self.code {
            1041 => K::ER_OUT_OF_RESOURCES,
            1045 => K::ER_ACCESS_DENIED_ERROR,
            1047 => K::ER_UNKNOWN_COM_ERROR,
            1049 => K::ER_BAD_DB_ERROR,
            1054 => K::ER_BAD_FIELD_ERROR,
            1064 => K::ER_PARSE_ERROR,
            1065 => K::ER_EMPTY_QUERY,
            1104 => K::ER_TOO_BIG_SELECT,
            1146 => K::ER_NO_SUCH_TABLE,
            1153 => K::ER_NET_PACKET_TOO_LARGE,
            1193 => K::ER_UNKNOWN_SYSTEM_VARIABLE,
            1290 => K::ER_OPTION_PREVENTS_STATEMENT,
            1295 => K::ER_UNSUPPORTED_PS,
            1300 => K::ER_INVALID_CHARACTER_STRING,
            1305 => K::ER_SP_DOES_NOT_EXIST,
            1317 => K::ER_QUERY_INTERRUPTED,
            _ => K::ER_UNKNOWN_ERROR,
        }
    }

    pub(crate) fn new(code: u16, sqlstate: &[u8; 5], message: impl Into<String>) -> Self {
        AdminError {
            code,
            sqlstate: *sqlstate,
            message: message.into(),
        }
    }

    pub(crate) fn internal(e: impl fmt::Display) -> Self {
        AdminError::new(1105, b"HY000", format!("psprobe admin: {e}"))
    }

    /// ER_OPTION_PREVENTS_STATEMENT, as a read-only MySQL server answers writes.
    pub(crate) fn read_only(what: &str) -> Self {
        AdminError::new(
            1290,
            b"HY000",
            format!(
                "psprobe admin is read-only: {what} is refused (SELECT, SHOW, DESCRIBE and USE \
                 work)"
            ),
        )
    }

    pub(crate) fn syntax(message: impl Into<String>) -> Self {
        AdminError::new(1064, b"42000", message)
    }

    pub(crate) fn empty_query() -> Self {
        AdminError::new(1065, b"42000", "Query was empty")
    }

    pub(crate) fn timeout(limit: Duration) -> Self {
        AdminError::new(
            1317,
            b"70100",
            format!(
                "Query execution was interrupted, maximum statement execution time exceeded: \
                 psprobe admin stops a query after {} s; add a WHERE or LIMIT",
                limit.as_secs_f64()
            ),
        )
    }

    pub(crate) fn too_many_rows(limit: usize) -> Self {
        AdminError::new(
            1104,
            b"42000",
            format!(
                "The result has more than {limit} rows, psprobe admin's limit; add a LIMIT or \
                 aggregate"
            ),
        )
    }

    pub(crate) fn result_too_large(limit: usize) -> Self {
        AdminError::new(
            1104,
            b"42000",
            format!(
                "The result is larger than {} MiB, psprobe admin's limit; add a LIMIT or select \
                 fewer columns",
                limit >> 20
            ),
        )
    }

    /// Every query slot stayed taken for `waited`.
    pub(crate) fn busy(slots: usize, waited: std::time::Duration) -> Self {
        AdminError::new(
            1205,
            b"HY000",
            format!(
                "psprobe admin is busy: it runs {slots} queries at once and none finished within \
                 {} s; retry (a query runs at most its time limit)",
                waited.as_secs()
            ),
        )
    }

    /// The shared result budget ([`super::budget`]) had less room than this result needs.
    pub(crate) fn results_budget_full(room: usize) -> Self {
        AdminError::new(
            1041,
            b"HY000",
            format!(
                "Out of memory: other admin connections' results (not yet read by their clients) \
                 fill psprobe admin's {} MiB for results, {} MiB was left for this one; retry \
                 when they are read, or add a LIMIT",
                super::budget::RESULT_BUDGET_BYTES >> 20,
                room >> 20
            ),
        )
    }

    pub(crate) fn out_of_memory(limit: u64) -> Self {
        AdminError::new(
            1041,
            b"HY000",
            format!(
                "Out of memory: the query needs more than psprobe admin's {} MiB; add a WHERE or \
                 LIMIT",
                limit >> 20
            ),
        )
    }

    pub(crate) fn query_too_large(len: usize, limit: usize) -> Self {
        AdminError::new(
            1153,
            b"08S01",
            format!(
                "The query has {len} bytes; psprobe admin accepts at most {limit} (see \
                 --admin-max-query-size)"
            ),
        )
    }

    pub(crate) fn not_utf8() -> Self {
        AdminError::new(
            1300,
            b"HY000",
            "The query is not valid UTF-8; psprobe admin reads queries as utf8mb4",
        )
    }

    pub(crate) fn unknown_database(name: &str) -> Self {
        AdminError::new(
            1049,
            b"42000",
            format!("Unknown database '{name}' (psprobe admin has the database psprobe)"),
        )
    }

    pub(crate) fn unknown_variable(name: &str) -> Self {
        AdminError::new(
            1193,
            b"HY000",
            format!("Unknown system variable '{name}' (SHOW VARIABLES lists them)"),
        )
    }

    pub(crate) fn unknown_table(name: &str) -> Self {
        AdminError::new(
            1146,
            b"42S02",
            format!(
                "Table '{name}' doesn't exist: psprobe admin has the tables {}",
                table_names()
            ),
        )
    }

    /// An error from SQLite, with the MySQL code a client expects for it.
    pub(crate) fn from_sqlite(e: &rusqlite::Error) -> Self {
        // Without rusqlite's " in <whole statement> at offset N" tail.
        let message = match e {
            rusqlite::Error::SqlInputError { msg, offset, .. } if msg.contains("syntax error") => {
                format!("{msg} at offset {offset}")
            }
            rusqlite::Error::SqlInputError { msg, .. } => msg.clone(),
            e => e.to_string(),
        };
        if let Some(table) = message.strip_prefix("no such table: ") {
            return AdminError::unknown_table(table);
        }
        if let Some(column) = message.strip_prefix("no such column: ") {
            return AdminError::new(
                1054,
                b"42S22",
                format!("Unknown column '{column}' (DESCRIBE <table> lists a table's columns)"),
            );
        }
        if let Some(function) = message.strip_prefix("no such function: ") {
            return AdminError::new(
                1305,
                b"42000",
                format!(
                    "FUNCTION {function} does not exist (psprobe admin speaks SQLite's SQL; see \
                     its list of functions)"
                ),
            );
        }
        if message.contains("syntax error")
            || message.contains("incomplete input")
            || message.contains("unrecognized token")
        {
            return AdminError::syntax(format!(
                "You have an error in your SQL syntax: {message} (psprobe admin speaks SQLite's \
                 dialect of SQL)"
            ));
        }
        AdminError::new(1105, b"HY000", message)
    }
}
