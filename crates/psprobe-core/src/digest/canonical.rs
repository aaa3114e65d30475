//! `--digest-style mysql`: the fingerprint's spacing is derived from the token stream alone, the
//! way MySQL's statement digest is, so statements that differ only in spacing share a digest
//! (`WHERE id=1` and `WHERE id = 1` are both `where id = ?`).
//!
//! Tokens are those of [`super::lex`] after the rewrite passes (literals, lists, unions, limits
//! already normalized), with the punctuation bytes that MySQL's lexer reads as one operator
//! (`>=`, `<=>`, `:=`, `->>`, ...) joined again. Between two tokens there is one space, except:
//!
//! - none before `,` `)` `;`, none after `(`, none around `.` (qualified names), none after
//!   `@` (`@var`, `@@version`);
//! - none after a prefix operator (`-a`, `!a`, `~a`: a `-` or `+` where an operand is expected,
//!   as the lexer decides for signed literals);
//! - none between a name and `(` (`count(*)`, `t(a, b)`), but a space after the keywords in
//!   [`SPACE_BEFORE_PAREN`] (`where (a = ?)`, `in (select ...)`); a collapsed value list is
//!   always attached (`in(?+)`, `values(?+)`), as pt-fingerprint writes it;
//! - after `/*!`, `/*M!` and `/*+` the query's own spacing is kept: `/*!40001 x*/` (a version
//!   comment) and `/*! 40001 x*/` (a comment executing `40001 x`) are different statements.

use super::lex::{in_list, Kind, Synth, Tok, OPERAND_KEYWORDS};
use super::post::push_ident;

/// Operators that MySQL's lexer reads as one token, longest first.
const OPERATORS: &[&[u8]] = &[
    b"<=>", b"->>", b"<=", b">=", b"<>", b"!=", b":=", b"||", b"&&", b"<<", b">>", b"->",
];

/// Keywords followed by a space before `(`: the parenthesis opens an expression, a subquery or a
/// list, not the keyword's arguments. After any other word `(` is attached (a function call, a
/// column list).
pub(crate) const SPACE_BEFORE_PAREN: &[&[u8]] = &[
    b"all",
    b"and",
    b"any",
    b"as",
    b"between",
    b"by",
    b"case",
    b"distinct",
    b"div",
    b"else",
    b"elseif",
    b"escape",
    b"exists",
    b"from",
    b"having",
    b"in",
    b"interval",
    b"is",
    b"join",
    b"like",
    b"limit",
    b"not",
    b"on",
    b"or",
    b"over",
    b"regexp",
    b"return",
    b"rlike",
    b"select",
    b"set",
    b"some",
    b"then",
    b"union",
    b"until",
    b"using",
    b"value",
    b"values",
    b"when",
    b"where",
    b"while",
    b"with",
    b"xor",
];

/// What the spacing rules need to know about the previous emitted token.
#[derive(Clone, Copy, Debug)]
struct Unit {
    kind: Kind,
    /// First byte of a punctuation token.
    byte: u8,
    /// Tokens joined into this one (operators), else 1.
    len: usize,
    /// A word after which `(` keeps a space.
    spaced_paren: bool,
    /// A word after which a `-` / `+` is a sign.
    operand_keyword: bool,
    /// A prefix (unary) operator.
    prefix: bool,
}

impl Unit {
    fn is_punct(&self, c: u8) -> bool {
        self.kind == Kind::Punct && self.len == 1 && self.byte == c
    }
}

/// Number of punctuation tokens from `i` that form one MySQL operator (1 when none does).
fn operator_len(toks: &[Tok], i: usize, s: &[u8]) -> usize {
    'next: for op in OPERATORS {
        if i + op.len() > toks.len() {
            continue;
        }
        for (k, &c) in op.iter().enumerate() {
            let t = &toks[i + k];
            if t.kind != Kind::Punct || (k > 0 && t.space) || s[t.start as usize] != c {
                continue 'next;
            }
        }
        return op.len();
    }
    1
}

/// Is an operand expected after `prev` (so that `-` / `+` there is a sign)?
fn expects_operand(prev: Option<&Unit>) -> bool {
    match prev {
        None => true,
        Some(p) => match p.kind {
            Kind::Punct => p.prefix || !matches!(p.byte, b')' | b']' | b'}') || p.len > 1,
            Kind::Open => true,
            Kind::Word => p.operand_keyword,
            _ => false,
        },
    }
}

fn space_between(p: &Unit, u: &Unit, source_space: bool) -> bool {
    if u.kind == Kind::Punct && u.len == 1 && matches!(u.byte, b',' | b')' | b';' | b'.') {
        return false;
    }
    if p.is_punct(b'(') || p.is_punct(b'.') || p.is_punct(b'@') || p.prefix {
        return false;
    }
    if p.kind == Kind::Open {
        return source_space;
    }
    match u.kind {
        Kind::Synth(Synth::List) => !matches!(p.kind, Kind::Word | Kind::Quoted),
        Kind::Punct if u.is_punct(b'(') => match p.kind {
            Kind::Word => p.spaced_paren,
            Kind::Quoted => false,
            _ => true,
        },
        _ => true,
    }
}

/// Appends the canonical rendering of `toks` (over the input `s`) to `out`.
pub(crate) fn render(out: &mut Vec<u8>, toks: &[Tok], s: &[u8], fold: bool) {
    let mut prev: Option<Unit> = None;
    let mut i = 0;
    while i < toks.len() {
        let t = toks[i];
        let len = if t.kind == Kind::Punct {
            operator_len(toks, i, s)
        } else {
            1
        };
        let byte = if t.kind == Kind::Punct {
            s[t.start as usize]
        } else {
            0
        };
        let word = t.kind == Kind::Word;
        let unit = Unit {
            kind: t.kind,
            byte,
            len,
            spaced_paren: word && in_list(SPACE_BEFORE_PAREN, t.text(s)),
            operand_keyword: word && in_list(OPERAND_KEYWORDS, t.text(s)),
            prefix: t.kind == Kind::Punct
                && len == 1
                && match byte {
                    b'!' | b'~' => true,
                    b'-' | b'+' => expects_operand(prev.as_ref()),
                    _ => false,
                },
        };
        if let Some(p) = &prev {
            if space_between(p, &unit, t.space) {
                out.push(b' ');
            }
        }
        for t in &toks[i..i + len] {
            match t.kind {
                Kind::Word | Kind::Quoted => push_ident(out, t.text(s), fold),
                Kind::Value => out.push(b'?'),
                Kind::Synth(x) => out.extend_from_slice(x.text()),
                Kind::Punct | Kind::Open | Kind::Close => {
                    out.extend(t.text(s).iter().map(u8::to_ascii_lowercase))
                }
            }
        }
        prev = Some(unit);
        i += len;
    }
}

#[cfg(test)]
mod tests {
    use crate::digest::lex::{self, Kind};
    use crate::digest::{DigestStyle, FingerprintOptions, Fingerprinter};

    fn mysql(q: &str) -> String {
        let mut f = Fingerprinter::new(FingerprintOptions {
            style: DigestStyle::Mysql,
            ..Default::default()
        });
        String::from_utf8(f.fingerprint(q.as_bytes()).text().to_vec()).unwrap()
    }

    fn pt(q: &[u8]) -> Vec<u8> {
        Fingerprinter::default().fingerprint(q).text().to_vec()
    }

    #[test]
    fn operator_spacing_variants_share_a_fingerprint() {
        let groups: &[&[&str]] = &[
            &[
                "SELECT c FROM sbtest1 WHERE id=5012",
                "select c from sbtest1 where id = 1",
                "SELECT  c\nFROM sbtest1\tWHERE id =7",
            ],
            &[
                "UPDATE t SET k=k+1 WHERE id=5",
                "update t set k = k + 1 where id = 5",
            ],
            &[
                "select a>=1, b<=>2, c<>3, d!=4",
                "select a >= 1 , b <=> 2 , c <> 3 , d != 4",
            ],
            &[
                "SELECT * FROM t WHERE k IN (1,2,3)",
                "select * from t where k in(4, 5)",
            ],
            &[
                "select count(*) from t",
                "select count( * ) from t",
                "select COUNT (*) FROM t",
            ],
            &["select t.c, db.t.*", "select t . c , db . t . *"],
            &["set @a:=1", "set @a := 1"],
            &[
                "select doc->>'$.a', doc->'$.b' from t",
                "select doc ->> '$.x' , doc -> '$.y' from t",
            ],
            &["select -a, !b, ~c from t", "select - a, ! b, ~ c from t"],
            &["select a-b, a - -b", "select a - b, a--b"],
            &[
                "select * from t where (a=1 or b=2) and exists(select 1)",
                "select * from t where(a = 1 or b = 2)and exists (select 1)",
            ],
            &[
                "insert into t(a,b) values(1,2)",
                "INSERT INTO t (a, b) VALUES (1, 2), (3, 4)",
            ],
            &["select @@version, @x", "select @@version , @x"],
        ];
        for group in groups {
            let first = mysql(group[0]);
            for q in &group[1..] {
                assert_eq!(mysql(q), first, "{q:?} vs {:?}", group[0]);
            }
        }
    }

    #[test]
    fn canonical_texts() {
        let cases = [
            (
                "SELECT c FROM sbtest1 WHERE id=5012",
                "select c from sbtest1 where id = ?",
            ),
            (
                "SELECT SUM(k) FROM sbtest1 WHERE id BETWEEN 1 AND 9",
                "select sum(k) from sbtest1 where id between ? and ?",
            ),
            (
                "SELECT * FROM t WHERE k IN (1,2,3)",
                "select * from t where k in(?+)",
            ),
            (
                "select * from t where k in (select a from u)",
                "select * from t where k in (select a from u)",
            ),
            ("select a>=-1", "select a >= ?"),
            ("select -a, + b", "select -a, +b"),
            ("select a - b", "select a - b"),
            (
                "select `t`.`c` from `db`.`t`",
                "select `t`.`c` from `db`.`t`",
            ),
            (
                "SELECT /*!40001 SQL_NO_CACHE */ 1",
                "select /*!? sql_no_cache */ ?",
            ),
            (
                "SELECT /*+ MAX_EXECUTION_TIME(1000) */ a FROM t",
                "select /*+ max_execution_time(?) */ a from t",
            ),
            (
                "select a from t union select a from t",
                "select a from t /*repeat union*/",
            ),
            ("call p (1, 2)", "call p"),
            ("select 1; select 2", "select ?; select ?"),
            ("select a < > b", "select a < > b"),
        ];
        for (q, want) in cases {
            assert_eq!(mysql(q), want, "{q:?}");
        }
    }

    #[test]
    fn version_comment_spacing_is_kept() {
        // `/*!40001 x */` runs x on servers >= 4.0.1; `/*! 40001 x */` always runs `40001 x`.
        assert_ne!(
            mysql("select /*!40001 a */ 1"),
            mysql("select /*! 40001 a */ 1")
        );
    }

    /// The corpus statements with the whitespace around `=`, `,`, `(` and `)` removed, and
    /// with a space put on both sides of each, fingerprint alike under the mysql style
    /// (and, for most of them, not under pt's).
    #[test]
    fn corpus_spacing_variants_share_a_digest() {
        let corpus = include_bytes!("../../../../tests/data/fingerprint_corpus.sql");
        let mut toks = Vec::new();
        let (mut checked, mut pt_differs) = (0, 0);
        // Records end with `;` and a newline; `#` lines in front of one are annotations.
        let text = String::from_utf8_lossy(corpus);
        for record in text.split(";\n") {
            let q = record
                .lines()
                .skip_while(|l| l.starts_with('#') || l.is_empty())
                .collect::<Vec<_>>()
                .join("\n");
            let q = q.as_bytes();
            if q.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let special = pt(q);
            if special == b"mysqldump" || special == b"percona-toolkit" {
                continue;
            }
            lex::tokenize(q, &mut toks);
            if toks
                .iter()
                .any(|t| matches!(t.kind, Kind::Open | Kind::Close))
            {
                continue;
            }
            let safe = |c: u8| matches!(c, b'=' | b',' | b'(' | b')');
            let operator = |c: u8| b"<>!:=|&-+*/%^~@.".contains(&c);
            let (mut tight, mut loose) = (Vec::new(), Vec::new());
            for (k, t) in toks.iter().enumerate() {
                let text = &q[t.start as usize..(t.start + t.len) as usize];
                if k > 0 {
                    let a = toks[k - 1];
                    let (a0, b0) = (q[a.start as usize], text[0]);
                    let a_last = q[(a.start + a.len - 1) as usize];
                    let a_safe = a.kind == Kind::Punct && safe(a0);
                    let b_safe = t.kind == Kind::Punct && safe(b0);
                    // Never split or join multi-byte operators (`<=`, `:=`).
                    let joins_operator = (a_safe && b0 == b'=' && t.kind == Kind::Punct)
                        || (b_safe && b0 == b'=' && operator(a_last))
                        || (a_safe && a0 == b'=' && operator(b0));
                    let free = (a_safe || b_safe) && !joins_operator;
                    if free {
                        loose.push(b' ');
                    } else if t.space {
                        tight.push(b' ');
                        loose.push(b' ');
                    }
                }
                tight.extend_from_slice(text);
                loose.extend_from_slice(text);
            }
            assert_eq!(
                mysql_bytes(&tight),
                mysql_bytes(&loose),
                "{:?}",
                String::from_utf8_lossy(q)
            );
            assert_eq!(
                mysql_bytes(q),
                mysql_bytes(&loose),
                "{:?}",
                String::from_utf8_lossy(q)
            );
            checked += 1;
            pt_differs += usize::from(pt(&tight) != pt(&loose));
        }
        assert!(checked > 200, "{checked} statements checked");
        assert!(
            pt_differs > 100,
            "only {pt_differs} of {checked} differ under pt"
        );
    }

    fn mysql_bytes(q: &[u8]) -> Vec<u8> {
        let mut f = Fingerprinter::new(FingerprintOptions {
            style: DigestStyle::Mysql,
            ..Default::default()
        });
        f.fingerprint(q).text().to_vec()
    }
}
