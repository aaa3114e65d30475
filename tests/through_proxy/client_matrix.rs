//! Real drivers through psprobe, plain and over TLS (and compressed where the driver can),
//! against MariaDB 10.11, 11.8 and MySQL 9.7 with TLS on: the same workload must give the same
//! digests, the same command counts and the same results whichever way it is carried. (On
//! MySQL the test user's caching_sha2_password cache is warmed first: authentication's cold
//! path has a suite of its own, auth_through_proxy.)
//! Drivers: PyMySQL, mysql-connector-python (pure Python), node mysql2, sysbench; installed
//! under target/ by scripts/setup.sh.

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::certs::Certs;
use common::cli::{run_with_timeout, split_addr, DATABASE, PASSWORD, USER};
use common::observed::{commands, digests, transport, unobserved, wait_for};
use common::probe::Probe;
use common::prom::Scrape;
use common::server::{Flavor, Options, PerFlavor, Server};
use common::sysbench;

static SERVERS: PerFlavor = PerFlavor::new();

fn server(v: Flavor) -> &'static Server {
    SERVERS.get(v, || {
        let db = Server::start(v, Options::default());
        warm_auth_cache(&db);
        db
    })
}

/// One TLS login of the test user, so that MySQL's caching_sha2_password takes its fast path
/// for every driver here whether it uses TLS or not (a MariaDB login changes nothing).
pub fn warm_auth_cache(db: &Server) {
    if db.flavor().is_mysql() {
        let out = db.client(&db.addr(), &["--ssl-mode=REQUIRED", "-e", "SELECT 1"]);
        assert!(
            out.status.success(),
            "TLS login on {}: {}",
            db.name(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

fn deps(sub: &str) -> PathBuf {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("target")
        .join(sub);
    assert!(p.exists(), "{} missing: run scripts/setup.sh", p.display());
    p
}

/// One run of a client command through a fresh psprobe: its stdout and what psprobe saw.
struct Run {
    out: String,
    seen: Scrape,
}

fn through_psprobe(db: &Server, client: impl FnOnce(&str, &Path) -> String) -> Run {
    let state = tempfile::tempdir().expect("state dir");
    let probe = Probe::start(
        &db.addr(),
        &["--state-dir", state.path().to_str().expect("utf-8")],
    );
    let out = client(probe.proxy_addr(), state.path());
    // Counters of a connection are complete once psprobe has seen it close.
    let seen = wait_for(&probe, "connections closed", |s| {
        s.get("psprobe_connections_active", &[]) == 0.0
            && s.get("psprobe_connections_total", &[]) >= 1.0
    });
    assert_eq!(unobserved(&seen), 0.0, "{}", seen.text);
    Run { out, seen }
}

fn checked(cmd: Command, what: &str) -> String {
    let out = run_with_timeout(cmd, None, Duration::from_secs(120));
    assert!(
        out.status.success(),
        "{what} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn python(driver: &str, mode: &str, addr: &str, table: &str) -> String {
    let (host, port) = split_addr(addr);
    let mut cmd = Command::new(deps("clients/venv/bin/python"));
    cmd.arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients/workload.py"))
        .args([driver, mode, host, port, USER, PASSWORD, DATABASE, table]);
    checked(cmd, &format!("{driver} {mode}"))
}

fn node(mode: &str, addr: &str, table: &str) -> String {
    let (host, port) = split_addr(addr);
    let mut cmd = Command::new("node");
    cmd.env("NODE_PATH", deps("clients/node/node_modules"))
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients/workload.js"))
        .args([mode, host, port, USER, PASSWORD, DATABASE, table]);
    checked(cmd, &format!("mysql2 {mode}"))
}

/// Digests and command counts of a run.
fn shape(run: &Run) -> (BTreeMap<String, u64>, BTreeMap<String, u64>) {
    (digests(&run.seen), commands(&run.seen))
}

/// Runs `client` once per mode; every run must match the first: same checksum (first word of
/// the output), digests and counts. `carriage` says which transport series each mode counts in.
fn same_everywhere(
    v: Flavor,
    name: &str,
    modes: &[(&str, (&str, &str))],
    client: impl Fn(&str, &str) -> String,
) {
    let db = server(v);
    let mut first: Option<(String, Run)> = None;
    for (mode, (tls, compression)) in modes {
        let run = through_psprobe(db, |addr, _| client(mode, addr));
        assert!(
            transport(&run.seen, tls, compression) >= 1.0,
            "{name} {mode} on {v:?}: not carried as tls={tls} compression={compression}:\n{}",
            run.seen.text
        );
        let (d, c) = shape(&run);
        assert!(d.len() >= 4, "{name} {mode}: digests {d:?}");
        match &first {
            None => first = Some((mode.to_string(), run)),
            Some((m0, r0)) => {
                let sum = |r: &Run| r.out.split_whitespace().next().unwrap_or("").to_string();
                assert_eq!(
                    sum(&run),
                    sum(r0),
                    "{name}: results of {mode} and {m0} differ"
                );
                let (d0, c0) = shape(r0);
                assert_eq!(d, d0, "{name} on {v:?}: digests of {mode} and {m0} differ");
                assert_eq!(c, c0, "{name} on {v:?}: commands of {mode} and {m0} differ");
            }
        }
    }
}

const PLAIN: (&str, &str) = ("none", "none");
const TLS: (&str, &str) = ("terminated", "none");
const ZLIB: (&str, &str) = ("none", "zlib");
const TLS_ZLIB: (&str, &str) = ("terminated", "zlib");

fn pymysql(v: Flavor) {
    let table = "matrix_pymysql";
    same_everywhere(
        v,
        "PyMySQL",
        &[("plain", PLAIN), ("tls", TLS)],
        |mode, addr| python("pymysql", mode, addr, table),
    );
}

fn connector(v: Flavor) {
    let table = "matrix_connector";
    let modes = [
        ("plain", PLAIN),
        ("default", TLS),
        ("compress", ZLIB),
        ("tls_compress", TLS_ZLIB),
    ];
    same_everywhere(v, "mysql-connector-python", &modes, |mode, addr| {
        python("connector", mode, addr, table)
    });
}

fn mysql2(v: Flavor) {
    let table = "matrix_mysql2";
    let modes = [
        ("plain", PLAIN),
        ("tls", TLS),
        ("compress", ZLIB),
        ("tls_compress", TLS_ZLIB),
    ];
    same_everywhere(v, "node mysql2", &modes, |mode, addr| {
        node(mode, addr, table)
    });
}

/// A working directory for sysbench with psprobe's CA as `cacert.pem` and a client key pair.
fn sysbench_ssl_files(state: &Path) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("sysbench dir");
    let client = Certs::make(&dir.path().join("client"), "client CA", &["localhost"]);
    std::fs::copy(state.join("tls/ca.pem"), dir.path().join("cacert.pem")).expect("ca");
    std::fs::copy(&client.cert, dir.path().join("client-cert.pem")).expect("cert");
    std::fs::copy(&client.key, dir.path().join("client-key.pem")).expect("key");
    dir
}

fn sysbench_ssl(v: Flavor) {
    let db = server(v);
    let table_opts = ["--tables=1", "--table-size=200"];
    let mut prepare = vec!["--mysql-ssl=off"];
    prepare.extend_from_slice(&table_opts);
    sysbench::run(&db.addr(), "oltp_read_only", "cleanup", &prepare);
    sysbench::run(&db.addr(), "oltp_read_only", "prepare", &prepare);
    let mut first: Option<Run> = None;
    for (ssl, carriage) in [("off", PLAIN), ("on", TLS)] {
        let run = through_psprobe(db, |addr, state| {
            let mut args = vec![format!("--mysql-ssl={ssl}")];
            args.extend(table_opts.iter().map(|s| s.to_string()));
            args.extend(
                ["--events=50", "--time=0", "--threads=1", "--rand-seed=7"].map(String::from),
            );
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let dir = sysbench_ssl_files(state);
            let summary = sysbench::run_in(dir.path(), addr, "oltp_read_only", "run", &args);
            format!("{} {}", summary.transactions, summary.total)
        });
        assert!(
            transport(&run.seen, carriage.0, carriage.1) >= 1.0,
            "{}",
            run.seen.text
        );
        match &first {
            None => first = Some(run),
            Some(r0) => {
                assert_eq!(run.out, r0.out, "sysbench summaries differ");
                assert_eq!(shape(&run), shape(r0), "sysbench plain vs TLS on {v:?}");
            }
        }
    }
}

#[test]
fn pymysql_10_11() {
    pymysql(Flavor::MariaDb1011);
}

#[test]
fn pymysql_11_8() {
    pymysql(Flavor::MariaDb118);
}

#[test]
fn pymysql_mysql_9_7() {
    pymysql(Flavor::MySql97);
}

#[test]
fn mysql_connector_python_10_11() {
    connector(Flavor::MariaDb1011);
}

#[test]
fn mysql_connector_python_11_8() {
    connector(Flavor::MariaDb118);
}

#[test]
fn mysql_connector_python_mysql_9_7() {
    connector(Flavor::MySql97);
}

#[test]
fn node_mysql2_10_11() {
    mysql2(Flavor::MariaDb1011);
}

#[test]
fn node_mysql2_11_8() {
    mysql2(Flavor::MariaDb118);
}

#[test]
fn node_mysql2_mysql_9_7() {
    mysql2(Flavor::MySql97);
}

#[test]
fn sysbench_ssl_10_11() {
    sysbench_ssl(Flavor::MariaDb1011);
}

#[test]
fn sysbench_ssl_11_8() {
    sysbench_ssl(Flavor::MariaDb118);
}

#[test]
fn sysbench_ssl_mysql_9_7() {
    sysbench_ssl(Flavor::MySql97);
}
