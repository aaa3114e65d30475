//! Proves the shared harness in tests/common works before real tests lean on
//! it: the Prometheus parser, throwaway MariaDB servers, and the CLI helpers.
//! (Probe is compiled here but exercised by the proxy tests.)

mod common;

use common::cli::{mariadb, mariadb_ok};
use common::controller::poll;
use common::mariadb::{MariaDb, Options};
use common::prom::Scrape;
use common::restart::{restart_script, Reaper};
use common::server::{Flavor, Server};
use std::net::TcpStream;

const EXPOSITION: &str = r#"
# HELP psprobe_queries_total Queries seen.
# TYPE psprobe_queries_total counter
psprobe_queries_total{kind="select",upstream="a"} 3
psprobe_queries_total{kind="insert",upstream="a"} 2
psprobe_queries_total{kind="select",upstream="b"} 5 1700000000000
psprobe_weird{q="say \"hi\"",path="C:\\tmp",nl="a\nb"} 1.5e3
psprobe_up 1
# TYPE psprobe_latency_seconds histogram
psprobe_latency_seconds_bucket{le="0.001"} 1
psprobe_latency_seconds_bucket{le="0.01"} 4
psprobe_latency_seconds_bucket{le="+Inf"} 7
psprobe_latency_seconds_sum 0.042
psprobe_latency_seconds_count 7
psprobe_gauge_neg -Inf
"#;

#[test]
fn prom_parser_handles_labels_escapes_and_histograms() {
    let s = Scrape::parse(EXPOSITION);
    assert_eq!(s.samples.len(), 11, "comments and blank lines are skipped");
    assert_eq!(
        s.get("psprobe_queries_total", &[]),
        10.0,
        "no filter sums all series"
    );
    assert_eq!(s.get("psprobe_queries_total", &[("kind", "select")]), 8.0);
    assert_eq!(
        s.get(
            "psprobe_queries_total",
            &[("kind", "select"), ("upstream", "a")]
        ),
        3.0
    );
    assert_eq!(s.get("psprobe_queries_total", &[("kind", "delete")]), 0.0);
    assert_eq!(s.get("psprobe_missing", &[]), 0.0);
    assert_eq!(s.series("psprobe_queries_total").len(), 3);

    let weird = s.series("psprobe_weird");
    assert_eq!(weird.len(), 1);
    assert_eq!(weird[0].labels["q"], r#"say "hi""#);
    assert_eq!(weird[0].labels["path"], r"C:\tmp");
    assert_eq!(weird[0].labels["nl"], "a\nb");
    assert_eq!(weird[0].value, 1500.0);

    assert_eq!(s.get("psprobe_up", &[]), 1.0);
    let inf = s.series("psprobe_latency_seconds_bucket");
    assert_eq!(inf.len(), 3);
    assert_eq!(inf[2].labels["le"], "+Inf");
    assert_eq!(inf[2].value, 7.0);
    assert_eq!(
        s.get("psprobe_latency_seconds_bucket", &[("le", "0.01")]),
        4.0
    );
    assert_eq!(s.get("psprobe_latency_seconds_sum", &[]), 0.042);
    assert_eq!(s.get("psprobe_gauge_neg", &[]), f64::NEG_INFINITY);
    assert!(s.has("psprobe_latency_seconds_count"));
}

#[test]
#[should_panic(expected = "bad exposition line")]
fn prom_parser_rejects_garbage() {
    Scrape::parse("psprobe_x{le=\"1\" 3\n");
}

#[test]
fn performance_schema_on_and_off() {
    let on = MariaDb::start_default();
    let off = MariaDb::start(Options {
        performance_schema: false,
        extra_args: vec![],
    });
    assert_ne!(on.port(), off.port());
    assert_eq!(on.sql("SELECT @@performance_schema").trim(), "1");
    assert_eq!(off.sql("SELECT @@performance_schema").trim(), "0");
}

#[test]
fn extra_args_reach_the_server() {
    let db = MariaDb::start(Options {
        performance_schema: true,
        extra_args: vec!["--max-connections=77".into()],
    });
    assert_eq!(db.sql("SELECT @@max_connections").trim(), "77");
    assert_eq!(
        db.sql("SELECT @@max_allowed_packet").trim(),
        (256u64 << 20).to_string()
    );
}

#[test]
fn cli_helpers_use_the_psprobe_account() {
    let db = MariaDb::start_default();
    let who = mariadb_ok(
        &db.addr(),
        &["-N", "-B", "-e", "SELECT CURRENT_USER(), DATABASE()"],
        None,
    );
    assert_eq!(who.trim(), "psprobe@%\tpsprobe_test");
    let piped = mariadb_ok(&db.addr(), &["-N", "-B"], Some(b"SELECT 40 + 2;\n"));
    assert_eq!(piped.trim(), "42");
    let bad = mariadb(&db.addr(), &["-e", "SELEC nonsense"], None);
    assert!(!bad.status.success(), "a syntax error must fail the CLI");
    assert!(
        String::from_utf8_lossy(&bad.stderr).contains("1064"),
        "expected ER_PARSE_ERROR"
    );
}

#[test]
fn dsn_works_with_mysql_async() {
    use mysql_async::prelude::Queryable;
    let db = MariaDb::start_default();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("build tokio runtime");
    let (one, schema) = rt.block_on(async {
        let mut conn = mysql_async::Conn::from_url(db.dsn())
            .await
            .expect("connect via dsn()");
        let one: Option<i64> = conn.query_first("SELECT 1").await.expect("SELECT 1");
        let schema: Option<String> = conn
            .query_first("SELECT DATABASE()")
            .await
            .expect("SELECT DATABASE()");
        conn.disconnect().await.expect("disconnect");
        (one, schema)
    });
    assert_eq!(one, Some(1));
    assert_eq!(schema.as_deref(), Some("psprobe_test"));
    assert_eq!(
        db.dsn_via("127.0.0.1:1"),
        "mysql://psprobe:psprobe-pass@127.0.0.1:1/psprobe_test"
    );
}

#[test]
fn drop_stops_server_and_removes_datadir() {
    let db = MariaDb::start_default();
    let (addr, datadir, pid) = (db.addr(), db.datadir().to_path_buf(), db.pid());
    assert!(
        datadir.join("mysql").is_dir(),
        "datadir holds the copied template"
    );
    TcpStream::connect(&addr).expect("server accepts connections while alive");
    drop(db);
    assert!(
        TcpStream::connect(&addr).is_err(),
        "{addr} still accepts connections after drop"
    );
    assert!(!datadir.exists(), "{} survived drop", datadir.display());
    // SAFETY: signal 0 only checks for existence; the child has been reaped.
    assert_eq!(
        unsafe { libc::kill(pid as libc::pid_t, 0) },
        -1,
        "mariadbd {pid} still exists"
    );
}

#[test]
fn kill_and_restart_on_same_port_keeps_data() {
    let mut db = MariaDb::start_default();
    let (port, old_pid) = (db.port(), db.pid());
    db.sql("CREATE TABLE psprobe_test.t (id INT PRIMARY KEY) ENGINE=InnoDB; INSERT INTO psprobe_test.t VALUES (7)");
    db.kill();
    assert!(
        TcpStream::connect(db.addr()).is_err(),
        "upstream still up after kill()"
    );
    assert!(
        db.try_sql("SELECT 1").is_err(),
        "queries must fail while down"
    );
    db.restart();
    assert_eq!(db.port(), port, "restart must reuse the port");
    assert_ne!(db.pid(), old_pid, "restart must spawn a new process");
    assert_eq!(
        db.sql("SELECT id FROM psprobe_test.t").trim(),
        "7",
        "committed row lost"
    );
}

#[test]
fn server_outlives_the_thread_that_started_it() {
    // PR_SET_PDEATHSIG fires when the forking *thread* exits; psprobe_harness::child forks
    // from a process-lifetime thread so servers can be shared across tests.
    let db = std::thread::spawn(MariaDb::start_default)
        .join()
        .expect("starter thread panicked");
    assert_eq!(
        db.sql("SELECT 1").trim(),
        "1",
        "server died with its starter thread"
    );
}

#[test]
fn panicking_test_still_cleans_up() {
    let (tx, rx) = std::sync::mpsc::channel();
    let result = std::thread::spawn(move || {
        let db = MariaDb::start_default();
        tx.send((db.addr(), db.datadir().to_path_buf()))
            .expect("send server details");
        panic!("deliberate panic while a MariaDb is alive");
    })
    .join();
    assert!(result.is_err(), "the thread was supposed to panic");
    let (addr, datadir) = rx.recv().expect("server details");
    assert!(
        TcpStream::connect(&addr).is_err(),
        "{addr} survived the panic"
    );
    assert!(
        !datadir.exists(),
        "{} survived the panic",
        datadir.display()
    );
}

/// Every flavor: the server it says, the test user over plain TCP and TLS with the flavor's own
/// client (on MySQL: caching_sha2_password, its full path first, the cache being cold), root
/// SQL, a clean restart that keeps data, and the restart hook's script starting it again with
/// performance_schema as it is told (a chrooted mysqld in its tree).
fn every_flavor_serves_restarts_and_is_restarted_by_the_hook(flavor: Flavor) {
    let mut db = Server::start(flavor, Options::default());
    assert!(
        db.version().starts_with(flavor.version_prefix()),
        "{}: {}",
        db.name(),
        db.version()
    );
    let plugin = db.sql("SELECT plugin FROM mysql.user WHERE user = 'psprobe'");
    if flavor.is_mysql() {
        assert_eq!(plugin.trim(), "caching_sha2_password");
    }
    let (plain, tls) = if flavor.is_mysql() {
        (
            vec!["--ssl-mode=DISABLED", "--get-server-public-key"],
            vec!["--ssl-mode=REQUIRED"],
        )
    } else if flavor == Flavor::MariaDb118 {
        (
            vec!["--skip-ssl"],
            vec!["--ssl", "--disable-ssl-verify-server-cert"],
        )
    } else {
        (vec!["--skip-ssl"], vec!["--ssl"])
    };
    for (how, mut args) in [("plain", plain), ("tls", tls)] {
        let sql = "SELECT CURRENT_USER(); SHOW SESSION STATUS LIKE 'Ssl_cipher'";
        args.extend(["-N", "-B", "-e", sql]);
        let out = db.client(&db.addr(), &args);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && text.starts_with("psprobe@%\n"),
            "{how} login on {}: {text}{}",
            db.name(),
            String::from_utf8_lossy(&out.stderr)
        );
        let cipher = text.lines().nth(1).and_then(|l| l.split('\t').nth(1));
        assert_eq!(
            cipher.unwrap_or("").is_empty(),
            how == "plain",
            "{how}: {text}"
        );
    }
    db.sql("CREATE TABLE psprobe_test.kept (id INT PRIMARY KEY); INSERT INTO psprobe_test.kept VALUES (3)");
    db.restart_clean();
    assert_eq!(db.sql("SELECT id FROM psprobe_test.kept").trim(), "3");

    let dir = tempfile::tempdir().expect("hook dir");
    let _reaper = Reaper(dir.path().to_path_buf());
    let hook = restart_script(&db, dir.path());
    let old = db.pid();
    let ran = std::process::Command::new("sh")
        .arg(&hook)
        .arg("OFF")
        .status()
        .expect("run the hook");
    assert!(ran.success());
    let pfs = poll("the server started by the hook", 60, || {
        db.try_sql("SELECT @@performance_schema").ok()
    });
    assert_eq!(
        pfs.trim(),
        "0",
        "{}: the hook's {{pfs}} reached it",
        db.name()
    );
    let started = std::fs::read_to_string(dir.path().join("pids")).expect("pids");
    assert_ne!(started.trim(), old.to_string());
    assert_eq!(db.sql("SELECT id FROM psprobe_test.kept").trim(), "3");
}

crate::per_flavor!(every_flavor_serves_restarts_and_is_restarted_by_the_hook);
