//! sysbench oltp_read_write through psprobe: no errors, and psprobe counts exactly the
//! statements sysbench reports, in both text (COM_QUERY) and binary (COM_STMT_EXECUTE) mode, on
//! MariaDB 10.11, 11.8 and MySQL 9.7 (both modes on one prepared server per flavor, one after
//! the other, each through its own psprobe). The text run relays on three event loops
//! (`--relay-threads 3`, checked to share the clients), the binary run on the work-stealing
//! runtime: both of `--relay-runtime`'s modes count exactly.

mod common;

use common::probe::Probe;
use common::server::{Flavor, Options, Server};
use common::sysbench;

const TABLE_OPTS: [&str; 2] = ["--tables=4", "--table-size=10000"];

crate::per_flavor!(oltp_read_write_counts_match_in_text_and_binary_protocol);

fn oltp_read_write_counts_match_in_text_and_binary_protocol(flavor: Flavor) {
    let db = Server::start(flavor, Options::default());
    sysbench::run(&db.addr(), "oltp_read_write", "prepare", &TABLE_OPTS);
    run_through_probe(&db, "disable", &["--relay-threads", "3"]);
    run_through_probe(&db, "auto", &["--relay-runtime", "work-stealing"]);
}

fn run_through_probe(db: &Server, ps_mode: &str, relay: &[&str]) {
    let probe = Probe::start(&db.addr(), relay);
    let mode = format!("--db-ps-mode={ps_mode}");
    let mut opts = vec!["--threads=8", "--events=1500", "--time=0", mode.as_str()];
    opts.extend(TABLE_OPTS);
    let summary = sysbench::run(probe.proxy_addr(), "oltp_read_write", "run", &opts);
    check_relay_threads(&probe, relay);

    assert!(
        summary.total > 0,
        "sysbench reported no queries:\n{}",
        summary.text
    );
    // Eight writers can deadlock now and then (InnoDB's ERR 1213; sysbench ignores it and
    // restarts the transaction): such a statement is in psprobe's errors, not in sysbench's
    // total, and is checked against sysbench's count of ignored errors below.
    assert_eq!(summary.reconnects, 0, "{}", summary.text);

    let m = probe.scrape();
    let count = |command: &str, outcome: &str| {
        m.get(
            "psprobe_commands_total",
            &[("command", command), ("outcome", outcome)],
        ) as u64
    };
    let statements = ["query", "stmt_execute"]
        .iter()
        .map(|c| count(c, "ok") + count(c, "rows"))
        .sum::<u64>();
    assert_eq!(
        statements, summary.total,
        "probe vs sysbench total\n{}\n{}",
        summary.text, m.text
    );
    // Statements' errors: MySQL refuses to prepare BEGIN (ER 1295), once per thread, and
    // sysbench then sends it as a query; such a refusal is no statement of the run.
    let errors: u64 = ["query", "stmt_execute"]
        .iter()
        .map(|c| count(c, "error"))
        .sum();
    assert_eq!(
        errors, summary.ignored_errors,
        "psprobe's errors vs sysbench's ignored errors\n{}\n{}",
        summary.text, m.text
    );
    assert_eq!(
        m.get("psprobe_unobserved_connections_total", &[]),
        0.0,
        "{}",
        m.text
    );
    // Every statement was timed.
    let timed = m.get(
        "psprobe_command_duration_seconds_count",
        &[("command", "query")],
    ) + m.get(
        "psprobe_command_duration_seconds_count",
        &[("command", "stmt_execute")],
    );
    assert_eq!(timed as u64, summary.total + summary.ignored_errors);
    if ps_mode == "auto" && db.flavor().is_mysql() {
        assert_eq!(count("stmt_prepare", "error"), 8, "BEGIN, once a thread");
        assert_eq!(
            count("query", "ok") + count("query", "rows"),
            summary.transactions,
            "BEGIN as a query, the rest in the binary protocol"
        );
    } else if ps_mode == "auto" {
        assert_eq!(
            count("query", "ok") + count("query", "rows"),
            0,
            "binary protocol only"
        );
        assert!(
            count("stmt_prepare", "ok") >= 8,
            "each thread prepares its statements"
        );
    } else {
        assert_eq!(
            count("stmt_execute", "ok") + count("stmt_execute", "rows"),
            0
        );
    }
}

/// With `--relay-threads 3`, three event-loop threads each relayed some of the 8 clients
/// (placed on the emptiest loop: 3, 3, 2); with work stealing there is no such thread.
fn check_relay_threads(probe: &Probe, relay: &[&str]) {
    let threads = common::procfs::threads_cpu_seconds(probe.pid());
    let loops: Vec<&(String, f64)> = threads
        .iter()
        .filter(|(name, _)| name.starts_with("psprobe-relay-"))
        .collect();
    if relay.contains(&"work-stealing") {
        assert!(
            loops.is_empty(),
            "event loops with work stealing: {threads:?}"
        );
        return;
    }
    assert_eq!(loops.len(), 3, "three event loops: {threads:?}");
    assert!(
        loops.iter().all(|(_, cpu)| *cpu > 0.005),
        "every loop relayed a share of the clients: {threads:?}"
    );
}
