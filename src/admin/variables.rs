//! The server variables clients read (`SELECT @@version_comment`, `SHOW VARIABLES`): what a
//! MySQL server of this kind would say, where a client's behaviour depends on it.

use super::limits::Limits;
use super::tables::Value;
use crate::timestamp::rfc3339;

/// The SQL function `@@name` is rewritten to.
pub(crate) const FUNCTION: &str = "psprobe_variable";

/// Shown by the `mariadb` CLI on connect (`@@version_comment`).
pub(crate) const VERSION_COMMENT: &str = "psprobe admin";

/// What opensrv-mysql answers to exactly `SELECT @@max_allowed_packet`; said everywhere else too.
pub(crate) const MAX_ALLOWED_PACKET: u64 = 67_108_864;

/// The MySQL version the admin interface claims: drivers refuse versions that do not look like
/// MySQL's (mysql-connector-python: `X.Y.Z` with X.Y >= 4.1) or pick protocol features by it;
/// 5.7 asks for nothing psprobe admin lacks.
pub(crate) const MYSQL_VERSION: &str = "5.7.99";

/// The server version announced in the handshake and returned by `VERSION()`:
/// `5.7.99-psprobe-admin-<psprobe version>`.
pub(crate) fn server_version() -> String {
    format!(
        "{MYSQL_VERSION}-psprobe-admin-{}",
        env!("CARGO_PKG_VERSION")
    )
}

/// Every variable, by name.
pub(crate) fn all() -> Vec<(&'static str, Value)> {
    let text = |s: &str| Value::Text(s.to_string());
    let utf8 = || text("utf8mb3");
    let collation = || text("utf8mb3_general_ci");
    let timeout_ms = Limits::default().timeout.as_millis() as u64;
    vec![
        ("auto_increment_increment", Value::UInt(1)),
        ("autocommit", Value::UInt(1)),
        ("character_set_client", utf8()),
        ("character_set_connection", utf8()),
        ("character_set_database", utf8()),
        ("character_set_results", utf8()),
        ("character_set_server", utf8()),
        ("character_set_system", utf8()),
        ("collation_connection", collation()),
        ("collation_database", collation()),
        ("collation_server", collation()),
        ("init_connect", text("")),
        ("interactive_timeout", Value::UInt(28_800)),
        ("license", text("Apache-2.0")),
        ("lower_case_table_names", Value::UInt(1)),
        ("max_allowed_packet", Value::UInt(MAX_ALLOWED_PACKET)),
        ("max_execution_time", Value::UInt(timeout_ms)),
        ("net_buffer_length", Value::UInt(16_384)),
        ("net_read_timeout", Value::UInt(30)),
        ("net_write_timeout", Value::UInt(60)),
        ("query_cache_size", Value::UInt(0)),
        ("query_cache_type", text("OFF")),
        ("read_only", Value::UInt(1)),
        // NULL, not a path: some drivers reconnect through the socket of a local server.
        ("socket", Value::Null),
        ("sql_mode", text("")),
        ("system_time_zone", text("UTC")),
        ("time_zone", text("SYSTEM")),
        ("transaction_isolation", text("REPEATABLE-READ")),
        ("tx_isolation", text("REPEATABLE-READ")),
        ("version", Value::Text(server_version())),
        ("version_comment", text(VERSION_COMMENT)),
        ("version_compile_machine", text(std::env::consts::ARCH)),
        ("version_compile_os", text(std::env::consts::OS)),
        ("wait_timeout", Value::UInt(28_800)),
    ]
}

/// The value of a variable (name without `@@` and scope, any case).
pub(crate) fn lookup(name: &str) -> Option<Value> {
    all()
        .into_iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v)
}

pub(crate) fn unix_seconds() -> i64 {
    crate::clock::unix_now() as i64
}

/// `NOW()`: `YYYY-MM-DD HH:MM:SS`, UTC.
pub(crate) fn now_text() -> String {
    rfc3339(unix_seconds() as u64)
        .replace('T', " ")
        .trim_end_matches('Z')
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorted_and_found() {
        let names: Vec<_> = all().into_iter().map(|(n, _)| n).collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        assert_eq!(names, sorted);
        assert_eq!(
            lookup("VERSION_COMMENT"),
            Some(Value::Text(VERSION_COMMENT.into()))
        );
        assert_eq!(lookup("nope"), None);
        assert_eq!(now_text().len(), 19);
    }
}
