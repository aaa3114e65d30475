//! Row selections in the setup tables: SQL LIKE patterns and exact names, matched here exactly as
//! the server matches them (case-insensitive, like the tables' utf8_general_ci NAME column), and
//! rendered as the SQL expression that sets ENABLED or TIMED.
//!
//! A pattern containing `%` is a LIKE pattern (`%` any run, `_` any one character); a pattern
//! without `%` is an exact name, so names like `events_statements_current` need no escaping.
//! The controller's session runs with `sql_mode = NO_BACKSLASH_ESCAPES`, so a backslash is an
//! ordinary character both in string literals and in LIKE; quotes are doubled.

use std::fmt;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NamePattern {
    Exact(String),
    Like(String),
}

impl NamePattern {
    pub fn parse(text: &str) -> Result<Self, String> {
        if text.is_empty() {
            return Err("empty pattern".into());
        }
        Ok(if text.contains('%') {
            NamePattern::Like(text.to_string())
        } else {
            NamePattern::Exact(text.to_string())
        })
    }

    pub fn as_str(&self) -> &str {
        match self {
            NamePattern::Exact(s) | NamePattern::Like(s) => s,
        }
    }

    pub fn matches(&self, name: &str) -> bool {
        match self {
            NamePattern::Exact(s) => s.eq_ignore_ascii_case(name),
            NamePattern::Like(p) => like(p, name),
        }
    }

    /// `%` alone: every row.
    pub fn is_everything(&self) -> bool {
        matches!(self, NamePattern::Like(p) if p.chars().all(|c| c == '%'))
    }
}

impl fmt::Display for NamePattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// SQL LIKE without an escape character, ASCII case-insensitive.
pub(crate) fn like(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().map(|c| c.to_ascii_lowercase()).collect();
    let t: Vec<char> = text.chars().map(|c| c.to_ascii_lowercase()).collect();
    let (mut pi, mut ti) = (0, 0);
    // Where to resume after the most recent '%': (pattern index after it, text index it took).
    let mut resume: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '_' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '%' {
            resume = Some((pi + 1, ti));
            pi += 1;
        } else if let Some((rp, rt)) = resume {
            // Let the last '%' swallow one more character and retry.
            pi = rp;
            ti = rt + 1;
            resume = Some((rp, rt + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == '%')
}

/// A string literal for the controller's session (NO_BACKSLASH_ESCAPES).
pub(crate) fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// Which rows of a setup table get YES: those matching any pattern; every other row gets NO.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Selection {
    pub patterns: Vec<NamePattern>,
}

impl Selection {
    pub fn none() -> Self {
        Selection::default()
    }

    pub fn all() -> Self {
        Selection {
            patterns: vec![NamePattern::Like("%".into())],
        }
    }

    pub fn parse<S: AsRef<str>>(texts: &[S]) -> Result<Self, String> {
        let patterns = texts
            .iter()
            .map(|t| NamePattern::parse(t.as_ref()))
            .collect::<Result<_, _>>()?;
        Ok(Selection { patterns })
    }

    pub fn matches(&self, name: &str) -> bool {
        self.patterns.iter().any(|p| p.matches(name))
    }

    pub fn is_everything(&self) -> bool {
        self.patterns.iter().any(NamePattern::is_everything)
    }

    /// `'YES'`, `'NO'`, or `if(name in (...) or name like '...', 'YES', 'NO')`.
    pub fn sql_value(&self) -> String {
        if self.is_everything() {
            return "'YES'".into();
        }
        if self.patterns.is_empty() {
            return "'NO'".into();
        }
        let exact: Vec<String> = self
            .patterns
            .iter()
            .filter_map(|p| match p {
                NamePattern::Exact(s) => Some(quote(s)),
                NamePattern::Like(_) => None,
            })
            .collect();
        let mut terms = Vec::new();
        if !exact.is_empty() {
            terms.push(format!("name in ({})", exact.join(",")));
        }
        for p in &self.patterns {
            if let NamePattern::Like(s) = p {
                terms.push(format!("name like {}", quote(s)));
            }
        }
        format!("if({}, 'YES', 'NO')", terms.join(" or "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn like_semantics() {
        assert!(like("statement/%", "statement/sql/select"));
        assert!(like("statement/%", "STATEMENT/sql/select"));
        assert!(!like("statement/%", "stage/sql/init"));
        assert!(!like("statement/%", "statement"));
        assert!(like("%", ""));
        assert!(like("%", "anything"));
        assert!(like("events_%_current", "events_waits_current"));
        assert!(like(
            "events_statements_%",
            "events_statements_history_long"
        ));
        assert!(like("a_c", "abc"));
        assert!(!like("a_c", "abbc"));
        assert!(like("%/sql/%", "wait/io/file/sql/FRM"));
        assert!(like("wait/%/sql/%", "wait/synch/mutex/sql/LOCK_open"));
        assert!(!like("wait/%/innodb/%", "wait/synch/mutex/sql/LOCK_open"));
        assert!(like("%a%b%c", "xxaxxbxxc"));
        assert!(!like("%a%b%c", "xxaxxcxxb"));
        assert!(like(
            "stage/sql/Waiting for %",
            "stage/sql/Waiting for table level lock"
        ));
        assert!(like(r"a\%", r"a\xyz"), "backslash is an ordinary character");
    }

    #[test]
    fn exact_vs_like() {
        let e = NamePattern::parse("statements_digest").unwrap();
        assert_eq!(e, NamePattern::Exact("statements_digest".into()));
        assert!(e.matches("STATEMENTS_DIGEST"));
        assert!(
            !e.matches("statementsXdigest"),
            "an exact name's _ is literal"
        );
        assert!(NamePattern::parse("events_%")
            .unwrap()
            .matches("events_waits_current"));
        assert!(NamePattern::parse("").is_err());
        assert!(NamePattern::parse("%%").unwrap().is_everything());
    }

    #[test]
    fn sql_values() {
        assert_eq!(Selection::none().sql_value(), "'NO'");
        assert_eq!(Selection::all().sql_value(), "'YES'");
        let s = Selection::parse(&["a", "b'c", "x/%"]).unwrap();
        assert_eq!(
            s.sql_value(),
            "if(name in ('a','b''c') or name like 'x/%', 'YES', 'NO')"
        );
        assert_eq!(
            Selection::parse(&["statement/%"]).unwrap().sql_value(),
            "if(name like 'statement/%', 'YES', 'NO')"
        );
    }
}
