//! `mariadb`: the benchmark's throwaway server, started from the harness's layout and command
//! line (the same files and options as the tests' and the demo's servers): performance_schema
//! OFF (the proxies are measured, not the server's instrumentation), no binary log, no name
//! resolution on MariaDB, a small redo log; the caller's options come last and win. `--flavor`
//! picks the server (the host's MariaDB 10.11, or 11.8 or MySQL 9.7 from their Debian trees,
//! run with chroot: `--dir` must then be inside the tree). Prints `PORT PID` and leaves the
//! server running: the calling script stops it by its pid.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use psprobe_harness::flavor::Flavor;
use psprobe_harness::mariadb::root_cli_args;
use psprobe_harness::server::{ping_args, Layout, ADMIN};

/// How long a fresh server may take to answer.
const READY_TIMEOUT: Duration = Duration::from_secs(60);

/// `--flavor`: the servers the tests run.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum FlavorArg {
    /// The host's mariadbd (Debian 12's MariaDB 10.11).
    #[value(name = "10.11")]
    MariaDb1011,
    /// MariaDB 11.8 from target/trixie-mariadb (scripts/setup-trixie-mariadb.sh).
    #[value(name = "11.8")]
    MariaDb118,
    /// MySQL 9.7 from target/sid-mysql (scripts/setup-sid-mysql.sh).
    #[value(name = "9.7")]
    MySql97,
}

impl FlavorArg {
    fn flavor(self) -> Flavor {
        match self {
            FlavorArg::MariaDb1011 => Flavor::MariaDb1011,
            FlavorArg::MariaDb118 => Flavor::MariaDb118,
            FlavorArg::MySql97 => Flavor::MySql97,
        }
    }
}

#[derive(clap::Args)]
pub struct Args {
    /// Directory for the server's files (created; its datadir is DIR/data, its log
    /// DIR/error.log). Inside the server's tree for 11.8 and 9.7.
    #[arg(long, value_name = "DIR")]
    pub dir: PathBuf,
    /// Account created with every privilege (the benchmark's clients use it).
    #[arg(long, default_value = "bench")]
    pub user: String,
    /// Its password.
    #[arg(long, default_value = "bench")]
    pub password: String,
    /// Which server.
    #[arg(long, value_enum, default_value = "10.11")]
    pub flavor: FlavorArg,
    /// More server options (sizing, TLS), after `--`.
    #[arg(last = true, value_name = "SERVER_OPTION")]
    pub options: Vec<String>,
}

/// The server's tree (`None`: the host's) and the layout as the server sees it (its paths
/// inside the tree).
fn placed(flavor: Flavor, dir: &Path) -> Result<(Option<PathBuf>, Layout)> {
    let Some(tree) = flavor.tree(Path::new(".")) else {
        return Ok((None, Layout::new(dir)));
    };
    if let Some(why) = flavor.tree_problem(&tree) {
        bail!("{why}");
    }
    let tree = tree
        .canonicalize()
        .with_context(|| format!("cannot resolve {}", tree.display()))?;
    let dir = dir
        .canonicalize()
        .with_context(|| format!("cannot resolve {}", dir.display()))?;
    let inside = dir.strip_prefix(&tree).map_err(|_| {
        anyhow::anyhow!(
            "--dir {} is outside {} ({} runs there with chroot): give a folder inside it",
            dir.display(),
            tree.display(),
            flavor.name()
        )
    })?;
    Ok((Some(tree), Layout::new(Path::new("/").join(inside))))
}

pub fn run(args: &Args) -> Result<()> {
    let layout = Layout::new(&args.dir);
    std::fs::create_dir_all(layout.tmpdir())
        .with_context(|| format!("cannot create {}", layout.tmpdir().display()))?;
    let flavor = args.flavor.flavor();
    let (tree, seen) = placed(flavor, &args.dir)?;
    install(flavor, tree.as_deref(), &layout, &seen)?;
    let port = psprobe_harness::ports::free_port().context("no free port on 127.0.0.1")?;
    let console = File::create(layout.console_log())
        .with_context(|| format!("cannot create {}", layout.console_log().display()))?;
    let program = flavor.server_program();
    let mut own = vec![
        "--performance-schema=OFF".to_string(),
        flavor.redo_log_option().to_string(),
    ];
    if !flavor.is_mysql() {
        // MySQL's root is 'root'@'localhost': a TCP client from 127.0.0.1 matches it only
        // through name resolution.
        own.push("--skip-name-resolve".into());
    }
    let mut server = Flavor::command_in(tree.as_deref(), program)
        .args(flavor.server_args(&seen, port, "127.0.0.1"))
        .args(&own)
        .args(&args.options)
        .stdin(Stdio::null())
        .stdout(
            console
                .try_clone()
                .context("cannot share the console log")?,
        )
        .stderr(console)
        .spawn()
        .with_context(|| format!("cannot start {program}"))?;
    let deadline = Instant::now() + READY_TIMEOUT;
    while !answers(port) {
        if let Some(status) = server.try_wait().context("cannot watch the server")? {
            bail!(
                "{program} exited ({status}); the end of {}:\n{}",
                layout.error_log().display(),
                tail(&layout.error_log())
            );
        }
        if Instant::now() >= deadline {
            let _ = server.kill();
            bail!(
                "{program} did not answer within {READY_TIMEOUT:?}; see {}",
                layout.error_log().display()
            );
        }
        std::thread::sleep(Duration::from_millis(100)); // poll interval
    }
    let account = format!("{}@'%'", args.user);
    let sql = format!(
        "CREATE DATABASE sbtest; CREATE USER {account} IDENTIFIED BY '{}'; \
         GRANT ALL ON *.* TO {account}",
        args.password.replace('\'', "''")
    );
    let out = Command::new("mariadb")
        .args(root_cli_args(port))
        .args(["-e", &sql])
        .output()
        .context("cannot run the mariadb CLI")?;
    if !out.status.success() {
        let _ = server.kill();
        bail!(
            "cannot create the benchmark's account: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    println!("{port} {}", server.id());
    Ok(())
}

/// The data directory, made by the flavor's own initializer (in its tree).
fn install(flavor: Flavor, tree: Option<&Path>, layout: &Layout, seen: &Layout) -> Result<()> {
    let log = layout.root().join("install.log");
    let (program, args) = flavor.initialize_args(seen);
    let out = Flavor::command_in(tree, &program)
        .args(&args)
        .output()
        .with_context(|| format!("cannot run {program} (is {} installed?)", flavor.name()))?;
    let _ = std::fs::write(&log, [out.stdout.as_slice(), &out.stderr].concat());
    if !out.status.success() {
        bail!(
            "{program} could not make the data directory ({}); see {} and {}",
            out.status,
            log.display(),
            layout.root().join("init.log").display()
        );
    }
    Ok(())
}

fn answers(port: u16) -> bool {
    Command::new(ADMIN)
        .args(ping_args(port))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The last 20 lines of a log, for an error message.
fn tail(path: &std::path::Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(20)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tree_server_needs_its_folder_inside_the_tree() {
        let tree = tempfile::tempdir().unwrap();
        for program in ["usr/sbin/mysqld", "usr/bin/mysql"] {
            let path = tree.path().join(program);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, "").unwrap();
        }
        // The only test of this crate that sets the variable.
        std::env::set_var("PSPROBE_SID_ROOT", tree.path());
        let inside = tree.path().join("tmp/bench");
        std::fs::create_dir_all(&inside).unwrap();
        let (root, seen) = placed(Flavor::MySql97, &inside).unwrap();
        assert_eq!(root.unwrap(), tree.path().canonicalize().unwrap());
        assert_eq!(seen.root(), Path::new("/tmp/bench"));
        let outside = tempfile::tempdir().unwrap();
        let why = placed(Flavor::MySql97, outside.path())
            .unwrap_err()
            .to_string();
        assert!(why.contains("is outside") && !why.contains('\n'), "{why}");
        let (root, seen) = placed(Flavor::MariaDb1011, outside.path()).unwrap();
        assert!(root.is_none() && seen.root() == outside.path());
        std::env::remove_var("PSPROBE_SID_ROOT");
    }
}
