//! Runs a parsed statement against an [`AdminData`]: picks the table, filters, sorts, limits.
//! No I/O here; the server writes the [`Reply`] out.

use super::query::{
    self, Expr, Filter, FilterOp, Limit, Literal, OrderBy, QueryError, Statement, TableName,
    DATABASE,
};
use super::tables::{AdminData, Column, ColumnKind, Table, Value};

/// Shown by the `mariadb` CLI on connect (`@@version_comment`).
pub const VERSION_COMMENT: &str = "psprobe admin";

/// The server version announced in the handshake and returned by `VERSION()`.
pub fn server_version() -> String {
    format!("{}-psprobe-admin", env!("CARGO_PKG_VERSION"))
}

/// What opensrv-mysql answers to exactly `SELECT @@max_allowed_packet`.
pub const MAX_ALLOWED_PACKET: u64 = 67_108_864;

/// Per-connection state statements can read or change.
#[derive(Debug, Clone, Default)]
pub struct Session {
    pub user: String,
    pub host: String,
    pub connection_id: u32,
    pub database: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    Rows(Table),
    Ok,
    Error(QueryError),
}

/// Parses and answers one statement.
pub fn answer(sql: &str, data: &dyn AdminData, session: &mut Session) -> Reply {
    match query::parse(sql).and_then(|statement| execute(statement, data, session)) {
        Ok(reply) => reply,
        Err(e) => Reply::Error(e),
    }
}

pub fn execute(
    statement: Statement,
    data: &dyn AdminData,
    session: &mut Session,
) -> Result<Reply, QueryError> {
    Ok(match statement {
        Statement::Select {
            table,
            columns,
            filter,
            order,
            limit,
        } => {
            let full = match table {
                TableName::Digests => data.digests(),
                TableName::Phases => data.phases(),
                TableName::Overhead => data.overhead(),
            };
            Reply::Rows(select(
                full,
                table.name(),
                columns.as_deref(),
                filter.as_ref(),
                &order,
                limit,
            )?)
        }
        Statement::SelectExprs { exprs, limit } => {
            let mut table = Table {
                columns: Vec::new(),
                rows: vec![Vec::new()],
            };
            for expr in &exprs {
                let (kind, value) = evaluate(expr, session)?;
                table.columns.push(Column::new(expr.label(), kind));
                table.rows[0].push(value);
            }
            Reply::Rows(apply_limit(table, limit))
        }
        Statement::ShowStatus { like } => Reply::Rows(filter_first_column(data.status(), like)),
        Statement::ShowDatabases { like } => {
            let mut table = Table::new(&[("Database", ColumnKind::Text)]);
            table.rows.push(vec![DATABASE.into()]);
            Reply::Rows(filter_first_column(table, like))
        }
        Statement::ShowTables { like } => {
            let name = format!("Tables_in_{DATABASE}");
            let mut table = Table::new(&[(name.as_str(), ColumnKind::Text)]);
            table.rows = TableName::ALL
                .iter()
                .map(|t| vec![t.name().into()])
                .collect();
            Reply::Rows(filter_first_column(table, like))
        }
        Statement::Set => Reply::Ok,
        Statement::Use(database) => {
            use_database(&database, session)?;
            Reply::Ok
        }
    })
}

/// `USE db` and the database of the handshake.
pub fn use_database(database: &str, session: &mut Session) -> Result<(), QueryError> {
    if database.eq_ignore_ascii_case(DATABASE) {
        session.database = Some(DATABASE.to_string());
        Ok(())
    } else {
        Err(QueryError::UnknownDatabase(database.to_string()))
    }
}

fn evaluate(expr: &Expr, session: &Session) -> Result<(ColumnKind, Value), QueryError> {
    let text = |s: String| (ColumnKind::Text, Value::Text(s));
    Ok(match expr {
        Expr::Variable { name, .. } => match name.as_str() {
            "version_comment" => text(VERSION_COMMENT.to_string()),
            "version" => text(server_version()),
            // What the handshake announces (utf8_general_ci); the CLI's `status` asks for these.
            "character_set_client"
            | "character_set_connection"
            | "character_set_results"
            | "character_set_server"
            | "character_set_database" => text("utf8mb3".to_string()),
            "collation_connection" | "collation_server" | "collation_database" => {
                text("utf8mb3_general_ci".to_string())
            }
            "max_allowed_packet" => (ColumnKind::Int, Value::UInt(MAX_ALLOWED_PACKET)),
            _ => return Err(QueryError::UnknownVariable(name.clone())),
        },
        Expr::Function { name, label } => match name.as_str() {
            "DATABASE" | "SCHEMA" => (
                ColumnKind::Text,
                session.database.clone().map_or(Value::Null, Value::Text),
            ),
            "USER" | "CURRENT_USER" | "SESSION_USER" | "SYSTEM_USER" => {
                text(format!("{}@{}", session.user, session.host))
            }
            "VERSION" => text(server_version()),
            "CONNECTION_ID" => (
                ColumnKind::Int,
                Value::UInt(u64::from(session.connection_id)),
            ),
            _ => {
                return Err(QueryError::Unsupported(format!(
                    "the function {label} (DATABASE(), USER(), VERSION(), CONNECTION_ID() are \
                     known)"
                )))
            }
        },
        Expr::Literal { value, .. } => match value {
            Literal::Null => (ColumnKind::Text, Value::Null),
            Literal::Number(n) => match n.parse::<i64>() {
                Ok(i) => (ColumnKind::Int, Value::Int(i)),
                Err(_) => (ColumnKind::Float, Value::Text(n.clone())),
            },
            Literal::Text(s) => text(s.clone()),
        },
    })
}

fn unknown_column(
    table: &Table,
    table_name: &'static str,
    column: &str,
    clause: &'static str,
) -> QueryError {
    QueryError::UnknownColumn {
        column: column.to_string(),
        clause,
        table: table_name,
        columns: table.column_names(),
    }
}

/// `SELECT columns FROM table WHERE filter ORDER BY order LIMIT limit` over a full table.
pub fn select(
    mut table: Table,
    table_name: &'static str,
    columns: Option<&[String]>,
    filter: Option<&Filter>,
    order: &[OrderBy],
    limit: Option<Limit>,
) -> Result<Table, QueryError> {
    // Resolve every name before touching rows, so errors do not depend on the data.
    let projection = columns
        .map(|names| {
            names
                .iter()
                .map(|name| {
                    table
                        .column_index(name)
                        .ok_or_else(|| unknown_column(&table, table_name, name, "field list"))
                })
                .collect::<Result<Vec<_>, _>>()
        })
        .transpose()?;
    let filter = filter
        .map(|f| {
            table
                .column_index(&f.column)
                .map(|i| (i, f))
                .ok_or_else(|| unknown_column(&table, table_name, &f.column, "where clause"))
        })
        .transpose()?;
    let order = order
        .iter()
        .map(|o| {
            table
                .column_index(&o.column)
                .map(|i| (i, o.descending))
                .ok_or_else(|| unknown_column(&table, table_name, &o.column, "order clause"))
        })
        .collect::<Result<Vec<_>, _>>()?;

    if let Some((i, f)) = filter {
        table.rows.retain(|row| matches_filter(&row[i], f));
    }
    if !order.is_empty() {
        table.rows.sort_by(|a, b| {
            order
                .iter()
                .map(|&(i, descending)| {
                    let o = a[i].compare(&b[i]);
                    if descending {
                        o.reverse()
                    } else {
                        o
                    }
                })
                .find(|o| o.is_ne())
                .unwrap_or(std::cmp::Ordering::Equal)
        });
    }
    let mut table = apply_limit(table, limit);
    if let Some(indices) = projection {
        table.columns = indices.iter().map(|&i| table.columns[i].clone()).collect();
        table.rows = table
            .rows
            .into_iter()
            .map(|row| indices.iter().map(|&i| row[i].clone()).collect())
            .collect();
    }
    Ok(table)
}

fn apply_limit(mut table: Table, limit: Option<Limit>) -> Table {
    if let Some(limit) = limit {
        let offset = usize::try_from(limit.offset).unwrap_or(usize::MAX);
        let count = usize::try_from(limit.count).unwrap_or(usize::MAX);
        table.rows = table.rows.into_iter().skip(offset).take(count).collect();
    }
    table
}

fn matches_filter(value: &Value, filter: &Filter) -> bool {
    let equal = match (&filter.value, value) {
        // SQL: comparisons with NULL are never true.
        (Literal::Null, _) | (_, Value::Null) => return false,
        (Literal::Number(n), v) => match (n.parse::<f64>(), v) {
            (Ok(n), Value::Int(_) | Value::UInt(_) | Value::Float(_)) => {
                v.compare(&Value::Float(n)).is_eq()
            }
            _ => text_equal(v, n),
        },
        (Literal::Text(s), v) => {
            if filter.op == FilterOp::Like {
                return v.render().is_some_and(|text| query::like_matches(s, &text));
            }
            match (s.trim().parse::<f64>(), v) {
                (Ok(n), Value::Int(_) | Value::UInt(_) | Value::Float(_)) => {
                    v.compare(&Value::Float(n)).is_eq()
                }
                _ => text_equal(v, s),
            }
        }
    };
    match filter.op {
        FilterOp::Eq | FilterOp::Like => equal,
        FilterOp::NotEq => !equal,
    }
}

fn text_equal(value: &Value, text: &str) -> bool {
    value
        .render()
        .is_some_and(|v| v.to_lowercase() == text.to_lowercase())
}

fn filter_first_column(mut table: Table, like: Option<String>) -> Table {
    if let Some(pattern) = like {
        table.rows.retain(|row| {
            row.first()
                .and_then(Value::render)
                .is_some_and(|name| query::like_matches(&pattern, &name))
        });
    }
    table
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Fake;

    impl AdminData for Fake {
        fn digests(&self) -> Table {
            let mut t = Table::new(&[("digest", ColumnKind::Text), ("count", ColumnKind::Int)]);
            t.rows = vec![
                vec!["A".into(), Value::UInt(5)],
                vec!["B".into(), Value::UInt(50)],
                vec!["C".into(), Value::UInt(7)],
                vec!["D".into(), Value::Null],
            ];
            t
        }
        fn phases(&self) -> Table {
            Table::new(&[("phase", ColumnKind::Int)])
        }
        fn overhead(&self) -> Table {
            Table::new(&[("scenario", ColumnKind::Text)])
        }
        fn status(&self) -> Table {
            Table::variables(vec![
                ("connections_active", Value::Int(2)),
                ("connections_total", Value::UInt(9)),
                ("version", "0.1.0".into()),
            ])
        }
    }

    fn rows(sql: &str) -> Vec<Vec<Option<String>>> {
        let mut session = Session::default();
        match answer(sql, &Fake, &mut session) {
            Reply::Rows(t) => t
                .rows
                .iter()
                .map(|r| r.iter().map(Value::render).collect())
                .collect(),
            other => panic!("{sql}: {other:?}"),
        }
    }

    fn first_column(sql: &str) -> Vec<String> {
        rows(sql)
            .into_iter()
            .map(|r| r[0].clone().unwrap_or_else(|| "NULL".into()))
            .collect()
    }

    #[test]
    fn order_limit_filter_project() {
        assert_eq!(
            first_column("select * from digests order by count desc"),
            ["B", "C", "A", "D"]
        );
        assert_eq!(
            first_column("select * from digests order by count limit 2"),
            ["D", "A"]
        );
        assert_eq!(
            first_column("select * from digests order by COUNT desc limit 1, 2"),
            ["C", "A"]
        );
        assert_eq!(first_column("select * from digests where count = 7"), ["C"]);
        assert_eq!(
            first_column("select * from digests where digest = 'b'"),
            ["B"]
        );
        assert_eq!(
            first_column("select * from digests where count != '7'"),
            ["A", "B"]
        );
        assert_eq!(
            rows("select count from digests where digest like 'a%'"),
            [[Some("5".to_string())]]
        );
    }

    #[test]
    fn unknown_order_column_names_the_columns() {
        let mut session = Session::default();
        let Reply::Error(e) = answer("select * from digests order by nope", &Fake, &mut session)
        else {
            panic!()
        };
        assert_eq!(e.code(), 1054);
        assert_eq!(
            e.to_string(),
            "Unknown column 'nope' in 'order clause': digests has the columns digest, count"
        );
    }

    #[test]
    fn status_and_connect_queries() {
        assert_eq!(
            rows("SHOW STATUS LIKE 'conn%'"),
            [
                [Some("connections_active".into()), Some("2".into())],
                [Some("connections_total".into()), Some("9".into())]
            ]
        );
        assert_eq!(
            rows("select @@version_comment limit 1"),
            [[Some(VERSION_COMMENT.to_string())]]
        );
        let mut session = Session::default();
        assert_eq!(
            answer("select database()", &Fake, &mut session),
            Reply::Rows(Table {
                columns: vec![Column::new("database()", ColumnKind::Text)],
                rows: vec![vec![Value::Null]],
            })
        );
        assert_eq!(answer("use PSPROBE", &Fake, &mut session), Reply::Ok);
        assert_eq!(
            session.database.as_deref(),
            Some(DATABASE),
            "USE changes DATABASE()"
        );
        assert_eq!(
            first_column("show tables"),
            ["digests", "phases", "overhead"]
        );
        assert_eq!(first_column("show databases"), ["psprobe"]);
        assert!(matches!(
            answer("select @@nope", &Fake, &mut session),
            Reply::Error(QueryError::UnknownVariable(_))
        ));
    }
}
