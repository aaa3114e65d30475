//! The Debian package scripts/package.sh makes from the psprobe under test: its files, modes and
//! control data; installed with dpkg into a Debian 12 chroot (a copy of target/bookworm-chroot,
//! made by scripts/setup-bookworm-chroot.sh), where the chroot's own systemd 252 verifies the
//! unit (and rates its hardening), `psprobe --version`, the man pages and the bash completion
//! work, and the unit's ExecStart, run as its User= with the shipped config pointed at a real
//! mariadbd, serves a client and writes nowhere but its StateDirectory; a purge removes it. The
//! zsh and fish completions are loaded by the real shells, and every setting the config file
//! shows commented out is one psprobe accepts.

use crate::common;

use std::collections::BTreeSet;
use std::ffi::CString;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use common::cli::{mariadb_ok, run_with_timeout};
use common::mariadb::MariaDb;
use common::probe::Probe;

const BIN: &str = env!("CARGO_BIN_EXE_psprobe");
const TIMEOUT: Duration = Duration::from_secs(300);

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn text(out: &[u8]) -> String {
    String::from_utf8_lossy(out).into_owned()
}

/// Runs `cmd` (bounded in time) and returns its stdout; fails the test with its output unless
/// it succeeded.
fn run(cmd: &mut Command) -> String {
    let mut cmd = std::mem::replace(cmd, Command::new("false"));
    let what = format!("{cmd:?}");
    cmd.env_remove("CARGO_TARGET_DIR");
    let out = run_with_timeout(cmd, None, TIMEOUT);
    assert!(
        out.status.success(),
        "{what}: {}\n{}{}",
        out.status,
        text(&out.stdout),
        text(&out.stderr)
    );
    text(&out.stdout)
}

fn command(program: &str, args: &[&str]) -> Command {
    let mut cmd = Command::new(program);
    cmd.args(args);
    cmd
}

/// "0.1.0" from "psprobe 0.1.0 (commit 0123456789ab)".
fn version() -> String {
    let line = run(&mut command(BIN, &["--version"]));
    line.split_whitespace().nth(1).expect("a version").into()
}

/// The package, built once per process into target/tmp/debian-package, and its files unpacked
/// beside it.
fn package() -> &'static (PathBuf, PathBuf) {
    static PACKAGE: OnceLock<(PathBuf, PathBuf)> = OnceLock::new();
    PACKAGE.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("debian-package");
        let _ = std::fs::remove_dir_all(&dir);
        let mut cmd = Command::new(repo().join("scripts/package.sh"));
        cmd.args(["--binary", BIN, "--out"]).arg(&dir);
        let out = run(&mut cmd);
        let deb = PathBuf::from(out.lines().last().expect("the package's path").trim());
        let unpacked = dir.join("root");
        run(command("dpkg-deb", &["-x"]).args([&deb, &unpacked]));
        (deb, unpacked)
    })
}

/// The names of the commands under `psprobe PATH` that --help lists (without `help`), each
/// with its own below: the man pages there must be.
fn commands(path: &[&str]) -> Vec<String> {
    let help = run(command(BIN, path).arg("--help"));
    let mut names = Vec::new();
    let listed = help
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        // A wrapped description goes on further in.
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help");
    for sub in listed.map(String::from).collect::<Vec<_>>() {
        let mut inner: Vec<&str> = path.to_vec();
        inner.push(&sub);
        names.push(format!("psprobe-{}", inner.join("-")));
        names.extend(commands(&inner));
    }
    names
}

#[test]
fn the_package_holds_the_binary_unit_conffile_man_pages_and_completions() {
    let (deb, _) = package();
    let version = version();
    let arch = run(&mut command("dpkg", &["--print-architecture"]));
    assert_eq!(
        deb.file_name().and_then(|n| n.to_str()),
        Some(format!("psprobe_{version}_{}.deb", arch.trim()).as_str())
    );

    let listing = run(command("dpkg-deb", &["--contents"]).arg(deb));
    let mut files = BTreeSet::new();
    for line in listing.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(fields[1], "root/root", "{line}");
        if fields[0].starts_with('d') {
            continue;
        }
        let path = fields[5].trim_start_matches("./").to_string();
        let mode = if path == "usr/bin/psprobe" {
            "-rwxr-xr-x"
        } else {
            "-rw-r--r--"
        };
        assert_eq!(fields[0], mode, "{line}");
        files.insert(path);
    }
    let mut expected: BTreeSet<String> = [
        "usr/bin/psprobe",
        "lib/systemd/system/psprobe.service",
        "etc/psprobe/psprobe.toml",
        "usr/share/bash-completion/completions/psprobe",
        "usr/share/zsh/vendor-completions/_psprobe",
        "usr/share/fish/vendor_completions.d/psprobe.fish",
        "usr/share/doc/psprobe/copyright",
        "usr/share/doc/psprobe/examples/credentials.conf",
    ]
    .map(String::from)
    .into();
    let pages = std::iter::once("psprobe".to_string()).chain(commands(&[]));
    expected.extend(pages.map(|p| format!("usr/share/man/man1/{p}.1.gz")));
    assert!(
        expected.contains("usr/share/man/man1/psprobe-ps-apply.1.gz"),
        "nested commands get pages: {expected:?}"
    );
    assert_eq!(files, expected);
    // The hidden command that made them is in none of them (users cannot complete it either).
    for file in files.iter().filter(|f| f.starts_with("usr/share/")) {
        let path = package().1.join(file);
        let body = if file.ends_with(".gz") {
            run(command("zcat", &[]).arg(&path))
        } else {
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{file}: {e}"))
        };
        assert!(
            !body.contains("package-assets"),
            "{file} names package-assets"
        );
    }

    let control = tempfile::tempdir().expect("tempdir");
    run(command("dpkg-deb", &["--control"]).args([deb.as_path(), control.path()]));
    let read = |name: &str| std::fs::read_to_string(control.path().join(name)).expect(name);
    assert_eq!(read("conffiles"), "/etc/psprobe/psprobe.toml\n");
    let fields = read("control");
    let field = |name: &str| {
        fields
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{name}: ")))
            .unwrap_or_else(|| panic!("no {name} in\n{fields}"))
            .to_string()
    };
    assert_eq!(field("Package"), "psprobe");
    assert_eq!(field("Version"), version);
    assert_eq!(field("Architecture"), arch.trim());
    let depends = field("Depends");
    assert!(
        depends.contains("libc6 (>= ") && depends.contains("adduser"),
        "{depends}"
    );
    for script in ["postinst", "prerm", "postrm"] {
        let mode = std::fs::metadata(control.path().join(script))
            .expect(script)
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o755, "{script}");
    }
}

/// A copy of target/bookworm-chroot (Debian 12 minbase with systemd and man-db), removed on drop.
struct Chroot {
    dir: tempfile::TempDir,
}

impl Chroot {
    fn new() -> Chroot {
        let cached = repo().join("target/bookworm-chroot");
        assert!(
            cached.join("usr/bin/systemd-analyze").exists(),
            "{} is missing: run scripts/setup-bookworm-chroot.sh (scripts/setup.sh does)",
            cached.display()
        );
        // Beside target/, on the same file system: the copy can share extents.
        let dir = tempfile::Builder::new()
            .prefix("bookworm-")
            .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
            .expect("tempdir");
        let mut source = cached.into_os_string();
        source.push("/.");
        run(command("cp", &["-a", "--reflink=auto"])
            .args([source.as_os_str(), dir.path().as_os_str()]));
        Chroot { dir }
    }

    fn path(&self, inside: &str) -> PathBuf {
        self.dir.path().join(inside.trim_start_matches('/'))
    }

    /// `chroot DIR ARGS` with a clean environment, as a root login would have.
    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new("chroot");
        cmd.arg(self.dir.path())
            .args(args)
            .env_clear()
            .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
            .env("HOME", "/root")
            .env("LANG", "C.UTF-8");
        cmd
    }

    fn output(&self, args: &[&str]) -> Output {
        run_with_timeout(self.command(args), None, TIMEOUT)
    }

    fn ok(&self, args: &[&str]) -> String {
        run(&mut self.command(args))
    }

    /// (uid, gid, shell) of a user of the chroot.
    fn user(&self, name: &str) -> Option<(u32, u32, String)> {
        let passwd = std::fs::read_to_string(self.path("/etc/passwd")).expect("passwd");
        passwd.lines().find_map(|l| {
            let f: Vec<&str> = l.split(':').collect();
            (f[0] == name).then(|| {
                let id = |s: &str| s.parse().expect("numeric id");
                (id(f[2]), id(f[3]), f[6].to_string())
            })
        })
    }
}

/// Every value of `key=` in a unit file.
fn unit_values(unit: &str, key: &str) -> Vec<String> {
    unit.lines()
        .filter_map(|l| l.strip_prefix(&format!("{key}=")))
        .map(String::from)
        .collect()
}

/// `argv` run as `uid:gid` with `root` as its root directory, tied to this process: what
/// systemd does for User=, without the sandbox this machine cannot set up.
fn as_service_user(root: &Path, argv: &[String], uid: u32, gid: u32, home: &str) -> Command {
    let mut cmd = Command::new(&argv[0]);
    cmd.args(&argv[1..])
        .env_clear()
        .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
        .env("HOME", home)
        .env("STATE_DIRECTORY", home)
        .env("LANG", "C.UTF-8");
    let root = CString::new(root.as_os_str().as_encoded_bytes()).expect("path without NUL");
    // SAFETY: only async-signal-safe calls, on memory prepared before the fork.
    unsafe {
        cmd.pre_exec(move || {
            let fail = || Err(std::io::Error::last_os_error());
            if libc::chroot(root.as_ptr()) != 0 || libc::chdir(c"/".as_ptr()) != 0 {
                return fail();
            }
            if libc::setgroups(0, std::ptr::null()) != 0
                || libc::setgid(gid) != 0
                || libc::setuid(uid) != 0
            {
                return fail();
            }
            Ok(())
        });
    }
    cmd
}

/// Each `key = "VALUE"` line of the config replaced by `key = "NEW"`; the key must be set once.
fn set(config: &str, key: &str, value: &str) -> String {
    let prefix = format!("{key} = ");
    let lines: Vec<String> = config
        .lines()
        .map(|l| match l.starts_with(&prefix) {
            true => format!("{prefix}\"{value}\""),
            false => l.to_string(),
        })
        .collect();
    assert_eq!(
        config.lines().filter(|l| l.starts_with(&prefix)).count(),
        1,
        "the shipped config sets {key} once"
    );
    lines.join("\n") + "\n"
}

#[test]
fn in_debian_12_the_unit_verifies_and_the_service_serves_as_its_own_user() {
    let (deb, _) = package();
    let chroot = Chroot::new();
    std::fs::copy(deb, chroot.path("/tmp/psprobe.deb")).expect("copy the package in");
    chroot.ok(&["dpkg", "--install", "/tmp/psprobe.deb"]);

    // The binary and what it was built from.
    let version = chroot.ok(&["psprobe", "--version"]);
    assert_eq!(version, run(&mut command(BIN, &["--version"])));
    let expected = format!("psprobe {} (commit ", env!("CARGO_PKG_VERSION"));
    assert!(version.starts_with(&expected), "{version}");
    if let Ok(head) = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(repo())
        .output()
    {
        if head.status.success() {
            let head = text(&head.stdout);
            assert!(version.contains(head.trim()), "{version} vs HEAD {head}");
        }
    }

    // The unit, by the chroot's systemd (its binaries, users and man pages are the chroot's).
    let verify = chroot.output(&["systemd-analyze", "verify", "psprobe.service"]);
    let said = text(&verify.stdout) + &text(&verify.stderr);
    assert!(verify.status.success() && said.trim().is_empty(), "{said}");
    let security = chroot.ok(&[
        "systemd-analyze",
        "security",
        "--offline=yes",
        "psprobe.service",
    ]);
    let exposure: f64 = security
        .lines()
        .find_map(|l| l.split("psprobe.service: ").nth(1))
        .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| panic!("no overall exposure in:\n{security}"));
    assert!(
        exposure <= 2.0,
        "hardening weakened to {exposure}:\n{security}"
    );
    // The credentials drop-in, as its comment says to install it.
    let dropin = chroot.path("/etc/systemd/system/psprobe.service.d");
    std::fs::create_dir_all(&dropin).expect("drop-in dir");
    std::fs::copy(
        chroot.path("/usr/share/doc/psprobe/examples/credentials.conf"),
        dropin.join("credentials.conf"),
    )
    .expect("drop-in");
    let verify = chroot.output(&["systemd-analyze", "verify", "psprobe.service"]);
    let said = text(&verify.stdout) + &text(&verify.stderr);
    assert!(
        verify.status.success() && said.trim().is_empty(),
        "with credentials.conf: {said}"
    );
    std::fs::remove_dir_all(&dropin).expect("remove drop-in");

    let unit =
        std::fs::read_to_string(chroot.path("/lib/systemd/system/psprobe.service")).expect("unit");
    let exec: Vec<String> = unit_values(&unit, "ExecStart")[0]
        .split_whitespace()
        .map(String::from)
        .collect();
    assert_eq!(
        exec,
        [
            "/usr/bin/psprobe",
            "proxy",
            "--config",
            "/etc/psprobe/psprobe.toml"
        ]
    );
    for (key, value) in [
        ("NoNewPrivileges", "yes"),
        ("ProtectSystem", "strict"),
        ("StateDirectory", "psprobe"),
        ("ReadWritePaths", "/var/lib/psprobe"),
    ] {
        assert_eq!(unit_values(&unit, key), [value], "{key}");
    }
    let user = &unit_values(&unit, "User")[0];
    let (uid, gid, shell) = chroot.user(user).expect("postinst made the service's user");
    assert_ne!(uid, 0);
    assert_eq!(shell, "/usr/sbin/nologin");

    // man and the bash completion, as a user of the chroot would meet them.
    assert_eq!(
        chroot.ok(&["man", "-w", "psprobe"]).trim(),
        "/usr/share/man/man1/psprobe.1.gz"
    );
    let page = chroot.ok(&["env", "MANWIDTH=100", "man", "-P", "cat", "psprobe-proxy"]);
    assert!(
        page.contains("--upstream") && page.contains("--config"),
        "{page}"
    );
    assert!(
        page.contains(version.trim()),
        "the footer names the build: {page}"
    );
    let complete = chroot.ok(&[
        "bash",
        "-c",
        ". /usr/share/bash-completion/bash_completion; _completion_loader psprobe; \
         COMP_WORDS=(psprobe pro); COMP_CWORD=1; _psprobe psprobe pro psprobe; \
         echo \"${COMPREPLY[*]}\"; \
         COMP_WORDS=(psprobe proxy --ups); COMP_CWORD=2; _psprobe psprobe --ups proxy; \
         echo \"${COMPREPLY[*]}\"",
    ]);
    assert_eq!(complete, "proxy\n--upstream --upstream-keepalive\n");

    // The service: the shipped config with its addresses made this test's, then ExecStart
    // as User= with the StateDirectory systemd would make.
    let db = MariaDb::start_default();
    let config_path = chroot.path("/etc/psprobe/psprobe.toml");
    let config = std::fs::read_to_string(&config_path).expect("config");
    let config = set(&config, "listen", "127.0.0.1:0");
    let config = set(&config, "metrics", "127.0.0.1:0");
    let config = set(&config, "upstream", &db.addr());
    std::fs::write(&config_path, config).expect("edit config");
    let state = format!("/var/lib/{}", unit_values(&unit, "StateDirectory")[0]);
    std::fs::create_dir(chroot.path(&state)).expect("state dir");
    std::os::unix::fs::chown(chroot.path(&state), Some(uid), Some(gid)).expect("chown");
    std::fs::set_permissions(chroot.path(&state), std::fs::Permissions::from_mode(0o700))
        .expect("chmod");
    let marker = tempfile::NamedTempFile::new().expect("marker");

    let mut probe =
        Probe::start_command(as_service_user(chroot.dir.path(), &exec, uid, gid, &state));
    assert_eq!(probe.healthz(), 200);
    let out = mariadb_ok(probe.proxy_addr(), &["-N", "-e", "SELECT 6*7"], None);
    assert_eq!(out.trim(), "42");
    let deadline = Instant::now() + Duration::from_secs(10);
    while probe
        .scrape()
        .get("psprobe_commands_total", &[("command", "query")])
        < 1.0
    {
        assert!(Instant::now() < deadline, "the query was not counted");
        std::thread::sleep(Duration::from_millis(50)); // poll interval
    }
    // Its TLS certificate went to the state directory, written by the service's user.
    let ca = chroot.path(&format!("{state}/tls/ca.pem"));
    assert_eq!(std::fs::metadata(&ca).expect("generated CA").uid(), uid);
    probe.signal(libc::SIGTERM);
    let status = probe.wait_exit(Duration::from_secs(30)).expect("stopped");
    assert!(status.success(), "{status:?}\n{}", probe.stderr_text());
    // ProtectSystem=strict with ReadWritePaths= only the state directory: nothing else written.
    let written = run(command("find", &[])
        .arg(chroot.dir.path())
        .args(["-newer"])
        .arg(marker.path())
        .args(["-not", "-type", "d"]));
    let state_root = chroot.path(&state);
    let outside: Vec<&str> = written
        .lines()
        .filter(|p| !Path::new(p).starts_with(&state_root))
        .collect();
    assert!(outside.is_empty(), "written outside {state}: {outside:?}");

    chroot.ok(&["dpkg", "--purge", "psprobe"]);
    for gone in [
        "/usr/bin/psprobe",
        "/etc/psprobe",
        "/lib/systemd/system/psprobe.service",
        &state,
    ] {
        assert!(!chroot.path(gone).exists(), "{gone} left after purge");
    }
}

#[test]
fn zsh_and_fish_load_the_completions_from_where_the_package_puts_them() {
    let (_, root) = package();
    // fish as installed: its vendor directory under XDG_DATA_DIRS (the package's usr/share in
    // place of /usr/share, which fish reads the same way) and psprobe on PATH (fish loads
    // completions only for commands it finds); a fresh HOME, so no user's config.
    let home = tempfile::tempdir().expect("tempdir");
    let fish = |script: &str| {
        let mut cmd = command("fish", &["-c", script]);
        cmd.env("HOME", home.path())
            .env("XDG_DATA_DIRS", root.join("usr/share"))
            .env(
                "PATH",
                format!("{}:/usr/bin:/bin", root.join("usr/bin").display()),
            );
        run(&mut cmd)
    };
    let vendor = root.join("usr/share/fish/vendor_completions.d");
    let dirs = fish("string join \\n $fish_complete_path");
    assert!(dirs.lines().any(|l| Path::new(l) == vendor), "{dirs}");
    assert!(
        dirs.lines()
            .any(|l| l == "/usr/share/fish/vendor_completions.d"),
        "{dirs}"
    );
    let out = fish("complete -C 'psprobe pro'; complete -C 'psprobe proxy --ups'");
    let candidates: Vec<&str> = out.lines().filter_map(|l| l.split('\t').next()).collect();
    assert_eq!(
        candidates,
        ["proxy", "--upstream", "--upstream-keepalive"],
        "{out}"
    );

    let zsh_dir = "/usr/share/zsh/vendor-completions";
    let fpath = run(&mut command("zsh", &["-f", "-c", "print -l $fpath"]));
    assert!(fpath.lines().any(|l| l == zsh_dir), "{fpath}");
    let dump = tempfile::tempdir().expect("tempdir");
    let script = format!(
        "fpath=({} $fpath); autoload -Uz compinit; compinit -u -d {}/zcompdump; \
         print -r -- $_comps[psprobe]",
        root.join(&zsh_dir[1..]).display(),
        dump.path().display()
    );
    assert_eq!(
        run(&mut command("zsh", &["-f", "-c", &script])).trim(),
        "_psprobe"
    );
    let file = root.join(&zsh_dir[1..]).join("_psprobe");
    run(command("zsh", &["-n"]).arg(&file));
}

/// The shipped config with every example it shows commented out set: psprobe must accept each.
#[test]
fn every_setting_the_config_shows_commented_out_is_one_psprobe_accepts() {
    let shipped = std::fs::read_to_string(repo().join("packaging/psprobe.toml")).expect("config");
    let mut uncommented = 0;
    let config: String = shipped
        .lines()
        .map(|line| {
            let Some(rest) = line.strip_prefix("# ") else {
                return line.to_string();
            };
            // `# [tls]   # all optional` and `# key = value   # what it does`.
            let setting = rest.split("  #").next().unwrap_or(rest).trim_end();
            let is_table = setting.starts_with('[') && setting.ends_with(']');
            let is_key = setting
                .split_once(" = ")
                .is_some_and(|(k, _)| k.chars().all(|c| c.is_ascii_lowercase() || c == '_'));
            if !(is_table || is_key) {
                return line.to_string();
            }
            uncommented += 1;
            // Files the example names do not exist here.
            match setting.split_once(" = ").map(|(k, _)| k) {
                Some("cert" | "key" | "server_tls_ca") => String::new(),
                Some("server_tls_verify") => "server_tls_verify = \"skip\"".into(),
                _ => setting.to_string(),
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    assert!(uncommented >= 20, "{uncommented} examples found:\n{config}");
    assert!(config.contains("\n[tls]\n"), "{config}");
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("psprobe.toml");
    std::fs::write(&path, &config).expect("write");
    let db = MariaDb::start_default();
    // The harness's --listen/--metrics (port 0) and these flags win over the file's addresses
    // and its state directory, which are the service's.
    let state = dir.path().join("state");
    let probe = Probe::start_with_env(
        &db.addr(),
        &[
            "--config",
            path.to_str().expect("utf-8"),
            "--admin",
            "127.0.0.1:0",
            "--state-dir",
            state.to_str().expect("utf-8"),
        ],
        &[("PSPROBE_ADMIN_PASSWORD", "example")],
    );
    assert_eq!(probe.healthz(), 200);
    let out = mariadb_ok(probe.proxy_addr(), &["-N", "-e", "SELECT 1"], None);
    assert_eq!(out.trim(), "1");
}
