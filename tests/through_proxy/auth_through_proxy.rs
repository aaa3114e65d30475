//! MySQL 9.7's password plugins through psprobe, with real clients: caching_sha2_password's
//! fast path (the server has the account cached) and full path (cold: after its start or
//! FLUSH PRIVILEGES; over TLS the password goes in clear inside TLS, on a plain connection
//! RSA-encrypted with the server's key), and sha256_password (always the full path), in every
//! combination of the client's leg (plain, TLS) and psprobe's `--server-tls` (as_client,
//! required, disabled). Clients: the mysql 9.7 CLI, the MariaDB 10.11 CLI, PyMySQL,
//! mysql-connector-python (pure) and sysbench (libmariadb; plain only).
//!
//! Every login is also tried directly against the server: through psprobe it must do what it
//! does there, except where psprobe refuses on purpose with one line saying what to change:
//! a TLS client whose password would go in clear to a plain server leg (`disabled`), and a
//! plain client whose password would have to be RSA-encrypted for a server that psprobe
//! reaches over TLS (`required`: the server then reads it only in clear; docs/tls.md says why
//! psprobe does not decrypt it). The cache is the server's, so the cases run one at a time on
//! one server.

use crate::common;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::cli::{run_with_timeout, split_addr, DATABASE};
use common::probe::Probe;
use common::server::{Flavor, Options, Server};

#[derive(Debug, Clone, Copy, PartialEq)]
enum Client {
    MysqlCli,
    MariadbCli,
    PyMySql,
    Connector,
    Sysbench,
}

const CLIENTS: [Client; 5] = [
    Client::MysqlCli,
    Client::MariadbCli,
    Client::PyMySql,
    Client::Connector,
    Client::Sysbench,
];

#[derive(Debug, Clone, Copy, PartialEq)]
enum Leg {
    Plain,
    Tls,
}

/// One login and `SELECT CURRENT_USER()`: Ok(what the server said) or Err(the client's
/// error text).
fn login(
    db: &Server,
    client: Client,
    leg: Leg,
    addr: &str,
    user: &str,
    pw: &str,
) -> Result<String, String> {
    let (host, port) = split_addr(addr);
    let project = Path::new(env!("CARGO_MANIFEST_DIR"));
    let sql = "SELECT CURRENT_USER()";
    let cmd = match client {
        Client::MysqlCli | Client::MariadbCli => {
            let mut cmd = if client == Client::MysqlCli {
                let mut cmd = Command::new("chroot");
                cmd.arg(db.tree().expect("MySQL runs in its tree"))
                    .arg(Flavor::MySql97.client_program());
                cmd
            } else {
                Command::new("mariadb")
            };
            cmd.args([
                "--no-defaults",
                "--protocol=TCP",
                "-h",
                host,
                "-P",
                port,
                "-N",
                "-B",
            ])
            .arg(format!("-u{user}"))
            .arg(format!("-p{pw}"));
            cmd.args(match (client, leg) {
                // Without a key of its own the 9.7 client asks the server for one only when told.
                (Client::MysqlCli, Leg::Plain) => {
                    &["--ssl-mode=DISABLED", "--get-server-public-key"][..]
                }
                (Client::MysqlCli, Leg::Tls) => &["--ssl-mode=REQUIRED"][..],
                (_, Leg::Plain) => &["--skip-ssl"][..],
                (_, Leg::Tls) => &["--ssl"][..],
            });
            cmd.args(["-e", sql]);
            cmd
        }
        Client::PyMySql | Client::Connector => {
            let mut cmd = Command::new(project.join("target/clients/venv/bin/python"));
            cmd.arg(project.join("tests/clients/login.py"))
                .arg(if client == Client::PyMySql {
                    "pymysql"
                } else {
                    "connector"
                })
                .arg(if leg == Leg::Plain { "plain" } else { "tls" })
                .args([host, port, user, pw]);
            cmd
        }
        Client::Sysbench => {
            let mut cmd = Command::new("sysbench");
            cmd.arg(project.join("tests/clients/login.lua"))
                .arg(format!("--mysql-host={host}"))
                .arg(format!("--mysql-port={port}"))
                .arg(format!("--mysql-user={user}"))
                .arg(format!("--mysql-password={pw}"))
                .arg(format!("--mysql-db={DATABASE}"))
                .args([
                    "--mysql-ssl=off",
                    "--events=1",
                    "--threads=1",
                    "--time=0",
                    "run",
                ]);
            cmd
        }
    };
    let out = run_with_timeout(cmd, None, Duration::from_secs(60));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let said = stdout
        .lines()
        .chain(stderr.lines())
        .find_map(|l| l.strip_prefix("ok ").or(l.contains('@').then_some(l)))
        .filter(|_| out.status.success() && !stdout.starts_with("error"));
    match said {
        Some(who) if !stdout.contains("FATAL") => Ok(who.trim().to_string()),
        _ => Err(format!("{stdout}{stderr}")),
    }
}

/// A psprobe with `--server-tls MODE`.
fn probe(db: &Server, mode: &str) -> (Probe, tempfile::TempDir) {
    let state = tempfile::tempdir().expect("state dir");
    let args = [
        "--state-dir",
        state.path().to_str().expect("utf-8"),
        "--server-tls",
        mode,
    ];
    (Probe::start(&db.addr(), &args), state)
}

/// What psprobe answers on purpose where the server would have taken the login.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Expect {
    /// As directly: both log in, or both fail.
    AsDirect,
    /// Refused with psprobe's line, naming what to change.
    Refused(&'static str),
}

const RSA_REFUSAL: &str = "takes it only in clear";
const CLEARTEXT_REFUSAL: &str = "would send the password in clear text";

struct Case {
    mode: &'static str,
    leg: Leg,
    /// Emptied before the login (FLUSH PRIVILEGES), else warmed by a TLS login.
    cold: bool,
    expect: Expect,
}

fn cases(sha256: bool) -> Vec<Case> {
    let c = |mode, leg, cold, expect| Case {
        mode,
        leg,
        cold,
        expect,
    };
    let mut out = vec![
        c("as_client", Leg::Plain, true, Expect::AsDirect),
        c("as_client", Leg::Tls, true, Expect::AsDirect),
        c("required", Leg::Plain, true, Expect::Refused(RSA_REFUSAL)),
        c("required", Leg::Tls, true, Expect::AsDirect),
        c(
            "disabled",
            Leg::Tls,
            true,
            Expect::Refused(CLEARTEXT_REFUSAL),
        ),
        c("disabled", Leg::Plain, true, Expect::AsDirect),
    ];
    if !sha256 {
        // The fast path: only the scramble crosses, whatever the legs.
        for (mode, leg) in [
            ("as_client", Leg::Plain),
            ("required", Leg::Plain),
            ("required", Leg::Tls),
            ("disabled", Leg::Tls),
        ] {
            out.push(c(mode, leg, false, Expect::AsDirect));
        }
    }
    out
}

#[test]
fn caching_sha2_and_sha256_in_every_tls_combination_mysql_9_7() {
    let db = Server::start(
        Flavor::MySql97,
        Options {
            performance_schema: false,
            extra_args: Vec::new(),
        },
    );
    db.sql(
        "CREATE USER 'cached'@'%' IDENTIFIED WITH caching_sha2_password BY 'cached-pw'; \
         CREATE USER 'sha256'@'%' IDENTIFIED WITH sha256_password BY 'sha256-pw'; \
         GRANT ALL ON *.* TO 'cached'@'%'; GRANT ALL ON *.* TO 'sha256'@'%'",
    );
    let probes: Vec<(&str, (Probe, tempfile::TempDir))> = ["as_client", "required", "disabled"]
        .into_iter()
        .map(|m| (m, probe(&db, m)))
        .collect();
    let through = |mode: &str| {
        probes
            .iter()
            .find(|(m, _)| *m == mode)
            .map(|(_, p)| &p.0)
            .expect("a probe")
    };
    let mut refused = 0;
    let mut logins = 0;
    for (user, pw, sha256) in [
        ("cached", "cached-pw", false),
        ("sha256", "sha256-pw", true),
    ] {
        for case in cases(sha256) {
            for client in CLIENTS {
                if client == Client::Sysbench && case.leg == Leg::Tls {
                    continue; // sysbench's TLS needs key files of its own: client_matrix has it
                }
                let warm = || {
                    let w = login(&db, Client::MysqlCli, Leg::Tls, &db.addr(), user, pw);
                    assert!(w.is_ok(), "warming the cache: {w:?}");
                };
                let prepare = || {
                    if case.cold {
                        db.sql("FLUSH PRIVILEGES");
                    } else {
                        warm()
                    }
                };
                prepare();
                let direct = login(&db, client, case.leg, &db.addr(), user, pw);
                prepare();
                let addr = through(case.mode).proxy_addr().to_string();
                let proxied = login(&db, client, case.leg, &addr, user, pw);
                let what = format!(
                    "{user} by {client:?}, {:?} leg, --server-tls {}, {} cache",
                    case.leg,
                    case.mode,
                    if case.cold { "cold" } else { "warm" }
                );
                logins += 1;
                match case.expect {
                    Expect::AsDirect => match (&direct, &proxied) {
                        (Ok(d), Ok(p)) => assert_eq!(d, p, "{what}"),
                        (Err(_), Err(_)) => {}
                        _ => panic!("{what}: directly {direct:?}, through psprobe {proxied:?}"),
                    },
                    Expect::Refused(line) => {
                        let err = proxied.clone().expect_err(&what);
                        assert!(err.contains(line) && err.contains("1043"), "{what}: {err}");
                        if direct.is_ok() {
                            refused += 1;
                        }
                    }
                }
                eprintln!(
                    "{what}: direct {}, through psprobe {}",
                    short(&direct),
                    short(&proxied)
                );
            }
        }
    }
    // Whatever logs in directly in the refused cases: every client but the pure connector
    // (which cannot do the RSA exchange without TLS) on a plain leg, every one on TLS.
    assert!(
        refused >= 10,
        "{refused} refusals of logins that work directly"
    );
    let required = through("required").scrape();
    assert!(
        required.get("psprobe_auth_failures_total", &[]) >= 1.0,
        "{}",
        required.text
    );
    let log = through("required").stderr_text();
    assert!(log.contains("--server-tls as_client"), "{log}");
    println!("auth matrix: {logins} logins, {refused} refused by psprobe where they work directly");
}

fn short(r: &Result<String, String>) -> String {
    match r {
        Ok(who) => format!("ok ({who})"),
        Err(e) => {
            let code = e
                .split(|c: char| !c.is_ascii_digit())
                .find(|w| w.len() == 4)
                .unwrap_or("?");
            format!("error {code}")
        }
    }
}
