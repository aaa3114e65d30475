//! The real `mariadb` CLI through psprobe: results identical to a direct connection, and every
//! command counted and timed.

mod common;

use common::cli::mariadb_ok;
use common::mariadb::MariaDb;
use common::probe::Probe;

#[test]
fn simple_query_is_forwarded_counted_and_timed() {
    let db = MariaDb::start_default();
    let probe = Probe::start(&db.addr(), &[]);
    let direct = mariadb_ok(&db.addr(), &["-N", "-B", "-e", "SELECT 1+1, 'x'"], None);
    let proxied = mariadb_ok(
        probe.proxy_addr(),
        &["-N", "-B", "-e", "SELECT 1+1, 'x'"],
        None,
    );
    assert_eq!(direct, proxied);
    assert_eq!(proxied.trim(), "2\tx");
    let m = probe.scrape();
    // In batch mode (-e) the CLI sends just our query, then COM_QUIT.
    assert_eq!(
        m.get(
            "psprobe_commands_total",
            &[("command", "query"), ("outcome", "rows")]
        ),
        1.0,
        "{}",
        m.text
    );
    assert_eq!(m.get("psprobe_commands_total", &[("command", "quit")]), 1.0);
    assert_eq!(
        m.get(
            "psprobe_command_duration_seconds_count",
            &[("command", "query")]
        ),
        1.0
    );
    assert_eq!(m.get("psprobe_parse_errors_total", &[]), 0.0);
}
