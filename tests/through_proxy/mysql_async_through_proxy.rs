//! mysql_async (a real async driver) through psprobe: results come back intact, and psprobe's
//! per-command counts equal exactly what the client sent, for the binary protocol (including
//! COM_STMT_SEND_LONG_DATA and >16 MiB packets), text queries, session commands, a stored
//! procedure with several result sets and OUT parameters, and connection churn; on MariaDB
//! 10.11, 11.8 and MySQL 9.7 (one server per flavor, shared by the suite's tests; each test
//! has its own psprobe).

use crate::common;

use common::probe::Probe;
use common::prom::Scrape;
use common::server::{Flavor, Options, PerFlavor, Server};
use mysql_async::prelude::*;
use mysql_async::{ChangeUserOpts, Conn, Error, Opts, OptsBuilder, QueryResult, Row, Value};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

static SERVERS: PerFlavor = PerFlavor::new();

fn server(flavor: Flavor) -> &'static Server {
    SERVERS.get(flavor, || Server::start(flavor, Options::default()))
}

crate::per_flavor!(
    prepared_statements_round_trip_mixed_types_and_large_values,
    text_queries_and_session_commands,
    stored_procedure_with_out_param_and_result_sets,
    connection_churn_is_counted_and_released,
);

/// mysql_common's MAX_PAYLOAD_LEN; SEND_LONG_DATA chunks are 6 bytes shorter.
const MAX_PAYLOAD: usize = 16_777_215;
const MIB: usize = 1 << 20;

fn block_on<F: std::future::Future>(fut: F) -> F::Output {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build();
    rt.expect("build tokio runtime").block_on(fut)
}

/// Deterministic client: no statement cache, and no `SELECT @@max_allowed_packet, ...` or
/// reconnect over the server's unix socket (which would bypass the proxy) at connect time.
fn opts(db: &Server, probe: &Probe) -> Opts {
    let url = Opts::from_url(&db.dsn_via(probe.proxy_addr())).expect("parse DSN");
    OptsBuilder::from_opts(url)
        .prefer_socket(false)
        .stmt_cache_size(0)
        .max_allowed_packet(Some(256 * MIB))
        .wait_timeout(Some(28_800))
        .into()
}

async fn connect(db: &Server, probe: &Probe) -> Conn {
    let conn = Conn::new(opts(db, probe)).await;
    conn.expect("connect via psprobe")
}

type Counts = BTreeMap<(String, String), u64>;

fn command_counts(s: &Scrape) -> Counts {
    let mut out = Counts::new();
    for x in s.series("psprobe_commands_total") {
        let label = |k: &str| x.labels.get(k).cloned().unwrap_or_default();
        *out.entry((label("command"), label("outcome"))).or_default() += x.value as u64;
    }
    out
}

/// Non-zero per (command, outcome) increases between two scrapes.
fn delta(before: &Scrape, after: &Scrape) -> Counts {
    let b = command_counts(before);
    let mut out = Counts::new();
    for (k, v) in command_counts(after) {
        let d = v - b.get(&k).copied().unwrap_or(0);
        if d != 0 {
            out.insert(k, d);
        }
    }
    out
}

fn counts(pairs: &[(&str, &str, u64)]) -> Counts {
    let pairs = pairs
        .iter()
        .map(|(c, o, n)| ((c.to_string(), o.to_string()), *n));
    pairs.collect()
}

fn timed(before: &Scrape, after: &Scrape, command: &str) -> u64 {
    let name = "psprobe_command_duration_seconds_count";
    (after.get(name, &[("command", command)]) - before.get(name, &[("command", command)])) as u64
}

/// Polls until psprobe has closed every connection (so it has recorded all their commands,
/// including the responseless ones) and returns that scrape. Panics after 10 s.
fn wait_idle(probe: &Probe) -> Scrape {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let s = probe.scrape();
        if s.get("psprobe_connections_active", &[]) == 0.0 {
            return s;
        }
        assert!(
            Instant::now() < deadline,
            "connections still active after 10 s:\n{}",
            s.text
        );
        std::thread::sleep(Duration::from_millis(20)); // poll interval
    }
}

fn assert_observed_everything(s: &Scrape) {
    for name in [
        "psprobe_parse_errors_total",
        "psprobe_unobserved_connections_total",
        "psprobe_auth_failures_total",
    ] {
        assert_eq!(s.get(name, &[]), 0.0, "{name}\n{}", s.text);
    }
}

fn text(len: usize, seed: usize) -> Value {
    Value::Bytes(
        (0..len)
            .map(|i| b'a' + ((i * 7 + seed) % 26) as u8)
            .collect(),
    )
}

fn blob(len: usize, seed: usize) -> Value {
    Value::Bytes((0..len).map(|i| (i * 131 + seed) as u8).collect())
}

fn s(v: &str) -> Value {
    Value::Bytes(v.as_bytes().to_vec())
}

/// Short description of a value for assertion messages (the big ones are MiBs).
fn show(v: &Value) -> String {
    match v {
        Value::Bytes(b) if b.len() > 64 => format!("Bytes(len {}, {:?}..)", b.len(), &b[..16]),
        v => format!("{v:?}"),
    }
}

/// Equal values; the driver decodes BIGINT UNSIGNED as Int when it fits in an i64.
fn same(want: &Value, got: &Value) -> bool {
    match (want, got) {
        (Value::UInt(u), Value::Int(i)) => u64::try_from(*i) == Ok(*u),
        _ => want == got,
    }
}

/// Columns: id, big, dbl, amount, name, body, data, d, dt, tm, flag, note.
#[rustfmt::skip] // a table: one `vec!` per row
fn sample_rows() -> Vec<Vec<Value>> {
    use Value::{Date as D, Double as F, Int as I, Time as T, UInt as U, NULL as N};
    vec![
        vec![I(1), U(u64::MAX), F(-1.25e300), s("12345678901234.567890"), s("plain"), s("short"),
             blob(256, 0), D(2024, 2, 29, 0, 0, 0, 0), D(2023, 12, 31, 23, 59, 58, 123_456),
             T(true, 1, 12, 34, 56, 0), I(-128), s("h\u{e9}llo \u{2713}")],
        vec![I(2), N, N, N, N, N, N, N, N, N, N, N],
        // 6 MiB of parameters: still one COM_STMT_EXECUTE packet.
        vec![I(3), U(42), F(3.5), s("-0.000001"), N, text(MIB, 3), blob(5 * MIB, 3),
             D(1970, 1, 1, 0, 0, 0, 0), N, T(false, 0, 0, 0, 0, 0), N, s("")],
        vec![I(4), N, N, s("0.500000"), s("x"), text(5 * MIB, 4), blob(MIB, 4), N,
             D(2000, 1, 1, 0, 0, 0, 1), N, I(127), N],
        // Over 16 MiB: mysql_async sends every string parameter as SEND_LONG_DATA, the
        // 17 MiB one in two chunks of which the first is a 16 MiB + 1 byte payload.
        vec![I(5), U(0), F(0.0), s("99.990000"), s("long data"), s(""), blob(17 * MIB, 5),
             D(9999, 12, 31, 0, 0, 0, 0), D(1000, 1, 1, 0, 0, 0, 999_999),
             T(false, 34, 22, 59, 59, 0), I(0), N],
    ]
}

/// COM_STMT_SEND_LONG_DATA packets mysql_async sends for one execute with these params.
fn long_data_packets(params: &[Value]) -> u64 {
    let strings = params.iter().filter_map(|v| match v {
        Value::Bytes(b) => Some(b.len()),
        _ => None,
    });
    if strings.clone().sum::<usize>() <= MAX_PAYLOAD {
        return 0; // the other params add well under a KiB, far from the limit here
    }
    strings
        .map(|n| n.div_ceil(MAX_PAYLOAD - 6).max(1) as u64)
        .sum()
}

const COLUMNS: &str = "id, big, dbl, amount, name, body, data, d, dt, tm, flag, note";

fn prepared_statements_round_trip_mixed_types_and_large_values(flavor: Flavor) {
    let db = server(flavor);
    db.sql(
        "CREATE TABLE psprobe_test.t (id INT NOT NULL PRIMARY KEY, big BIGINT UNSIGNED, \
         dbl DOUBLE, amount DECIMAL(20,6), name VARCHAR(255), body LONGTEXT, \
         data LONGBLOB, d DATE, dt DATETIME(6), tm TIME, flag TINYINT, note VARCHAR(64)) \
         DEFAULT CHARSET=utf8mb4",
    );
    let probe = Probe::start(&db.addr(), &[]);
    let rows = sample_rows();
    let long_data: u64 = rows.iter().map(|r| long_data_packets(r)).sum();
    assert_eq!(long_data, 5, "the last row exercises SEND_LONG_DATA");

    let (before, after) = block_on(async {
        let mut conn = connect(db, &probe).await;
        let before = probe.scrape();
        let insert = conn.prep(format!(
            "INSERT INTO t ({COLUMNS}) VALUES (?{})",
            ",?".repeat(11)
        ));
        let insert = insert.await.expect("prepare INSERT");
        assert_eq!(insert.num_params(), 12);
        for row in &rows {
            conn.exec_drop(&insert, row.clone()).await.expect("INSERT");
        }
        let select = conn.prep(format!("SELECT {COLUMNS} FROM t WHERE id = ?"));
        let select = select.await.expect("prepare SELECT");
        for row in &rows {
            let got: Vec<Row> = conn.exec(&select, (row[0].clone(),)).await.expect("SELECT");
            assert_eq!(got.len(), 1, "row {:?}", row[0]);
            let got = got.into_iter().next().unwrap().unwrap();
            assert_eq!(got.len(), row.len());
            for (i, (want, got)) in row.iter().zip(&got).enumerate() {
                let (w, g) = (show(want), show(got));
                assert!(
                    same(want, got),
                    "row {:?} col {i}: got {g}, want {w}",
                    row[0]
                );
            }
        }
        let none: Vec<Row> = conn.exec(&select, (999,)).await.expect("SELECT no row");
        assert!(none.is_empty());
        conn.close(insert).await.expect("close INSERT");
        conn.close(select).await.expect("close SELECT");
        conn.disconnect().await.expect("disconnect");
        (before, wait_idle(&probe))
    });

    let want = counts(&[
        ("stmt_prepare", "ok", 2),
        ("stmt_execute", "ok", 5),
        ("stmt_execute", "rows", 6),
        ("stmt_send_long_data", "no_response", long_data),
        ("stmt_close", "no_response", 2),
        ("quit", "no_response", 1),
    ]);
    assert_eq!(delta(&before, &after), want, "{}", after.text);
    assert_eq!(timed(&before, &after, "stmt_execute"), 11, "{}", after.text);
    assert_eq!(timed(&before, &after, "stmt_prepare"), 2, "{}", after.text);
    assert_observed_everything(&after);
}

fn text_queries_and_session_commands(flavor: Flavor) {
    let db = server(flavor);
    db.sql("CREATE TABLE psprobe_test.t2 (id INT PRIMARY KEY, v VARCHAR(16))");
    let probe = Probe::start(&db.addr(), &[]);

    let (before, after) = block_on(async {
        let mut conn = connect(db, &probe).await;
        let before = probe.scrape();
        conn.query_drop("INSERT INTO t2 VALUES (1, 'a'), (2, 'b'), (3, 'c')")
            .await
            .unwrap();
        conn.query_drop("UPDATE t2 SET v = 'z' WHERE id = 2")
            .await
            .unwrap();
        assert_eq!(conn.affected_rows(), 1);
        let got: Vec<(i32, String)> = conn
            .query("SELECT id, v FROM t2 ORDER BY id")
            .await
            .unwrap();
        let want = [(1, "a"), (2, "z"), (3, "c")].map(|(i, v)| (i, v.to_owned()));
        assert_eq!(got, want);
        match conn.query_drop("SELEC 1").await {
            Err(Error::Server(e)) => assert_eq!(e.code, 1064, "{e:?}"),
            other => panic!("syntax error expected, got {other:?}"),
        }
        // One COM_QUERY with two result sets (CLIENT_MULTI_STATEMENTS).
        let mut multi = conn
            .query_iter("SELECT 1 AS a; SELECT 2 AS b, 3 AS c")
            .await
            .unwrap();
        let first: Vec<(i64,)> = multi.collect().await.unwrap();
        let second: Vec<(i64, i64)> = multi.collect().await.unwrap();
        assert!(multi.is_empty());
        drop(multi);
        assert_eq!((first, second), (vec![(1,)], vec![(2, 3)]));

        conn.ping().await.expect("COM_PING");
        conn.query_drop("SET @x = 5").await.unwrap();
        assert!(
            conn.reset().await.expect("COM_RESET_CONNECTION"),
            "every server here supports it"
        );
        let x: Option<Option<i64>> = conn.query_first("SELECT @x").await.unwrap();
        assert_eq!(x, Some(None), "reset cleared the user variable");

        let user = ChangeUserOpts::default()
            .with_user(Some("psprobe".into()))
            .with_pass(Some("psprobe-pass".into()))
            .with_db_name(Some("psprobe_test".into()));
        conn.change_user(user).await.expect("COM_CHANGE_USER");
        let who: Option<(String, String, i64)> = conn
            .query_first("SELECT CURRENT_USER(), DATABASE(), COUNT(*) FROM t2")
            .await
            .unwrap();
        assert_eq!(who, Some(("psprobe@%".into(), "psprobe_test".into(), 3)));
        conn.disconnect().await.expect("disconnect");
        (before, wait_idle(&probe))
    });

    let want = counts(&[
        ("query", "ok", 3),
        ("query", "rows", 4),
        ("query", "error", 1),
        ("ping", "ok", 1),
        ("reset_connection", "ok", 1),
        ("change_user", "ok", 1),
        ("quit", "no_response", 1),
    ]);
    assert_eq!(delta(&before, &after), want, "{}", after.text);
    assert_eq!(timed(&before, &after, "query"), 8, "{}", after.text);
    assert_observed_everything(&after);
}

async fn all_sets<P: mysql_async::prelude::Protocol>(
    mut result: QueryResult<'_, 'static, P>,
) -> Vec<Vec<Row>> {
    let mut sets = Vec::new();
    while !result.is_empty() {
        sets.push(result.collect::<Row>().await.expect("read result set"));
    }
    sets
}

fn cells(set: &[Row]) -> Vec<Vec<String>> {
    let cell = |v: &Value| match v {
        Value::Bytes(b) => String::from_utf8_lossy(b).into_owned(),
        Value::Int(i) => i.to_string(),
        Value::UInt(u) => u.to_string(),
        other => format!("{other:?}"),
    };
    set.iter()
        .map(|r| r.clone().unwrap().iter().map(cell).collect())
        .collect()
}

fn stored_procedure_with_out_param_and_result_sets(flavor: Flavor) {
    let db = server(flavor);
    let probe = Probe::start(&db.addr(), &[]);

    let (before, after) = block_on(async {
        let mut conn = connect(db, &probe).await;
        conn.query_drop(
            "CREATE PROCEDURE p(IN a INT, OUT b INT) BEGIN \
               SELECT a AS x; \
               SELECT a + 1 AS y, 'two' AS z UNION ALL SELECT a + 2, 'three'; \
               SET b = a * 10; \
             END",
        )
        .await
        .expect("CREATE PROCEDURE");
        let before = probe.scrape();

        let call = conn.prep("CALL p(?, ?)").await.expect("prepare CALL");
        let sets = all_sets(conn.exec_iter(&call, (7, Value::NULL)).await.unwrap()).await;
        // Both SELECTs, then (binary protocol only) the OUT parameters as a result set.
        let want = |a: i64| {
            let s = |v: &str| v.to_owned();
            let (x, y, z, b) = (a, a + 1, a + 2, a * 10);
            let two = vec![
                vec![y.to_string(), s("two")],
                vec![z.to_string(), s("three")],
            ];
            vec![vec![vec![x.to_string()]], two, vec![vec![b.to_string()]]]
        };
        assert_eq!(sets.iter().map(|s| cells(s)).collect::<Vec<_>>(), want(7));
        conn.close(call).await.expect("close CALL");

        let sets = all_sets(conn.query_iter("CALL p(3, @out)").await.unwrap()).await;
        assert_eq!(
            sets.iter().map(|s| cells(s)).collect::<Vec<_>>(),
            want(3)[..2]
        );
        let out: Option<i64> = conn.query_first("SELECT @out").await.unwrap();
        assert_eq!(out, Some(30));
        conn.disconnect().await.expect("disconnect");
        (before, wait_idle(&probe))
    });

    let want = counts(&[
        ("stmt_prepare", "ok", 1),
        ("stmt_execute", "rows", 1),
        ("stmt_close", "no_response", 1),
        ("query", "rows", 2),
        ("quit", "no_response", 1),
    ]);
    assert_eq!(delta(&before, &after), want, "{}", after.text);
    assert_eq!(timed(&before, &after, "stmt_execute"), 1, "{}", after.text);
    assert_observed_everything(&after);
}

fn connection_churn_is_counted_and_released(flavor: Flavor) {
    const CYCLES: u64 = 50;
    let db = server(flavor);
    let probe = Probe::start(&db.addr(), &[]);
    let before = probe.scrape();

    block_on(async {
        for i in 0..CYCLES {
            let mut conn = connect(db, &probe).await;
            let got: Option<u64> = conn.query_first(format!("SELECT {i}")).await.unwrap();
            assert_eq!(got, Some(i));
            conn.disconnect().await.expect("disconnect");
        }
    });
    let after = wait_idle(&probe);

    let total = |s: &Scrape| s.get("psprobe_connections_total", &[]) as u64;
    assert_eq!(total(&after) - total(&before), CYCLES, "{}", after.text);
    let want = counts(&[("query", "rows", CYCLES), ("quit", "no_response", CYCLES)]);
    assert_eq!(delta(&before, &after), want, "{}", after.text);
    assert_observed_everything(&after);
}
