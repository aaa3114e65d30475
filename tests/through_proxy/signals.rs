//! Every signal a daemon may be sent, against a running psprobe with a client connected through
//! it to a real mariadbd (issue 23: SIGUSR1, SIGUSR2 and SIGALRM killed psprobe at once, no log
//! line, every connection cut): each is logged and changes nothing, SIGTSTP does not stop it,
//! a burst of one signal is one line, and only SIGTERM (SIGINT, SIGQUIT) stops it, cleanly.

use crate::common;

use std::time::{Duration, Instant};

use common::cli::{DATABASE, PASSWORD, USER};
use common::mariadb::MariaDb;
use common::probe::Probe;
use mysql_async::prelude::Queryable;
use mysql_async::{Conn, OptsBuilder};

/// Waits until psprobe's log has `n` lines containing `needle` (or fails after 10 s).
fn wait_for_lines(probe: &Probe, needle: &str, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let log = probe.stderr_text();
        if log.lines().filter(|l| l.contains(needle)).count() >= n {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "no {n} lines with {needle:?}:\n{log}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The process state letter from /proc (R, S, T for stopped, ...).
fn state(pid: u32) -> char {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("stat");
    let after = stat.rfind(')').expect("comm") + 2;
    stat[after..].chars().next().expect("state")
}

#[test]
fn every_signal_is_logged_and_only_the_shutdown_three_stop_psprobe() {
    let db = MariaDb::start_default();
    let mut probe = Probe::start(&db.addr(), &[]);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let (host, port) = common::cli::split_addr(probe.proxy_addr());
    let opts = OptsBuilder::default()
        .ip_or_hostname(host)
        .tcp_port(port.parse().expect("port"))
        .user(Some(USER))
        .pass(Some(PASSWORD))
        .db_name(Some(DATABASE))
        .prefer_socket(false);
    let mut conn = runtime
        .block_on(Conn::new(opts))
        .expect("connect through psprobe");

    let rtmin = libc::SIGRTMIN();
    let ignored = [
        (libc::SIGUSR1, "SIGUSR1 received: ignored"),
        (libc::SIGUSR2, "SIGUSR2 received: ignored"),
        (libc::SIGALRM, "SIGALRM received: ignored"),
        (libc::SIGVTALRM, "SIGVTALRM received: ignored"),
        (libc::SIGPROF, "SIGPROF received: ignored"),
        (libc::SIGIO, "SIGIO received: ignored"),
        (libc::SIGPWR, "SIGPWR received: ignored"),
        (libc::SIGTTIN, "SIGTTIN received: ignored"),
        (libc::SIGTTOU, "SIGTTOU received: ignored"),
        (libc::SIGTSTP, "SIGTSTP received: ignored"),
        (libc::SIGXFSZ, "SIGXFSZ received: a resource limit"),
        (libc::SIGCONT, "SIGCONT received: psprobe goes on"),
        (rtmin + 3, "SIGRTMIN+3 received: ignored"),
    ];
    for (sig, line) in ignored {
        probe.signal(sig);
        wait_for_lines(&probe, line, 1);
        assert!(probe.is_running(), "psprobe ended on {line}");
        assert_ne!(state(probe.pid()), 'T', "psprobe stopped on {line}");
    }
    // Routine signals are not even logged at the default level, and change nothing.
    probe.signal(libc::SIGWINCH);
    probe.signal(libc::SIGURG);
    probe.signal(libc::SIGHUP);

    // A burst of one signal adds no line while the interval of its last line lasts; the
    // next line after it counts what was left out (SIGUSR2's first line came above).
    let usr2_lines = || {
        let log = probe.stderr_text();
        let lines: Vec<String> = log
            .lines()
            .filter(|l| l.contains("SIGUSR2 received"))
            .map(str::to_string)
            .collect();
        lines
    };
    assert_eq!(usr2_lines().len(), 1);
    for _ in 0..50 {
        probe.signal(libc::SIGUSR2);
        std::thread::sleep(Duration::from_millis(2)); // apart, so that few coalesce
    }
    let deadline = Instant::now() + Duration::from_secs(25);
    let lines = loop {
        let lines = usr2_lines();
        if lines.len() > 1 {
            break lines;
        }
        assert!(
            Instant::now() < deadline,
            "no line after the burst: {lines:?}"
        );
        probe.signal(libc::SIGUSR2); // one more, to be logged once the interval is over
        std::thread::sleep(Duration::from_millis(500)); // poll interval
    };
    assert_eq!(lines.len(), 2, "a burst of 50 is not one line: {lines:?}");
    assert!(
        lines[1].contains("more like it since the last line"),
        "{}",
        lines[1]
    );

    // Nothing was cut: the connection opened before the signals still works.
    let one: Option<i64> = runtime
        .block_on(conn.query_first("SELECT 1"))
        .expect("the connection survived every signal");
    assert_eq!(one, Some(1));
    runtime.block_on(conn.disconnect()).expect("disconnect");

    probe.signal(libc::SIGTERM);
    let status = probe
        .wait_exit(Duration::from_secs(15))
        .expect("psprobe stops on SIGTERM");
    assert!(status.success(), "{status:?}");
    let log = probe.stderr_text();
    assert!(log.contains("SIGTERM received: stopping"), "{log}");
    assert!(!log.contains("panicked"), "{log}");
}
