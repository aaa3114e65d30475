//! Fresh data directories: the flavor's installer (`mariadb-install-db`, or `mysqld
//! --initialize-insecure`) runs once per test process and flavor into a template (it takes
//! seconds), and each server gets a plain copy. A chroot flavor's folders are in its tree's
//! /tmp, where the server sees them.

use super::cli::run_with_timeout;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;
use tempfile::TempDir;

use psprobe_harness::flavor::Flavor;
use psprobe_harness::server::Layout;

/// Used by install-db and mariadbd alike, so the first start need not resize
/// the redo log (install-db's default is 96M: twice the bytes to copy).
pub const LOG_FILE_SIZE: &str = "--innodb-log-file-size=48M";

pub use psprobe_harness::mariadb::is_root;

/// Every tempdir we make is named `psprobe-mariadb-<pid>-<kind>-XXXX` (whichever the server),
/// so dirs left behind by a SIGKILLed test process (no Drop, no atexit) can be recognised and
/// swept by the next run.
const PREFIX: &str = "psprobe-mariadb-";

pub fn tempdir(kind: &str) -> TempDir {
    tempdir_in(&std::env::temp_dir(), kind)
}

/// [`tempdir`] below `parent` (a tree's /tmp).
pub fn tempdir_in(parent: &Path, kind: &str) -> TempDir {
    tempfile::Builder::new()
        .prefix(&format!("{PREFIX}{}-{kind}-", std::process::id()))
        .tempdir_in(parent)
        .unwrap_or_else(|e| panic!("create {kind} tempdir in {}: {e}", parent.display()))
}

fn sweep_stale_tempdirs(parent: &Path) {
    let Ok(entries) = fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let pid = name.strip_prefix(PREFIX).and_then(|r| r.split('-').next());
        let Some(pid) = pid.and_then(|p| p.parse::<libc::pid_t>().ok()) else {
            continue;
        };
        // SAFETY: signal 0 only probes for existence. ESRCH = owner is gone.
        let gone = unsafe { libc::kill(pid, 0) } == -1
            && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH);
        if gone {
            let _ = fs::remove_dir_all(entry.path());
        }
    }
}

/// A flavor's template: its folder on the host, and the same folder as its server sees it.
pub struct Template {
    pub dir: TempDir,
    pub inside: PathBuf,
}

static TEMPLATES: [OnceLock<Template>; 3] = [OnceLock::new(), OnceLock::new(), OnceLock::new()];
/// The templates' folders, removed at exit (statics are never dropped).
static MADE: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

extern "C" fn remove_templates() {
    if let Ok(made) = MADE.lock() {
        for dir in made.iter() {
            let _ = fs::remove_dir_all(dir);
        }
    }
}

/// `path` (below `tree`) as a process chrooted into `tree` sees it.
pub fn inside(tree: &Path, path: &Path) -> PathBuf {
    let rel = path.strip_prefix(tree).expect("path inside the tree");
    Path::new("/").join(rel)
}

/// Where the flavor's throwaway folders go: the tree's /tmp, or the host's.
pub fn tmp_of(tree: Option<&Path>) -> PathBuf {
    tree.map_or_else(std::env::temp_dir, |t| t.join("tmp"))
}

/// Checks that a chroot flavor's tree has its programs and that its server runs: one line
/// saying what to do otherwise.
fn check_tree(flavor: Flavor, tree: &Path) {
    if let Some(why) = flavor.tree_problem(tree) {
        panic!("{why}");
    }
    let mut cmd = Flavor::command_in(Some(tree), flavor.server_program());
    cmd.arg("--version");
    let out = run_with_timeout(cmd, None, Duration::from_secs(60));
    let said = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() || !said.contains(flavor.version_prefix()) {
        let err = String::from_utf8_lossy(&out.stderr);
        let first = err
            .lines()
            .chain(said.lines())
            .next()
            .unwrap_or("no output");
        panic!(
            "the {} in {} does not run ({}: {first}): run {} again (it makes the tree anew)",
            flavor.name(),
            tree.display(),
            out.status,
            flavor.setup_script()
        );
    }
}

/// One install into a fresh folder, its temporary files kept inside it.
fn install(flavor: Flavor, tree: Option<&Path>) -> Result<Template, String> {
    let dir = tempdir_in(&tmp_of(tree), "template");
    let inside_dir = tree.map_or_else(|| dir.path().to_path_buf(), |t| inside(t, dir.path()));
    let cmd = match tree {
        None => Layout::new(dir.path())
            .install_db(&[LOG_FILE_SIZE])
            .map_err(|e| format!("prepare {}: {e}", dir.path().display()))?,
        Some(tree) => {
            let layout = Layout::new(&inside_dir);
            fs::create_dir_all(dir.path().join("tmp"))
                .map_err(|e| format!("prepare {}: {e}", dir.path().display()))?;
            let (program, args) = flavor.initialize_args(&layout);
            let mut cmd = Flavor::command_in(Some(tree), &program);
            cmd.args(args);
            cmd
        }
    };
    let out = run_with_timeout(cmd, None, Duration::from_secs(300));
    if out.status.success() {
        Ok(Template {
            dir,
            inside: inside_dir,
        })
    } else {
        let log = fs::read_to_string(dir.path().join("init.log")).unwrap_or_default();
        Err(format!(
            "installing the {} datadir failed ({}):\n{}\n{}\n{log}",
            flavor.name(),
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

/// The flavor's template, made on first use (`tree`: its chroot tree).
pub fn template(flavor: Flavor, tree: Option<&Path>) -> &'static Template {
    let i = Flavor::ALL
        .iter()
        .position(|f| *f == flavor)
        .expect("a flavor");
    TEMPLATES[i].get_or_init(|| {
        sweep_stale_tempdirs(&tmp_of(tree));
        if let Some(tree) = tree {
            check_tree(flavor, tree);
        }
        // Bootstrap has failed once in hundreds of runs on a loaded machine ("Unknown table
        // mysql.tmp_user_sys" after a vanished temporary table): a second, fresh attempt is
        // cheap and the failure of both is still reported in full.
        let made = install(flavor, tree)
            .or_else(|first| {
                eprintln!("retrying the datadir install after: {first}");
                install(flavor, tree)
            })
            .unwrap_or_else(|e| panic!("{e}"));
        let mut list = MADE.lock().expect("template list");
        if list.is_empty() {
            // SAFETY: registering a plain extern "C" fn with no captured state.
            unsafe { libc::atexit(remove_templates) };
        }
        list.push(made.dir.path().to_path_buf());
        made
    })
}

/// The host MariaDB's template datadir, created on first use.
pub fn template_datadir() -> PathBuf {
    Layout::new(template(Flavor::MariaDb1011, None).dir.path()).datadir()
}

/// Recursive copy with std::fs only (no `cp` dependency, works for any path).
pub fn copy_dir(src: &Path, dst: &Path) {
    fs::create_dir_all(dst).unwrap_or_else(|e| panic!("mkdir {}: {e}", dst.display()));
    for entry in fs::read_dir(src).unwrap_or_else(|e| panic!("read {}: {e}", src.display())) {
        let entry = entry.expect("read template dir entry");
        let to = dst.join(entry.file_name());
        if entry.file_type().expect("stat template entry").is_dir() {
            copy_dir(&entry.path(), &to);
        } else {
            fs::copy(entry.path(), &to).unwrap_or_else(|e| panic!("copy to {}: {e}", to.display()));
        }
    }
}
