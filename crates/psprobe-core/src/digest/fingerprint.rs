//! The [`Fingerprinter`]: tokenize, rewrite, render, hash.

use std::fmt;

use super::canonical;
use super::id::DigestId;
use super::lex::{self, Kind, Tok};
use super::post::{self, UnionScratch};
use super::style::DigestStyle;

/// Default [`FingerprintOptions::max_len`]: 64 KiB.
pub const DEFAULT_MAX_LEN: usize = 64 * 1024;

/// How a [`Fingerprinter`] normalizes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FingerprintOptions {
    /// Only the first `max_len` bytes of a query are looked at; the rest is ignored (so two
    /// queries that differ only past the cap share a fingerprint). Default 64 KiB. Values above
    /// `u32::MAX` are treated as `u32::MAX`.
    pub max_len: usize,
    /// `false` (default): identifiers are never altered except lowercasing, so `sbtest1` and
    /// `sbtest2` stay distinct. `true`: digits inside identifiers are folded exactly as
    /// pt-fingerprint folds them (`sbtest1` -> `sbtest?`), for reports comparable with
    /// pt-query-digest.
    pub fold_identifier_digits: bool,
    /// How the tokens are spaced in the fingerprint: [`DigestStyle::Pt`] (default) keeps the
    /// query's own spacing like pt-fingerprint; [`DigestStyle::Mysql`] derives one canonical
    /// spacing from the token stream, so `id=1` and `id = 1` share a digest.
    pub style: DigestStyle,
}

impl Default for FingerprintOptions {
    fn default() -> Self {
        FingerprintOptions {
            max_len: DEFAULT_MAX_LEN,
            fold_identifier_digits: false,
            style: DigestStyle::Pt,
        }
    }
}

/// A fingerprint: the normalized query text (borrowed from the [`Fingerprinter`]) and its id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fingerprint<'a> {
    text: &'a [u8],
    id: DigestId,
}

impl<'a> Fingerprint<'a> {
    /// The normalized bytes. Not necessarily UTF-8 (it is whatever the query was, lowercased).
    pub fn text(&self) -> &'a [u8] {
        self.text
    }

    /// The digest id: the pt-query-digest query ID of [`Fingerprint::text`].
    pub fn id(&self) -> DigestId {
        self.id
    }
}

/// The text, with invalid UTF-8 replaced by U+FFFD.
impl fmt::Display for Fingerprint<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&String::from_utf8_lossy(self.text), f)
    }
}

/// Computes fingerprints. Owns reusable buffers: after the first few calls (once they have
/// grown to the largest query seen) fingerprinting allocates nothing. One per thread or
/// session; cheap to create.
#[derive(Clone, Debug, Default)]
pub struct Fingerprinter {
    opts: FingerprintOptions,
    toks: Vec<Tok>,
    unions: UnionScratch,
    out: Vec<u8>,
}

const MYSQLDUMP_PREFIX: &[u8] = b"SELECT /*!40001 SQL_NO_CACHE */ * FROM `";
const ADMIN_PREFIX: &[u8] = b"administrator command: ";

impl Fingerprinter {
    /// A fingerprinter with the given options.
    pub fn new(opts: FingerprintOptions) -> Self {
        Fingerprinter {
            opts,
            ..Default::default()
        }
    }

    /// The options this fingerprinter was made with.
    pub fn options(&self) -> FingerprintOptions {
        self.opts
    }

    /// Fingerprints one statement (the text of a COM_QUERY or COM_STMT_PREPARE). Never panics,
    /// whatever the bytes; the result is at most about twice the (capped) input length.
    pub fn fingerprint(&mut self, sql: &[u8]) -> Fingerprint<'_> {
        let cap = self.opts.max_len.min(u32::MAX as usize);
        let s = &sql[..sql.len().min(cap)];
        self.normalize(s);
        Fingerprint {
            text: &self.out,
            id: DigestId::of_fingerprint(&self.out),
        }
    }

    fn normalize(&mut self, s: &[u8]) {
        self.out.clear();
        // pt-fingerprint's special cases, checked on the raw text as pt does.
        if s.starts_with(MYSQLDUMP_PREFIX) {
            self.out.extend_from_slice(b"mysqldump");
            return;
        }
        if post::has_pt_checksum_comment(s) {
            self.out.extend_from_slice(b"percona-toolkit");
            return;
        }
        if s.starts_with(ADMIN_PREFIX) {
            self.out.extend_from_slice(s);
            return;
        }

        let fold = self.opts.fold_identifier_digits;
        let canonical = self.opts.style == DigestStyle::Mysql;
        lex::tokenize(s, &mut self.toks);
        post::trim_semicolons(&mut self.toks, s);

        if let Some((end, paren)) = post::call_name(&self.toks, s) {
            // pt returns `call name` before any folding when a `(` follows the name directly.
            self.out.extend_from_slice(b"call ");
            let name = &self.toks[1..end];
            if canonical {
                canonical::render(&mut self.out, name, s, fold && !paren);
            } else {
                render(&mut self.out, name, s, fold && !paren);
            }
            return;
        }
        if post::is_use(&self.toks, s) {
            self.out.extend_from_slice(b"use ?");
            return;
        }

        post::cut_insert_rows(&mut self.toks, s);
        post::collapse_lists(&mut self.toks, s);
        post::collapse_unions(&mut self.toks, s, fold, canonical, &mut self.unions);
        post::collapse_limits(&mut self.toks, s);
        post::drop_asc(&mut self.toks, s);
        if canonical {
            canonical::render(&mut self.out, &self.toks, s, fold);
        } else {
            render(&mut self.out, &self.toks, s, fold);
        }
    }
}

/// Tokens to text: one space where the query had whitespace or a comment, everything
/// lowercased (ASCII only), values as `?`.
fn render(out: &mut Vec<u8>, toks: &[Tok], s: &[u8], fold: bool) {
    for (k, t) in toks.iter().enumerate() {
        if k > 0 && t.space {
            out.push(b' ');
        }
        match t.kind {
            Kind::Word | Kind::Quoted => post::push_ident(out, t.text(s), fold),
            Kind::Value => out.push(b'?'),
            Kind::Synth(x) => out.extend_from_slice(x.text()),
            Kind::Punct | Kind::Open | Kind::Close => {
                out.extend(t.text(s).iter().map(u8::to_ascii_lowercase))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fp(q: &str) -> String {
        let mut f = Fingerprinter::default();
        let r = f.fingerprint(q.as_bytes());
        String::from_utf8(r.text().to_vec()).unwrap()
    }

    fn fold(q: &str) -> String {
        let mut f = Fingerprinter::new(FingerprintOptions {
            fold_identifier_digits: true,
            ..Default::default()
        });
        let r = f.fingerprint(q.as_bytes());
        String::from_utf8(r.text().to_vec()).unwrap()
    }

    macro_rules! check {
        ($($q:expr => $want:expr),+ $(,)?) => {
            $( assert_eq!(fp($q), $want, "fingerprint of {:?}", $q); )+
        };
    }

    #[test]
    fn special_cases() {
        check! {
            "SELECT /*!40001 SQL_NO_CACHE */ * FROM `film`" => "mysqldump",
            "REPLACE /*foo.bar:3/3*/ INTO checksum.checksum SELECT 1" => "percona-toolkit",
            "administrator command: Init DB" => "administrator command: Init DB",
        }
    }

    #[test]
    fn call_keeps_only_the_name() {
        check! {
            "CALL foo(1, 2, 3)" => "call foo",
            "call Db.Proc1('a(b', 2)" => "call db.proc1",
            "call foo (1)" => "call foo",
            "call `My Proc`()" => "call `my proc`",
            "call foo" => "call foo",
            "  CALL foo()" => "call foo",
        }
        // pt does not fold digits in `call name(` ...
        assert_eq!(fold("call p1(1)"), "call p1");
        // ... but does through its general path when no paren follows.
        assert_eq!(fold("call p1"), "call p?");
    }

    #[test]
    fn use_abstracts_the_database() {
        check! {
            "use `foo`" => "use ?",
            "USE db1" => "use ?",
            "use  db" => "use ?",
            "use db;" => "use ?",
            "use db -- comment" => "use ?",
        }
    }

    #[test]
    fn multi_row_insert_keeps_first_row() {
        check! {
            "insert into foo(a, b, c) values(2, 4, 5) , (2,4,5)" => "insert into foo(a, b, c) values(?+)",
            "INSERT INTO t VALUES (now(), 1), (now(), 2)" => "insert into t values (now(), ?)",
            "insert low_priority into t values (now()),(now())" => "insert low_priority into t values (now())",
            "insert into t values (1),(2) on duplicate key update a=values(a)" =>
                "insert into t values(?+) on duplicate key update a=values(a)",
            "replace into t values ('a),(b', 1), ('c', 2)" => "replace into t values(?+)",
            // Cut off by the length cap in the middle of a row.
            "insert into t values (now(), 1), (now(), 2), (now(" => "insert into t values (now(), ?)",
        }
    }

    #[test]
    fn comments() {
        check! {
            "select \n-- bar\n foo" => "select foo",
            // `--` not followed by whitespace is two minus signs in MySQL, not a comment.
            "select \n--bar\n foo" => "select --bar foo",
            "select foo--bar\nfoo" => "select foo--bar foo",
            "select foo -- bar\n" => "select foo",
            "select 5--3" => "select ?-?",
            "select 5 -- 3" => "select ?",
            "select 1 --" => "select ?",
            "select 1 # hash comment\nfrom t" => "select ? from t",
            "select /* c */ 1" => "select ?",
            "select/*c*/1" => "select ?",
            "select /**/ 1 from t /* x */ where 2" => "select ? from t where ?",
            "/* leading */ select 1" => "select ?",
            "select 1 /* unterminated" => "select ?",
            "select /*!40001 SQL_NO_CACHE */ 1" => "select /*!? sql_no_cache */ ?",
            "select /*! STRAIGHT_JOIN */ a from t" => "select /*! straight_join */ a from t",
            "select /*M!100100 1 */ 2" => "select /*m!? ? */ ?",
        }
    }

    #[test]
    fn optimizer_hints_are_kept() {
        check! {
            "SELECT /*+ MAX_EXECUTION_TIME(1000) */ a FROM t" =>
                "select /*+ max_execution_time(?) */ a from t",
            "select /*+ INDEX(t1 idx1) */ * from t1" => "select /*+ index(t1 idx1) */ * from t1",
            "UPDATE /*+ NO_RANGE_OPTIMIZATION(t) */ t SET a=1" =>
                "update /*+ no_range_optimization(t) */ t set a=?",
            // Not after a statement keyword: an ordinary comment.
            "select a /*+ not a hint */ from t" => "select a from t",
        }
    }

    #[test]
    fn strings() {
        check! {
            "select 'hello', '\nhello\n', \"hello\", '\\'' from foo" => "select ?, ?, ?, ? from foo",
            "select 'a''b'" => "select ?",
            "select 'a\\\\' from foo" => "select ? from foo",
            "select 'it\\'s', \"say \"\"hi\"\"\"" => "select ?, ?",
            "select 'a\"b', \"c\"" => "select ?, ?",
            "select 'a' 'b' from t" => "select ? from t",
            "select 'unterminated" => "select ?",
            "select '#not a comment' from t" => "select ? from t",
            "select '-- nor this'" => "select ?",
        }
    }

    #[test]
    fn introducers_and_national_strings() {
        check! {
            "select _utf8mb4'abc'" => "select ?",
            "select _UTF8MB4 'abc' COLLATE utf8mb4_bin" => "select ? collate utf8mb4_bin",
            "select _binary 0xFF, _latin1 X'41'" => "select ?, ?",
            "select N'abc', n'x'" => "select ?, ?",
            "select _notacharset 'x'" => "select _notacharset ?",
            "select _utf8mb4" => "select _utf8mb4",
        }
    }

    #[test]
    fn hex_and_bit_literals() {
        check! {
            "select 0x0, x'123', 0b1010, b'10101' from foo" => "select ?, ?, ?, ? from foo",
            "select 0x1F, X'1F', B'1'" => "select ?, ?, ?",
            "select 0xZZ, 0x, 0b12 from t" => "select 0xzz, 0x, 0b12 from t",
        }
    }

    #[test]
    fn numbers() {
        check! {
            "select null, 5.001, 5001. from foo" => "select ?, ?, ? from foo",
            "select 0e0, +6e-30, -6.00 from foo where a = 5.5 or b=0.5 or c=.5" =>
                "select ?, ?, ? from foo where a = ? or b=? or c=?",
            "select 1.5e-10, 1E10, .5e+3" => "select ?, ?, ?",
            "SELECT * from foo where a = 5" => "select * from foo where a = ?",
            "select 123foo from 123foo" => "select 123foo from 123foo",
            "select t.1col from t" => "select t.1col from t",
        }
    }

    #[test]
    fn signs() {
        check! {
            "select a-b from t" => "select a-b from t",
            "select a - 5 from t" => "select a - ? from t",
            "select a-5, a - -5, -5, - 5 from t" => "select a-?, a - ?, ?, ? from t",
            "select * from t where x=-1 and y = -2.5 and z in (-1, +2)" =>
                "select * from t where x=? and y = ? and z in(?+)",
            "select 1+1, 1 + -1, (1)-1" => "select ?+?, ? + ?, (?)-?",
            "update t set k=k+1 where id=-?" => "update t set k=k+? where id=?",
            "select x from t where a between -5 and -1" => "select x from t where a between ? and ?",
            "select -a from t" => "select -a from t",
        }
    }

    #[test]
    fn identifiers_are_kept() {
        check! {
            "select foo_1 from foo_2_3" => "select foo_1 from foo_2_3",
            "SELECT c FROM sbtest1 WHERE id=5" => "select c from sbtest1 where id=?",
            "select t1.x, t1.y from t1" => "select t1.x, t1.y from t1",
            "select `Col``1` from `DB`.`T 2`" => "select `col``1` from `db`.`t 2`",
            "select `null`, `1`" => "select `null`, `1`",
            "select @@session.auto_increment_increment, @v1" => "select @@session.auto_increment_increment, @v1",
        }
    }

    #[test]
    fn identifier_digit_folding_matches_pt() {
        assert_eq!(
            fold("select foo_1 from foo_2_3"),
            "select foo_? from foo_?_?"
        );
        assert_eq!(fold("select 123foo from 123foo"), "select ?oo from ?oo");
        assert_eq!(
            fold("select c from sbtest1 where id=5"),
            "select c from sbtest? where id=?"
        );
        assert_eq!(
            fold("select tab1, idx1, T1ABC, t1abc, xb1 from t"),
            "select ta?, id?, t?abc, t?, x? from t"
        );
        assert_eq!(fold("set names utf8mb4"), "set names utf?m?");
        assert_eq!(
            fold("select `sbtest1`.c from `sbtest1`"),
            "select `sbtest?`.c from `sbtest?`"
        );
        // Folding makes union arms over different numbered tables identical, as in pt.
        assert_eq!(
            fold("SELECT a FROM t1 UNION SELECT a FROM t2"),
            "select a from t? /*repeat union*/"
        );
        assert_eq!(
            fp("SELECT a FROM t1 UNION SELECT a FROM t2"),
            "select a from t1 union select a from t2"
        );
    }

    #[test]
    fn placeholders_stay() {
        check! {
            "SELECT c FROM sbtest1 WHERE id=?" => "select c from sbtest1 where id=?",
            "INSERT INTO sbtest1 (id, k, c, pad) VALUES (?, ?, ?, ?)" =>
                "insert into sbtest1 (id, k, c, pad) values(?+)",
            "select ? , ?" => "select ? , ?",
        }
    }

    #[test]
    fn whitespace_and_case() {
        check! {
            "select   foo" => "select foo",
            " select  * from\nfoo where a = 5" => "select * from foo where a = ?",
            "select 1  " => "select ?",
            "select 1;" => "select ?",
            "select 1 ; " => "select ?",
            "SELECT Ärger FROM T" => "select Ärger from t",
            "\t\r\n\x0b\x0c" => "",
            "" => "",
        }
    }

    #[test]
    fn null_true_false() {
        check! {
            "select * from t where a is null and b = NULL" => "select * from t where a is ? and b = ?",
            "SELECT * FROM tbl WHERE id=1 AND flag=true AND trueflag=FALSE" =>
                "select * from tbl where id=? and flag=? and trueflag=?",
            "select is_null, nullable from t" => "select is_null, nullable from t",
        }
    }

    #[test]
    fn in_and_values_lists() {
        check! {
            "select * from foo where a in (5) and b in (5, 8,9 ,9 , 10)" =>
                "select * from foo where a in(?+) and b in(?+)",
            "insert into foo(a, b, c) value(2, 4, 5)" => "insert into foo(a, b, c) value(?+)",
            "select * from t where a in ('a', NULL, -1)" => "select * from t where a in(?+)",
            "select * from t where a in (select b from u)" => "select * from t where a in (select b from u)",
            "select * from t where (a, b) in ((1, 2), (3, 4))" => "select * from t where (a, b) in ((?, ?), (?, ?))",
            "insert into t values ()" => "insert into t values ()",
            "select min(1, 2)" => "select min(?, ?)",
        }
    }

    #[test]
    fn unions() {
        check! {
            "select 1 union select 2 union select 4" => "select ? /*repeat union*/",
            "select 1 union all select 2 union all select 4" => "select ? /*repeat union all*/",
            "select * from (select 1 union all select 2 union all select 4) as x join (select 2 union select 2 union select 3) as y" =>
                "select * from (select ? /*repeat union all*/) as x join (select ? /*repeat union*/) as y",
            "select a from t where x=1 union select a from t where x=2 order by a limit 5" =>
                "select a from t where x=? /*repeat union*/ order by a limit ?",
            "select a from t union select a from t where x" => "select a from t union select a from t where x",
            "select a union select b" => "select a union select b",
            "select a union select a union select b" => "select a /*repeat union*/ union select b",
        }
    }

    #[test]
    fn limits() {
        check! {
            "select * from foo limit 5" => "select * from foo limit ?",
            "select * from foo limit 5, 10" => "select * from foo limit ?",
            "select * from foo limit 5,10" => "select * from foo limit ?",
            "select * from foo limit 5 , 10" => "select * from foo limit ?",
            "select * from foo limit 5 offset 10" => "select * from foo limit ?",
            "select * from (select a from t limit 1, 2) x limit 3, 4" =>
                "select * from (select a from t limit ?) x limit ?",
        }
    }

    #[test]
    fn order_by_asc() {
        check! {
            "select c from t where i=1 order by c asc" => "select c from t where i=? order by c",
            "select * from t where i=1 order by a, b ASC, d DESC, e asc" =>
                "select * from t where i=? order by a, b, d desc, e",
            "select * from t order by ascii(a) asc, asc_col" => "select * from t order by ascii(a), asc_col",
            "select a asc from t" => "select a asc from t",
        }
    }

    #[test]
    fn sysbench_statements() {
        check! {
            "SELECT c FROM sbtest3 WHERE id=5012" => "select c from sbtest3 where id=?",
            "SELECT c FROM sbtest1 WHERE id BETWEEN 4 AND 103" => "select c from sbtest1 where id between ? and ?",
            "SELECT SUM(k) FROM sbtest1 WHERE id BETWEEN ? AND ?" => "select sum(k) from sbtest1 where id between ? and ?",
            "SELECT DISTINCT c FROM sbtest1 WHERE id BETWEEN 1 AND 100 ORDER BY c" =>
                "select distinct c from sbtest1 where id between ? and ? order by c",
            "UPDATE sbtest1 SET k=k+1 WHERE id=42" => "update sbtest1 set k=k+? where id=?",
            "UPDATE sbtest1 SET c='1-2-3' WHERE id=42" => "update sbtest1 set c=? where id=?",
            "DELETE FROM sbtest1 WHERE id=42" => "delete from sbtest1 where id=?",
            "INSERT INTO sbtest1 (id, k, c, pad) VALUES (42, 7, 'x', 'y')" =>
                "insert into sbtest1 (id, k, c, pad) values(?+)",
            "BEGIN" => "begin",
            "COMMIT" => "commit",
        }
    }

    #[test]
    fn max_len_caps_the_input() {
        let mut f = Fingerprinter::new(FingerprintOptions {
            max_len: 12,
            ..Default::default()
        });
        assert_eq!(
            f.fingerprint(b"select a from t where x = 1").text(),
            b"select a fro"
        );
        let id1 = f.fingerprint(b"select a from t").id();
        let id2 = f.fingerprint(b"select a from u").id();
        assert_eq!(id1, id2);
    }

    #[test]
    fn id_is_md5_tail_of_text() {
        let mut f = Fingerprinter::default();
        let r = f.fingerprint(b"SELECT 1");
        assert_eq!(r.id(), DigestId::of_fingerprint(b"select ?"));
        assert_eq!(r.to_string(), "select ?");
    }

    #[test]
    fn reuse_gives_identical_results() {
        let mut f = Fingerprinter::default();
        let a = f.fingerprint(b"select 1 union select 2").id();
        f.fingerprint(b"insert into t values (1),(2),(3)");
        assert_eq!(f.fingerprint(b"select 1 union select 2").id(), a);
    }

    #[test]
    fn non_utf8_bytes_pass_through() {
        let mut f = Fingerprinter::default();
        assert_eq!(
            f.fingerprint(b"SELECT \xff\xfeA FROM t WHERE a='\xff'")
                .text(),
            b"select \xff\xfea from t where a=?"
        );
    }

    #[test]
    fn pathological_inputs_stay_fast() {
        // Each is 64 KiB of something that a naive implementation would rescan per token.
        let cases: Vec<Vec<u8>> = vec![
            b"- ".repeat(32 * 1024),
            b"select "
                .repeat(4 * 1024)
                .into_iter()
                .chain(b"union ".iter().copied())
                .chain(b"select ".repeat(4 * 1024))
                .collect(),
            b"in (".repeat(16 * 1024),
            b"(".repeat(64 * 1024),
            [
                &b"select limit ".repeat(2500)[..],
                b"select union ",
                &b"select limit ".repeat(2500),
                b"x",
            ]
            .concat(),
            b"/*".repeat(32 * 1024),
            b"insert into t values (1),".repeat(2 * 1024),
        ];
        let mut f = Fingerprinter::default();
        for c in &cases {
            let t = std::time::Instant::now();
            f.fingerprint(c);
            assert!(
                t.elapsed() < std::time::Duration::from_millis(500),
                "{:?}...: {:?}",
                &c[..20],
                t.elapsed()
            );
        }
    }

    mod props {
        use super::super::*;
        use proptest::prelude::*;

        fn sqlish() -> impl Strategy<Value = Vec<u8>> {
            let atoms = prop::sample::select(vec![
                "select ",
                "SELECT ",
                "union ",
                "all ",
                "in ",
                "values ",
                "(",
                ")",
                ",",
                "'",
                "\"",
                "`",
                "\\",
                "-",
                "--",
                "-- ",
                "+",
                "#",
                "\n",
                "/*",
                "*/",
                "/*!",
                "/*+ ",
                "?",
                "0x",
                "1",
                "9.",
                ".5",
                "e-3",
                "x'",
                "_utf8mb4",
                "N",
                "null ",
                "limit ",
                "offset ",
                "order by ",
                "asc ",
                "call ",
                "use ",
                "insert into t ",
                "a",
                "b1",
                " ",
                ";",
            ]);
            prop::collection::vec(atoms, 0..40).prop_map(|v| v.concat().into_bytes())
        }

        fn check(input: &[u8]) {
            let styles = [DigestStyle::Pt, DigestStyle::Mysql];
            for (fold_identifier_digits, style) in [false, true]
                .into_iter()
                .flat_map(|f| styles.map(|s| (f, s)))
            {
                let opts = FingerprintOptions {
                    fold_identifier_digits,
                    style,
                    ..Default::default()
                };
                let mut f = Fingerprinter::new(opts);
                let a = f.fingerprint(input);
                let (text, id) = (a.text().to_vec(), a.id());
                assert!(
                    text.len() <= 2 * input.len() + 16,
                    "{} -> {} bytes",
                    input.len(),
                    text.len()
                );
                assert_eq!(id, DigestId::of_fingerprint(&text));
                let b = Fingerprinter::new(opts).fingerprint(input).text().to_vec();
                assert_eq!(text, b, "deterministic");
                let c = f.fingerprint(input).text().to_vec();
                assert_eq!(text, c, "reusable");
            }
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(2000))]
            #[test]
            fn arbitrary_bytes_never_panic(input in prop::collection::vec(any::<u8>(), 0..300)) {
                check(&input);
            }

            #[test]
            fn sql_like_bytes_never_panic(input in sqlish()) {
                check(&input);
            }
        }
    }
}
