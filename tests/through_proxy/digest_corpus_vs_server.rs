//! The fingerprint corpus (tests/data/fingerprint_corpus.sql, the statements psprobe's digests
//! are checked on against pt-fingerprint) sent through psprobe to each server one statement at
//! a time, and psprobe's grouping set beside the server's own digest of every statement
//! (`events_statements_history_long`). Where the two group differently, the difference must be
//! one of the kinds docs/fingerprint.md lists ("psprobe's digests beside the server's"); a new
//! kind fails here with the statements that show it.
//!
//! - psprobe groups what the server tells apart: `CALL p(...)` argument lists, the database of
//!   `USE`, charset introducers and adjacent string literals, one row or many in `INSERT ...
//!   VALUES`, `LIMIT n` against `LIMIT m, n` and `LIMIT n OFFSET m`, TRUE and FALSE as values.
//! - The server groups what psprobe tells apart: spacing (psprobe's default digest style keeps
//!   the client's spacing, as pt-fingerprint does; `--digest-style mysql` does not), lists of
//!   values in a select list (`?, ...` for any length), user variables' names, comments.
//! - A statement the server cannot parse has no digest there (psprobe still counts it).
//!
//! psprobe's own count of every fingerprint is read from its metrics, so the grouping compared
//! is the proxy's.

use crate::common;

use std::collections::BTreeMap;

use common::counting_client::opts;
use common::probe::Probe;
use common::server::{Flavor, Options, Server};
use mysql_async::prelude::*;
use mysql_async::Conn;
use psprobe_core::digest::Fingerprinter;

crate::per_flavor!(corpus_groups_as_the_server_does_but_for_documented_kinds);

const CORPUS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/data/fingerprint_corpus.sql"
);
/// The first statement after the corpus's sysbench statements with literal values.
const SYSBENCH_END: &str = "# ===== the same through prepared statements";

/// The corpus's statements (records separated by ";\n", leading `#` lines are annotations),
/// and how many come from sysbench with literal values.
fn corpus() -> (Vec<String>, usize) {
    let text = std::fs::read_to_string(CORPUS).expect("read the corpus");
    let sysbench_part = &text[..text.find(SYSBENCH_END).expect("the sysbench section's end")];
    let records = |text: &str| -> Vec<String> {
        text.split(";\n")
            .map(|r| {
                let mut q = r;
                loop {
                    if q.starts_with('#') {
                        q = q.find('\n').map_or("", |p| &q[p + 1..]);
                    } else if let Some(rest) = q.strip_prefix('\n') {
                        q = rest;
                    } else {
                        break;
                    }
                }
                q.to_string()
            })
            .filter(|q| !q.is_empty())
            .collect()
    };
    let all = records(&text);
    let sysbench = records(sysbench_part).len();
    (all, sysbench)
}

fn block_on<F: std::future::Future>(fut: F) -> F::Output {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build();
    rt.expect("build tokio runtime").block_on(fut)
}

/// The server's digest of each statement: (DIGEST, DIGEST_TEXT) of its one event, `None` when
/// the server gave it no digest (it could not parse it) or more than one event.
type ServerDigest = Option<(String, String)>;

/// Sent after each corpus statement: the server records a statement's event only after its
/// answer has left, so a statement's events are known complete once the marker's is there.
const MARKER: &str = "SELECT 'psprobe-corpus-marker' AS corpus_marker";
/// How the server writes the marker's digest text (MySQL quotes the alias, MariaDB too).
const MARKER_DIGEST: &str = "corpus_marker";

/// Sends every statement through `proxy` on one connection (errors are expected: the corpus
/// names tables that do not exist), each followed by [`MARKER`], and reads each statement's
/// events from the server directly.
async fn run_corpus(db: &Server, proxy: &str, statements: &[String]) -> Vec<ServerDigest> {
    let mut sender = Conn::new(opts(&db.dsn_via(proxy))).await.expect("connect");
    let mut reader = Conn::new(opts(&db.dsn())).await.expect("connect directly");
    let thread: u64 = reader
        .exec_first(
            "SELECT THREAD_ID FROM performance_schema.threads WHERE PROCESSLIST_ID = ?",
            (sender.id(),),
        )
        .await
        .expect("the sender's thread")
        .expect("a thread row");
    let mut last: u64 = 0;
    let mut out = Vec::with_capacity(statements.len());
    for q in statements {
        let _ = sender.query_drop(q.as_str()).await;
        sender.query_drop(MARKER).await.expect("the marker");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        let events = loop {
            let events: Vec<(u64, Option<String>, Option<String>)> = reader
                .exec(
                    "SELECT EVENT_ID, DIGEST, DIGEST_TEXT FROM \
                     performance_schema.events_statements_history_long \
                     WHERE THREAD_ID = ? AND EVENT_ID > ? AND NESTING_EVENT_LEVEL = 0 \
                     ORDER BY EVENT_ID",
                    (thread, last),
                )
                .await
                .expect("read the statement's events");
            let marker = events
                .iter()
                .position(|e| e.2.as_deref().is_some_and(|t| t.contains(MARKER_DIGEST)));
            if let Some(at) = marker {
                last = events[at].0;
                break events[..at].to_vec();
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the marker after {q:?} was not recorded within 5 s"
            );
            tokio::time::sleep(std::time::Duration::from_millis(5)).await; // poll interval
        };
        out.push(match events.as_slice() {
            [(_, Some(digest), Some(text))] => Some((digest.clone(), text.clone())),
            _ => None,
        });
    }
    let _ = sender.disconnect().await;
    let _ = reader.disconnect().await;
    out
}

/// The server's texts with what it tells apart and psprobe does not taken out: they are then
/// equal within one psprobe group.
fn server_side_kinds(text: &str) -> String {
    // MariaDB ends its texts with a blank, writes a hex literal as `(unknown)` and a one-value
    // IN list as `(?)`.
    let mut t = text
        .trim_end()
        .replace("(_charset) ", "")
        .replace(" /* , ... */", "")
        .replace("(unknown)", "?")
        .replace("IN (?)", "IN (...)");
    // `CALL p`, `CALL p (?)`, `CALL p (...)`: psprobe keeps the procedure only.
    if let Some(rest) = t.strip_prefix("CALL ") {
        t = format!("CALL {}", rest.split(' ').next().unwrap_or(""));
    }
    if t.starts_with("USE ") {
        t = "USE ?".into();
    }
    for form in ["LIMIT ? OFFSET ?", "LIMIT ?, ..."] {
        t = t.replace(form, "LIMIT ?");
    }
    let words: Vec<&str> = t
        .split(' ')
        .map(|w| match w {
            "TRUE" | "FALSE" => "?",
            w => w,
        })
        .collect();
    let mut out: Vec<&str> = Vec::new();
    for w in words {
        // Adjacent string literals are one value.
        if w == "?" && out.last() == Some(&"?") {
            continue;
        }
        // A sign (MariaDB keeps `- ?` for a negative number): a minus that follows no
        // operand.
        let operand = |p: &str| p == "?" || p == ")" || p.starts_with('`');
        let before_minus = out.len().checked_sub(2).map(|i| out[i]);
        if w == "?" && out.last() == Some(&"-") && !before_minus.is_some_and(operand) {
            out.pop();
        }
        out.push(w);
    }
    out.join(" ")
}

/// psprobe's fingerprints with what it tells apart and the server does not taken out: they
/// are then equal within one server digest.
fn psprobe_side_kinds(fingerprint: &str, flavor: Flavor) -> String {
    let mut t = String::new();
    let mut rest = fingerprint;
    // Comments are dropped, but those the server runs (`/*!...*/`, and on MariaDB
    // `/*M!...*/`) are kept, without their version number.
    let runs: &[&str] = if flavor.is_mysql() {
        &["!"]
    } else {
        &["!", "m!"]
    };
    while let Some(start) = rest.find("/*") {
        t.push_str(&rest[..start]);
        let inside = &rest[start + 2..];
        let end = inside.find("*/").unwrap_or(inside.len());
        let body = &inside[..end];
        if let Some(code) = runs.iter().find_map(|p| body.strip_prefix(p)) {
            t.push_str(code.strip_prefix('?').unwrap_or(code));
        }
        rest = inside.get(end + 2..).unwrap_or("");
    }
    t.push_str(rest);
    let t: String = t.chars().filter(|c| !c.is_whitespace()).collect();
    let mut out = String::new();
    let mut rest = t.as_str();
    while let Some(c) = rest.chars().next() {
        rest = &rest[c.len_utf8()..];
        out.push(c);
        // A list of values, whatever its length, is `?,...`.
        if c == '?' && rest.starts_with(",?") {
            while let Some(more) = rest.strip_prefix(",?") {
                rest = more;
            }
            out.push_str(",...");
        }
    }
    // User variables by name.
    let t = out;
    let mut out = String::new();
    let mut chars = t.chars().peekable();
    while let Some(c) = chars.next() {
        out.push(c);
        if c == '@'
            && chars
                .peek()
                .is_some_and(|n| n.is_alphanumeric() || *n == '_')
        {
            while chars
                .peek()
                .is_some_and(|n| n.is_alphanumeric() || *n == '_')
            {
                chars.next();
            }
            out.push('?');
        }
    }
    out
}

/// Values grouped by their key.
fn groups<K: Ord, V>(pairs: impl Iterator<Item = (K, V)>) -> BTreeMap<K, Vec<V>> {
    let mut out: BTreeMap<K, Vec<V>> = BTreeMap::new();
    for (k, v) in pairs {
        out.entry(k).or_default().push(v);
    }
    out
}

fn corpus_groups_as_the_server_does_but_for_documented_kinds(flavor: Flavor) {
    let db = Server::start(
        flavor,
        Options {
            // The history needs the current events' consumer (off by default on MariaDB).
            extra_args: vec![
                "--performance-schema-consumer-events-statements-current=ON".into(),
                "--performance-schema-consumer-events-statements-history-long=ON".into(),
            ],
            ..Options::default()
        },
    );
    // Every shape its own series (the corpus has about 230).
    let probe = Probe::start(&db.addr(), &["--metrics-top-digests", "1000"]);
    let (statements, sysbench) = corpus();
    assert!(statements.len() >= 200 && sysbench >= 20, "{sysbench}");
    let server = block_on(run_corpus(&db, probe.proxy_addr(), &statements));

    // psprobe's fingerprint of each statement, and its count per fingerprint as the proxy
    // recorded it.
    // recorded (its label holds the id; the text may be shortened).
    let mut f = Fingerprinter::default();
    let (mine, ids): (Vec<String>, Vec<String>) = statements
        .iter()
        .map(|q| {
            let print = f.fingerprint(q.as_bytes());
            (
                String::from_utf8_lossy(print.text()).into_owned(),
                print.id().to_string(),
            )
        })
        .unzip();
    let scrape = probe.scrape();
    let mut recorded: BTreeMap<String, u64> = BTreeMap::new();
    for s in scrape.series("psprobe_digest_commands_total") {
        *recorded.entry(s.labels["digest"].clone()).or_default() += s.value as u64;
    }
    assert!(!recorded.contains_key("other"), "{}", scrape.text);
    for (id, members) in groups(ids.iter().enumerate().map(|(i, id)| (id, i))) {
        assert_eq!(
            recorded.get(id).copied(),
            Some(members.len() as u64),
            "psprobe's count of {:?}",
            mine[members[0]]
        );
    }

    // Statements with a digest at the server (one event each).
    let digested: Vec<usize> = (0..statements.len())
        .filter(|&i| server[i].is_some())
        .collect();
    let unparsed = statements.len() - digested.len();
    assert!(
        digested.len() * 10 >= statements.len() * 8,
        "the server digested {} of {} statements",
        digested.len(),
        statements.len()
    );
    let theirs = |i: usize| server[i].as_ref().expect("digested");

    // sysbench's statements: the same groups on both sides.
    let head: Vec<usize> = digested.iter().copied().filter(|&i| i < sysbench).collect();
    assert_eq!(
        head.len(),
        sysbench,
        "the server digested every sysbench statement"
    );
    let mine_head = groups(head.iter().map(|&i| (mine[i].clone(), i)));
    let theirs_head = groups(head.iter().map(|&i| (theirs(i).0.clone(), i)));
    let sets = |g: BTreeMap<String, Vec<usize>>| {
        let mut v: Vec<Vec<usize>> = g.into_values().collect();
        v.sort();
        v
    };
    assert_eq!(sets(mine_head), sets(theirs_head), "sysbench's statements");

    // Everything else: each difference of a documented kind.
    let mut unexplained = Vec::new();
    let (mut coarser, mut finer) = (0, 0);
    for members in groups(digested.iter().map(|&i| (mine[i].clone(), i))).values() {
        let texts: Vec<&str> = members.iter().map(|&i| theirs(i).1.as_str()).collect();
        let distinct = groups(texts.iter().map(|t| (t.to_string(), ()))).len();
        let kinds = groups(texts.iter().map(|t| (server_side_kinds(t), ()))).len();
        coarser += usize::from(distinct > 1);
        if kinds > 1 {
            unexplained.push(format!(
                "psprobe groups, {} tells apart: {:?}\n  as {:?}",
                db.name(),
                members.iter().map(|&i| &statements[i]).collect::<Vec<_>>(),
                texts
            ));
        }
    }
    for members in groups(digested.iter().map(|&i| (theirs(i).0.clone(), i))).values() {
        let prints: Vec<&str> = members.iter().map(|&i| mine[i].as_str()).collect();
        let distinct = groups(prints.iter().map(|t| (t.to_string(), ()))).len();
        let kinds = groups(prints.iter().map(|t| (psprobe_side_kinds(t, flavor), ()))).len();
        finer += usize::from(distinct > 1);
        if kinds > 1 {
            unexplained.push(format!(
                "{} groups as {:?}, psprobe tells apart: {prints:?}",
                db.name(),
                theirs(members[0]).1
            ));
        }
    }
    assert!(
        unexplained.is_empty(),
        "differences of a kind docs/fingerprint.md does not list:\n{}",
        unexplained.join("\n")
    );
    println!(
        "{}: {} statements, {} without a digest at the server; psprobe {} groups, the server {}; \
         {} psprobe groups the server splits, {} server groups psprobe splits (all of listed kinds)",
        db.name(),
        statements.len(),
        unparsed,
        groups(digested.iter().map(|&i| (mine[i].clone(), ()))).len(),
        groups(digested.iter().map(|&i| (theirs(i).0.clone(), ()))).len(),
        coarser,
        finer
    );
}

#[test]
fn the_kinds_are_taken_out_as_documented() {
    assert_eq!(
        server_side_kinds("INSERT INTO `t` VALUES (...) /* , ... */"),
        "INSERT INTO `t` VALUES (...)"
    );
    assert_eq!(server_side_kinds("CALL `foo` (...)"), "CALL `foo`");
    assert_eq!(server_side_kinds("SELECT (_charset) ? ?"), "SELECT ?");
    assert_eq!(
        server_side_kinds("SELECT * FROM `t` WHERE `a` = TRUE"),
        "SELECT * FROM `t` WHERE `a` = ?"
    );
    assert_eq!(
        server_side_kinds("SELECT * FROM `foo` LIMIT ?, ..."),
        "SELECT * FROM `foo` LIMIT ?"
    );
    assert_eq!(
        server_side_kinds("SELECT * FROM `t` WHERE `a` = - ? "),
        "SELECT * FROM `t` WHERE `a` = ?"
    );
    assert_eq!(
        server_side_kinds("SELECT `a` - ? FROM `t`"),
        "SELECT `a` - ? FROM `t`"
    );
    let (my, maria) = (Flavor::MySql97, Flavor::MariaDb1011);
    assert_eq!(
        psprobe_side_kinds("select ?, ?, ? from foo", my),
        "select?,...fromfoo"
    );
    assert_eq!(
        psprobe_side_kinds("select ?, ?, ?, ? from foo", my),
        "select?,...fromfoo"
    );
    assert_eq!(psprobe_side_kinds("select ? , ?", my), "select?,...");
    assert_eq!(psprobe_side_kinds("select /*m!? ?, */ ?", my), "select?");
    assert_eq!(
        psprobe_side_kinds("select /*m!? ?, */ ?", maria),
        "select?,..."
    );
    assert_eq!(psprobe_side_kinds("select @v1 + @a", my), "select@?+@?");
    assert_ne!(
        psprobe_side_kinds("select a-b", my),
        psprobe_side_kinds("select b-a", my)
    );
}
