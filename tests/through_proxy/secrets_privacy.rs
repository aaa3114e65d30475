//! Secrets and privacy: psprobe runs with a known controller DSN password, a known admin
//! password and a query with distinctive literals, at `--log trace`; none of them may show up in
//! its log, /metrics, the admin tables, the phase log, the state files or /proc/PID/cmdline.
//! The state directory it creates is 0700, its files 0600. Passwords on the command line are
//! refused (dedicated flags) or warned about (anything else), and errors about the DSN show
//! `user@host:port` only.

use crate::common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::cli::{mariadb_ok, run_with_timeout, split_addr};
use common::mariadb::MariaDb;
use common::probe::Probe;

const DSN_PASSWORD: &str = "Dsn-Secret-7f3a9";
const ADMIN_PASSWORD: &str = "Admin-Secret-2c81";
const WRONG_GUESS: &str = "Wrong-Guess-55e1";
const STRING_LITERAL: &str = "Literal-Canary-91d5";
const NUMBER_LITERAL: &str = "918273645";
const TIMEOUT: Duration = Duration::from_secs(30);

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .permissions()
        .mode()
        & 0o777
}

/// A file only its owner may read.
fn private_file(path: &Path, text: &str) {
    std::fs::write(path, text).expect("write secret file");
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
}

/// Every file and directory under `dir`, depth first.
fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read_dir") {
        let path = entry.expect("dir entry").path();
        out.push(path.clone());
        if path.is_dir() {
            walk(&path, out);
        }
    }
}

fn wait_for<T>(what: &str, mut found: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        if let Some(v) = found() {
            return v;
        }
        assert!(Instant::now() < deadline, "no {what} within {TIMEOUT:?}");
        std::thread::sleep(Duration::from_millis(100)); // poll interval
    }
}

/// `text` (from `source`) holds none of the secrets nor the literals.
#[track_caller]
fn assert_clean(source: &str, text: &str) {
    for secret in [
        DSN_PASSWORD,
        ADMIN_PASSWORD,
        WRONG_GUESS,
        STRING_LITERAL,
        NUMBER_LITERAL,
    ] {
        assert!(
            !text.contains(secret),
            "{source} shows {secret:?}:\n{}",
            text.lines()
                .filter(|l| l.contains(secret))
                .take(5)
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
}

#[test]
fn nothing_leaks_at_trace_and_files_are_private() {
    let db = MariaDb::start_default();
    db.sql(&format!(
        "CREATE USER 'ctl'@'%' IDENTIFIED BY '{DSN_PASSWORD}'; \
         GRANT ALL PRIVILEGES ON *.* TO 'ctl'@'%';"
    ));
    let dir = tempfile::tempdir().expect("tempdir");
    // Not there yet: psprobe creates it (and its parent).
    let state = dir.path().join("state/psprobe");
    let admin_file = dir.path().join("admin-password");
    let dsn_file = dir.path().join("controller-dsn");
    private_file(&admin_file, &format!("{ADMIN_PASSWORD}\n"));
    private_file(
        &dsn_file,
        &format!("mysql://ctl:{DSN_PASSWORD}@{}/\n", db.addr()),
    );
    let probe = Probe::start_with_env(
        &db.addr(),
        &[
            "--log",
            "trace",
            "--admin",
            "127.0.0.1:0",
            "--admin-password-file",
            admin_file.to_str().expect("UTF-8"),
            "--controller-dsn-file",
            dsn_file.to_str().expect("UTF-8"),
            "--scenarios",
            "pfson_conoff_insoff,pfson_conon_insoff",
            "--phase",
            "200ms",
            "--segment",
            "1s",
            "--state-dir",
            state.to_str().expect("UTF-8"),
        ],
        &[],
    );

    // Literals through the proxy: text protocol, and a prepared statement's parameter.
    let out = mariadb_ok(
        probe.proxy_addr(),
        &[
            "-N",
            "-e",
            &format!(
                "SELECT '{STRING_LITERAL}'; SELECT {NUMBER_LITERAL} + 1; \
                 PREPARE s FROM 'SELECT ? AS v'; SET @v = '{STRING_LITERAL}'; EXECUTE s USING @v"
            ),
        ],
        None,
    );
    assert!(out.contains(STRING_LITERAL), "{out}");
    // The admin interface: a wrong guess, then the right password.
    let (host, port) = split_addr(probe.admin_addr());
    let admin = |password: &str, sql: &str| {
        let mut cmd = Command::new("/usr/bin/mariadb");
        cmd.args(["--no-defaults", "--protocol=TCP", "-h", host, "-P", port])
            .args(["-u", "admin", &format!("-p{password}"), "-B", "-e", sql]);
        run_with_timeout(cmd, None, TIMEOUT)
    };
    assert!(!admin(WRONG_GUESS, "SELECT 1").status.success());
    let digests = admin(
        ADMIN_PASSWORD,
        "SELECT digest_text FROM digests; SELECT * FROM connections",
    );
    assert!(digests.status.success(), "{digests:?}");
    let digests = String::from_utf8_lossy(&digests.stdout).into_owned();
    assert!(digests.contains("select ?"), "{digests}");
    assert_clean("the admin tables", &digests);

    // Phase log records written after the statements ran (one segment per second).
    let phase_log = state.join(format!("phases-127.0.0.1-{}.jsonl", db.port()));
    wait_for("phase log segments", || {
        let text = std::fs::read_to_string(&phase_log).ok()?;
        (text.lines().count() >= 3).then_some(())
    });
    let scrape = probe.scrape();
    assert!(scrape.text.contains("select ?"), "{}", scrape.text);

    // Modes, while the run holds its snapshot.
    let mut entries = Vec::new();
    walk(&state, &mut entries);
    assert_eq!(mode(&state), 0o700, "{}", state.display());
    assert_eq!(mode(state.parent().expect("parent")), 0o700);
    let snapshot = state.join(format!("ps-snapshot-127.0.0.1-{}.json", db.port()));
    assert!(entries.contains(&snapshot), "{entries:?}");
    assert!(entries.contains(&phase_log), "{entries:?}");
    assert!(entries.iter().any(|p| p.ends_with("tls")), "{entries:?}");
    for path in &entries {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let public_certificate = path.parent().is_some_and(|p| p.ends_with("tls"))
            && name.ends_with(".pem")
            && !name.contains("key");
        let want = if path.is_dir() {
            0o700
        } else if public_certificate {
            0o644
        } else {
            0o600
        };
        assert_eq!(mode(path), want, "{}", path.display());
    }

    // Stop (the controller restores and writes its last records), then look everywhere.
    let cmdline = std::fs::read(format!("/proc/{}/cmdline", probe.pid())).expect("cmdline");
    let environ = std::fs::read(format!("/proc/{}/environ", probe.pid())).expect("environ");
    let mut probe = probe;
    probe.signal(libc::SIGTERM);
    assert!(
        probe.wait_exit(TIMEOUT).is_some_and(|s| s.success()),
        "psprobe did not stop cleanly:\n{}",
        probe.stderr_text()
    );
    let log = probe.stderr_text();
    assert_clean("the log", &log);
    assert_clean("/metrics", &scrape.text);
    assert_clean("/proc/PID/cmdline", &String::from_utf8_lossy(&cmdline));
    assert_clean("/proc/PID/environ", &String::from_utf8_lossy(&environ));
    let mut files = Vec::new();
    walk(&state, &mut files);
    for path in files.iter().filter(|p| p.is_file()) {
        let text =
            String::from_utf8_lossy(&std::fs::read(path).expect("read state file")).into_owned();
        assert_clean(&path.display().to_string(), &text);
    }
    // The grep had something to look at: trace events of each kind, the DSN in its redacted
    // form, and no warning about the command line or the secret files.
    for expected in [
        "client connected",
        "client logs in",
        "command finished",
        "admin login",
        "metrics endpoint",
        &format!("ctl@{}", db.addr()),
    ] {
        assert!(log.contains(expected), "no {expected:?} in the log:\n{log}");
    }
    assert!(!log.contains("looks like it holds a password"), "{log}");
    assert!(!log.contains("other users may read it"), "{log}");
}

/// Passwords on the command line: the dedicated flags are refused, an upstream URL with
/// credentials too, and anything else that looks like one (a --restart-cmd with -pSECRET) is
/// warned about; none of the messages repeats the secret. A world-readable password file is
/// warned about.
#[test]
fn passwords_on_the_command_line_are_refused_or_warned_about() {
    let secret = "Cli-Secret-0b7e";
    let run = |args: &[&str]| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_psprobe"));
        cmd.env_remove("PSPROBE_ADMIN_PASSWORD")
            .env_remove("PSPROBE_CONTROLLER_DSN")
            .args([
                "proxy",
                "--listen",
                "127.0.0.1:0",
                "--metrics",
                "127.0.0.1:0",
            ])
            .args(args);
        run_with_timeout(cmd, None, TIMEOUT)
    };
    let dsn = format!("mysql://ctl:{secret}@127.0.0.1:1/");
    for (args, says) in [
        (
            vec!["--admin", "127.0.0.1:0", "--admin-password", secret],
            "--admin-password-file",
        ),
        (
            vec![
                "--scenarios",
                "pfson_conoff_insoff",
                "--controller-dsn",
                &dsn,
            ],
            "--controller-dsn-file",
        ),
        (vec!["--upstream", &dsn], "without a scheme or credentials"),
    ] {
        let out = run(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
        assert!(!stderr.contains(secret), "{args:?}: {stderr}");
    }

    let dir = tempfile::tempdir().expect("tempdir");
    let password_file = dir.path().join("admin-password");
    std::fs::write(&password_file, "from-a-file\n").expect("write");
    std::fs::set_permissions(&password_file, std::fs::Permissions::from_mode(0o644))
        .expect("chmod");
    let restart = format!("mariadb-admin -uroot -p{secret} shutdown; systemctl start mariadb");
    let probe = Probe::start_with_env(
        "127.0.0.1:1",
        &[
            "--restart-cmd",
            &restart,
            "--admin",
            "127.0.0.1:0",
            "--admin-password-file",
            password_file.to_str().expect("UTF-8"),
            "--state-dir",
            dir.path().join("state").to_str().expect("UTF-8"),
        ],
        &[],
    );
    let log = wait_for("the warnings", || {
        let log = probe.stderr_text();
        (log.contains("looks like it holds a password") && log.contains("other users may read it"))
            .then_some(log)
    });
    assert!(log.contains("run chmod 600"), "{log}");
    assert!(!log.contains(secret), "{log}");
}

/// Errors about the controller's DSN show `user@host:port`, never the password, whichever way
/// it failed.
#[test]
fn dsn_errors_are_redacted() {
    let secret = "Dsn-Error-Secret-4d2c";
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("dsn");
    for (dsn, says) in [
        // Nothing listens on port 1.
        (
            format!("mysql://ctl:{secret}@127.0.0.1:1/"),
            "cannot connect to ctl@127.0.0.1:1",
        ),
        (
            format!("mysql://ctl:{secret}@127.0.0.1:1/?bogus={secret}"),
            "unknown parameter `bogus`",
        ),
        (
            format!("ctl:{secret}@127.0.0.1:1"),
            "must start with mysql://",
        ),
    ] {
        private_file(&file, &dsn);
        for args in [
            vec![
                "ps",
                "show",
                "--controller-dsn-file",
                file.to_str().expect("UTF-8"),
            ],
            vec![
                "proxy",
                "--listen",
                "127.0.0.1:0",
                "--metrics",
                "127.0.0.1:0",
                "--upstream",
                "127.0.0.1:1",
                "--scenarios",
                "pfson_conoff_insoff",
                "--state-dir",
                dir.path().join("state").to_str().expect("UTF-8"),
                "--controller-dsn-file",
                file.to_str().expect("UTF-8"),
            ],
        ] {
            let mut cmd = Command::new(env!("CARGO_BIN_EXE_psprobe"));
            cmd.env_remove("PSPROBE_CONTROLLER_DSN")
                .env_remove("RUST_LOG")
                .args(&args);
            let out = run_with_timeout(cmd, None, TIMEOUT);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(!out.status.success(), "{args:?}: {stderr}");
            assert!(stderr.contains(says), "{args:?}: {stderr}");
            assert!(!stderr.contains(secret), "{args:?}: {stderr}");
            assert!(!String::from_utf8_lossy(&out.stdout).contains(secret));
        }
    }
}
