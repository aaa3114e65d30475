//! `psprobe digest` against the proxy: for each of the 296 statements of the fingerprint corpus,
//! the digest id and fingerprint the command prints are the ones a real psprobe records when the
//! statement passes through it to a real mariadbd (read back through the admin interface), under
//! both digest styles. Under `--digest-style mysql` spacing variants share a digest. Statements
//! from stdin (one per line), files (`--semicolon`) and `--query` agree.

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use mysql_async::prelude::Queryable;
use mysql_async::{Conn, Opts, OptsBuilder};

use common::cli::run_with_timeout;
use common::mariadb::MariaDb;
use common::probe::Probe;

const SECRET: &str = "digest-secret";
const TIMEOUT: Duration = Duration::from_secs(60);

/// Records as tests/checks/fingerprint_vs_pt.rs reads them: separated by `;` + newline, leading `#`
/// annotation lines and blank lines dropped.
fn corpus() -> Vec<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/fingerprint_corpus.sql");
    let text = std::fs::read_to_string(path).expect("corpus is UTF-8");
    text.split(";\n")
        .map(|record| {
            let mut q = record;
            loop {
                if q.starts_with('#') {
                    q = q.split_once('\n').map_or("", |(_, rest)| rest);
                } else if let Some(rest) = q.strip_prefix('\n') {
                    q = rest;
                } else {
                    break q.to_string();
                }
            }
        })
        .filter(|q| !q.is_empty())
        .collect()
}

/// `psprobe digest ARGS` with `stdin`: (digest, fingerprint) per JSON line.
fn digest_cli(args: &[&str], stdin: Option<&[u8]>) -> Vec<(String, String)> {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_psprobe"));
    cmd.arg("digest").args(["--format", "json"]).args(args);
    let out = run_with_timeout(cmd, stdin, TIMEOUT);
    assert!(
        out.status.success(),
        "psprobe digest failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .expect("UTF-8")
        .lines()
        .map(|line| {
            let v: serde_json::Value = serde_json::from_str(line).expect("a JSON line");
            (
                v["digest"].as_str().expect("digest").to_string(),
                v["fingerprint"].as_str().expect("fingerprint").to_string(),
            )
        })
        .collect()
}

/// [`admin_digests`] once it holds still: psprobe records a command just after it relays the
/// last packet of its answer, so the driver's own statements on connect may be counted a moment
/// after the driver has its connection (they would land in the next statement's delta).
async fn settled_digests(admin: &mut Conn) -> BTreeMap<String, (u64, String)> {
    let mut last = admin_digests(admin).await;
    for _ in 0..100 {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await; // poll interval
        let now = admin_digests(admin).await;
        if now == last {
            return now;
        }
        last = now;
    }
    panic!("the admin's digests kept changing for 2 s with no client running");
}

/// digest -> (count, digest_text) from the admin interface.
async fn admin_digests(admin: &mut Conn) -> BTreeMap<String, (u64, String)> {
    let rows: Vec<(String, u64, String)> = admin
        .query("SELECT digest, sum(count), max(digest_text) FROM digests GROUP BY digest")
        .await
        .expect("admin query");
    rows.into_iter().map(|(d, n, t)| (d, (n, t))).collect()
}

/// Sends every statement through a psprobe started with `style`, and returns how many times
/// each digest was recorded for them (reconnecting when a statement ends the connection, and
/// not counting what the driver sends on connect), with the recorded texts.
fn through_proxy(
    db: &MariaDb,
    style: &str,
    statements: &[String],
) -> BTreeMap<String, (u64, String)> {
    let probe = Probe::start_with_env(
        &db.addr(),
        &["--admin", "127.0.0.1:0", "--digest-style", style],
        &[("PSPROBE_ADMIN_PASSWORD", SECRET)],
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let admin_url = format!("mysql://admin:{SECRET}@{}/psprobe", probe.admin_addr());
        let mut admin = Conn::from_url(admin_url).await.expect("admin connects");
        let opts: Opts =
            OptsBuilder::from_opts(Opts::from_url(&db.dsn_via(probe.proxy_addr())).expect("dsn"))
                .prefer_socket(false)
                .into();
        let mut recorded: BTreeMap<String, (u64, String)> = BTreeMap::new();
        let mut conn = Conn::new(opts.clone()).await.expect("connect");
        let mut before = settled_digests(&mut admin).await;
        for sql in statements {
            let result = conn.query_drop(sql.as_str()).await;
            if result.is_err() && conn.ping().await.is_err() {
                // The statement ended the connection: close the segment, reconnect.
                let after = admin_digests(&mut admin).await;
                add_delta(&mut recorded, &before, &after);
                conn = Conn::new(opts.clone()).await.expect("reconnect");
                before = settled_digests(&mut admin).await;
            }
        }
        let after = admin_digests(&mut admin).await;
        add_delta(&mut recorded, &before, &after);
        recorded
    })
}

fn add_delta(
    total: &mut BTreeMap<String, (u64, String)>,
    before: &BTreeMap<String, (u64, String)>,
    after: &BTreeMap<String, (u64, String)>,
) {
    for (digest, (n, text)) in after {
        let d = n - before.get(digest).map_or(0, |b| b.0);
        if d > 0 {
            let entry = total.entry(digest.clone()).or_insert((0, text.clone()));
            entry.0 += d;
        }
    }
}

#[test]
fn digest_command_equals_the_proxys_digests() {
    let statements = corpus();
    assert_eq!(statements.len(), 296, "corpus size");
    let db = MariaDb::start_default();
    let mut distinct = BTreeMap::new();
    for style in ["pt", "mysql"] {
        let mut args = vec!["--digest-style".to_string(), style.to_string()];
        args.extend(statements.iter().map(|q| format!("--query={q}")));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let cli = digest_cli(&args, None);
        assert_eq!(cli.len(), statements.len());
        // What the CLI predicts: count per digest, and the fingerprint.
        let mut expected: BTreeMap<String, (u64, String)> = BTreeMap::new();
        for (digest, fingerprint) in &cli {
            let e = expected
                .entry(digest.clone())
                .or_insert((0, fingerprint.clone()));
            e.0 += 1;
            assert_eq!(&e.1, fingerprint, "one digest, one fingerprint");
        }
        let recorded = through_proxy(&db, style, &statements);
        let counts = |m: &BTreeMap<String, (u64, String)>| -> BTreeMap<String, u64> {
            m.iter().map(|(d, (n, _))| (d.clone(), *n)).collect()
        };
        assert_eq!(
            counts(&recorded),
            counts(&expected),
            "{style}: digests recorded by the proxy vs printed by psprobe digest"
        );
        for (digest, (_, text)) in &recorded {
            let fingerprint = &expected[digest].1;
            // The proxy keeps the first 1024 bytes of the text.
            assert!(
                fingerprint.starts_with(text.trim_end_matches('\u{fffd}')),
                "{style}: {digest}: {text:?} vs {fingerprint:?}"
            );
        }
        distinct.insert(style, expected.len());
    }
    // Spacing variants in the corpus fold together under the mysql style.
    assert!(distinct["mysql"] < distinct["pt"], "{distinct:?}");
}

#[test]
fn input_forms_agree() {
    let query = digest_cli(
        &[
            "--query",
            "SELECT c FROM sbtest1 WHERE id=42",
            "--query",
            "select c from sbtest1 where id = 7",
        ],
        None,
    );
    assert_eq!(query[0].1, "select c from sbtest1 where id=?");
    assert_ne!(query[0].0, query[1].0, "pt style keeps the spacing");
    // stdin, one per line.
    let lines = digest_cli(
        &[],
        Some(b"SELECT c FROM sbtest1 WHERE id=42\n\nselect c from sbtest1 where id = 7\n"),
    );
    assert_eq!(lines, query);
    // A file, statements separated by `;` (one spans lines, one holds a `;` in a string).
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("q.sql");
    std::fs::write(
        &file,
        "SELECT c FROM sbtest1\n WHERE id=42;\nselect c from sbtest1 where id = 7; SELECT ';';",
    )
    .expect("write");
    let path = file.to_str().expect("path");
    let split = digest_cli(&["--semicolon", path], None);
    assert_eq!(split.len(), 3);
    assert_eq!(split[1], query[1]);
    assert_eq!(split[0].1, "select c from sbtest1 where id=?");
    assert_eq!(split[2].1, "select ?");
    // mysql style: the two spellings are one digest.
    let mysql = digest_cli(
        &["--digest-style", "mysql", "-"],
        Some(b"SELECT c FROM sbtest1 WHERE id=42\nselect c from sbtest1 where id = 7\n"),
    );
    assert_eq!(mysql[0], mysql[1]);
    assert_eq!(mysql[0].1, "select c from sbtest1 where id = ?");
    // Text output: DIGEST<TAB>FINGERPRINT.
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_psprobe"));
    cmd.args(["digest", "-q", "SELECT 1"]);
    let out = run_with_timeout(cmd, None, TIMEOUT);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!("{}\tselect ?\n", digest_cli(&["-q", "SELECT 1"], None)[0].0)
    );
    // A clear error for a missing file and an unknown style.
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_psprobe"));
    cmd.args(["digest", "/nonexistent/q.sql"]);
    let out = run_with_timeout(cmd, None, TIMEOUT);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot read /nonexistent/q.sql"));
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_psprobe"));
    cmd.args(["digest", "--digest-style", "tokens", "-q", "SELECT 1"]);
    let out = run_with_timeout(cmd, None, TIMEOUT);
    assert!(String::from_utf8_lossy(&out.stderr).contains("use pt or mysql"));
}
