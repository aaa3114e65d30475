//! `psprobe ps ...` against real servers (MariaDB 10.11, 11.8 and MySQL 9.7): every runtime
//! scenario of the study applied and read back row by row, restore to the exact starting rows,
//! and the failure modes (unknown scenario, wrong password, missing privilege, PS off,
//! restart-only scenario), none of which may change the server or print the DSN.
//!
//! Expectations are computed here from the study's own wording, independently of the controller.
//! The checks that need one server run one after another on one server per flavor (each leaves
//! the setup tables as it found them), which saves a server start per check.

mod common;

use common::cli::run_with_timeout;
use common::mariadb::MariaDb;
use common::server::{Flavor, Options, Server};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;
use tempfile::TempDir;

const SQLON_CONSUMERS: [&str; 5] = [
    "global_instrumentation",
    "thread_instrumentation",
    "events_statements_current",
    "events_statements_history",
    "statements_digest",
];

const RUNTIME_SCENARIOS: [&str; 5] = [
    "pfson_conoff_insoff",
    "pfson_conon_insoff",
    "pfson_conon_ins_sqlon",
    "pfson_conoff_inson",
    "pfson_conon_inson",
];

const ALL_SCENARIOS: [&str; 7] = [
    "original",
    "pfsoff",
    "pfson_conoff_insoff",
    "pfson_conon_insoff",
    "pfson_conon_ins_sqlon",
    "pfson_conoff_inson",
    "pfson_conon_inson",
];

/// Both setup tables as the root client sees them.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Dump {
    consumers: BTreeMap<String, String>,
    /// name -> (ENABLED, TIMED)
    instruments: BTreeMap<String, (String, String)>,
}

fn dump(db: &Server) -> Dump {
    let consumers = db
        .sql("SELECT NAME, ENABLED FROM performance_schema.setup_consumers")
        .lines()
        .map(|l| {
            let (n, e) = l.split_once('\t').expect("two columns");
            (n.to_string(), e.to_string())
        })
        .collect();
    let instruments = db
        .sql("SELECT NAME, ENABLED, TIMED FROM performance_schema.setup_instruments")
        .lines()
        .map(|l| {
            let cols: Vec<&str> = l.split('\t').collect();
            assert_eq!(cols.len(), 3, "{l:?}");
            (
                cols[0].to_string(),
                (cols[1].to_string(), cols[2].to_string()),
            )
        })
        .collect();
    Dump {
        consumers,
        instruments,
    }
}

fn yn(b: bool) -> String {
    if b { "YES" } else { "NO" }.to_string()
}

/// What the study's SQL for `scenario` leaves in the tables of `before`'s server. The servers
/// ignore two kinds of change, documented in the controller: built-in
/// memory/performance_schema/% instruments stay enabled, and memory instruments stay untimed
/// (MariaDB shows TIMED NO, MySQL NULL, as it does for its `error` instrument).
fn seed_expectation(scenario: &str, before: &Dump) -> Dump {
    type Rule = fn(&str) -> bool;
    let (consumer, instrument): (Rule, Rule) = match scenario {
        "pfson_conoff_insoff" => (|_| false, |_| false),
        "pfson_conon_insoff" => (|_| true, |_| false),
        "pfson_conon_ins_sqlon" => (
            |n| SQLON_CONSUMERS.contains(&n),
            |n| n.starts_with("statement/"),
        ),
        "pfson_conoff_inson" => (|_| false, |_| true),
        "pfson_conon_inson" => (|_| true, |_| true),
        other => panic!("no expectation for {other}"),
    };
    Dump {
        consumers: before
            .consumers
            .keys()
            .map(|n| (n.clone(), yn(consumer(n))))
            .collect(),
        instruments: before
            .instruments
            .keys()
            .map(|n| {
                let on = instrument(n);
                let enabled = on || n.starts_with("memory/performance_schema/");
                let timed = match before.instruments[n].1.as_str() {
                    "NULL" => "NULL".to_string(),
                    _ => yn(on && !n.starts_with("memory/")),
                };
                (n.clone(), (yn(enabled), timed))
            })
            .collect(),
    }
}

/// Cells that differ, for readable failures.
fn diff(want: &Dump, got: &Dump) -> Vec<String> {
    let mut out = Vec::new();
    for (n, w) in &want.consumers {
        if got.consumers.get(n) != Some(w) {
            out.push(format!(
                "consumer {n}: want {w}, got {:?}",
                got.consumers.get(n)
            ));
        }
    }
    for (n, w) in &want.instruments {
        if got.instruments.get(n) != Some(w) {
            out.push(format!(
                "instrument {n}: want {w:?}, got {:?}",
                got.instruments.get(n)
            ));
        }
    }
    if want.consumers.len() != got.consumers.len()
        || want.instruments.len() != got.instruments.len()
    {
        out.push("row counts differ".into());
    }
    out
}

fn assert_same(want: &Dump, got: &Dump, what: &str) {
    let d = diff(want, got);
    assert!(
        d.is_empty(),
        "{what}: {} cells differ:\n{}",
        d.len(),
        d[..d.len().min(20)].join("\n")
    );
}

struct Out {
    ok: bool,
    stdout: String,
    stderr: String,
}

/// Run `psprobe ps ARGS` with the DSN (if any) in its environment only, HOME pointed at a
/// scratch directory, and check that the DSN's password appears in neither output.
fn ps(dsn: Option<&str>, home: &Path, args: &[&str]) -> Out {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_psprobe"));
    cmd.arg("ps")
        .args(args)
        .env_remove("PSPROBE_CONTROLLER_DSN")
        .env_remove("XDG_STATE_HOME")
        .env_remove("RUST_LOG")
        .env("HOME", home);
    if let Some(dsn) = dsn {
        cmd.env("PSPROBE_CONTROLLER_DSN", dsn);
    }
    let out = run_with_timeout(cmd, None, Duration::from_secs(60));
    let out = Out {
        ok: out.status.success(),
        stdout: String::from_utf8(out.stdout).expect("utf-8 stdout"),
        stderr: String::from_utf8(out.stderr).expect("utf-8 stderr"),
    };
    if let Some(dsn) = dsn {
        let password = password_of(dsn);
        for (name, text) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
            assert!(!text.contains(dsn), "{name} shows the DSN:\n{text}");
            assert!(
                !text.contains(password),
                "{name} shows the password:\n{text}"
            );
        }
    }
    out
}

fn ps_ok(dsn: Option<&str>, home: &Path, args: &[&str]) -> String {
    let out = ps(dsn, home, args);
    assert!(
        out.ok,
        "psprobe ps {args:?} failed:\n{}\n{}",
        out.stdout, out.stderr
    );
    out.stdout
}

fn ps_err(dsn: Option<&str>, home: &Path, args: &[&str]) -> String {
    let out = ps(dsn, home, args);
    assert!(!out.ok, "psprobe ps {args:?} should fail:\n{}", out.stdout);
    assert_eq!(
        out.stderr.lines().count(),
        1,
        "one clear line:\n{}",
        out.stderr
    );
    out.stderr
}

fn password_of(dsn: &str) -> &str {
    let creds = dsn
        .trim_start_matches("mysql://")
        .split('@')
        .next()
        .unwrap();
    creds.split_once(':').map(|(_, p)| p).unwrap_or("")
}

/// A scratch HOME with a state directory in it.
struct Scratch {
    dir: TempDir,
}

impl Scratch {
    fn new() -> Self {
        Scratch {
            dir: tempfile::tempdir().expect("tempdir"),
        }
    }
    fn home(&self) -> &Path {
        self.dir.path()
    }
    fn state_dir(&self) -> PathBuf {
        self.dir.path().join("state")
    }
    fn state_dir_arg(&self) -> String {
        self.state_dir().display().to_string()
    }
    fn state_files(&self) -> Vec<PathBuf> {
        std::fs::read_dir(self.state_dir())
            .map(|d| d.flatten().map(|e| e.path()).collect())
            .unwrap_or_default()
    }
}

crate::per_flavor!(
    the_scenarios_the_refusals_and_a_restart_on_one_server,
    performance_schema_off_is_a_clear_error,
);

fn the_scenarios_the_refusals_and_a_restart_on_one_server(flavor: Flavor) {
    let mut db = Server::start(flavor, Options::default());
    each_runtime_scenario_reads_back_as_the_studys_sql_and_restore_returns_every_row(&db);
    config_file_dsn_user_scenarios_and_original(&db);
    wrong_password_is_one_clear_line_and_changes_nothing(&db);
    missing_privilege_names_the_grant_and_changes_nothing(&db);
    pfsoff_is_refused_as_needing_a_restart(&db);
    library_api_applies_verifies_and_restores(&db);
    a_restart_after_the_snapshot_is_reported_and_restore_still_returns_to_it(&mut db);
}

/// Move the server away from its defaults, so restoring to defaults cannot pass for a restore.
fn perturb(db: &Server) {
    db.sql(
        "UPDATE performance_schema.setup_consumers SET enabled = 'YES' WHERE name = 'events_waits_current'; \
         UPDATE performance_schema.setup_instruments SET timed = 'NO' WHERE name = 'statement/sql/select'; \
         UPDATE performance_schema.setup_instruments SET enabled = 'YES', timed = 'NO' WHERE name LIKE 'wait/io/file/%'",
    );
}

fn each_runtime_scenario_reads_back_as_the_studys_sql_and_restore_returns_every_row(db: &Server) {
    let scratch = Scratch::new();
    let dsn = db.dsn();
    perturb(db);
    let before = dump(db);
    let consumers = if db.flavor().is_mysql() { 16 } else { 15 };
    assert_eq!(
        before.consumers.len(),
        consumers,
        "{} has {consumers} consumers",
        db.name()
    );
    assert!(
        before.instruments.len() > 900,
        "{}",
        before.instruments.len()
    );

    let state_dir = scratch.state_dir_arg();
    for scenario in RUNTIME_SCENARIOS {
        let out = ps_ok(
            Some(&dsn),
            scratch.home(),
            &["apply", scenario, "--state-dir", &state_dir],
        );
        assert!(
            out.contains(&format!("applied {scenario} on psprobe@{}", db.addr())),
            "{out}"
        );
        let got = dump(db);
        assert_same(&seed_expectation(scenario, &before), &got, scenario);
        let show = ps_ok(
            Some(&dsn),
            scratch.home(),
            &["show", "--state-dir", &state_dir],
        );
        assert!(
            show.contains(&format!("matches scenario:   {scenario}\n")),
            "{scenario}:\n{show}"
        );
    }
    let sqlon = {
        ps_ok(
            Some(&dsn),
            scratch.home(),
            &["apply", "pfson_conon_ins_sqlon", "--state-dir", &state_dir],
        );
        dump(db)
    };
    let yes: Vec<&str> = sqlon
        .consumers
        .iter()
        .filter(|(_, e)| *e == "YES")
        .map(|(n, _)| n.as_str())
        .collect();
    assert_eq!(yes.len(), 5, "exactly the five named consumers: {yes:?}");

    // One snapshot, taken before the first apply and kept by the later ones.
    let files = scratch.state_files();
    assert_eq!(files.len(), 1, "{files:?}");
    let name = format!("ps-snapshot-127.0.0.1-{}.json", db.port());
    assert!(files[0].ends_with(&name), "{files:?}");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&files[0]).unwrap()).unwrap();
    assert_eq!(json["format_version"], 1);
    assert_eq!(json["server"]["port"], db.port());
    assert_eq!(
        json["instruments"].as_array().unwrap().len(),
        before.instruments.len()
    );

    let out = ps_ok(
        Some(&dsn),
        scratch.home(),
        &["restore", "--state-dir", &state_dir],
    );
    assert!(out.contains("removed"), "{out}");
    assert_same(&before, &dump(db), "after restore");
    assert_eq!(dump(db), before);
    assert!(
        scratch.state_files().is_empty(),
        "restore removes the state file"
    );
}

fn config_file_dsn_user_scenarios_and_original(db: &Server) {
    let scratch = Scratch::new();
    perturb(db);
    let before = dump(db);
    let config = scratch.home().join("psprobe.toml");
    let state_file = scratch.home().join("my-snapshot.json");
    std::fs::write(
        &config,
        format!(
            "[proxy]\nlisten = \"127.0.0.1:0\"\n\n[controller]\ndsn = \"{}\"\n\n\
             [[scenario]]\nname = \"waits_only\"\ndescription = \"wait consumers and io waits\"\n\
             consumers = {{ enable = [\"events_waits_%\", \"global_instrumentation\", \"no_such_consumer\"] }}\n\
             instruments = {{ enable = [\"wait/io/%\"], timed = [\"wait/io/file/%\"] }}\n",
            db.dsn()
        ),
    )
    .unwrap();
    let cfg = config.display().to_string();
    let sf = state_file.display().to_string();

    let list = ps_ok(None, scratch.home(), &["--config", &cfg, "scenarios"]);
    assert!(
        list.contains("waits_only") && list.contains("wait consumers and io waits"),
        "{list}"
    );

    let out = ps(
        None,
        scratch.home(),
        &["--config", &cfg, "apply", "waits_only", "--state-file", &sf],
    );
    assert!(out.ok, "{}\n{}", out.stdout, out.stderr);
    assert!(
        out.stderr.contains("'no_such_consumer' does not exist"),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains(password_of(&db.dsn())));
    let got = dump(db);
    for (n, e) in &got.consumers {
        let want = n.starts_with("events_waits_") || n == "global_instrumentation";
        assert_eq!(e, &yn(want), "consumer {n}");
    }
    for (n, (e, t)) in &got.instruments {
        let want_e = n.starts_with("wait/io/") || n.starts_with("memory/performance_schema/");
        // Instruments that cannot be timed (MySQL: TIMED NULL) stay so.
        let want_t = match before.instruments[n].1.as_str() {
            "NULL" => "NULL".to_string(),
            _ => yn(n.starts_with("wait/io/file/")),
        };
        assert_eq!((e, t), (&yn(want_e), &want_t), "instrument {n}");
    }
    assert!(state_file.exists());

    // `original` writes the snapshot back and keeps it.
    ps_ok(
        None,
        scratch.home(),
        &["--config", &cfg, "apply", "original", "--state-file", &sf],
    );
    assert_eq!(dump(db), before);
    assert!(state_file.exists(), "apply original keeps the state file");
    let show = ps_ok(
        None,
        scratch.home(),
        &["--config", &cfg, "show", "--state-file", &sf],
    );
    assert!(show.contains("matches scenario:   original"), "{show}");

    ps_ok(
        None,
        scratch.home(),
        &["--config", &cfg, "restore", "--state-file", &sf],
    );
    assert_eq!(dump(db), before);
    assert!(!state_file.exists());
}

#[test]
fn scenarios_lists_every_scenario_and_which_needs_a_restart() {
    let scratch = Scratch::new();
    let out = ps_ok(None, scratch.home(), &["scenarios", "--sql"]);
    for name in ALL_SCENARIOS {
        assert!(
            out.lines().any(|l| l.starts_with(&format!("{name} "))),
            "{name}:\n{out}"
        );
    }
    let pfsoff = out.lines().find(|l| l.starts_with("pfsoff ")).unwrap();
    assert!(pfsoff.contains(" yes "), "{pfsoff}");
    let restarts = out.lines().filter(|l| l.contains(" yes ")).count();
    assert_eq!(restarts, 1, "{out}");
    assert!(
        out.contains("if(name like 'statement/%', 'YES', 'NO'), timed = enabled"),
        "{out}"
    );
}

#[test]
fn unknown_scenario_names_the_valid_ones_without_connecting() {
    let scratch = Scratch::new();
    // Nothing listens on port 1: a connection attempt would be a different error.
    let err = ps_err(
        Some("mysql://psprobe:never-shown-pw@127.0.0.1:1/"),
        scratch.home(),
        &["apply", "pfs_bogus"],
    );
    assert!(err.contains("unknown scenario 'pfs_bogus'"), "{err}");
    for name in ALL_SCENARIOS {
        assert!(err.contains(name), "{name}: {err}");
    }
}

fn wrong_password_is_one_clear_line_and_changes_nothing(db: &Server) {
    let scratch = Scratch::new();
    let before = dump(db);
    let bad = format!("mysql://psprobe:Wrong-Pass-7731@{}/psprobe_test", db.addr());
    let err = ps_err(
        Some(&bad),
        scratch.home(),
        &[
            "apply",
            "pfson_conon_inson",
            "--state-dir",
            &scratch.state_dir_arg(),
        ],
    );
    assert!(err.contains("access denied"), "{err}");
    assert!(err.contains(&format!("psprobe@{}", db.addr())), "{err}");
    assert!(err.contains("PSPROBE_CONTROLLER_DSN"), "{err}");
    assert_eq!(dump(db), before);
    assert!(scratch.state_files().is_empty());

    let err = ps_err(Some(&bad), scratch.home(), &["show"]);
    assert!(err.contains("access denied"), "{err}");
}

fn missing_privilege_names_the_grant_and_changes_nothing(db: &Server) {
    let scratch = Scratch::new();
    db.sql(
        "CREATE USER 'reader'@'%' IDENTIFIED BY 'reader-pass-55'; \
         GRANT SELECT ON performance_schema.* TO 'reader'@'%'",
    );
    let before = dump(db);
    let dsn = format!("mysql://reader:reader-pass-55@{}/", db.addr());
    let err = ps_err(
        Some(&dsn),
        scratch.home(),
        &[
            "apply",
            "pfson_conoff_insoff",
            "--state-dir",
            &scratch.state_dir_arg(),
        ],
    );
    assert!(err.contains("1142"), "{err}");
    assert!(
        err.contains("GRANT SELECT, UPDATE ON performance_schema.* TO 'reader'@'%'"),
        "{err}"
    );
    assert_eq!(dump(db), before);
}

fn performance_schema_off_is_a_clear_error(flavor: Flavor) {
    let db = Server::start(
        flavor,
        Options {
            performance_schema: false,
            ..Default::default()
        },
    );
    let scratch = Scratch::new();
    let dsn = db.dsn();
    let sd = scratch.state_dir_arg();
    let err = ps_err(
        Some(&dsn),
        scratch.home(),
        &["apply", "pfson_conon_inson", "--state-dir", &sd],
    );
    assert!(err.contains("performance_schema is OFF"), "{err}");
    assert!(err.contains("my.cnf"), "{err}");
    assert!(
        scratch.state_files().is_empty(),
        "no snapshot of an OFF server"
    );

    let show = ps_ok(Some(&dsn), scratch.home(), &["show", "--state-dir", &sd]);
    assert!(show.contains("performance_schema: OFF"), "{show}");
    let named = match flavor {
        Flavor::MariaDb1011 => "MariaDB 10.",
        Flavor::MariaDb118 => "MariaDB 11.",
        Flavor::MySql97 => "MySQL 9.",
    };
    assert!(show.contains(named), "{show}");
}

fn pfsoff_is_refused_as_needing_a_restart(db: &Server) {
    let scratch = Scratch::new();
    let before = dump(db);
    let err = ps_err(
        Some(&db.dsn()),
        scratch.home(),
        &["apply", "pfsoff", "--state-dir", &scratch.state_dir_arg()],
    );
    assert!(err.contains("needs a server restart"), "{err}");
    assert!(err.contains("--restart-cmd"), "{err}");
    assert_eq!(dump(db), before);
    assert!(scratch.state_files().is_empty());
}

#[test]
fn missing_dsn_and_restore_without_snapshot_are_clear_errors() {
    let scratch = Scratch::new();
    let err = ps_err(None, scratch.home(), &["show"]);
    assert!(err.contains("PSPROBE_CONTROLLER_DSN"), "{err}");
    let err = ps_err(
        Some("mysql://psprobe:pw-not-shown@127.0.0.1:1/"),
        scratch.home(),
        &["restore", "--state-dir", &scratch.state_dir_arg()],
    );
    assert!(err.contains("no snapshot at"), "{err}");
    // The default state directory is under HOME when XDG_STATE_HOME is unset.
    let err = ps_err(
        Some("mysql://u:pw-x@127.0.0.1:1/"),
        scratch.home(),
        &["restore"],
    );
    let want = scratch
        .home()
        .join(".local/state/psprobe/ps-snapshot-127.0.0.1-1.json");
    assert!(err.contains(&want.display().to_string()), "{err}");
}

#[test]
fn help_explains_credentials_and_subcommands() {
    let scratch = Scratch::new();
    let help = ps_ok(None, scratch.home(), &["--help"]);
    for needle in [
        "PSPROBE_CONTROLLER_DSN",
        "scenarios",
        "show",
        "apply",
        "restore",
        "--state-dir",
        "GRANT SELECT, UPDATE",
    ] {
        assert!(help.contains(needle), "{needle}:\n{help}");
    }
    let apply = ps_ok(None, scratch.home(), &["apply", "--help"]);
    assert!(
        apply.contains("--state-file") && apply.contains("snapshot"),
        "{apply}"
    );
}

#[test]
fn a_state_file_of_another_server_is_refused() {
    let a = MariaDb::start_default();
    let b = MariaDb::start_default();
    let scratch = Scratch::new();
    let sf = scratch.home().join("shared.json").display().to_string();
    ps_ok(
        Some(&a.dsn()),
        scratch.home(),
        &["apply", "pfson_conon_inson", "--state-file", &sf],
    );
    let before_b = dump(&b);
    for args in [
        &["apply", "pfson_conoff_insoff", "--state-file", &sf][..],
        &["restore", "--state-file", &sf][..],
    ] {
        let err = ps_err(Some(&b.dsn()), scratch.home(), args);
        assert!(err.contains("holds a snapshot of"), "{err}");
        assert!(err.contains(&format!(":{}", b.port())), "{err}");
    }
    assert_eq!(dump(&b), before_b, "the other server is untouched");
    ps_ok(
        Some(&a.dsn()),
        scratch.home(),
        &["restore", "--state-file", &sf],
    );
}

fn a_restart_after_the_snapshot_is_reported_and_restore_still_returns_to_it(db: &mut Server) {
    let scratch = Scratch::new();
    let dsn = db.dsn();
    let sd = scratch.state_dir_arg();
    perturb(db);
    let before = dump(db);
    ps_ok(
        Some(&dsn),
        scratch.home(),
        &["apply", "pfson_conon_inson", "--state-dir", &sd],
    );
    // Start times are compared to the second, with slack: make the restart clearly later.
    std::thread::sleep(Duration::from_secs(3));
    db.restart();
    assert_ne!(dump(db), before, "a restart resets the setup tables");
    let out = ps(
        Some(&dsn),
        scratch.home(),
        &["apply", "pfson_conoff_insoff", "--state-dir", &sd],
    );
    assert!(out.ok, "{}\n{}", out.stdout, out.stderr);
    assert!(out.stderr.contains("restarted"), "{}", out.stderr);
    ps_ok(Some(&dsn), scratch.home(), &["restore", "--state-dir", &sd]);
    assert_eq!(dump(db), before);
}

/// The async API the scheduler uses, without the CLI.
fn library_api_applies_verifies_and_restores(db: &Server) {
    use psprobe::white_box::controller::Catalog;
    use psprobe::white_box::controller::Controller;
    use psprobe::white_box::controller::ControllerDsn;
    use psprobe::white_box::controller::Snapshot;
    let scratch = Scratch::new();
    let before = dump(db);
    let path = scratch.home().join("api.json");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let dsn = ControllerDsn::parse(&db.dsn(), "test").unwrap();
        let mut ctl = Controller::connect(&dsn).await.unwrap();
        assert_eq!(ctl.info().performance_schema, Some(true));
        assert_eq!(ctl.info().identity.port, db.port());
        let saved = ctl.ensure_snapshot(&path).await.unwrap();
        assert!(saved.created && path.exists());

        let mut catalog = Catalog::builtin();
        catalog
            .add_toml(
                "[[scenario]]\nname = \"x\"\nconsumers = { enable = [\"statements_digest\", \"not_in_mariadb\"] }\n",
                Path::new("inline.toml"),
            )
            .unwrap();
        let sqlon = catalog.get("pfson_conon_ins_sqlon").unwrap();
        let report = ctl.apply(sqlon).await.unwrap();
        assert_eq!(report.statements, sqlon.sql().unwrap());
        assert!(report.warnings.is_empty(), "{:?}", report.warnings);
        assert!(ctl.verify(sqlon).await.unwrap().is_empty());
        let other = catalog.get("pfson_conon_inson").unwrap();
        assert!(!ctl.verify(other).await.unwrap().is_empty());

        let report = ctl.apply(catalog.get("x").unwrap()).await.unwrap();
        assert_eq!(report.warnings.len(), 1, "{:?}", report.warnings);
        assert!(report.warnings[0].contains("'not_in_mariadb'"));

        let snapshot = Snapshot::load(&path).unwrap();
        let original = catalog.get("original").unwrap();
        let report = ctl.apply_or_restore(original, &snapshot).await.unwrap();
        assert!(report.rows_verified > 900);
        assert!(ctl.apply(original).await.is_err(), "original needs its snapshot");
        ctl.disconnect().await;
    });
    assert_eq!(dump(db), before);
}
