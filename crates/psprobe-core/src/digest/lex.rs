//! Single-pass MySQL tokenizer for fingerprinting.
//!
//! Works on raw bytes (never assumes UTF-8). Produces a flat list of [`Tok`]s that point back
//! into the input; literals are already reduced to [`Kind::Value`], comments are dropped and
//! count as whitespace, and each token remembers whether whitespace preceded it so the
//! rendered fingerprint keeps the query's own spacing (collapsed to one space), as
//! pt-fingerprint does.

/// What a token is. Only the distinctions the rewrite passes need are kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// An unquoted identifier or keyword, original bytes (lowercased when rendered).
    Word,
    /// A backtick-quoted identifier, backticks included.
    Quoted,
    /// A literal (number, string, hex, bit, NULL, TRUE, FALSE) or a `?` placeholder.
    Value,
    /// One byte of anything else: operators and punctuation.
    Punct,
    /// The opener of a comment whose contents MySQL executes: `/*!`, `/*M!`, or the optimizer
    /// hint opener `/*+` (only directly after SELECT / INSERT / REPLACE / UPDATE / DELETE).
    Open,
    /// The `*/` that closes an [`Kind::Open`] comment.
    Close,
    /// Text made up by a rewrite pass.
    Synth(Synth),
}

/// Made-up token texts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Synth {
    /// `(?+)`: a collapsed IN / VALUES list.
    List,
    /// `/*repeat union*/`
    RepeatUnion,
    /// `/*repeat union all*/`
    RepeatUnionAll,
}

impl Synth {
    pub(crate) fn text(self) -> &'static [u8] {
        match self {
            Synth::List => b"(?+)",
            Synth::RepeatUnion => b"/*repeat union*/",
            Synth::RepeatUnionAll => b"/*repeat union all*/",
        }
    }
}

/// One token: a byte range of the input plus its kind and whether whitespace (or a comment)
/// came before it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Tok {
    pub start: u32,
    pub len: u32,
    pub kind: Kind,
    pub space: bool,
}

impl Tok {
    #[inline]
    pub(crate) fn text<'a>(&self, input: &'a [u8]) -> &'a [u8] {
        match self.kind {
            Kind::Value => b"?",
            Kind::Synth(s) => s.text(),
            _ => &input[self.start as usize..(self.start + self.len) as usize],
        }
    }

    /// Is this an unquoted word equal (ASCII case-insensitively) to `kw` (given in lowercase)?
    #[inline]
    pub(crate) fn is_word(&self, input: &[u8], kw: &[u8]) -> bool {
        self.kind == Kind::Word
            && self.len as usize == kw.len()
            && self.text(input).eq_ignore_ascii_case(kw)
    }

    #[inline]
    pub(crate) fn is_punct(&self, input: &[u8], c: u8) -> bool {
        self.kind == Kind::Punct && input[self.start as usize] == c
    }
}

const SPACE: u8 = 1;
const IDENT: u8 = 2;

/// Byte classes, so the hot loops do one table load per byte.
static CLASS: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut i = 0;
    while i < 256 {
        let c = i as u8;
        if matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r') {
            t[i] = SPACE;
        } else if c.is_ascii_alphanumeric() || c == b'_' || c == b'$' || c >= 0x80 {
            t[i] = IDENT;
        }
        i += 1;
    }
    t
};

/// MySQL whitespace: space, \t, \n, \v, \f, \r.
#[inline]
pub(crate) fn is_space(c: u8) -> bool {
    CLASS[c as usize] == SPACE
}

/// Bytes that may appear in an unquoted identifier: `[A-Za-z0-9_$]` and any byte >= 0x80
/// (multi-byte characters of whatever charset the client uses).
#[inline]
pub(crate) fn is_ident(c: u8) -> bool {
    CLASS[c as usize] == IDENT
}

/// Keywords after which a `-` or `+` is a sign (unary), not a binary operator.
pub(crate) const OPERAND_KEYWORDS: &[&[u8]] = &[
    b"all",
    b"and",
    b"any",
    b"between",
    b"binary",
    b"by",
    b"case",
    b"default",
    b"distinct",
    b"div",
    b"do",
    b"else",
    b"elseif",
    b"escape",
    b"exists",
    b"having",
    b"if",
    b"in",
    b"interval",
    b"is",
    b"like",
    b"limit",
    b"mod",
    b"not",
    b"offset",
    b"on",
    b"or",
    b"regexp",
    b"return",
    b"rlike",
    b"select",
    b"separator",
    b"set",
    b"some",
    b"then",
    b"until",
    b"value",
    b"values",
    b"when",
    b"where",
    b"while",
    b"xor",
];

/// Keywords directly after which `/*+ ... */` is an optimizer hint (MySQL ignores it elsewhere).
const HINT_KEYWORDS: &[&[u8]] = &[b"select", b"insert", b"replace", b"update", b"delete"];

/// Character set names usable as `_charset` introducers (MySQL 8 and MariaDB 10/11).
const CHARSETS: &[&[u8]] = &[
    b"armscii8",
    b"ascii",
    b"big5",
    b"binary",
    b"cp1250",
    b"cp1251",
    b"cp1256",
    b"cp1257",
    b"cp850",
    b"cp852",
    b"cp866",
    b"cp932",
    b"dec8",
    b"eucjpms",
    b"euckr",
    b"filename",
    b"gb18030",
    b"gb2312",
    b"gbk",
    b"geostd8",
    b"greek",
    b"hebrew",
    b"hp8",
    b"keybcs2",
    b"koi8r",
    b"koi8u",
    b"latin1",
    b"latin2",
    b"latin5",
    b"latin7",
    b"macce",
    b"macroman",
    b"sjis",
    b"swe7",
    b"tis620",
    b"ucs2",
    b"ujis",
    b"utf16",
    b"utf16le",
    b"utf32",
    b"utf8",
    b"utf8mb3",
    b"utf8mb4",
];

pub(crate) fn in_list(list: &[&[u8]], word: &[u8]) -> bool {
    list.iter().any(|k| k.eq_ignore_ascii_case(word))
}

/// End (exclusive) of a quoted string starting at `i` (`s[i]` is the quote). Handles backslash
/// escapes and doubled quotes. An unterminated string runs to the end of the input.
pub(crate) fn string_end(s: &[u8], i: usize) -> usize {
    let q = s[i];
    let mut j = i + 1;
    while j < s.len() {
        let c = s[j];
        if c == b'\\' {
            j += 2;
            continue;
        }
        if c == q {
            if j + 1 < s.len() && s[j + 1] == q {
                j += 2;
                continue;
            }
            return j + 1;
        }
        j += 1;
    }
    s.len()
}

/// End (exclusive) of a backtick identifier starting at `i`; doubled backticks are part of it.
pub(crate) fn backtick_end(s: &[u8], i: usize) -> usize {
    let mut j = i + 1;
    while j < s.len() {
        if s[j] == b'`' {
            if j + 1 < s.len() && s[j + 1] == b'`' {
                j += 2;
                continue;
            }
            return j + 1;
        }
        j += 1;
    }
    s.len()
}

/// End of a numeric literal at `i` (`s[i]` is a digit, or `.` followed by a digit), or `None`
/// when MySQL would read the bytes as an identifier instead (`123abc`, `0xZZ`, `1e`).
fn number_end(s: &[u8], i: usize) -> Option<usize> {
    let n = s.len();
    let at = |k: usize| if k < n { s[k] } else { 0 };
    if s[i] == b'0' && (at(i + 1) == b'x' || at(i + 1) == b'b') {
        let hex = at(i + 1) == b'x';
        let mut j = i + 2;
        while j < n
            && (if hex {
                s[j].is_ascii_hexdigit()
            } else {
                matches!(s[j], b'0' | b'1')
            })
        {
            j += 1;
        }
        if j > i + 2 && !is_ident(at(j)) {
            return Some(j);
        }
        // `0x` / `0b` with no digits, or followed by more identifier bytes: fall through and
        // let the decimal rules decide (`0` followed by an identifier byte = identifier).
    }
    let mut j = i;
    while j < n && s[j].is_ascii_digit() {
        j += 1;
    }
    let mut real = false;
    if at(j) == b'.' {
        real = true;
        j += 1;
        while j < n && s[j].is_ascii_digit() {
            j += 1;
        }
    }
    if at(j) | 0x20 == b'e' {
        let mut k = j + 1;
        if matches!(at(k), b'+' | b'-') {
            k += 1;
        }
        if at(k).is_ascii_digit() {
            while k < n && s[k].is_ascii_digit() {
                k += 1;
            }
            j = k;
            real = true;
        }
    }
    if !real && is_ident(at(j)) {
        return None;
    }
    Some(j)
}

/// `--` starts a comment only when followed by whitespace, a control byte, or the end.
#[inline]
pub(crate) fn is_dash_comment(s: &[u8], i: usize) -> bool {
    s[i] == b'-'
        && i + 1 < s.len()
        && s[i + 1] == b'-'
        && (i + 2 >= s.len() || s[i + 2] <= b' ' || s[i + 2] == 0x7f)
}

/// If a literal (of any kind) starts at `k`, its end and whether it is a quoted string.
fn literal_at(s: &[u8], k: usize) -> Option<(usize, bool)> {
    let n = s.len();
    if k >= n {
        return None;
    }
    let c = s[k];
    let next = if k + 1 < n { s[k + 1] } else { 0 };
    match c {
        b'0'..=b'9' => number_end(s, k).map(|e| (e, false)),
        b'.' if next.is_ascii_digit() => number_end(s, k).map(|e| (e, false)),
        b'?' => Some((k + 1, false)),
        b'\'' | b'"' => Some((string_end(s, k), true)),
        b'x' | b'X' | b'b' | b'B' if next == b'\'' => Some((string_end(s, k + 1), false)),
        b'n' | b'N' if next == b'\'' => Some((string_end(s, k + 1), true)),
        _ => None,
    }
}

/// After a `_charset` word ending at `j`: the literal it introduces, if any (optional
/// whitespace, then a quoted string, `X'..'`, `B'..'`, `0x..` or `0b..`).
fn introduced_literal(s: &[u8], mut j: usize) -> Option<(usize, bool)> {
    while j < s.len() && is_space(s[j]) {
        j += 1;
    }
    if j >= s.len() {
        return None;
    }
    match s[j] {
        b'\'' | b'"' => Some((string_end(s, j), true)),
        b'x' | b'X' | b'b' | b'B' if j + 1 < s.len() && s[j + 1] == b'\'' => {
            Some((string_end(s, j + 1), false))
        }
        b'0' if j + 1 < s.len() && matches!(s[j + 1], b'x' | b'b') => {
            // Only a real hex/bit literal, not an identifier such as `0xyz`.
            let e = number_end(s, j)?;
            if e > j + 2 && !s[j + 2..e].contains(&b'.') {
                Some((e, false))
            } else {
                None
            }
        }
        _ => None,
    }
}

struct Lexer<'a, 't> {
    s: &'a [u8],
    toks: &'t mut Vec<Tok>,
    /// Whitespace or a comment since the last token.
    space: bool,
    /// Inside `/*! */` or `/*+ */`: `*/` closes it and is kept.
    exec: bool,
    /// The last token is a quoted string literal (adjacent strings concatenate in MySQL).
    last_string: bool,
}

impl Lexer<'_, '_> {
    #[inline]
    fn push(&mut self, start: usize, end: usize, kind: Kind) {
        self.toks.push(Tok {
            start: start as u32,
            len: (end - start) as u32,
            kind,
            space: self.space,
        });
        self.space = false;
        self.last_string = false;
    }

    #[inline]
    fn push_value(&mut self, start: usize, end: usize, string: bool) {
        if string && self.last_string {
            // 'a' 'b' is one literal 'ab' in MySQL.
            self.space = false;
            return;
        }
        self.push(start, end, Kind::Value);
        self.last_string = string;
    }

    /// Is a `+` / `-` at this point a sign rather than a binary operator?
    fn expects_operand(&self) -> bool {
        match self.toks.last() {
            None => true,
            Some(t) => match t.kind {
                Kind::Punct => !matches!(self.s[t.start as usize], b')' | b']' | b'}'),
                Kind::Open => true,
                Kind::Word => in_list(OPERAND_KEYWORDS, t.text(self.s)),
                _ => false,
            },
        }
    }

    fn after_hint_keyword(&self) -> bool {
        match self.toks.last() {
            Some(t) if t.kind == Kind::Word => in_list(HINT_KEYWORDS, t.text(self.s)),
            _ => false,
        }
    }

    /// A run of signs and whitespace at `i` followed by a literal: `Ok(literal end)`. If no
    /// literal follows, `Err(k)`: none of the signs before `k` starts a signed literal either.
    fn signed_literal(&self, i: usize) -> Result<usize, usize> {
        let s = self.s;
        let mut k = i;
        while k < s.len() && matches!(s[k], b'-' | b'+') {
            if is_dash_comment(s, k) {
                return Err(k);
            }
            k += 1;
            while k < s.len() && is_space(s[k]) {
                k += 1;
            }
        }
        literal_at(s, k).map(|(e, _)| e).ok_or(k)
    }

    fn run(&mut self) {
        let s = self.s;
        let n = s.len();
        let mut i = 0;
        // Signs before this position are known not to start a signed literal; keeps long runs
        // like `- - - -` linear (the scan from the first sign covered the others).
        let mut no_sign_until = 0;
        while i < n {
            let c = s[i];
            let next = if i + 1 < n { s[i + 1] } else { 0 };
            match c {
                _ if is_space(c) => {
                    self.space = true;
                    i += 1;
                }
                b'#' => {
                    i = memchr_nl(s, i);
                    self.space = true;
                }
                b'-' if is_dash_comment(s, i) => {
                    i = memchr_nl(s, i);
                    self.space = true;
                }
                b'/' if next == b'*' => {
                    let third = if i + 2 < n { s[i + 2] } else { 0 };
                    let fourth = if i + 3 < n { s[i + 3] } else { 0 };
                    if !self.exec && third == b'!' {
                        self.push(i, i + 3, Kind::Open);
                        self.exec = true;
                        i += 3;
                    } else if !self.exec && (third == b'M' || third == b'm') && fourth == b'!' {
                        self.push(i, i + 4, Kind::Open);
                        self.exec = true;
                        i += 4;
                    } else if !self.exec && third == b'+' && self.after_hint_keyword() {
                        self.push(i, i + 3, Kind::Open);
                        self.exec = true;
                        i += 3;
                    } else {
                        i = match find2(s, i + 2, b'*', b'/') {
                            Some(p) => p + 2,
                            None => n,
                        };
                        self.space = true;
                    }
                }
                b'*' if next == b'/' && self.exec => {
                    self.push(i, i + 2, Kind::Close);
                    self.exec = false;
                    i += 2;
                }
                b'\'' | b'"' => {
                    let e = string_end(s, i);
                    self.push_value(i, e, true);
                    i = e;
                }
                b'`' => {
                    let e = backtick_end(s, i);
                    self.push(i, e, Kind::Quoted);
                    i = e;
                }
                b'?' => {
                    self.push_value(i, i + 1, false);
                    i += 1;
                }
                b'0'..=b'9' => match number_end(s, i) {
                    Some(e) => {
                        self.push_value(i, e, false);
                        i = e;
                    }
                    None => i = self.word(i),
                },
                b'.' if next.is_ascii_digit() => {
                    // `t.1col` is a qualified name; `.5` after anything else is a number.
                    let qualifier = !self.space
                        && matches!(self.toks.last(), Some(t) if matches!(t.kind, Kind::Word | Kind::Quoted));
                    if qualifier {
                        self.push(i, i + 1, Kind::Punct);
                        i += 1;
                    } else {
                        let e = number_end(s, i).unwrap_or(i + 1);
                        self.push_value(i, e, false);
                        i = e;
                    }
                }
                b'-' | b'+' => {
                    let signed = if i >= no_sign_until && self.expects_operand() {
                        self.signed_literal(i)
                    } else {
                        Err(no_sign_until)
                    };
                    match signed {
                        Ok(e) => {
                            self.push_value(i, e, false);
                            i = e;
                        }
                        Err(stop) => {
                            no_sign_until = no_sign_until.max(stop);
                            self.push(i, i + 1, Kind::Punct);
                            i += 1;
                        }
                    }
                }
                _ if is_ident(c) => i = self.word(i),
                _ => {
                    self.push(i, i + 1, Kind::Punct);
                    i += 1;
                }
            }
        }
    }

    /// An unquoted word at `i`; also the literals that start with a word (`X'..'`, `b'..'`,
    /// `N'..'`, `_utf8mb4'..'`, NULL, TRUE, FALSE). Returns the position after it.
    fn word(&mut self, i: usize) -> usize {
        let s = self.s;
        let mut j = i;
        while j < s.len() && is_ident(s[j]) {
            j += 1;
        }
        let w = &s[i..j];
        let next = if j < s.len() { s[j] } else { 0 };
        if w.len() == 1 && next == b'\'' {
            match w[0] | 0x20 {
                b'x' | b'b' => {
                    let e = string_end(s, j);
                    self.push_value(i, e, false);
                    return e;
                }
                b'n' => {
                    let e = string_end(s, j);
                    self.push_value(i, e, true);
                    return e;
                }
                _ => {}
            }
        }
        if w.len() > 1 && w[0] == b'_' && in_list(CHARSETS, &w[1..]) {
            if let Some((e, string)) = introduced_literal(s, j) {
                self.push_value(i, e, string);
                return e;
            }
        }
        if w.eq_ignore_ascii_case(b"null")
            || w.eq_ignore_ascii_case(b"true")
            || w.eq_ignore_ascii_case(b"false")
        {
            self.push_value(i, j, false);
            return j;
        }
        self.push(i, j, Kind::Word);
        j
    }
}

/// Position of the next `\n` at or after `i`, or the end.
#[inline]
pub(crate) fn memchr_nl(s: &[u8], i: usize) -> usize {
    s[i..]
        .iter()
        .position(|&b| b == b'\n')
        .map_or(s.len(), |p| i + p)
}

/// Position of the next `ab` pair at or after `i`.
#[inline]
pub(crate) fn find2(s: &[u8], i: usize, a: u8, b: u8) -> Option<usize> {
    let mut k = i;
    while k + 1 < s.len() {
        if s[k] == a && s[k + 1] == b {
            return Some(k);
        }
        k += 1;
    }
    None
}

/// Tokenizes `s` into `toks` (cleared first).
pub(crate) fn tokenize(s: &[u8], toks: &mut Vec<Tok>) {
    toks.clear();
    let mut lx = Lexer {
        s,
        toks,
        space: false,
        exec: false,
        last_string: false,
    };
    lx.run();
}
