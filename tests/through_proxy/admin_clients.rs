//! The admin interface of a real psprobe in front of a real server (MariaDB 10.11, 11.8 and
//! MySQL 9.7), after traffic through the proxy, queried by six clients: the `mariadb` CLI, the
//! `mysql` 9.7 CLI, mysql_async, PyMySQL, mysql-connector-python and node's mysql2. GROUP BY /
//! JOIN / aggregate / ORDER BY expression queries return the same rows in every client, numbers
//! typed and decoded as numbers, and agree with /metrics; a write is refused with 1290 in every
//! client.
//!
//! The Python and Node drivers are installed by scripts/setup.sh into target/clients.

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use mysql_async::consts::ColumnType;
use mysql_async::prelude::Queryable;
use mysql_async::{Conn, Opts, OptsBuilder, Value};
use serde_json::Value as Json;

use common::cli::{run_with_timeout, DATABASE, USER};
use common::probe::Probe;
use common::prom::Scrape;
use common::server::{Flavor, Options, Server};

crate::per_flavor!(every_client_reads_the_same_numbers_as_metrics);

const SECRET: &str = "admin-secret";
const CLIENT_TIMEOUT: Duration = Duration::from_secs(60);

/// The statements every client runs, in order.
const STATEMENTS: &[&str] = &[
    // 0: GROUP BY with an aggregate, ordered by it.
    "SELECT command, sum(count) AS n FROM commands GROUP BY command ORDER BY n DESC, command",
    // 1: JOIN with a derived table, an expression, ORDER BY an expression.
    "SELECT d.digest, d.count, round(100.0 * d.count / t.total, 3) AS pct \
     FROM digests d JOIN (SELECT sum(count) AS total FROM digests) t \
     ORDER BY d.count * 1000 + length(d.digest_text) DESC, d.digest",
    // 2: aggregates over a whole table.
    "SELECT count(*) AS shapes, sum(count) AS statements, sum(errors) AS errors FROM digests",
    // 3: the live connections (one is kept open through the proxy).
    "SELECT user, db, state FROM connections ORDER BY id",
    // 4: what clients ask on connect.
    "SELECT @@version_comment AS comment, DATABASE() AS db, 1.5 AS x",
    // 5: a write.
    "DELETE FROM digests",
];

fn clients_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("target/clients")
}

/// A value as the text protocol carried it, and the column's type.
#[derive(Debug, Clone, PartialEq)]
struct Reference {
    names: Vec<String>,
    types: Vec<ColumnType>,
    rows: Vec<Vec<Option<String>>>,
}

/// What mysql_async reads: the reference the other clients are compared with.
async fn reference(admin: &str) -> Vec<Result<Reference, u16>> {
    let url = format!("mysql://admin:{SECRET}@{admin}/psprobe");
    let opts: Opts = OptsBuilder::from_opts(Opts::from_url(&url).expect("url"))
        .prefer_socket(false)
        .into();
    let mut conn = Conn::new(opts)
        .await
        .expect("mysql_async connects to the admin");
    let mut out = Vec::new();
    for sql in STATEMENTS {
        let rows: Result<Vec<mysql_async::Row>, _> = conn.query(*sql).await;
        out.push(match rows {
            Err(mysql_async::Error::Server(e)) => Err(e.code),
            Err(e) => panic!("{sql}: {e}"),
            Ok(rows) => {
                let columns = rows.first().map(|r| r.columns()).unwrap_or_default();
                Ok(Reference {
                    names: columns.iter().map(|c| c.name_str().into_owned()).collect(),
                    types: columns.iter().map(|c| c.column_type()).collect(),
                    rows: rows
                        .into_iter()
                        .map(|r| {
                            r.unwrap()
                                .into_iter()
                                .map(|v| match v {
                                    Value::NULL => None,
                                    Value::Bytes(b) => Some(String::from_utf8(b).expect("UTF-8")),
                                    other => panic!("text protocol value {other:?}"),
                                })
                                .collect()
                        })
                        .collect(),
                })
            }
        });
    }
    conn.disconnect().await.expect("disconnect");
    out
}

/// One statement's result from a script client (see tests/clients/admin_query.py).
fn check_script_result(client: &str, sql: &str, got: &Json, want: &Result<Reference, u16>) {
    match want {
        Err(code) => {
            assert_eq!(
                got["error"]["code"].as_u64(),
                Some(u64::from(*code)),
                "{client}: {sql}: {got}"
            );
        }
        Ok(want) => {
            let columns = got["columns"].as_array().unwrap_or_else(|| {
                panic!("{client}: {sql}: no columns in {got}");
            });
            let names: Vec<&str> = columns.iter().filter_map(|c| c["name"].as_str()).collect();
            assert_eq!(names, want.names, "{client}: {sql}");
            let types: Vec<u64> = columns.iter().filter_map(|c| c["type"].as_u64()).collect();
            let want_types: Vec<u64> = want.types.iter().map(|t| *t as u64).collect();
            assert_eq!(types, want_types, "{client}: {sql}: column types");
            let rows = got["rows"].as_array().expect("rows");
            assert_eq!(rows.len(), want.rows.len(), "{client}: {sql}: {got}");
            for (row, want_row) in rows.iter().zip(&want.rows) {
                let row = row.as_array().expect("row");
                for ((value, text), ty) in row.iter().zip(want_row).zip(&want.types) {
                    match (text, ty) {
                        (None, _) => assert!(value.is_null(), "{client}: {sql}: {value}"),
                        (Some(t), ColumnType::MYSQL_TYPE_LONGLONG) => assert_eq!(
                            value.as_i64(),
                            Some(t.parse::<i64>().expect("integer")),
                            "{client}: {sql}: an integer, decoded as a number"
                        ),
                        (Some(t), ColumnType::MYSQL_TYPE_DOUBLE) => assert_eq!(
                            value.as_f64(),
                            Some(t.parse::<f64>().expect("double")),
                            "{client}: {sql}: a double, decoded as a number"
                        ),
                        (Some(t), _) => {
                            assert_eq!(value.as_str(), Some(t.as_str()), "{client}: {sql}")
                        }
                    }
                }
            }
        }
    }
}

fn run_script(client: &str, mut cmd: Command) -> Vec<Json> {
    let input = serde_json::to_vec(STATEMENTS).expect("json");
    let out = run_with_timeout(
        {
            cmd.env_remove("PYTHONPATH");
            cmd
        },
        Some(&input),
        CLIENT_TIMEOUT,
    );
    assert!(
        out.status.success(),
        "{client} failed ({}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let parsed: Json = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{client} printed no JSON ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    });
    parsed.as_array().expect("a list").clone()
}

fn script(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/clients")
        .join(name)
        .display()
        .to_string()
}

fn python_client(driver: &str, host: &str, port: &str) -> Vec<Json> {
    let python = clients_dir().join("venv/bin/python");
    assert!(
        python.is_file(),
        "{} is missing: run scripts/setup.sh (it installs PyMySQL and mysql-connector-python)",
        python.display()
    );
    let mut cmd = Command::new(python);
    cmd.arg(script("admin_query.py"))
        .args([driver, host, port, "admin", SECRET]);
    run_script(driver, cmd)
}

fn node_client(host: &str, port: &str) -> Vec<Json> {
    let modules = clients_dir().join("node/node_modules");
    assert!(
        modules.join("mysql2").is_dir(),
        "{} is missing: run scripts/setup.sh (it installs mysql2)",
        modules.display()
    );
    let mut cmd = Command::new("node");
    cmd.env("NODE_PATH", &modules)
        .arg(script("admin_query.js"))
        .args([host, port, "admin", SECRET]);
    run_script("mysql2", cmd)
}

/// `mariadb -B` (or `mysql -B`: `cmd`) output of every statement (`--force`: on after the
/// refused write).
fn cli_client(mut cmd: Command, host: &str, port: &str) -> (String, String) {
    cmd.args(["--no-defaults", "--protocol=TCP", "-h", host, "-P", port])
        .args([
            "-u",
            "admin",
            &format!("-p{SECRET}"),
            "-B",
            "--force",
            "psprobe",
        ]);
    let input: String = STATEMENTS.iter().map(|s| format!("{s};\n")).collect();
    let out = run_with_timeout(cmd, Some(input.as_bytes()), CLIENT_TIMEOUT);
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The reference in `mariadb -B` form.
fn cli_text(reference: &[Result<Reference, u16>]) -> String {
    let mut text = String::new();
    for r in reference.iter().flatten() {
        if r.rows.is_empty() {
            continue;
        }
        text.push_str(&r.names.join("\t"));
        text.push('\n');
        for row in &r.rows {
            let cells: Vec<&str> = row.iter().map(|v| v.as_deref().unwrap_or("NULL")).collect();
            text.push_str(&cells.join("\t"));
            text.push('\n');
        }
    }
    text
}

fn metric_by(scrape: &Scrape, name: &str, label: &str) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for s in scrape.series(name) {
        let key = s.labels.get(label).cloned().unwrap_or_default();
        *out.entry(key).or_default() += s.value as u64;
    }
    out.retain(|_, v| *v > 0);
    out
}

fn every_client_reads_the_same_numbers_as_metrics(flavor: Flavor) {
    let db = Server::start(flavor, Options::default());
    let probe = Probe::start_with_env(
        &db.addr(),
        &["--admin", "127.0.0.1:0"],
        &[("PSPROBE_ADMIN_PASSWORD", SECRET)],
    );
    let admin = probe.admin_addr().to_string();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let (host, port) = admin.rsplit_once(':').expect("host:port");

    // Traffic through the proxy: three shapes (one of them failing), then one connection left
    // open and idle.
    let idle = runtime.block_on(async {
        let opts: Opts =
            OptsBuilder::from_opts(Opts::from_url(&db.dsn_via(probe.proxy_addr())).expect("dsn"))
                .prefer_socket(false)
                .into();
        let mut conn = Conn::new(opts).await.expect("connect through psprobe");
        for i in 0..40 {
            conn.query_drop(format!("SELECT {i} + 1"))
                .await
                .expect("select");
        }
        for i in 0..25 {
            let _: Vec<u64> = conn
                .query(format!(
                    "SELECT COUNT(*) FROM information_schema.tables WHERE table_rows > {i}"
                ))
                .await
                .expect("count");
        }
        for _ in 0..5 {
            assert!(conn
                .query_drop("SELECT * FROM no_such_table")
                .await
                .is_err());
        }
        conn
    });

    let scrape = probe.scrape();
    let reference = runtime.block_on(reference(&admin));

    // Against /metrics: per command kind, per digest, and the totals.
    let by_command = metric_by(&scrape, "psprobe_commands_total", "command");
    let Ok(commands) = &reference[0] else {
        panic!("{:?}", reference[0])
    };
    let admin_commands: BTreeMap<String, u64> = commands
        .rows
        .iter()
        .map(|r| {
            (
                r[0].clone().expect("command"),
                r[1].as_deref().expect("n").parse().expect("number"),
            )
        })
        .collect();
    assert_eq!(
        admin_commands, by_command,
        "commands table vs psprobe_commands_total"
    );
    assert!(admin_commands["query"] >= 70, "{admin_commands:?}");

    let by_digest = metric_by(&scrape, "psprobe_digest_commands_total", "digest");
    let Ok(digests) = &reference[1] else {
        panic!("{:?}", reference[1])
    };
    let admin_digests: BTreeMap<String, u64> = digests
        .rows
        .iter()
        .map(|r| {
            (
                r[0].clone().expect("digest"),
                r[1].as_deref().expect("count").parse().expect("number"),
            )
        })
        .collect();
    assert_eq!(
        admin_digests, by_digest,
        "digests table vs psprobe_digest_commands_total"
    );
    let pct_sum: f64 = digests
        .rows
        .iter()
        .map(|r| {
            r[2].as_deref()
                .expect("pct")
                .parse::<f64>()
                .expect("number")
        })
        .sum();
    assert!(
        (pct_sum - 100.0).abs() < 0.01 * digests.rows.len() as f64,
        "{pct_sum}"
    );

    let Ok(totals) = &reference[2] else {
        panic!("{:?}", reference[2])
    };
    let errors: u64 = metric_by(&scrape, "psprobe_digest_errors_total", "digest")
        .values()
        .sum();
    assert_eq!(
        totals.rows[0],
        [
            Some(by_digest.len().to_string()),
            Some(by_digest.values().sum::<u64>().to_string()),
            Some(errors.to_string()),
        ]
    );
    assert!(errors >= 5, "{errors}");
    assert_eq!(
        totals.types,
        [ColumnType::MYSQL_TYPE_LONGLONG; 3],
        "counts are BIGINT"
    );

    let Ok(connections) = &reference[3] else {
        panic!("{:?}", reference[3])
    };
    assert_eq!(
        connections.rows,
        [[
            Some(USER.to_string()),
            Some(DATABASE.to_string()),
            Some("idle".to_string())
        ]]
    );
    let Ok(connect) = &reference[4] else {
        panic!("{:?}", reference[4])
    };
    assert_eq!(
        connect.rows,
        [[
            Some("psprobe admin".to_string()),
            Some("psprobe".to_string()),
            Some("1.5".to_string())
        ]]
    );
    assert_eq!(reference[5], Err(1290), "a write is refused");

    // Every other client: the same rows, typed the same.
    for (client, results) in [
        ("PyMySQL", python_client("pymysql", host, port)),
        (
            "mysql-connector-python",
            python_client("connector", host, port),
        ),
        ("mysql2", node_client(host, port)),
    ] {
        assert_eq!(results.len(), STATEMENTS.len(), "{client}");
        for ((sql, got), want) in STATEMENTS.iter().zip(&results).zip(&reference) {
            check_script_result(client, sql, got, want);
        }
    }
    let mut clis = vec![("mariadb CLI", Command::new("mariadb"))];
    if let Some(tree) = db.tree().filter(|_| flavor.is_mysql()) {
        let mut mysql = Command::new("chroot");
        mysql.arg(tree).arg(flavor.client_program());
        clis.push(("mysql 9.7 CLI", mysql));
    }
    for (client, cmd) in clis {
        let (stdout, stderr) = cli_client(cmd, host, port);
        assert_eq!(stdout, cli_text(&reference), "{client}");
        assert!(
            stderr.contains("ERROR 1290 (HY000) at line 6: psprobe admin is read-only"),
            "{client}: {stderr}"
        );
    }

    runtime.block_on(idle.disconnect()).expect("disconnect");
}
