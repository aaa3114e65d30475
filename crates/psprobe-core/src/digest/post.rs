//! Structural rewrites on the token list, after tokenizing and before rendering.
//!
//! All passes work in place (they only ever shrink the list) and allocate nothing beyond the
//! reusable buffers they are handed.

use super::lex::{Kind, Synth, Tok};

const NONE: u32 = u32::MAX;

/// Drops trailing `;` tokens: `select 1;` and `select 1` are the same statement.
pub(crate) fn trim_semicolons(toks: &mut Vec<Tok>, s: &[u8]) {
    while toks.last().is_some_and(|t| t.is_punct(s, b';')) {
        toks.pop();
    }
}

/// `CALL name(...)` / `CALL name`: returns the index just past the (possibly qualified) name
/// and whether a `(` follows it directly (no space), or `None` when the statement is not a
/// plain procedure call.
pub(crate) fn call_name(toks: &[Tok], s: &[u8]) -> Option<(usize, bool)> {
    let n = toks.len();
    if n < 2 || !toks[0].is_word(s, b"call") || !is_name(&toks[1]) {
        return None;
    }
    let mut j = 2;
    while j + 1 < n
        && toks[j].is_punct(s, b'.')
        && !toks[j].space
        && is_name(&toks[j + 1])
        && !toks[j + 1].space
    {
        j += 2;
    }
    if j == n {
        return Some((j, false));
    }
    if toks[j].is_punct(s, b'(') {
        return Some((j, !toks[j].space));
    }
    None
}

/// `USE db` (and nothing else).
pub(crate) fn is_use(toks: &[Tok], s: &[u8]) -> bool {
    toks.len() == 2 && toks[0].is_word(s, b"use") && is_name(&toks[1])
}

fn is_name(t: &Tok) -> bool {
    matches!(t.kind, Kind::Word | Kind::Quoted)
}

/// Index of the `)` matching the `(` at `open`.
fn matching(toks: &[Tok], s: &[u8], open: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (k, t) in toks.iter().enumerate().skip(open) {
        if t.is_punct(s, b'(') {
            depth += 1;
        } else if t.is_punct(s, b')') {
            depth -= 1;
            if depth == 0 {
                return Some(k);
            }
        }
    }
    None
}

/// Multi-row `INSERT` / `REPLACE ... VALUES (..), (..), ...`: keeps the first row only, and
/// everything after the rows (`ON DUPLICATE KEY UPDATE ...`). Rows cut off by the length cap
/// are dropped too, so a truncated bulk insert fingerprints like the whole one.
pub(crate) fn cut_insert_rows(toks: &mut Vec<Tok>, s: &[u8]) {
    let Some(first) = toks.first() else { return };
    if !(first.is_word(s, b"insert") || first.is_word(s, b"replace")) {
        return;
    }
    let mut depth = 0i64;
    let mut open = None;
    for (k, t) in toks.iter().enumerate() {
        if t.is_punct(s, b'(') {
            depth += 1;
        } else if t.is_punct(s, b')') {
            depth -= 1;
        } else if depth == 0
            && (t.is_word(s, b"values") || t.is_word(s, b"value"))
            && toks.get(k + 1).is_some_and(|x| x.is_punct(s, b'('))
        {
            open = Some(k + 1);
            break;
        }
    }
    let Some(open) = open else { return };
    let Some(close) = matching(toks, s, open) else {
        return;
    };
    let keep_end = close + 1;
    let mut j = keep_end;
    while j + 1 < toks.len() && toks[j].is_punct(s, b',') && toks[j + 1].is_punct(s, b'(') {
        match matching(toks, s, j + 1) {
            Some(c) => j = c + 1,
            None => {
                j = toks.len();
                break;
            }
        }
    }
    if j > keep_end {
        toks.drain(keep_end..j);
    }
}

/// `IN (?, ?)`, `VALUES (?, ?), (?, ?)`, `VALUE (?)`: lists made only of values collapse to
/// `in(?+)` / `values(?+)`.
pub(crate) fn collapse_lists(toks: &mut Vec<Tok>, s: &[u8]) {
    let n = toks.len();
    let (mut r, mut w) = (0, 0);
    while r < n {
        let t = toks[r];
        if t.is_word(s, b"in") || t.is_word(s, b"values") || t.is_word(s, b"value") {
            if let Some(end) = list_groups_end(toks, s, r + 1) {
                toks[w] = t;
                toks[w + 1] = Tok {
                    start: 0,
                    len: 0,
                    kind: Kind::Synth(Synth::List),
                    space: false,
                };
                w += 2;
                r = end;
                continue;
            }
        }
        toks[w] = t;
        w += 1;
        r += 1;
    }
    toks.truncate(w);
}

/// End of one or more `,* ( value [, value]* )` groups starting at `k`.
fn list_groups_end(toks: &[Tok], s: &[u8], mut k: usize) -> Option<usize> {
    let n = toks.len();
    let mut end = None;
    loop {
        let mut j = k;
        while j < n && toks[j].is_punct(s, b',') {
            j += 1;
        }
        if !(j < n && toks[j].is_punct(s, b'(')) {
            break;
        }
        j += 1;
        let mut values = 0;
        while j < n && (toks[j].kind == Kind::Value || toks[j].is_punct(s, b',')) {
            values += usize::from(toks[j].kind == Kind::Value);
            j += 1;
        }
        if !(j < n && toks[j].is_punct(s, b')') && values > 0) {
            break;
        }
        j += 1;
        end = Some(j);
        k = j;
    }
    end
}

/// Reusable buffers for [`collapse_unions`].
#[derive(Debug, Default, Clone)]
pub(crate) struct UnionScratch {
    /// Per token: for a SELECT, the index of the UNION that ends its arm (same paren depth).
    arm_end: Vec<u32>,
    /// Per open paren depth: the list of SELECTs still looking for their UNION.
    heads: Vec<u32>,
    /// Rendered identifiers, for comparisons under digit folding.
    a: Vec<u8>,
    b: Vec<u8>,
}

fn resolve(arm_end: &mut [u32], mut head: u32, value: u32) {
    while head != NONE {
        let next = arm_end[head as usize];
        arm_end[head as usize] = value;
        head = next;
    }
}

/// `select A union [all] select A [union [all] select A ...]` with identical arms becomes
/// `select A /*repeat union [all]*/`. An arm runs from a SELECT to the UNION at the same
/// parenthesis depth; the last repeated arm must be followed by the end, `)`, `;` or a clause
/// that applies to the whole union (UNION, ORDER, LIMIT, INTO, FOR, LOCK, PROCEDURE).
/// With `ignore_space` (the canonical spacing of `--digest-style mysql`) arms that differ only
/// in spacing are equal too.
pub(crate) fn collapse_unions(
    toks: &mut Vec<Tok>,
    s: &[u8],
    fold: bool,
    ignore_space: bool,
    sc: &mut UnionScratch,
) {
    if !toks.iter().any(|t| t.is_word(s, b"union")) {
        return;
    }
    let n = toks.len();
    sc.arm_end.clear();
    sc.arm_end.resize(n, NONE);
    sc.heads.clear();
    sc.heads.push(NONE);
    for (i, t) in toks.iter().enumerate() {
        if t.is_punct(s, b'(') {
            sc.heads.push(NONE);
        } else if t.is_punct(s, b')') {
            let h = if sc.heads.len() > 1 {
                sc.heads.pop().unwrap_or(NONE)
            } else {
                std::mem::replace(&mut sc.heads[0], NONE)
            };
            resolve(&mut sc.arm_end, h, NONE);
        } else if t.is_word(s, b"union") {
            let last = sc.heads.last_mut().expect("base level is never popped");
            let h = std::mem::replace(last, NONE);
            resolve(&mut sc.arm_end, h, i as u32);
        } else if t.is_word(s, b"select") {
            let last = sc.heads.last_mut().expect("base level is never popped");
            sc.arm_end[i] = *last;
            *last = i as u32;
        }
    }
    while let Some(h) = sc.heads.pop() {
        resolve(&mut sc.arm_end, h, NONE);
    }

    let (mut r, mut w) = (0, 0);
    while r < n {
        let t = toks[r];
        if sc.arm_end[r] != NONE && t.is_word(s, b"select") {
            let len = sc.arm_end[r] as usize - r;
            let mut p = r + len;
            let mut end = None;
            let mut all = false;
            while p < n && toks[p].is_word(s, b"union") {
                let mut q = p + 1;
                let this_all = q < n && toks[q].is_word(s, b"all");
                q += usize::from(this_all);
                let b = q + len;
                // The cheap boundary test first: it rejects most candidates in O(1).
                if b > n
                    || !(b == n || ends_union_arm(&toks[b], s))
                    || !arms_equal(toks, s, r, q, len, fold, ignore_space, sc)
                {
                    break;
                }
                end = Some(b);
                all = this_all;
                p = b;
            }
            if let Some(end) = end {
                for k in 0..len {
                    toks[w + k] = toks[r + k];
                }
                w += len;
                toks[w] = Tok {
                    start: 0,
                    len: 0,
                    kind: Kind::Synth(if all {
                        Synth::RepeatUnionAll
                    } else {
                        Synth::RepeatUnion
                    }),
                    space: true,
                };
                w += 1;
                r = end;
                continue;
            }
        }
        toks[w] = t;
        w += 1;
        r += 1;
    }
    toks.truncate(w);
}

fn ends_union_arm(t: &Tok, s: &[u8]) -> bool {
    t.is_punct(s, b')')
        || t.is_punct(s, b';')
        || [
            &b"union"[..],
            b"order",
            b"limit",
            b"into",
            b"for",
            b"lock",
            b"procedure",
        ]
        .iter()
        .any(|kw| t.is_word(s, kw))
}

#[allow(clippy::too_many_arguments)]
fn arms_equal(
    toks: &[Tok],
    s: &[u8],
    a: usize,
    b: usize,
    len: usize,
    fold: bool,
    ignore_space: bool,
    sc: &mut UnionScratch,
) -> bool {
    (0..len).all(|k| {
        let (x, y) = (&toks[a + k], &toks[b + k]);
        (k == 0 || ignore_space || x.space == y.space) && tok_eq(x, y, s, fold, sc)
    })
}

/// Do two tokens render the same?
fn tok_eq(x: &Tok, y: &Tok, s: &[u8], fold: bool, sc: &mut UnionScratch) -> bool {
    if x.kind != y.kind {
        return false;
    }
    match x.kind {
        Kind::Value | Kind::Synth(_) => true,
        _ => {
            let (tx, ty) = (x.text(s), y.text(s));
            if fold && tx != ty && matches!(x.kind, Kind::Word | Kind::Quoted) {
                // Folding can make different names equal (`t1`, `t2` -> `t?`) and, being
                // case-sensitive like pt, names that differ only in case unequal.
                sc.a.clear();
                sc.b.clear();
                push_ident(&mut sc.a, tx, true);
                push_ident(&mut sc.b, ty, true);
                return sc.a == sc.b;
            }
            tx.eq_ignore_ascii_case(ty)
        }
    }
}

/// `LIMIT ?, ?` and `LIMIT ? OFFSET ?` become `LIMIT ?`.
pub(crate) fn collapse_limits(toks: &mut Vec<Tok>, s: &[u8]) {
    let n = toks.len();
    let (mut r, mut w) = (0, 0);
    while r < n {
        let t = toks[r];
        if t.is_word(s, b"limit")
            && r + 3 < n
            && toks[r + 1].kind == Kind::Value
            && (toks[r + 2].is_punct(s, b',') || toks[r + 2].is_word(s, b"offset"))
            && toks[r + 3].kind == Kind::Value
        {
            toks[w] = t;
            toks[w + 1] = toks[r + 1];
            w += 2;
            r += 4;
            continue;
        }
        toks[w] = t;
        w += 1;
        r += 1;
    }
    toks.truncate(w);
}

/// After the first `ORDER BY`, every `ASC` keyword is dropped (ascending is the default).
pub(crate) fn drop_asc(toks: &mut Vec<Tok>, s: &[u8]) {
    let Some(start) = toks
        .windows(2)
        .position(|p| p[0].is_word(s, b"order") && p[1].is_word(s, b"by"))
    else {
        return;
    };
    let mut w = start + 2;
    for r in start + 2..toks.len() {
        let t = toks[r];
        if !t.is_word(s, b"asc") {
            toks[w] = t;
            w += 1;
        }
    }
    toks.truncate(w);
}

/// Appends an identifier lowercased; with `fold`, digits are folded the way pt-fingerprint
/// does it (its number regex `[0-9+-][0-9a-f.xb+-]*` applied inside names, then its
/// `[xb.+-]\?` clean-up): a digit (or sign) starts a run of `[0-9a-f.xb+-]` that becomes `?`,
/// and an `x`, `b` or `.` right before the run is dropped. Case matters as it does for pt,
/// which folds before lowercasing: `sbtest1` -> `sbtest?`, `tab1` -> `ta?`, `T1ABC` -> `t?abc`.
pub(crate) fn push_ident(out: &mut Vec<u8>, text: &[u8], fold: bool) {
    let starts = |c: u8| c.is_ascii_digit() || c == b'+' || c == b'-';
    if !fold || !text.iter().any(|&c| starts(c)) {
        out.extend(text.iter().map(u8::to_ascii_lowercase));
        return;
    }
    let mut i = 0;
    while i < text.len() {
        let c = text[i];
        if starts(c) {
            i += 1;
            while i < text.len()
                && matches!(text[i], b'0'..=b'9' | b'a'..=b'f' | b'x' | b'.' | b'+' | b'-')
            {
                i += 1;
            }
            out.push(b'?');
        } else {
            let before_run = i + 1 < text.len() && starts(text[i + 1]);
            if !(before_run && matches!(c, b'x' | b'b' | b'.')) {
                out.push(c.to_ascii_lowercase());
            }
            i += 1;
        }
    }
}

/// pt-fingerprint's percona-toolkit special case: `/*\w+\.\w+:[0-9]/[0-9]*/` anywhere.
pub(crate) fn has_pt_checksum_comment(s: &[u8]) -> bool {
    let w = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let mut i = 0;
    while i + 1 < s.len() {
        if s[i] == b'/' && s[i + 1] == b'*' {
            let mut j = i + 2;
            let a = j;
            while j < s.len() && w(s[j]) {
                j += 1;
            }
            if j > a && j < s.len() && s[j] == b'.' {
                j += 1;
                let b = j;
                while j < s.len() && w(s[j]) {
                    j += 1;
                }
                let tail = &s[j.min(s.len())..];
                if j > b
                    && tail.len() >= 6
                    && tail[0] == b':'
                    && tail[1].is_ascii_digit()
                    && tail[2] == b'/'
                    && tail[3].is_ascii_digit()
                    && tail[4] == b'*'
                    && tail[5] == b'/'
                {
                    return true;
                }
            }
        }
        i += 1;
    }
    false
}
