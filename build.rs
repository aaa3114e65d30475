//! Build script: the git commit psprobe is built from, for `psprobe --version`
//! (`PSPROBE_GIT_COMMIT` in the environment wins: an image build copies no `.git`; without
//! either the commit is "unknown").
//!
//! It reruns only when that commit can change (HEAD, its reflog, the branch it points at,
//! packed-refs) or the variable does, never on every build: once a build script names what it
//! depends on, cargo watches only that.

use std::path::Path;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=PSPROBE_GIT_COMMIT");
    let commit = std::env::var("PSPROBE_GIT_COMMIT")
        .ok()
        .filter(|c| !c.trim().is_empty())
        .or_else(git_commit)
        .unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=PSPROBE_GIT_COMMIT={}", commit.trim());
}

fn git(args: &[&str]) -> Option<String> {
    let dir = std::env::var("CARGO_MANIFEST_DIR").ok()?;
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    (out.status.success() && !text.trim().is_empty()).then(|| text.trim().to_string())
}

fn git_commit() -> Option<String> {
    let commit = git(&["rev-parse", "--short=12", "HEAD"])?;
    // A worktree keeps HEAD in its own git dir and the branches in the common one:
    // `--git-path` knows where each is. HEAD's reflog moves with every commit, checkout and
    // reset, also when the branch's ref is packed (and its loose file then missing); a
    // detached HEAD has no branch to watch.
    let mut watched = vec![
        "HEAD".to_string(),
        "logs/HEAD".to_string(),
        "packed-refs".to_string(),
    ];
    watched.extend(git(&["symbolic-ref", "-q", "HEAD"]));
    for name in watched {
        if let Some(path) = git(&["rev-parse", "--git-path", &name]) {
            // A missing file would make cargo rerun the script on every build.
            if absolute(&path).exists() {
                println!("cargo:rerun-if-changed={}", absolute(&path).display());
            }
        }
    }
    Some(commit)
}

/// `--git-path` answers relative to the repository's top when the git dir is `.git` there.
fn absolute(path: &str) -> std::path::PathBuf {
    let path = Path::new(path);
    match std::env::var("CARGO_MANIFEST_DIR") {
        Ok(dir) if path.is_relative() => Path::new(&dir).join(path),
        _ => path.to_path_buf(),
    }
}
