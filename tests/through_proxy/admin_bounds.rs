//! The admin interface's bounds against clients that ask for large results and do not read
//! them (issue 23: 40 such connections took psprobe to 3.6 GB, 2.8 GB of it kept after they
//! closed): the results held at once share one memory budget (the next query past it gets
//! ERR 1041 at once), admin connections are capped (ERR 1040, as mysqld sends it), and the
//! memory comes back when the clients go.

use crate::common;

use std::time::{Duration, Instant};

use common::probe::Probe;
use mysql_async::prelude::Queryable;
use mysql_async::{Conn, OptsBuilder};

const ADMIN_SECRET: &str = "bounds-admin-secret";
/// About 55 MB of result (90,000 rows of 600 bytes), under the per-query limit of 64 MiB.
const LARGE: &str = "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n LIMIT 90000) \
                     SELECT x, printf('%.600c', 'x') AS pad FROM n";
/// psprobe admin's connection limit (src/admin/server.rs, MAX_CONNECTIONS).
const MAX_CONNECTIONS: usize = 32;

fn opts(probe: &Probe) -> OptsBuilder {
    let (host, port) = common::cli::split_addr(probe.admin_addr());
    OptsBuilder::default()
        .ip_or_hostname(host)
        .tcp_port(port.parse().expect("port"))
        .user(Some("admin"))
        .pass(Some(ADMIN_SECRET))
        .prefer_socket(false)
}

fn server_code(e: &mysql_async::Error) -> Option<u16> {
    match e {
        mysql_async::Error::Server(e) => Some(e.code),
        _ => None,
    }
}

#[test]
fn unread_results_share_one_budget_connections_are_capped_and_memory_comes_back() {
    let state = tempfile::tempdir().expect("tempdir");
    let probe = Probe::start_with_env(
        "127.0.0.1:1",
        &[
            "--admin",
            "127.0.0.1:0",
            "--state-dir",
            state.path().to_str().expect("UTF-8 path"),
        ],
        &[("PSPROBE_ADMIN_PASSWORD", ADMIN_SECRET)],
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let before = probe.rss_bytes();
    runtime.block_on(async {
        // Eight clients ask for a large result each and read none of it (only its columns).
        let mut held = Vec::new();
        let mut refused = 0;
        for _ in 0..8 {
            let mut conn = Conn::new(opts(&probe)).await.expect("admin connects");
            match conn.query_iter(LARGE).await {
                Ok(result) => {
                    assert_eq!(result.columns().map_or(0, |c| c.len()), 2);
                    // The result is left unread; the connection stays open with it.
                    std::mem::forget(result);
                }
                Err(e) => {
                    assert_eq!(server_code(&e), Some(1041), "{e}");
                    assert!(e.to_string().contains("retry when they are read"), "{e}");
                    refused += 1;
                }
            }
            held.push(conn);
        }
        let rss = probe.rss_bytes();
        eprintln!(
            "figure: 8 unread 55 MB admin results: {} held, {refused} refused; RSS {} MiB (was {} MiB)",
            8 - refused,
            rss >> 20,
            before >> 20
        );
        assert!(
            (5..=7).contains(&refused),
            "the 128 MiB budget holds two such results, at most three: {refused} refused"
        );
        assert!(rss < before + (400 << 20), "RSS {} MiB", rss >> 20);

        // Connections past the limit get ERR 1040 before the greeting.
        let mut idle = Vec::new();
        while held.len() + idle.len() < MAX_CONNECTIONS {
            idle.push(Conn::new(opts(&probe)).await.expect("admin connects"));
        }
        let e = Conn::new(opts(&probe)).await.expect_err("past the limit");
        assert!(
            e.to_string().contains("1040") || server_code(&e) == Some(1040),
            "{e}"
        );
        assert!(e.to_string().contains("at most 32"), "{e}");
        drop(idle);

        // The memory comes back once the clients go (their connections close, the results are
        // dropped, and the freed heap is given back to the system).
        drop(held);
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let rss = probe.rss_bytes();
            if rss < before + (64 << 20) {
                eprintln!("figure: RSS after the clients left {} MiB", rss >> 20);
                break;
            }
            assert!(
                Instant::now() < deadline,
                "RSS still {} MiB 30 s after the clients left (started at {} MiB)",
                rss >> 20,
                before >> 20
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        // And a new client is served as before.
        let mut conn = Conn::new(opts(&probe)).await.expect("admin connects again");
        let one: Option<i64> = conn.query_first("SELECT 1").await.expect("query");
        assert_eq!(one, Some(1));
    });
}
