//! A load client that keeps its own exact counts through reconnects: `workers` connections
//! (mysql_async, text protocol) run small queries in a loop until a deadline, and a worker
//! whose connection is lost reconnects and goes on. Used where sysbench cannot follow (its
//! 1.0.20 crashes with SIGSEGV when it reconnects after a server restart).

use mysql_async::prelude::*;
use mysql_async::{Conn, Error, Opts, OptsBuilder};
use std::time::{Duration, Instant};

/// What the client saw, per query sent.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct ClientCounts {
    /// Answered with OK or a result set.
    pub ok: u64,
    /// Answered with an ERR packet.
    pub server_errors: u64,
    /// No answer: the connection broke (the query may never have left this host).
    pub lost: u64,
    pub connects: u64,
    pub connect_failures: u64,
}

impl std::ops::AddAssign for ClientCounts {
    fn add_assign(&mut self, o: Self) {
        self.ok += o.ok;
        self.server_errors += o.server_errors;
        self.lost += o.lost;
        self.connects += o.connects;
        self.connect_failures += o.connect_failures;
    }
}

/// Client options for `dsn` that make the client send only what we count: no statement
/// cache, no settings query at connect, no switch to a unix socket.
pub fn opts(dsn: &str) -> Opts {
    let url = Opts::from_url(dsn).unwrap_or_else(|e| panic!("parse DSN {dsn}: {e}"));
    OptsBuilder::from_opts(url)
        .prefer_socket(false)
        .stmt_cache_size(0)
        .max_allowed_packet(Some(64 << 20))
        .wait_timeout(Some(28_800))
        .into()
}

/// Runs the load for `duration` on the calling thread (its own tokio runtime, so a caller
/// inside a network namespace makes its sockets there).
pub fn run(opts: Opts, workers: usize, duration: Duration) -> ClientCounts {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("build tokio runtime");
    rt.block_on(async move {
        let deadline = Instant::now() + duration;
        let tasks: Vec<_> = (0..workers)
            .map(|w| tokio::spawn(worker(opts.clone(), w as u64, deadline)))
            .collect();
        let mut total = ClientCounts::default();
        for t in tasks {
            total += t.await.expect("client worker panicked");
        }
        total
    })
}

async fn worker(opts: Opts, id: u64, deadline: Instant) -> ClientCounts {
    let mut counts = ClientCounts::default();
    let mut conn: Option<Conn> = None;
    let mut i = id * 1_000_000;
    while Instant::now() < deadline {
        let Some(c) = conn.as_mut() else {
            match Conn::new(opts.clone()).await {
                Ok(c) => {
                    counts.connects += 1;
                    conn = Some(c);
                }
                Err(_) => {
                    counts.connect_failures += 1;
                    tokio::time::sleep(Duration::from_millis(50)).await; // retry pace
                }
            }
            continue;
        };
        i += 1;
        let sql = format!("SELECT {i}, REPEAT('x', {}), CONNECTION_ID()", i % 200);
        match c.query_drop(sql).await {
            Ok(()) => counts.ok += 1,
            Err(Error::Server(_)) => counts.server_errors += 1,
            Err(_) => {
                counts.lost += 1;
                conn = None;
            }
        }
    }
    if let Some(c) = conn {
        let _ = c.disconnect().await;
    }
    counts
}
