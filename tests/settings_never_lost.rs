//! Settings are never lost, and a DBA's are never taken: a snapshot left by a crashed
//! controller (SIGKILL of the leading psprobe) is resolved row by row, psprobe's rows written
//! back and anyone else's kept. Each test is one order of: crash (K), `ps restore` (R), a
//! manual change by a DBA (M), the next run (N: a controller run started and stopped), a
//! second psprobe taking over (F), and a server restart (B), on a real mariadbd with the real
//! binary, and asserts the final setup tables.
//!
//! O = the settings found before the first run (a DBA's runtime change from the defaults
//! included), S = the scenario the crashed run left, +M = with events_stages_current turned
//! on by hand (NO in O and in both scheduled scenarios), D = the server's defaults.
//!
//! | order                      | what psprobe does                                        | final |
//! |----------------------------|----------------------------------------------------------|-------|
//! | K N                        | N proves S is its dead run's, restores O, runs, restores | O     |
//! | K N, then R and M          | R: nothing left to restore; M is kept                    | O+M   |
//! | K R N                      | R restores O, removes both copies; N from O              | O     |
//! | K R M N                    | N finds nothing left: its baseline is O+M                | O+M   |
//! | K M N                      | N restores psprobe's rows, keeps M (never switches it)   | O+M   |
//! | K M R                      | R restores psprobe's rows and keeps M, naming it         | O+M   |
//! | K M R --force              | the operator's say-so: O over everything                 | O     |
//! | K F                        | F restores O, leads, restores at its end                 | O     |
//! | K M F                      | F restores psprobe's rows, keeps M, leads, keeps it      | O+M   |
//! | K R F                      | F finds nothing left, leads from O                       | O     |
//! | K R M F                    | F leads from O+M                                         | O+M   |
//! | K B N                      | restarted, not by psprobe: nothing of psprobe's is left  | D     |
//! | K, DROP DATABASE psprobe, N | no record of what the run applied: one line, refused   | S     |

mod common;

use common::controller::{
    flags, kill, leader, poll, ps, refused_start, setup_dump, start_controller, state_file,
    terminate,
};
use common::mariadb::MariaDb;
use common::probe::Probe;
use std::path::Path;
use std::process::Output;
use tempfile::TempDir;

/// Two runtime scenarios that both leave events_stages_current NO; the first stays in effect
/// for the whole 30 s phase, far longer than any test takes to act.
const SPEC: &str = "--scenarios pfson_conoff_insoff,pfson_conon_ins_sqlon --phase 30s --settle 1s";
const MANUAL: &str = "UPDATE performance_schema.setup_consumers SET enabled = 'YES' \
                      WHERE name = 'events_stages_current'";
/// A DBA's runtime setting in O (lost by a restart).
const RUNTIME_SETTING: &str = "UPDATE performance_schema.setup_consumers SET enabled = 'YES' \
                               WHERE name = 'events_waits_current'";

struct Case {
    db: MariaDb,
    /// O.
    original: String,
    dir: TempDir,
}

impl Case {
    fn new() -> Case {
        let db = MariaDb::start_default();
        db.sql(RUNTIME_SETTING);
        let original = setup_dump(&db);
        Case {
            db,
            original,
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn args(&self, dir: &Path) -> Vec<String> {
        flags(SPEC, dir)
    }

    /// A leader that published its first scenario (so it is in effect), then SIGKILLed.
    /// Returns the rows it left (S).
    fn crash(&self) -> String {
        let mut l1 = start_controller(&self.db, &self.args(self.dir.path()));
        wait_published(&self.db, &l1);
        kill(&mut l1);
        let left = setup_dump(&self.db);
        assert_ne!(left, self.original, "the crash left a scenario");
        assert!(self.left_behind().0, "and its snapshot on the server");
        left
    }

    /// (a snapshot in psprobe.snapshot, a state file in the case's directory).
    fn left_behind(&self) -> (bool, bool) {
        let rows = self.db.sql("SELECT COUNT(*) FROM psprobe.snapshot");
        (
            rows.trim() != "0",
            state_file(self.dir.path(), &self.db).exists(),
        )
    }

    /// N: a controller run that leads, switches, and is stopped; returns its stderr.
    fn next_run(&self, baseline: &str) -> String {
        let mut n = start_controller(&self.db, &self.args(self.dir.path()));
        poll("the next run to switch", 20, || {
            (setup_dump(&self.db) != baseline).then_some(())
        });
        terminate(&mut n);
        assert_tables(&self.db, baseline, "after the next run stopped");
        assert_eq!(self.left_behind(), (false, false), "nothing left behind");
        n.stderr_text()
    }

    /// N, refused at startup; returns its stderr.
    fn refused_run(&self) -> String {
        refused_start(&self.db, &self.args(self.dir.path()))
    }

    /// `psprobe ps restore --state-dir DIR EXTRA`.
    fn restore(&self, extra: &[&str]) -> Output {
        let dir = self.dir.path().display().to_string();
        let mut args = vec!["restore", "--state-dir", &dir];
        args.extend(extra);
        ps(&self.db, &args)
    }

    fn restore_ok(&self, extra: &[&str]) -> String {
        let out = self.restore(extra);
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "ps restore {extra:?}:\n{text}\n{err}");
        text
    }

    fn manual_change(&self) {
        self.db.sql(MANUAL);
    }
}

/// `dump` with events_stages_current turned on.
fn with_manual(dump: &str) -> String {
    let (off, on) = (
        "events_stages_current\tNO\n",
        "events_stages_current\tYES\n",
    );
    assert!(
        dump.contains(off),
        "events_stages_current is not NO:\n{dump}"
    );
    dump.replacen(off, on, 1)
}

/// Until psprobe.phase shows `probe` leading with a scenario in effect (a slot is published
/// once its scenario is applied).
fn wait_published(db: &MariaDb, probe: &Probe) {
    poll("a published scenario", 20, || {
        let row = db
            .try_sql("SELECT state, scenario FROM psprobe.phase WHERE id = 1")
            .ok()?;
        (row.starts_with("settling\tpfson_") && leader(probe) == 1.0).then_some(())
    });
}

#[track_caller]
fn assert_tables(db: &MariaDb, want: &str, when: &str) {
    common::controller::assert_setup_eq(&setup_dump(db), want, when);
}

/// The command between backquotes after `to` in a refusal (`... to keep the live settings run
/// `psprobe ps restore ... --discard`` ...), as `ps` arguments.
fn suggested(stderr: &str, flag: &str) -> Vec<String> {
    let command = stderr
        .split('`')
        .find(|c| c.starts_with("psprobe ps ") && c.ends_with(flag))
        .unwrap_or_else(|| panic!("no `psprobe ps ... {flag}` suggested:\n{stderr}"));
    command
        .split_whitespace()
        .skip(2)
        .map(String::from)
        .collect()
}

/// The DBA's change was named, once, as kept.
#[track_caller]
fn assert_kept_and_named(text: &str) {
    let line =
        "setup_consumers 'events_stages_current' is now ENABLED=YES (psprobe had ENABLED=NO)";
    assert_eq!(text.matches(line).count(), 1, "{text}");
}

#[test]
fn crash_then_next_run_restores_then_restore_finds_nothing_and_a_change_stays() {
    let case = Case::new();
    case.crash();
    let err = case.next_run(&case.original);
    assert!(
        err.contains("did not finish; restored what it changed"),
        "{err}"
    );
    let out = case.restore(&[]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && said.contains("no snapshot at"),
        "{said}"
    );
    case.manual_change();
    assert_tables(&case.db, &with_manual(&case.original), "final (K N R M)");
}

#[test]
fn crash_restore_next_run() {
    let case = Case::new();
    case.crash();
    let out = case.restore_ok(&[]);
    assert!(out.contains("restored the snapshot"), "{out}");
    assert_tables(&case.db, &case.original, "after ps restore");
    assert_eq!(
        case.left_behind(),
        (false, false),
        "ps restore removes both"
    );
    case.next_run(&case.original);
    assert_tables(&case.db, &case.original, "final (K R N)");
}

/// The tester's report: the next run used to restore the stale server-side snapshot over the
/// DBA's change, at its start and again at its end.
#[test]
fn crash_restore_change_next_run_keeps_the_change() {
    let case = Case::new();
    case.crash();
    case.restore_ok(&[]);
    case.manual_change();
    let changed = with_manual(&case.original);
    let err = case.next_run(&changed);
    assert!(!err.contains("did not finish"), "{err}");
    assert_tables(&case.db, &changed, "final (K R M N)");
}

/// A DBA's change while no psprobe ran: the next start restores psprobe's rows only (it used
/// to refuse, printing every setting that differed, and exit 2 on every start).
#[test]
fn crash_change_next_run_keeps_the_change_and_starts() {
    let case = Case::new();
    case.crash();
    case.manual_change();
    let changed = with_manual(&case.original);
    let err = case.next_run(&changed);
    assert!(
        err.contains("did not finish; restored what it changed"),
        "{err}"
    );
    assert!(err.contains("1 setting(s) someone else set kept"), "{err}");
    assert_kept_and_named(&err);
    assert_tables(&case.db, &changed, "final (K M N)");
}

#[test]
fn crash_change_restore_keeps_the_change_and_force_writes_the_snapshot() {
    let case = Case::new();
    case.crash();
    case.manual_change();
    let out = case.restore_ok(&[]);
    assert!(out.contains("kept as someone else set it:"), "{out}");
    assert_kept_and_named(&out);
    assert_eq!(case.left_behind(), (false, false));
    assert_tables(&case.db, &with_manual(&case.original), "final (K M R)");

    let forced = Case::new();
    forced.crash();
    forced.manual_change();
    forced.restore_ok(&["--force"]);
    assert_eq!(forced.left_behind(), (false, false));
    assert_tables(&forced.db, &forced.original, "final (K M R --force)");
}

/// Without the record of what the run applied (its tables on the server are gone), psprobe
/// cannot tell its rows from a DBA's: it changes nothing and says so in one line.
#[test]
fn crash_without_the_servers_record_refuses_in_one_line() {
    let case = Case::new();
    let left = case.crash();
    case.db.sql("DROP DATABASE psprobe");
    let err = case.refused_run();
    let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(lines[0].contains("not restoring the snapshot"), "{err}");
    assert!(
        lines[0].contains("psprobe cannot tell what it last applied"),
        "{err}"
    );
    assert!(lines[0].contains("Nothing was changed"), "{err}");
    suggested(&err, "--discard");
    let force = suggested(&err, "--force");
    assert_tables(&case.db, &left, "after the refused start");
    let force: Vec<&str> = force.iter().map(String::as_str).collect();
    assert!(ps(&case.db, &force).status.success(), "{force:?}");
    assert_tables(&case.db, &case.original, "after --force");
}

/// A second psprobe following the leader in its own state directory.
fn follower(case: &Case, dir: &TempDir) -> Probe {
    let f = start_controller(&case.db, &flags(SPEC, dir.path()));
    assert_eq!(leader(&f), 0.0, "the second psprobe follows");
    f
}

/// Crashes the leader while a second psprobe follows; `between` runs while the follower is
/// stopped (SIGSTOP), so it takes over only afterwards. Returns (S, the follower).
fn crash_under_follower(case: &Case, dir: &TempDir, between: impl FnOnce()) -> (String, Probe) {
    let mut l1 = start_controller(&case.db, &case.args(case.dir.path()));
    wait_published(&case.db, &l1);
    let f = follower(case, dir);
    f.signal(libc::SIGSTOP);
    kill(&mut l1);
    let left = setup_dump(&case.db);
    between();
    f.signal(libc::SIGCONT);
    (left, f)
}

#[test]
fn crash_follower_takes_over_and_restores() {
    let case = Case::new();
    let dir = tempfile::tempdir().unwrap();
    let (_, mut f) = crash_under_follower(&case, &dir, || {});
    poll("the follower to lead", 20, || {
        (leader(&f) == 1.0).then_some(())
    });
    poll("the takeover's restore", 20, || {
        f.stderr_text()
            .contains("did not finish; restored what it changed")
            .then_some(())
    });
    terminate(&mut f);
    assert_tables(&case.db, &case.original, "final (K F)");
    assert!(!case.left_behind().0, "no snapshot on the server");
}

#[test]
fn crash_change_follower_takes_over_and_keeps_the_change() {
    let case = Case::new();
    let dir = tempfile::tempdir().unwrap();
    let (_, mut f) = crash_under_follower(&case, &dir, || case.manual_change());
    poll("the follower to lead", 20, || {
        (leader(&f) == 1.0).then_some(())
    });
    poll("the takeover's restore", 20, || {
        f.stderr_text()
            .contains("did not finish; restored what it changed")
            .then_some(())
    });
    let stderr = f.stderr_text();
    assert_kept_and_named(&stderr);
    // It leads, and its switches leave the DBA's row alone.
    poll("the follower to switch", 20, || {
        let now = setup_dump(&case.db);
        (now != with_manual(&case.original)).then_some(())
    });
    assert!(
        setup_dump(&case.db).contains("events_stages_current\tYES"),
        "switched over the DBA's change"
    );
    terminate(&mut f);
    assert_tables(&case.db, &with_manual(&case.original), "final (K M F)");
}

#[test]
fn crash_restore_follower_leads_from_the_restored_settings() {
    let case = Case::new();
    let dir = tempfile::tempdir().unwrap();
    let (_, mut f) = crash_under_follower(&case, &dir, || drop(case.restore_ok(&[])));
    poll("the follower to lead and switch", 20, || {
        (leader(&f) == 1.0 && setup_dump(&case.db) != case.original).then_some(())
    });
    assert!(!f.stderr_text().contains("did not finish"));
    terminate(&mut f);
    assert_tables(&case.db, &case.original, "final (K R F)");
}

#[test]
fn crash_restore_change_follower_keeps_the_change() {
    let case = Case::new();
    let dir = tempfile::tempdir().unwrap();
    let (_, mut f) = crash_under_follower(&case, &dir, || {
        case.restore_ok(&[]);
        case.manual_change();
    });
    let changed = with_manual(&case.original);
    poll("the follower to lead and switch", 20, || {
        (leader(&f) == 1.0 && setup_dump(&case.db) != changed).then_some(())
    });
    terminate(&mut f);
    assert_tables(&case.db, &changed, "final (K R M F)");
}

/// A restart resets the setup tables to the server's configuration: psprobe's changes (and the
/// DBA's earlier runtime setting) are gone, and a restart psprobe did not make is the DBA's:
/// the next run leaves it as it is (it used to refuse to start until `ps restore --discard`).
#[test]
fn crash_server_restart_next_run_keeps_the_defaults() {
    let mut case = Case::new();
    case.crash();
    // Start times are compared to the second, with 2 s of slack.
    poll("4 s of server uptime", 10, || {
        let up = case.db.sql("SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'UPTIME'");
        (up.trim().parse::<u64>().unwrap() >= 4).then_some(())
    });
    case.db.restart();
    let defaults = setup_dump(&case.db);
    assert_ne!(
        defaults, case.original,
        "the restart dropped the runtime setting"
    );
    let err = case.next_run(&defaults);
    assert!(
        err.contains("the server restarted since, not by psprobe"),
        "{err}"
    );
    assert_tables(&case.db, &defaults, "final (K B N)");
}
