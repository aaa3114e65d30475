//! Splitting a text of several statements at `;`, the way the `mysql` client does it: a `;`
//! inside a quoted string, a backtick identifier or a comment does not end a statement.

use super::lex::{backtick_end, find2, is_dash_comment, memchr_nl, string_end};

/// The statements of `text`, separated by `;` outside strings, identifiers and comments, each
/// trimmed of surrounding whitespace; empty statements are left out. Never panics.
pub fn split_statements(text: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < text.len() {
        i = match text[i] {
            b'\'' | b'"' => string_end(text, i),
            b'`' => backtick_end(text, i),
            b'#' => memchr_nl(text, i),
            b'-' if is_dash_comment(text, i) => memchr_nl(text, i),
            b'/' if text.get(i + 1) == Some(&b'*') => {
                find2(text, i + 2, b'*', b'/').map_or(text.len(), |p| p + 2)
            }
            b';' => {
                push_trimmed(&mut out, &text[start..i]);
                start = i + 1;
                i + 1
            }
            _ => i + 1,
        };
    }
    push_trimmed(&mut out, &text[start..]);
    out
}

fn push_trimmed<'a>(out: &mut Vec<&'a [u8]>, statement: &'a [u8]) {
    let statement = statement.trim_ascii();
    if !statement.is_empty() {
        out.push(statement);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(text: &str) -> Vec<String> {
        split_statements(text.as_bytes())
            .into_iter()
            .map(|s| String::from_utf8(s.to_vec()).unwrap())
            .collect()
    }

    #[test]
    fn splits_outside_strings_and_comments() {
        assert_eq!(split("select 1; select 2;"), ["select 1", "select 2"]);
        assert_eq!(
            split("select ';', \";\", `a;b` from t;\n-- x; y\nselect 3 /* ; */;# ;\n"),
            [
                "select ';', \";\", `a;b` from t",
                "-- x; y\nselect 3 /* ; */",
                "# ;"
            ]
        );
        assert_eq!(
            split("select 'it\\'s;'; select 'a''b;'"),
            ["select 'it\\'s;'", "select 'a''b;'"]
        );
        assert_eq!(split(" ;; \n ; "), Vec::<String>::new());
        assert_eq!(split("select 5--3; select 4"), ["select 5--3", "select 4"]);
        assert_eq!(
            split("select 'unterminated; select 2"),
            ["select 'unterminated; select 2"]
        );
    }
}
