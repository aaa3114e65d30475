//! The SQL the admin interface understands: a tiny, case-insensitive subset, parsed by hand.
//!
//! - `SELECT * | col, ... FROM [psprobe.]digests|phases|overhead [WHERE col = value | col LIKE
//!   'pattern'] [ORDER BY col [ASC|DESC], ...] [LIMIT n | LIMIT offset, n | LIMIT n OFFSET m]`
//! - `SHOW [GLOBAL|SESSION] STATUS [LIKE 'pattern']`, `SHOW DATABASES`, `SHOW TABLES`
//! - what clients send on connect: `SELECT @@version_comment LIMIT 1`, `SELECT DATABASE()`,
//!   `SET ...` (accepted, ignored), `USE psprobe`.

use std::fmt;

/// The one database the admin interface has.
pub const DATABASE: &str = "psprobe";

/// What the admin interface supports, for error messages.
pub const SUPPORTED: &str = "supported: SELECT * FROM digests|phases|overhead \
     [WHERE col = value] [ORDER BY col [ASC|DESC]] [LIMIT n]; SHOW STATUS [LIKE 'pattern']; \
     SHOW TABLES; SHOW DATABASES";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TableName {
    Digests,
    Phases,
    Overhead,
}

impl TableName {
    pub const ALL: [TableName; 3] = [TableName::Digests, TableName::Phases, TableName::Overhead];

    pub fn name(self) -> &'static str {
        match self {
            TableName::Digests => "digests",
            TableName::Phases => "phases",
            TableName::Overhead => "overhead",
        }
    }

    fn parse(name: &str) -> Option<TableName> {
        TableName::ALL
            .into_iter()
            .find(|t| t.name().eq_ignore_ascii_case(name))
    }
}

/// A literal in a WHERE clause or a select list.
#[derive(Debug, Clone, PartialEq)]
pub enum Literal {
    Null,
    Number(String),
    Text(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FilterOp {
    Eq,
    NotEq,
    Like,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Filter {
    pub column: String,
    pub op: FilterOp,
    pub value: Literal,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrderBy {
    pub column: String,
    pub descending: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Limit {
    pub offset: u64,
    pub count: u64,
}

/// One item of a select list without FROM.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    /// `@@name` (a `global.` / `session.` prefix is dropped from `name`).
    Variable {
        name: String,
        label: String,
    },
    /// `NAME()`, name uppercased.
    Function {
        name: String,
        label: String,
    },
    Literal {
        value: Literal,
        label: String,
    },
}

impl Expr {
    /// The column name MySQL gives it: the expression as written.
    pub fn label(&self) -> &str {
        match self {
            Expr::Variable { label, .. }
            | Expr::Function { label, .. }
            | Expr::Literal { label, .. } => label,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Statement {
    /// `SELECT ... FROM table ...`; `columns` is `None` for `*`.
    Select {
        table: TableName,
        columns: Option<Vec<String>>,
        filter: Option<Filter>,
        order: Vec<OrderBy>,
        limit: Option<Limit>,
    },
    /// `SELECT @@version_comment LIMIT 1` and the like.
    SelectExprs {
        exprs: Vec<Expr>,
        limit: Option<Limit>,
    },
    ShowStatus {
        like: Option<String>,
    },
    ShowDatabases {
        like: Option<String>,
    },
    ShowTables {
        like: Option<String>,
    },
    /// Any `SET ...`: accepted and ignored.
    Set,
    Use(String),
}

/// Why a statement is refused (the server turns this into an ERR packet).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QueryError {
    Empty,
    /// Not in the supported subset (1064).
    Unsupported(String),
    /// A table other than the three (1146).
    NoSuchTable(String),
    /// An unknown column in the select list, WHERE or ORDER BY (1054).
    UnknownColumn {
        column: String,
        clause: &'static str,
        table: &'static str,
        columns: String,
    },
    /// `SELECT @@x` for a variable the admin interface does not have (1193).
    UnknownVariable(String),
    /// `USE x` for another database (1049).
    UnknownDatabase(String),
}

impl QueryError {
    /// The MySQL error code.
    pub fn code(&self) -> u16 {
        match self {
            QueryError::Empty => 1065,
            QueryError::Unsupported(_) => 1064,
            QueryError::NoSuchTable(_) => 1146,
            QueryError::UnknownColumn { .. } => 1054,
            QueryError::UnknownVariable(_) => 1193,
            QueryError::UnknownDatabase(_) => 1049,
        }
    }
}

impl fmt::Display for QueryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            QueryError::Empty => write!(f, "Query was empty; psprobe admin {SUPPORTED}"),
            QueryError::Unsupported(what) => {
                write!(f, "psprobe admin does not support {what}; {SUPPORTED}")
            }
            QueryError::NoSuchTable(name) => write!(
                f,
                "Table '{name}' doesn't exist: psprobe admin has the tables digests, phases, \
                 overhead"
            ),
            QueryError::UnknownColumn {
                column,
                clause,
                table,
                columns,
            } => write!(
                f,
                "Unknown column '{column}' in '{clause}': {table} has the columns {columns}"
            ),
            QueryError::UnknownVariable(name) => write!(
                f,
                "Unknown system variable '{name}': psprobe admin has @@version_comment, \
                 @@version, @@max_allowed_packet, @@character_set_*, @@collation_*"
            ),
            QueryError::UnknownDatabase(name) => write!(
                f,
                "Unknown database '{name}': psprobe admin has one database, {DATABASE}"
            ),
        }
    }
}

impl std::error::Error for QueryError {}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    /// Identifier or keyword, as written.
    Word(String),
    /// `` `identifier` ``.
    Quoted(String),
    Str(String),
    Number(String),
    /// `@@name` or `@@global.name`, without the `@@`.
    Variable(String),
    Symbol(&'static str),
}

impl Token {
    fn describe(&self) -> String {
        match self {
            Token::Word(w) => format!("'{w}'"),
            Token::Quoted(w) => format!("'`{w}`'"),
            Token::Str(s) => format!("the string '{s}'"),
            Token::Number(n) => format!("'{n}'"),
            Token::Variable(v) => format!("'@@{v}'"),
            Token::Symbol(s) => format!("'{s}'"),
        }
    }
}

const SYMBOLS: [&str; 11] = ["<>", "!=", "*", ",", "=", "(", ")", ";", ".", "-", "+"];

fn tokenize(sql: &str) -> Result<Vec<Token>, QueryError> {
    let mut tokens = Vec::new();
    let chars: Vec<char> = sql.chars().collect();
    let mut i = 0;
    let unsupported = |what: String| QueryError::Unsupported(what);
    while i < chars.len() {
        let c = chars[i];
        let rest: String = chars[i..chars.len().min(i + 2)].iter().collect();
        if c.is_whitespace() {
            i += 1;
        } else if rest == "/*" {
            let end = (i + 2..chars.len().saturating_sub(1))
                .find(|&j| chars[j] == '*' && chars[j + 1] == '/')
                .ok_or_else(|| unsupported("an unterminated comment".into()))?;
            i = end + 2;
        } else if c == '#' || (rest == "--" && chars.get(i + 2).is_none_or(|c| c.is_whitespace())) {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '\'' || c == '"' || c == '`' {
            let mut text = String::new();
            i += 1;
            loop {
                let Some(&ch) = chars.get(i) else {
                    return Err(unsupported(format!("an unterminated {c}quote{c}")));
                };
                i += 1;
                if ch == c {
                    if chars.get(i) == Some(&c) {
                        text.push(c);
                        i += 1;
                        continue;
                    }
                    break;
                }
                if ch == '\\' && c != '`' {
                    if let Some(&next) = chars.get(i) {
                        if next == '%' || next == '_' {
                            // Kept so LIKE patterns can escape % and _.
                            text.push('\\');
                        }
                        text.push(match next {
                            'n' => '\n',
                            't' => '\t',
                            '0' => '\0',
                            other => other,
                        });
                        i += 1;
                        continue;
                    }
                }
                text.push(ch);
            }
            tokens.push(if c == '`' {
                Token::Quoted(text)
            } else {
                Token::Str(text)
            });
        } else if rest == "@@" {
            let start = i + 2;
            i = start;
            while i < chars.len() && (chars[i].is_alphanumeric() || "_.$".contains(chars[i])) {
                i += 1;
            }
            let name: String = chars[start..i].iter().collect();
            if name.is_empty() {
                return Err(unsupported("'@@' without a variable name".into()));
            }
            tokens.push(Token::Variable(name));
        } else if c.is_ascii_digit() {
            let start = i;
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '.') {
                i += 1;
            }
            tokens.push(Token::Number(chars[start..i].iter().collect()));
        } else if c.is_alphabetic() || c == '_' || c == '$' {
            let start = i;
            while i < chars.len()
                && (chars[i].is_alphanumeric() || chars[i] == '_' || chars[i] == '$')
            {
                i += 1;
            }
            tokens.push(Token::Word(chars[start..i].iter().collect()));
        } else if let Some(symbol) = SYMBOLS.iter().find(|s| {
            let s: Vec<char> = s.chars().collect();
            chars[i..].starts_with(&s)
        }) {
            i += symbol.chars().count();
            tokens.push(Token::Symbol(symbol));
        } else {
            return Err(unsupported(format!("the character '{c}'")));
        }
    }
    Ok(tokens)
}

struct Parser {
    tokens: Vec<Token>,
    pos: usize,
}

/// Shortens a statement for an error message.
fn excerpt(sql: &str) -> String {
    const MAX: usize = 60;
    let sql = sql.split_whitespace().collect::<Vec<_>>().join(" ");
    if sql.chars().count() > MAX {
        format!("{}...", sql.chars().take(MAX).collect::<String>())
    } else {
        sql
    }
}

impl Parser {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.pos)
    }

    fn next(&mut self) -> Option<Token> {
        let token = self.tokens.get(self.pos).cloned();
        self.pos += 1;
        token
    }

    fn peek_keyword(&self, keyword: &str) -> bool {
        matches!(self.peek(), Some(Token::Word(w)) if w.eq_ignore_ascii_case(keyword))
    }

    fn keyword(&mut self, keyword: &str) -> bool {
        let found = self.peek_keyword(keyword);
        if found {
            self.pos += 1;
        }
        found
    }

    fn symbol(&mut self, symbol: &str) -> bool {
        let found = matches!(self.peek(), Some(Token::Symbol(s)) if *s == symbol);
        if found {
            self.pos += 1;
        }
        found
    }

    fn unexpected(&self, context: &str) -> QueryError {
        QueryError::Unsupported(match self.peek() {
            Some(token) => format!("{} {context}", token.describe()),
            None => format!("the end of the statement {context}"),
        })
    }

    fn expect_keyword(&mut self, keyword: &str, context: &str) -> Result<(), QueryError> {
        if self.keyword(keyword) {
            Ok(())
        } else {
            Err(self.unexpected(&format!("{context} (expected {keyword})")))
        }
    }

    fn identifier(&mut self, context: &str) -> Result<String, QueryError> {
        match self.peek() {
            Some(Token::Word(w)) | Some(Token::Quoted(w)) => {
                let w = w.clone();
                self.pos += 1;
                Ok(w)
            }
            _ => Err(self.unexpected(&format!("{context} (expected a name)"))),
        }
    }

    fn number(&mut self, context: &str) -> Result<u64, QueryError> {
        match self.peek() {
            Some(Token::Number(n)) => {
                let n = n
                    .parse()
                    .map_err(|_| QueryError::Unsupported(format!("'{n}' {context}")))?;
                self.pos += 1;
                Ok(n)
            }
            _ => Err(self.unexpected(&format!("{context} (expected a number)"))),
        }
    }

    fn string(&mut self, context: &str) -> Result<String, QueryError> {
        match self.peek() {
            Some(Token::Str(s)) => {
                let s = s.clone();
                self.pos += 1;
                Ok(s)
            }
            _ => Err(self.unexpected(&format!("{context} (expected a quoted string)"))),
        }
    }

    fn literal(&mut self, context: &str) -> Result<Literal, QueryError> {
        let negative = self.symbol("-");
        if !negative {
            self.symbol("+");
        }
        match self.peek().cloned() {
            Some(Token::Number(n)) => {
                self.pos += 1;
                Ok(Literal::Number(if negative { format!("-{n}") } else { n }))
            }
            Some(Token::Str(s)) if !negative => {
                self.pos += 1;
                Ok(Literal::Text(s))
            }
            Some(Token::Word(w)) if !negative && w.eq_ignore_ascii_case("null") => {
                self.pos += 1;
                Ok(Literal::Null)
            }
            _ => Err(self.unexpected(&format!("{context} (expected a value)"))),
        }
    }

    /// Optional trailing `;`, then nothing.
    fn end(&mut self) -> Result<(), QueryError> {
        while self.symbol(";") {}
        match self.peek() {
            None => Ok(()),
            Some(_) => Err(self.unexpected("here")),
        }
    }

    fn like(&mut self) -> Result<Option<String>, QueryError> {
        if self.keyword("like") {
            Ok(Some(self.string("after LIKE")?))
        } else {
            Ok(None)
        }
    }

    fn limit(&mut self) -> Result<Option<Limit>, QueryError> {
        if !self.keyword("limit") {
            return Ok(None);
        }
        let first = self.number("after LIMIT")?;
        if self.symbol(",") {
            let count = self.number("after LIMIT offset,")?;
            return Ok(Some(Limit {
                offset: first,
                count,
            }));
        }
        let offset = if self.keyword("offset") {
            self.number("after OFFSET")?
        } else {
            0
        };
        Ok(Some(Limit {
            offset,
            count: first,
        }))
    }

    fn statement(&mut self, sql: &str) -> Result<Statement, QueryError> {
        let statement = match self.next() {
            None => return Err(QueryError::Empty),
            Some(Token::Word(w)) if w.eq_ignore_ascii_case("select") => self.select()?,
            Some(Token::Word(w)) if w.eq_ignore_ascii_case("show") => self.show(sql)?,
            Some(Token::Word(w)) if w.eq_ignore_ascii_case("set") => {
                // Session settings clients send on connect; nothing to change here.
                self.pos = self.tokens.len();
                Statement::Set
            }
            Some(Token::Word(w)) if w.eq_ignore_ascii_case("use") => {
                Statement::Use(self.identifier("after USE")?)
            }
            Some(_) => {
                return Err(QueryError::Unsupported(format!(
                    "the statement '{}'",
                    excerpt(sql)
                )))
            }
        };
        self.end()?;
        Ok(statement)
    }

    fn show(&mut self, sql: &str) -> Result<Statement, QueryError> {
        let scope = self.keyword("global") || self.keyword("session");
        if self.keyword("status") {
            return Ok(Statement::ShowStatus { like: self.like()? });
        }
        if !scope {
            if self.keyword("databases") || self.keyword("schemas") {
                return Ok(Statement::ShowDatabases { like: self.like()? });
            }
            self.keyword("full");
            if self.keyword("tables") {
                if self.keyword("from") || self.keyword("in") {
                    let database = self.identifier("after SHOW TABLES FROM")?;
                    if !database.eq_ignore_ascii_case(DATABASE) {
                        return Err(QueryError::UnknownDatabase(database));
                    }
                }
                return Ok(Statement::ShowTables { like: self.like()? });
            }
        }
        Err(QueryError::Unsupported(format!(
            "the statement '{}'",
            excerpt(sql)
        )))
    }

    /// Table name, optionally qualified by the database.
    fn table(&mut self) -> Result<TableName, QueryError> {
        let first = self.identifier("after FROM")?;
        let (database, name) = if self.symbol(".") {
            (Some(first), self.identifier("after the database name")?)
        } else {
            (None, first)
        };
        let qualified = match &database {
            Some(db) => format!("{db}.{name}"),
            None => format!("{DATABASE}.{name}"),
        };
        if database
            .as_deref()
            .is_some_and(|db| !db.eq_ignore_ascii_case(DATABASE))
        {
            return Err(QueryError::NoSuchTable(qualified));
        }
        TableName::parse(&name).ok_or(QueryError::NoSuchTable(qualified))
    }

    fn select(&mut self) -> Result<Statement, QueryError> {
        if self.symbol("*") {
            self.expect_keyword("from", "after SELECT *")?;
            return self.select_from(None);
        }
        let mut items = Vec::new();
        loop {
            items.push(self.select_item()?);
            if !self.symbol(",") {
                break;
            }
        }
        if self.keyword("from") {
            let columns = items
                .into_iter()
                .map(|item| match item {
                    SelectItem::Column(c) => Ok(c),
                    SelectItem::Expr(e) => Err(QueryError::Unsupported(format!(
                        "'{}' in a select list with FROM (only column names)",
                        e.label()
                    ))),
                })
                .collect::<Result<Vec<_>, _>>()?;
            return self.select_from(Some(columns));
        }
        let exprs = items
            .into_iter()
            .map(|item| match item {
                SelectItem::Expr(e) => Ok(e),
                SelectItem::Column(c) => Err(QueryError::Unsupported(format!(
                    "the column '{c}' without FROM"
                ))),
            })
            .collect::<Result<Vec<_>, _>>()?;
        let limit = self.limit()?;
        Ok(Statement::SelectExprs { exprs, limit })
    }

    fn select_item(&mut self) -> Result<SelectItem, QueryError> {
        match self.peek().cloned() {
            Some(Token::Variable(name)) => {
                self.pos += 1;
                let lower = name.to_ascii_lowercase();
                let bare = lower
                    .strip_prefix("global.")
                    .or_else(|| lower.strip_prefix("session."))
                    .or_else(|| lower.strip_prefix("local."))
                    .unwrap_or(&lower)
                    .to_string();
                Ok(SelectItem::Expr(Expr::Variable {
                    name: bare,
                    label: format!("@@{name}"),
                }))
            }
            Some(Token::Word(w))
                if matches!(self.tokens.get(self.pos + 1), Some(Token::Symbol("("))) =>
            {
                self.pos += 2;
                if !self.symbol(")") {
                    return Err(self.unexpected(&format!("in {w}() (no arguments supported)")));
                }
                Ok(SelectItem::Expr(Expr::Function {
                    name: w.to_ascii_uppercase(),
                    label: format!("{w}()"),
                }))
            }
            Some(Token::Word(w)) if w.eq_ignore_ascii_case("null") => {
                self.pos += 1;
                Ok(SelectItem::Expr(Expr::Literal {
                    value: Literal::Null,
                    label: "NULL".into(),
                }))
            }
            Some(Token::Word(_)) | Some(Token::Quoted(_)) => {
                Ok(SelectItem::Column(self.identifier("in the select list")?))
            }
            Some(Token::Number(_)) | Some(Token::Str(_)) | Some(Token::Symbol("-")) => {
                let value = self.literal("in the select list")?;
                let label = match &value {
                    Literal::Null => "NULL".to_string(),
                    Literal::Number(n) | Literal::Text(n) => n.clone(),
                };
                Ok(SelectItem::Expr(Expr::Literal { value, label }))
            }
            _ => Err(self.unexpected("in the select list")),
        }
    }

    fn select_from(&mut self, columns: Option<Vec<String>>) -> Result<Statement, QueryError> {
        let table = self.table()?;
        let filter = if self.keyword("where") {
            let column = self.identifier("after WHERE")?;
            let op = if self.symbol("=") {
                FilterOp::Eq
            } else if self.symbol("!=") || self.symbol("<>") {
                FilterOp::NotEq
            } else if self.keyword("like") {
                FilterOp::Like
            } else {
                return Err(self.unexpected("after the WHERE column (expected =, != or LIKE)"));
            };
            let value = self.literal("in WHERE")?;
            if self.peek_keyword("and") || self.peek_keyword("or") {
                return Err(self.unexpected("(one WHERE condition only)"));
            }
            Some(Filter { column, op, value })
        } else {
            None
        };
        let mut order = Vec::new();
        if self.keyword("order") {
            self.expect_keyword("by", "after ORDER")?;
            loop {
                let column = self.identifier("after ORDER BY")?;
                let descending = if self.keyword("desc") {
                    true
                } else {
                    self.keyword("asc");
                    false
                };
                order.push(OrderBy { column, descending });
                if !self.symbol(",") {
                    break;
                }
            }
        }
        let limit = self.limit()?;
        Ok(Statement::Select {
            table,
            columns,
            filter,
            order,
            limit,
        })
    }
}

enum SelectItem {
    Column(String),
    Expr(Expr),
}

/// Parses one statement of the supported subset.
pub fn parse(sql: &str) -> Result<Statement, QueryError> {
    let tokens = tokenize(sql)?;
    Parser { tokens, pos: 0 }.statement(sql)
}

/// SQL `LIKE`: `%` any run, `_` one character, `\` escapes; case-insensitive like MySQL's
/// default collations.
pub fn like_matches(pattern: &str, text: &str) -> bool {
    let pattern: Vec<char> = pattern.to_lowercase().chars().collect();
    let text: Vec<char> = text.to_lowercase().chars().collect();
    like_at(&pattern, &text)
}

fn like_at(pattern: &[char], text: &[char]) -> bool {
    match pattern.first() {
        None => text.is_empty(),
        Some('%') => (0..=text.len()).any(|skip| like_at(&pattern[1..], &text[skip..])),
        Some('_') => !text.is_empty() && like_at(&pattern[1..], &text[1..]),
        Some('\\') if pattern.len() > 1 => {
            text.first() == Some(&pattern[1]) && like_at(&pattern[2..], &text[1..])
        }
        Some(c) => text.first() == Some(c) && like_at(&pattern[1..], &text[1..]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn select(sql: &str) -> (TableName, Vec<OrderBy>, Option<Limit>) {
        match parse(sql) {
            Ok(Statement::Select {
                table,
                order,
                limit,
                ..
            }) => (table, order, limit),
            other => panic!("{sql}: {other:?}"),
        }
    }

    #[test]
    fn select_star_with_order_and_limit() {
        assert_eq!(
            select("SELECT * FROM digests"),
            (TableName::Digests, vec![], None)
        );
        assert_eq!(
            select("  select *\n from `Phases` ;; "),
            (TableName::Phases, vec![], None)
        );
        assert_eq!(
            select("SELECT * FROM psprobe.overhead ORDER BY change_pct DESC, scenario LIMIT 5;"),
            (
                TableName::Overhead,
                vec![
                    OrderBy {
                        column: "change_pct".into(),
                        descending: true
                    },
                    OrderBy {
                        column: "scenario".into(),
                        descending: false
                    }
                ],
                Some(Limit {
                    offset: 0,
                    count: 5
                })
            )
        );
        assert_eq!(
            select("select * from digests order by count asc limit 10, 3").2,
            Some(Limit {
                offset: 10,
                count: 3
            })
        );
        assert_eq!(
            select("select * from digests limit 3 offset 10").2,
            Some(Limit {
                offset: 10,
                count: 3
            })
        );
    }

    #[test]
    fn where_and_column_lists() {
        assert_eq!(
            parse("SELECT scenario, `count` FROM digests WHERE scenario = 'pfs_on' -- c\n"),
            Ok(Statement::Select {
                table: TableName::Digests,
                columns: Some(vec!["scenario".into(), "count".into()]),
                filter: Some(Filter {
                    column: "scenario".into(),
                    op: FilterOp::Eq,
                    value: Literal::Text("pfs_on".into())
                }),
                order: vec![],
                limit: None,
            })
        );
        let Ok(Statement::Select { filter, .. }) =
            parse("select * from phases where block <> -2 /* x */")
        else {
            panic!()
        };
        assert_eq!(
            filter,
            Some(Filter {
                column: "block".into(),
                op: FilterOp::NotEq,
                value: Literal::Number("-2".into())
            })
        );
    }

    #[test]
    fn show_and_connect_statements() {
        assert_eq!(
            parse("SHOW STATUS"),
            Ok(Statement::ShowStatus { like: None })
        );
        assert_eq!(
            parse("show global status like 'conn%';"),
            Ok(Statement::ShowStatus {
                like: Some("conn%".into())
            })
        );
        assert_eq!(
            parse("SHOW DATABASES"),
            Ok(Statement::ShowDatabases { like: None })
        );
        assert_eq!(
            parse("show full tables from psprobe"),
            Ok(Statement::ShowTables { like: None })
        );
        assert_eq!(
            parse("select @@version_comment limit 1"),
            Ok(Statement::SelectExprs {
                exprs: vec![Expr::Variable {
                    name: "version_comment".into(),
                    label: "@@version_comment".into()
                }],
                limit: Some(Limit {
                    offset: 0,
                    count: 1
                })
            })
        );
        assert_eq!(
            parse("SELECT DATABASE(), user()"),
            Ok(Statement::SelectExprs {
                exprs: vec![
                    Expr::Function {
                        name: "DATABASE".into(),
                        label: "DATABASE()".into()
                    },
                    Expr::Function {
                        name: "USER".into(),
                        label: "user()".into()
                    }
                ],
                limit: None
            })
        );
        assert_eq!(parse("SET NAMES utf8mb4"), Ok(Statement::Set));
        assert_eq!(parse("set autocommit=1;"), Ok(Statement::Set));
        assert_eq!(parse("Use `psprobe`"), Ok(Statement::Use("psprobe".into())));
    }

    #[test]
    fn refusals_name_what_is_supported() {
        let err = parse("DROP TABLE digests").unwrap_err();
        assert_eq!(err.code(), 1064);
        let text = err.to_string();
        assert!(text.contains("'DROP TABLE digests'"), "{text}");
        assert!(
            text.contains("SELECT * FROM digests|phases|overhead"),
            "{text}"
        );

        let err = parse("SELECT * FROM mysql.user").unwrap_err();
        assert_eq!(err, QueryError::NoSuchTable("mysql.user".into()));
        assert_eq!(err.code(), 1146);
        assert!(err.to_string().contains("digests, phases, overhead"));

        assert_eq!(
            parse("select * from users").unwrap_err(),
            QueryError::NoSuchTable("psprobe.users".into())
        );
        assert_eq!(parse(" ; ").unwrap_err().code(), 1064);
        assert_eq!(parse("").unwrap_err(), QueryError::Empty);
        assert_eq!(
            parse("select * from digests limit x").unwrap_err().code(),
            1064
        );
        assert_eq!(
            parse("select * from digests where a = 1 and b = 2")
                .unwrap_err()
                .code(),
            1064
        );
        assert_eq!(parse("select * from digests x").unwrap_err().code(), 1064);
        assert_eq!(parse("select 'abc").unwrap_err().code(), 1064);
        assert_eq!(parse("SHOW VARIABLES").unwrap_err().code(), 1064);
        assert_eq!(
            parse("show tables from mysql").unwrap_err(),
            QueryError::UnknownDatabase("mysql".into())
        );
    }

    #[test]
    fn like_patterns() {
        assert!(like_matches("conn%", "connections_active"));
        assert!(like_matches("CONN%", "connections_active"));
        assert!(like_matches("%_total", "commands_total"));
        assert!(like_matches("uptime_second_", "uptime_seconds"));
        assert!(!like_matches("conn", "connections_active"));
        assert!(like_matches("a\\_b", "a_b"));
        assert!(!like_matches("a\\_b", "axb"));
        assert!(like_matches("%", ""));
    }

    #[test]
    fn escapes_in_strings() {
        assert_eq!(
            parse(r"show status like 'a\_b%'"),
            Ok(Statement::ShowStatus {
                like: Some(r"a\_b%".into())
            })
        );
        let Ok(Statement::Select { filter, .. }) =
            parse("select * from digests where digest_text = 'it''s \\'x\\''")
        else {
            panic!()
        };
        assert_eq!(filter.unwrap().value, Literal::Text("it's 'x'".into()));
    }
}
