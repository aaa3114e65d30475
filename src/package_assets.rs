//! `psprobe package-assets --out DIR` (hidden): the man pages and shell completions, made from
//! the command line's own definitions so they cannot drift from it. scripts/package.sh runs it
//! and puts the files where Debian looks for them.
//!
//! Must not: know the command line itself; `main` hands the clap command in (library modules
//! do not reach up to the cli root, tests/checks/module_graph.rs checks).

use std::path::{Path, PathBuf};

use clap::Args;
use clap_complete::Shell;

/// The shells whose completions are written (Debian's bash, zsh and fish read them).
const SHELLS: [Shell; 3] = [Shell::Bash, Shell::Zsh, Shell::Fish];

#[derive(Debug, Args)]
pub(crate) struct PackageAssetsArgs {
    /// Directory to write into: man/ (one page per command, `psprobe.1`, `psprobe-proxy.1`,
    /// ...) and completions/ (`psprobe.bash`, `_psprobe`, `psprobe.fish`). Created if missing.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
}

#[derive(Debug, thiserror::Error)]
#[error("cannot write {what} under {}: {source} (check that the directory is writable)", dir.display())]
pub(crate) struct AssetsError {
    what: &'static str,
    dir: PathBuf,
    source: std::io::Error,
}

/// Writes every page and completion file; returns their paths.
pub(crate) fn run(
    cmd: clap::Command,
    args: &PackageAssetsArgs,
) -> Result<Vec<PathBuf>, AssetsError> {
    let mut written = write_man_pages(cmd.clone(), &args.out.join("man"))?;
    written.extend(write_completions(cmd, &args.out.join("completions"))?);
    for path in &written {
        println!("{}", path.display());
    }
    Ok(written)
}

/// `psprobe.1` and one page per visible subcommand, nested ones too (`psprobe-ps-apply.1`), each
/// saying in its footer which psprobe it documents (clap_mangen's own walk leaves a
/// subcommand's blank: only the root has a version).
pub(crate) fn write_man_pages(cmd: clap::Command, dir: &Path) -> Result<Vec<PathBuf>, AssetsError> {
    fn walk(
        cmd: &clap::Command,
        source: &str,
        dir: &Path,
        out: &mut Vec<PathBuf>,
    ) -> std::io::Result<()> {
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
            walk(sub, source, dir, out)?;
        }
        out.push(
            clap_mangen::Man::new(cmd.clone())
                .source(source)
                .generate_to(dir)?,
        );
        Ok(())
    }
    let fail = |source| AssetsError {
        what: "man pages",
        dir: dir.to_path_buf(),
        source,
    };
    std::fs::create_dir_all(dir).map_err(fail)?;
    // Built, a subcommand knows its full name (`psprobe proxy`, file psprobe-proxy.1).
    let mut cmd = cmd.disable_help_subcommand(true);
    cmd.build();
    let source = format!(
        "{} {}",
        cmd.get_name(),
        cmd.get_version().unwrap_or_default()
    );
    let mut pages = Vec::new();
    walk(&cmd, source.trim_end(), dir, &mut pages).map_err(fail)?;
    pages.sort();
    Ok(pages)
}

/// One completion script per shell in [`SHELLS`], named as each shell's loader expects.
/// clap_complete offers hidden commands too: `cmd` should have none (`cli::parse` adds its
/// hidden one only for parsing).
pub(crate) fn write_completions(
    mut cmd: clap::Command,
    dir: &Path,
) -> Result<Vec<PathBuf>, AssetsError> {
    let fail = |source| AssetsError {
        what: "shell completions",
        dir: dir.to_path_buf(),
        source,
    };
    std::fs::create_dir_all(dir).map_err(fail)?;
    let name = cmd.get_name().to_string();
    SHELLS
        .iter()
        .map(|shell| clap_complete::generate_to(*shell, &mut cmd, &name, dir).map_err(fail))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{Arg, Command};

    fn demo() -> Command {
        Command::new("tool")
            .version("1.2.3 (commit abc)")
            .subcommand(Command::new("run").arg(Arg::new("fast").long("fast")))
            .subcommand(Command::new("group").subcommand(Command::new("inner")))
            .subcommand(Command::new("secret").hide(true))
    }

    #[test]
    fn a_page_per_visible_command_and_a_completion_per_shell() {
        let dir = tempfile::tempdir().expect("tempdir");
        let args = PackageAssetsArgs {
            out: dir.path().join("out"),
        };
        let written = run(demo(), &args).expect("written");
        let names: Vec<String> = written
            .iter()
            .map(|p| p.file_name().expect("name").to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            names,
            [
                "tool-group-inner.1",
                "tool-group.1",
                "tool-run.1",
                "tool.1",
                "tool.bash",
                "_tool",
                "tool.fish"
            ]
        );
        let page = std::fs::read_to_string(&written[2]).expect("page");
        assert!(page.starts_with(".ie"), "roff: {page}");
        assert!(page.contains("\\-\\-fast"), "{page}");
        assert!(page.contains("\"tool 1.2.3 (commit abc)\""), "{page}");
        for page in &written[..4] {
            let text = std::fs::read_to_string(page).expect("read");
            assert!(
                !text.contains("secret"),
                "hidden command in {}",
                page.display()
            );
        }
        for script in &written[4..] {
            let text = std::fs::read_to_string(script).expect("read");
            assert!(text.contains("inner") && text.contains("fast"), "{text}");
        }
    }

    #[test]
    fn an_unwritable_directory_is_one_line_naming_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("file");
        std::fs::write(&file, "").expect("write");
        let args = PackageAssetsArgs { out: file.clone() };
        let err = run(demo(), &args).expect_err("a file is no directory");
        let text = err.to_string();
        assert!(text.contains("man pages") && text.contains(&file.display().to_string()));
        assert!(!text.contains('\n'), "{text}");
    }
}
