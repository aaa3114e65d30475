//! From what MySQL clients send to what the engine runs.
//!
//! Queries are answered in SQLite's dialect of SQL (as ProxySQL's admin does), with the MySQL
//! spellings clients and DBAs type translated on the way:
//! - `@@[session.|global.]name` -> the value of the server variable (see [`variables`]);
//! - MySQL string literals (`'it\'s'`, `"text"`) -> SQLite string literals;
//! - `#` comments -> `--` comments;
//! - `SHOW TABLES | DATABASES | [GLOBAL|SESSION] STATUS | VARIABLES [LIKE 'p' | WHERE ...]`,
//!   `SHOW [FULL] COLUMNS FROM t`, `DESCRIBE t`, `SHOW CREATE TABLE t`, `SHOW WARNINGS`,
//!   `SHOW PROCESSLIST`, `TABLE t` -> queries over the tables;
//! - `SET ...` (session settings clients send on connect), `BEGIN` / `COMMIT` / `ROLLBACK`
//!   -> OK without effect; `SET GLOBAL` and every statement that writes -> refused.
//!
//! Result column names keep what the client wrote (`@@version_comment`, not the rewrite).

use super::engine::SCHEMA;
use super::error::AdminError;
use super::session::DATABASE;
use super::tables::{ColumnKind, Table, Value};
use super::variables;

/// A statement for the engine: SQLite text, parameters for `?1`, `?2`, ..., and
/// `(rewritten, original)` fragments to put back into result column names.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct EngineQuery {
    pub sql: String,
    pub params: Vec<String>,
    pub renames: Vec<(String, String)>,
}

impl EngineQuery {
    fn plain(sql: String) -> Self {
        EngineQuery {
            sql,
            ..Default::default()
        }
    }

    /// The name a result column is shown under.
    pub(crate) fn column_name(&self, name: &str) -> String {
        // A string literal's column is named by its value, as MySQL does (SQLite: `'x'`).
        if let Some(inner) = name
            .strip_prefix('\'')
            .and_then(|n| n.strip_suffix('\''))
            .filter(|inner| !inner.replace("''", "").contains('\''))
        {
            return inner.replace("''", "'");
        }
        let mut name = name.to_string();
        for (rewritten, original) in &self.renames {
            if name.contains(rewritten.as_str()) {
                name = name.replace(rewritten.as_str(), original);
            }
        }
        name
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Statement {
    Query(EngineQuery),
    Use(String),
    /// A session setting: accepted, without effect.
    Set,
    /// BEGIN / COMMIT / ROLLBACK: nothing to do on a read-only database.
    Transaction,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Word,
    /// A backtick-quoted name (`text` is the name).
    Ident,
    /// A string literal (`text` is its value); `double` for `"..."`.
    Str {
        double: bool,
    },
    /// `@@name` (`text` is the name, lowercased, without scope); `global` scope.
    Var {
        global: bool,
    },
    Other,
}

#[derive(Debug, Clone)]
struct Token {
    kind: Kind,
    start: usize,
    end: usize,
    text: String,
}

fn is_ident_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b'$' || c >= 0x80
}

/// Value of a MySQL string literal body (between the quotes), backslash escapes and doubled
/// quotes resolved.
fn unescape(body: &str, quote: char) -> String {
    let mut out = String::with_capacity(body.len());
    let mut chars = body.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some('0') => out.push('\0'),
                Some('b') => out.push('\u{8}'),
                Some('n') => out.push('\n'),
                Some('r') => out.push('\r'),
                Some('t') => out.push('\t'),
                Some('Z') => out.push('\u{1a}'),
                // MySQL keeps the backslash of \% and \_ (they are LIKE escapes).
                Some(c @ ('%' | '_')) => {
                    out.push('\\');
                    out.push(c);
                }
                Some(c) => out.push(c),
                None => out.push('\\'),
            }
        } else if c == quote && chars.peek() == Some(&quote) {
            chars.next();
            out.push(quote);
        } else {
            out.push(c);
        }
    }
    out
}

/// A SQLite string literal of `s`.
pub(crate) fn sql_literal(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

fn lex(sql: &str) -> Result<Vec<Token>, AdminError> {
    let s = sql.as_bytes();
    let n = s.len();
    let mut toks = Vec::new();
    let mut i = 0;
    while i < n {
        let c = s[i];
        let start = i;
        match c {
            _ if c.is_ascii_whitespace() => i += 1,
            b'#' => i = memchr(s, i, b'\n'),
            b'-' if s.get(i + 1) == Some(&b'-') && s.get(i + 2).is_none_or(|&c| c <= b' ') => {
                i = memchr(s, i, b'\n');
            }
            b'/' if s.get(i + 1) == Some(&b'*') => {
                i = find(s, i + 2, b"*/").map_or(n, |p| p + 2);
            }
            b'\'' | b'"' | b'`' => {
                let mut j = i + 1;
                loop {
                    if j >= n {
                        // Quote at most 20 characters: cut at a character boundary, not at
                        // byte 20 (which panicked inside a multi-byte character).
                        let end = sql[start..]
                            .char_indices()
                            .nth(20)
                            .map_or(n, |(at, _)| start + at);
                        return Err(AdminError::syntax(format!(
                            "You have an error in your SQL syntax: unterminated {} at {}",
                            if c == b'`' { "identifier" } else { "string" },
                            &sql[start..end]
                        )));
                    }
                    if s[j] == b'\\' && c != b'`' {
                        j += 2;
                        continue;
                    }
                    if s[j] == c {
                        if s.get(j + 1) == Some(&c) {
                            j += 2;
                            continue;
                        }
                        break;
                    }
                    j += 1;
                }
                i = j.min(n - 1) + 1;
                let body = &sql[start + 1..i - 1];
                let (kind, text) = if c == b'`' {
                    (Kind::Ident, body.replace("``", "`"))
                } else {
                    (Kind::Str { double: c == b'"' }, unescape(body, c as char))
                };
                toks.push(Token {
                    kind,
                    start,
                    end: i,
                    text,
                });
            }
            b'@' if s.get(i + 1) == Some(&b'@') => {
                let mut j = i + 2;
                while j < n && (is_ident_byte(s[j]) || s[j] == b'.') {
                    j += 1;
                }
                let full = sql[i + 2..j].to_ascii_lowercase();
                let (global, name) = match full.split_once('.') {
                    Some(("global" | "persist" | "persist_only", name)) => (true, name),
                    Some(("session" | "local", name)) => (false, name),
                    _ => (false, full.as_str()),
                };
                toks.push(Token {
                    kind: Kind::Var { global },
                    start,
                    end: j,
                    text: name.to_string(),
                });
                i = j;
            }
            _ if is_ident_byte(c) => {
                let mut j = i;
                while j < n && is_ident_byte(s[j]) {
                    j += 1;
                }
                let kind = if c.is_ascii_digit() {
                    Kind::Other
                } else {
                    Kind::Word
                };
                toks.push(Token {
                    kind,
                    start,
                    end: j,
                    text: sql[i..j].to_string(),
                });
                i = j;
            }
            _ => {
                // One character (UTF-8 safe: multi-byte ones are identifier bytes above).
                toks.push(Token {
                    kind: Kind::Other,
                    start,
                    end: i + 1,
                    text: (c as char).to_string(),
                });
                i += 1;
            }
        }
    }
    Ok(toks)
}

fn memchr(s: &[u8], from: usize, b: u8) -> usize {
    s[from..]
        .iter()
        .position(|&c| c == b)
        .map_or(s.len(), |p| from + p)
}

fn find(s: &[u8], from: usize, pat: &[u8]) -> Option<usize> {
    s.get(from..)?
        .windows(pat.len())
        .position(|w| w == pat)
        .map(|p| from + p)
}

/// The SQLite text of `sql[from..]` (tokens `toks`): MySQL literals, variables and comments
/// translated.
fn rewrite(sql: &str, toks: &[Token], from: usize) -> Result<EngineQuery, AdminError> {
    let mut out = String::with_capacity(sql.len() + 16);
    let mut renames = Vec::new();
    let mut pos = toks.get(from).map_or(sql.len(), |t| t.start);
    for t in &toks[from.min(toks.len())..] {
        // Whitespace and comments in between, `#` comments made SQLite's.
        out.push_str(&sql[pos..t.start].replace('#', "--"));
        let raw = &sql[t.start..t.end];
        let replacement = match t.kind {
            Kind::Var { .. } => {
                if variables::lookup(&t.text).is_none() {
                    return Err(AdminError::unknown_variable(&t.text));
                }
                Some(format!("{}({})", variables::FUNCTION, sql_literal(&t.text)))
            }
            Kind::Str { double } if double || raw.contains('\\') => Some(sql_literal(&t.text)),
            _ => None,
        };
        match replacement {
            Some(r) => {
                renames.push((r.clone(), raw.to_string()));
                out.push_str(&r);
            }
            None => out.push_str(raw),
        }
        pos = t.end;
    }
    out.push_str(&sql[pos..].replace('#', "--"));
    Ok(EngineQuery {
        sql: out,
        params: Vec::new(),
        renames,
    })
}

fn is_word(t: Option<&Token>, kw: &str) -> bool {
    t.is_some_and(|t| t.kind == Kind::Word && t.text.eq_ignore_ascii_case(kw))
}

/// Statements that change something: refused as a read-only server refuses them.
const WRITES: &[&str] = &[
    "alter",
    "analyze",
    "attach",
    "call",
    "change",
    "create",
    "delete",
    "detach",
    "do",
    "drop",
    "flush",
    "grant",
    "handler",
    "install",
    "kill",
    "load",
    "lock",
    "optimize",
    "purge",
    "reindex",
    "release",
    "rename",
    "repair",
    "replace",
    "reset",
    "revoke",
    "savepoint",
    "shutdown",
    "truncate",
    "uninstall",
    "unlock",
    "update",
    "insert",
    "vacuum",
];

/// Parses one statement as a MySQL client sends it.
pub(crate) fn parse(sql: &str) -> Result<Statement, AdminError> {
    let toks = lex(sql)?;
    let Some(first) = toks.first() else {
        return Err(AdminError::empty_query());
    };
    let keyword = if first.kind == Kind::Word {
        first.text.to_ascii_lowercase()
    } else {
        String::new()
    };
    match keyword.as_str() {
        "select" | "with" | "values" | "pragma" => Ok(Statement::Query(rewrite(sql, &toks, 0)?)),
        "" if first.text == "(" => Ok(Statement::Query(rewrite(sql, &toks, 0)?)),
        "table" => {
            let table = table_name(&toks[1..])?;
            Ok(Statement::Query(EngineQuery::plain(format!(
                "SELECT * FROM {SCHEMA}.\"{}\"",
                table.name()
            ))))
        }
        "describe" | "desc" | "explain" => {
            if is_word(toks.get(1), "select") || is_word(toks.get(1), "with") {
                let mut q = rewrite(sql, &toks, 1)?;
                q.sql = format!("EXPLAIN QUERY PLAN {}", q.sql);
                return Ok(Statement::Query(q));
            }
            let (table, rest) = table_ref(&toks[1..])?;
            let like = rest.first().map(|t| t.text.clone());
            Ok(Statement::Query(columns_query(table, false, like)))
        }
        "show" => show(sql, &toks),
        "use" => match toks.get(1) {
            Some(t) if matches!(t.kind, Kind::Word | Kind::Ident) => {
                Ok(Statement::Use(t.text.clone()))
            }
            _ => Err(AdminError::syntax("USE needs a database name: USE psprobe")),
        },
        "set" => {
            let global = toks.iter().any(|t| {
                matches!(t.kind, Kind::Var { global: true })
                    || (t.kind == Kind::Word
                        && ["global", "persist", "persist_only"]
                            .iter()
                            .any(|g| t.text.eq_ignore_ascii_case(g)))
            });
            if global {
                Err(AdminError::read_only("SET GLOBAL"))
            } else {
                Ok(Statement::Set)
            }
        }
        "begin" | "commit" | "rollback" => Ok(Statement::Transaction),
        "start" if is_word(toks.get(1), "transaction") => Ok(Statement::Transaction),
        kw if WRITES.contains(&kw) => Err(AdminError::read_only(&kw.to_ascii_uppercase())),
        _ => Err(AdminError::syntax(format!(
            "You have an error in your SQL syntax near '{}': psprobe admin answers SELECT (in \
             SQLite's dialect), SHOW, DESCRIBE, USE and SET",
            &sql[first.start..first.end]
        ))),
    }
}

/// `name` or `db.name`: one of psprobe's tables.
fn table_ref(toks: &[Token]) -> Result<(Table, &[Token]), AdminError> {
    let name = |t: Option<&Token>| {
        t.filter(|t| matches!(t.kind, Kind::Word | Kind::Ident))
            .map(|t| t.text.clone())
    };
    let Some(first) = name(toks.first()) else {
        return Err(AdminError::syntax(
            "a table name is missing (SHOW TABLES lists them)",
        ));
    };
    if toks.get(1).is_some_and(|t| t.text == ".") {
        let Some(table) = name(toks.get(2)) else {
            return Err(AdminError::syntax("a table name is missing after the '.'"));
        };
        check_database(&first)?;
        let found = Table::from_name(&table)
            .ok_or_else(|| AdminError::unknown_table(&format!("{first}.{table}")))?;
        return Ok((found, &toks[3..]));
    }
    let found = Table::from_name(&first).ok_or_else(|| AdminError::unknown_table(&first))?;
    Ok((found, &toks[1..]))
}

fn table_name(toks: &[Token]) -> Result<Table, AdminError> {
    table_ref(toks).map(|(t, _)| t)
}

fn check_database(name: &str) -> Result<(), AdminError> {
    if name.eq_ignore_ascii_case(DATABASE) {
        Ok(())
    } else {
        Err(AdminError::unknown_database(name))
    }
}

/// `LIKE 'pattern'` or `WHERE expr` at the end of a SHOW.
enum Filter {
    None,
    Like(String),
    Where(EngineQuery),
}

fn filter(sql: &str, toks: &[Token], at: usize) -> Result<Filter, AdminError> {
    match toks.get(at) {
        None => Ok(Filter::None),
        Some(t) if is_word(Some(t), "like") => match toks.get(at + 1) {
            Some(p) if matches!(p.kind, Kind::Str { .. }) && toks.len() == at + 2 => {
                Ok(Filter::Like(p.text.clone()))
            }
            _ => Err(AdminError::syntax(
                "LIKE needs one quoted pattern: LIKE 'conn%'",
            )),
        },
        Some(t) if is_word(Some(t), "where") => Ok(Filter::Where(rewrite(sql, toks, at + 1)?)),
        Some(t) => Err(AdminError::syntax(format!(
            "You have an error in your SQL syntax near '{}': expected LIKE or WHERE",
            t.text
        ))),
    }
}

/// `base` (whose first column is `name_column`) with the filter applied.
fn filtered(base: String, name_column: &str, filter: Filter) -> EngineQuery {
    match filter {
        Filter::None => EngineQuery::plain(base),
        Filter::Like(pattern) => EngineQuery {
            sql: format!("SELECT * FROM ({base}) WHERE \"{name_column}\" LIKE ?1 ESCAPE '\\'"),
            params: vec![pattern],
            renames: Vec::new(),
        },
        Filter::Where(expr) => EngineQuery {
            sql: format!("SELECT * FROM ({base}) WHERE {}", expr.sql),
            params: Vec::new(),
            renames: expr.renames,
        },
    }
}

fn value_sql(v: &Value) -> String {
    match v {
        Value::Null => "NULL".into(),
        Value::Int(i) => i.to_string(),
        Value::UInt(u) => u.to_string(),
        Value::Float(f) => format!("{f:?}"),
        Value::Text(t) => sql_literal(t),
    }
}

/// `WITH t(columns) AS (VALUES rows) SELECT * FROM t`.
fn values_query(columns: &[&str], rows: &[Vec<String>]) -> String {
    let names: Vec<String> = columns.iter().map(|c| format!("\"{c}\"")).collect();
    let rows: Vec<String> = rows.iter().map(|r| format!("({})", r.join(", "))).collect();
    format!(
        "WITH t({}) AS (VALUES {}) SELECT * FROM t",
        names.join(", "),
        rows.join(", ")
    )
}

fn mysql_type(kind: ColumnKind) -> &'static str {
    match kind {
        ColumnKind::Int => "bigint",
        ColumnKind::Float => "double",
        ColumnKind::Text | ColumnKind::Any => "text",
    }
}

fn columns_query(table: Table, full: bool, like: Option<String>) -> EngineQuery {
    let mut names = vec!["Field", "Type", "Null", "Key", "Default", "Extra"];
    if full {
        names.push("Comment");
    }
    let rows: Vec<Vec<String>> = table
        .columns()
        .iter()
        .map(|c| {
            let mut row = vec![
                sql_literal(c.name),
                sql_literal(mysql_type(c.kind)),
                sql_literal("YES"),
                sql_literal(""),
                "NULL".to_string(),
                sql_literal(""),
            ];
            if full {
                row.push(sql_literal(c.doc));
            }
            row
        })
        .collect();
    let base = values_query(&names, &rows);
    filtered(base, "Field", like.map_or(Filter::None, Filter::Like))
}

const SHOWS: &str = "SHOW TABLES, SHOW DATABASES, SHOW [GLOBAL] STATUS, SHOW VARIABLES, SHOW \
                     [FULL] COLUMNS FROM t, SHOW CREATE TABLE t, SHOW WARNINGS, SHOW PROCESSLIST";

fn show(sql: &str, toks: &[Token]) -> Result<Statement, AdminError> {
    let mut i = 1;
    let mut full = false;
    while let Some(t) = toks.get(i) {
        if is_word(Some(t), "full") {
            full = true;
        } else if !["global", "session", "local"]
            .iter()
            .any(|m| is_word(Some(t), m))
        {
            break;
        }
        i += 1;
    }
    let what = toks
        .get(i)
        .filter(|t| t.kind == Kind::Word)
        .map(|t| t.text.to_ascii_lowercase())
        .unwrap_or_default();
    i += 1;
    // `FROM db` / `IN db` (TABLES) or `FROM t [FROM db]` (COLUMNS).
    let from = |i: &mut usize| -> Option<String> {
        if is_word(toks.get(*i), "from") || is_word(toks.get(*i), "in") {
            let name = toks.get(*i + 1).map(|t| t.text.clone());
            *i += 2;
            name
        } else {
            None
        }
    };
    let query = match what.as_str() {
        "status" => filtered(
            format!(
                "SELECT variable_name AS \"Variable_name\", value AS \"Value\" FROM \
                 {SCHEMA}.status"
            ),
            "Variable_name",
            filter(sql, toks, i)?,
        ),
        "variables" => {
            let rows: Vec<Vec<String>> = variables::all()
                .iter()
                .map(|(name, value)| vec![sql_literal(name), value_sql(value)])
                .collect();
            filtered(
                values_query(&["Variable_name", "Value"], &rows),
                "Variable_name",
                filter(sql, toks, i)?,
            )
        }
        "tables" => {
            if let Some(db) = from(&mut i) {
                check_database(&db)?;
            }
            let column = format!("Tables_in_{DATABASE}");
            let kind = if full {
                ", 'BASE TABLE' AS \"Table_type\""
            } else {
                ""
            };
            filtered(
                format!(
                    "SELECT name AS \"{column}\"{kind} FROM {SCHEMA}.sqlite_schema WHERE type = \
                     'table'"
                ),
                &column,
                filter(sql, toks, i)?,
            )
        }
        "databases" | "schemas" => filtered(
            format!("SELECT {} AS \"Database\"", sql_literal(DATABASE)),
            "Database",
            filter(sql, toks, i)?,
        ),
        "columns" | "fields" => {
            let Some(name) = from(&mut i) else {
                return Err(AdminError::syntax("SHOW COLUMNS FROM <table>"));
            };
            if let Some(db) = from(&mut i) {
                check_database(&db)?;
            }
            let table = Table::from_name(&name).ok_or_else(|| AdminError::unknown_table(&name))?;
            match filter(sql, toks, i)? {
                Filter::None => columns_query(table, full, None),
                Filter::Like(p) => columns_query(table, full, Some(p)),
                Filter::Where(expr) => {
                    let base = columns_query(table, full, None).sql;
                    filtered(base, "Field", Filter::Where(expr))
                }
            }
        }
        "create" if is_word(toks.get(i), "table") => {
            let table = table_name(&toks[i + 1..])?;
            EngineQuery {
                sql: format!(
                    "SELECT ?1 AS \"Table\", sql AS \"Create Table\" FROM {SCHEMA}.sqlite_schema \
                     WHERE type = 'table' AND name = ?1"
                ),
                params: vec![table.name().to_string()],
                renames: Vec::new(),
            }
        }
        "warnings" | "errors" => EngineQuery::plain(
            "SELECT 'Note' AS \"Level\", 0 AS \"Code\", '' AS \"Message\" WHERE 0".into(),
        ),
        "processlist" => EngineQuery::plain(format!(
            "SELECT id AS \"Id\", user AS \"User\", client AS \"Host\", db AS \"db\", \
             CASE WHEN command_seconds IS NULL THEN 'Sleep' ELSE 'Query' END AS \"Command\", \
             CAST(coalesce(command_seconds, seconds) AS INTEGER) AS \"Time\", state AS \"State\", \
             NULL AS \"Info\" FROM {SCHEMA}.connections"
        )),
        _ => {
            return Err(AdminError::syntax(format!(
                "psprobe admin does not know this SHOW; it knows {SHOWS}"
            )))
        }
    };
    Ok(Statement::Query(query))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query(sql: &str) -> EngineQuery {
        match parse(sql) {
            Ok(Statement::Query(q)) => q,
            other => panic!("{sql}: {other:?}"),
        }
    }

    #[test]
    fn an_unterminated_string_of_multibyte_characters_is_an_error_not_a_panic() {
        // Found writing the `admin_sql` fuzz target: the message quoted the first 20 bytes,
        // which split a character (a panic on the admin connection's task).
        for sql in [
            "'ééééééééééééééééééééé",
            "select `日本語日本語日本語日本語日本語日本語日本語",
        ] {
            let e = parse(sql).unwrap_err();
            assert!(e.message.contains("unterminated"), "{}", e.message);
        }
    }

    #[test]
    fn mysql_spellings_are_translated() {
        let q = query("SELECT @@version_comment, @@SESSION.autocommit LIMIT 1 # c");
        assert_eq!(
            q.sql,
            "SELECT psprobe_variable('version_comment'), psprobe_variable('autocommit') LIMIT 1 -- c"
        );
        assert_eq!(
            q.column_name("psprobe_variable('version_comment')"),
            "@@version_comment"
        );
        assert_eq!(q.column_name("'it''s'"), "it's");
        let q = query(r#"select 'it\'s', "x", 'plain' from t where a like 'a\_b'"#);
        assert_eq!(
            q.sql,
            r"select 'it''s', 'x', 'plain' from t where a like 'a\_b'"
        );
        assert!(matches!(
            parse("SELECT @@nope"),
            Err(AdminError { code: 1193, .. })
        ));
    }

    #[test]
    fn statements_without_a_result() {
        assert_eq!(parse("SET NAMES utf8mb4").unwrap(), Statement::Set);
        assert_eq!(parse("set autocommit=0").unwrap(), Statement::Set);
        assert_eq!(
            parse("SET @@session.sql_mode = ''").unwrap(),
            Statement::Set
        );
        assert_eq!(parse("SET GLOBAL x = 1").unwrap_err().code, 1290);
        assert_eq!(parse("set @@global.x = 1").unwrap_err().code, 1290);
        assert_eq!(parse("COMMIT").unwrap(), Statement::Transaction);
        assert_eq!(
            parse("start transaction read only").unwrap(),
            Statement::Transaction
        );
        assert_eq!(
            parse("use `psprobe`").unwrap(),
            Statement::Use("psprobe".into())
        );
        assert_eq!(parse("  /* nothing */ ").unwrap_err().code, 1065);
        assert_eq!(parse("DROP TABLE digests").unwrap_err().code, 1290);
        assert_eq!(parse("KILL 3").unwrap_err().code, 1290);
        assert_eq!(parse("FROBNICATE").unwrap_err().code, 1064);
        assert_eq!(parse("select 'open").unwrap_err().code, 1064);
    }

    #[test]
    fn shows() {
        let q = query("SHOW GLOBAL STATUS LIKE 'conn%'");
        assert_eq!(q.params, ["conn%"]);
        assert!(q.sql.contains("LIKE ?1 ESCAPE"), "{}", q.sql);
        let q = query("show status where Value > 3");
        assert!(q.sql.ends_with("WHERE Value > 3"), "{}", q.sql);
        assert!(query("SHOW FULL TABLES FROM psprobe")
            .sql
            .contains("Table_type"));
        assert_eq!(parse("SHOW TABLES FROM mysql").unwrap_err().code, 1049);
        assert_eq!(parse("DESCRIBE nope").unwrap_err().code, 1146);
        assert!(query("DESC psprobe.digests").sql.contains("'digest_text'"));
        assert!(query("SHOW FULL COLUMNS FROM overhead")
            .sql
            .contains("Comment"));
        assert!(query("show create table `status`").params == ["status"]);
        assert_eq!(parse("SHOW ENGINES").unwrap_err().code, 1064);
        assert!(query("EXPLAIN SELECT 1")
            .sql
            .starts_with("EXPLAIN QUERY PLAN"));
        assert_eq!(
            query("TABLE Status").sql,
            "SELECT * FROM psprobe.\"status\""
        );
    }
}
