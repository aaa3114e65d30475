//! The real `mariadb` CLI through psprobe: results identical to a direct connection, and every
//! command counted and timed, on MariaDB 10.11, 11.8 and MySQL 9.7 (one server per flavor,
//! shared by the suite's tests; each test has its own psprobe).

use crate::common;

use common::cli::{mariadb, mariadb_ok};
use common::probe::Probe;
use common::prom::Scrape;
use common::server::{Flavor, Options, PerFlavor, Server};

static SERVERS: PerFlavor = PerFlavor::new();

fn server(flavor: Flavor) -> &'static Server {
    SERVERS.get(flavor, || Server::start(flavor, Options::default()))
}

crate::per_flavor!(
    simple_query_is_forwarded_counted_and_timed,
    multi_statement_and_stored_procedure_with_two_results_and_out_param,
    statistics_and_errors_are_counted,
    load_data_local_infile_of_10_mb,
    blob_of_40_mib_written_and_read_back,
);

/// Commands finished with `outcome`, of `command`.
fn count(m: &Scrape, command: &str, outcome: &str) -> u64 {
    m.get(
        "psprobe_commands_total",
        &[("command", command), ("outcome", outcome)],
    ) as u64
}

fn timed(m: &Scrape, command: &str) -> u64 {
    m.get(
        "psprobe_command_duration_seconds_count",
        &[("command", command)],
    ) as u64
}

fn assert_fully_observed(m: &Scrape) {
    assert_eq!(m.get("psprobe_parse_errors_total", &[]), 0.0, "{}", m.text);
    assert_eq!(
        m.get("psprobe_unobserved_connections_total", &[]),
        0.0,
        "{}",
        m.text
    );
}

/// Runs the same CLI invocation directly and through the probe; the output must be identical.
fn same_both_ways(db: &Server, probe: &Probe, args: &[&str], stdin: Option<&[u8]>) -> String {
    let direct = mariadb_ok(&db.addr(), args, stdin);
    let proxied = mariadb_ok(probe.proxy_addr(), args, stdin);
    assert!(
        direct == proxied,
        "outputs differ for {args:?}:\n--- direct\n{direct}\n--- proxied\n{proxied}"
    );
    proxied
}

fn simple_query_is_forwarded_counted_and_timed(flavor: Flavor) {
    let db = server(flavor);
    let probe = Probe::start(&db.addr(), &[]);
    let out = same_both_ways(db, &probe, &["-N", "-B", "-e", "SELECT 1+1, 'x'"], None);
    assert_eq!(out.trim(), "2\tx");
    let m = probe.scrape();
    // In batch mode (-e) the CLI sends just our query, then COM_QUIT.
    assert_eq!(count(&m, "query", "rows"), 1, "{}", m.text);
    assert_eq!(count(&m, "quit", "no_response"), 1);
    assert_eq!(timed(&m, "query"), 1);
    assert_eq!(
        timed(&m, "quit"),
        0,
        "commands without a response are not timed"
    );
    assert_fully_observed(&m);
}

fn multi_statement_and_stored_procedure_with_two_results_and_out_param(flavor: Flavor) {
    let db = server(flavor);
    let create = b"DELIMITER //\nCREATE PROCEDURE p(IN a INT, OUT b INT) \
        BEGIN SELECT a AS first; SELECT a * 2 AS second, 'two' AS t; SET b = a * 3; END//\n";
    mariadb_ok(&db.addr(), &[], Some(create));
    let probe = Probe::start(&db.addr(), &[]);
    // With a custom delimiter the CLI sends both statements in one COM_QUERY.
    let script = b"DELIMITER //\nSELECT 1 AS a; SELECT 2 AS b, 3 AS c//\nDELIMITER ;\nCALL p(5, @out);\nSELECT @out;\n";
    let out = same_both_ways(db, &probe, &["-B"], Some(script));
    assert_eq!(
        out,
        "a\n1\nb\tc\n2\t3\nfirst\n5\nsecond\tt\n10\ttwo\n@out\n15\n"
    );
    let m = probe.scrape();
    // multi-statement (1) + CALL (1) + SELECT @out (1): each one command, however many results.
    assert_eq!(count(&m, "query", "rows"), 3, "{}", m.text);
    assert_eq!(timed(&m, "query"), 3);
    assert_fully_observed(&m);
}

fn statistics_and_errors_are_counted(flavor: Flavor) {
    let db = server(flavor);
    let probe = Probe::start(&db.addr(), &[]);
    // The CLI's `status` command asks the server for COM_STATISTICS.
    let out = mariadb_ok(probe.proxy_addr(), &["-e", "status"], None);
    assert!(out.contains("Uptime:"), "{out}");
    let bad = mariadb(probe.proxy_addr(), &["-e", "SELEC 1"], None);
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("ERROR 1064"));
    let m = probe.scrape();
    assert_eq!(count(&m, "statistics", "ok"), 1, "{}", m.text);
    assert_eq!(timed(&m, "statistics"), 1);
    assert_eq!(count(&m, "query", "error"), 1, "{}", m.text);
    assert_fully_observed(&m);
}

fn load_data_local_infile_of_10_mb(flavor: Flavor) {
    let db = server(flavor);
    db.sql("CREATE TABLE psprobe_test.direct (id INT PRIMARY KEY, v VARCHAR(200))");
    db.sql("CREATE TABLE psprobe_test.proxied LIKE psprobe_test.direct");
    let probe = Probe::start(&db.addr(), &[]);
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("rows.tsv");
    let mut data = String::new();
    let mut rows = 0;
    while data.len() < 10 * 1024 * 1024 {
        data.push_str(&format!("{rows}\t{}\n", "abcdefghij".repeat(10 + rows % 9)));
        rows += 1;
    }
    std::fs::write(&file, &data).expect("write infile");
    let load = |addr: &str, table: &str| {
        let sql = format!(
            "LOAD DATA LOCAL INFILE '{}' INTO TABLE {table}",
            file.display()
        );
        mariadb_ok(addr, &["--local-infile=1", "-e", &sql], None);
    };
    load(&db.addr(), "direct");
    load(probe.proxy_addr(), "proxied");
    let checksum = "SELECT COUNT(*), SUM(CRC32(CONCAT(id, v))) FROM";
    let direct = db.sql(&format!("{checksum} psprobe_test.direct"));
    let proxied = db.sql(&format!("{checksum} psprobe_test.proxied"));
    assert_eq!(direct, proxied);
    assert!(direct.starts_with(&format!("{rows}\t")), "{direct}");
    let m = probe.scrape();
    assert_eq!(count(&m, "query", "ok"), 1, "{}", m.text);
    assert_eq!(timed(&m, "query"), 1);
    let sent = m.get("psprobe_bytes_total", &[("direction", "client_to_server")]);
    assert!(
        sent > data.len() as f64,
        "the file went through the proxy: {sent}"
    );
    assert_fully_observed(&m);
}

fn blob_of_40_mib_written_and_read_back(flavor: Flavor) {
    let db = server(flavor);
    db.sql("CREATE TABLE psprobe_test.blobs (id INT PRIMARY KEY, b LONGBLOB)");
    let probe = Probe::start(&db.addr(), &[]);
    let size = 40 * 1024 * 1024;
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    let blob: Vec<u8> = (0..size)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect();
    let mut hex = String::with_capacity(size * 2);
    for b in &blob {
        hex.push_str(&format!("{b:02x}"));
    }
    let big = ["--max-allowed-packet=1G"];
    let insert = |addr: &str, id: u32| {
        let sql = format!("INSERT INTO blobs VALUES ({id}, X'{hex}');\n");
        mariadb_ok(addr, &big, Some(sql.as_bytes()));
    };
    insert(&db.addr(), 1);
    insert(probe.proxy_addr(), 2);
    assert_eq!(
        // SHA2: MySQL 9.7 has no MD5 any more.
        db.sql("SELECT COUNT(DISTINCT SHA2(b, 256)), MIN(LENGTH(b)) FROM psprobe_test.blobs"),
        format!("1\t{size}\n"),
        "the blob written through the proxy equals the one written directly"
    );
    let read = |addr: &str| {
        let out = mariadb(
            addr,
            &[
                "--max-allowed-packet=1G",
                "-N",
                "-B",
                "--raw",
                "-e",
                "SELECT b FROM blobs WHERE id = 2",
            ],
            None,
        );
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        out.stdout
    };
    let direct = read(&db.addr());
    let proxied = read(probe.proxy_addr());
    assert!(
        direct == proxied,
        "read back differs ({} vs {} bytes)",
        direct.len(),
        proxied.len()
    );
    assert_eq!(
        &proxied[..size],
        &blob[..],
        "the blob read back through the proxy is the blob"
    );
    let m = probe.scrape();
    assert_eq!(count(&m, "query", "ok"), 1, "{}", m.text);
    assert_eq!(count(&m, "query", "rows"), 1, "{}", m.text);
    assert_eq!(timed(&m, "query"), 2);
    assert_fully_observed(&m);
}
