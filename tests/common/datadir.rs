//! Fresh MariaDB datadirs: `mariadb-install-db` runs once per test process
//! into a template (it takes seconds), and each server gets a plain copy.

use super::cli::run_with_timeout;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;
use tempfile::TempDir;

/// Used by install-db and mariadbd alike, so the first start need not resize
/// the redo log (install-db's default is 96M: twice the bytes to copy).
pub const LOG_FILE_SIZE: &str = "--innodb-log-file-size=48M";

pub use psprobe_harness::mariadb::is_root;
use psprobe_harness::server::Layout;

/// Every tempdir we make is named `psprobe-mariadb-<pid>-<kind>-XXXX`, so
/// dirs left behind by a SIGKILLed test process (no Drop, no atexit) can be
/// recognised and swept by the next run.
const PREFIX: &str = "psprobe-mariadb-";

pub fn tempdir(kind: &str) -> TempDir {
    tempfile::Builder::new()
        .prefix(&format!("{PREFIX}{}-{kind}-", std::process::id()))
        .tempdir()
        .unwrap_or_else(|e| panic!("create {kind} tempdir: {e}"))
}

fn sweep_stale_tempdirs() {
    let Ok(entries) = fs::read_dir(std::env::temp_dir()) else {
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

static TEMPLATE: OnceLock<TempDir> = OnceLock::new();

extern "C" fn remove_template() {
    // Statics are never dropped, so the template's TempDir is cleaned at exit.
    if let Some(dir) = TEMPLATE.get() {
        let _ = fs::remove_dir_all(dir.path());
    }
}

/// One `mariadb-install-db` into a fresh tempdir, its temporary files kept inside it.
fn install_template() -> Result<TempDir, String> {
    let dir = tempdir("template");
    let cmd = Layout::new(dir.path())
        .install_db(&[LOG_FILE_SIZE])
        .map_err(|e| format!("prepare {}: {e}", dir.path().display()))?;
    let out = run_with_timeout(cmd, None, Duration::from_secs(300));
    if out.status.success() {
        Ok(dir)
    } else {
        Err(format!(
            "mariadb-install-db failed ({}):\n{}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

/// The template datadir, created on first use.
pub fn template_datadir() -> PathBuf {
    let dir = TEMPLATE.get_or_init(|| {
        sweep_stale_tempdirs();
        // Bootstrap has failed once in hundreds of runs on a loaded machine ("Unknown table
        // mysql.tmp_user_sys" after a vanished temporary table): a second, fresh attempt is
        // cheap and the failure of both is still reported in full.
        let dir = install_template()
            .or_else(|first| {
                eprintln!("retrying mariadb-install-db after: {first}");
                install_template()
            })
            .unwrap_or_else(|e| panic!("{e}"));
        // SAFETY: registering a plain extern "C" fn with no captured state.
        unsafe { libc::atexit(remove_template) };
        dir
    });
    Layout::new(dir.path()).datadir()
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
