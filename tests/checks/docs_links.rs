//! The README and docs/ against the repository and the binary: every relative link names a file
//! (and a heading, when it has an anchor) that exists, and every `psprobe SUBCOMMAND --flag`
//! written in a shell block of the README is an option that subcommand's `--help` lists, so
//! the front door's commands cannot drift from the code.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn markdown_files() -> Vec<PathBuf> {
    let mut files = vec![root().join("README.md")];
    for dir in ["docs", "grafana", "docker"] {
        let Ok(entries) = std::fs::read_dir(root().join(dir)) else {
            continue;
        };
        for e in entries.flatten() {
            if e.path().extension().is_some_and(|x| x == "md") {
                files.push(e.path());
            }
        }
    }
    files.sort();
    files
}

/// `[text](target)` targets outside code blocks and code spans.
fn links(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_code = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
            continue;
        }
        if in_code {
            continue;
        }
        let prose: String = line.split('`').step_by(2).collect::<Vec<_>>().join("");
        let mut rest = prose.as_str();
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let Some(end) = after.find(')') else { break };
            out.push(after[..end].to_string());
            rest = &after[end..];
        }
    }
    out
}

/// GitHub's anchor of a heading: lower case, punctuation dropped, spaces as dashes.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

fn anchors(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter_map(|l| l.strip_prefix('#'))
        .map(|l| anchor(l.trim_start_matches('#')))
        .collect()
}

#[test]
fn every_relative_link_in_the_docs_resolves() {
    let mut problems = Vec::new();
    let mut checked = 0;
    for file in markdown_files() {
        let text = std::fs::read_to_string(&file).unwrap();
        let dir = file.parent().unwrap();
        for link in links(&text) {
            if link.contains("://") || link.starts_with("mailto:") {
                continue;
            }
            let (path, frag) = match link.split_once('#') {
                Some((p, f)) => (p, Some(f)),
                None => (link.as_str(), None),
            };
            let target = if path.is_empty() {
                file.clone()
            } else {
                dir.join(path)
            };
            checked += 1;
            if !target.exists() {
                problems.push(format!("{}: {link} does not exist", file.display()));
                continue;
            }
            if let Some(frag) = frag.filter(|_| target.extension().is_some_and(|x| x == "md")) {
                let headings = anchors(&std::fs::read_to_string(&target).unwrap());
                if !headings.contains(frag) {
                    problems.push(format!("{}: no heading #{frag} in {path}", file.display()));
                }
            }
        }
    }
    assert!(
        checked > 30,
        "only {checked} links seen: the scan is broken"
    );
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// `psprobe SUB` commands of the README's shell blocks, continuation lines joined.
fn readme_commands(text: &str) -> Vec<String> {
    let mut commands = Vec::new();
    let mut in_sh = false;
    let mut pending = String::new();
    for line in text.lines() {
        if line.starts_with("```") {
            in_sh = !in_sh && line.trim() == "```sh";
            continue;
        }
        if !in_sh {
            continue;
        }
        let code = line.split(" # ").next().unwrap_or(line);
        pending.push_str(code.trim_end_matches('\\'));
        pending.push(' ');
        if code.ends_with('\\') {
            continue;
        }
        // A psprobe command: its first word after any VAR=value (so `mariadb ... psprobe -e`,
        // a database named psprobe, is not one).
        let mut words = pending.split_whitespace().skip_while(|w| w.contains('='));
        if words.next() == Some("psprobe") {
            let rest: Vec<&str> = words.collect();
            commands.push(format!("psprobe {}", rest.join(" ")));
        }
        pending.clear();
    }
    commands
}

fn help(sub: &str) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_psprobe"))
        .args([sub, "--help"])
        .output()
        .unwrap();
    assert!(out.status.success(), "psprobe {sub} --help failed");
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn the_readme_commands_use_options_the_binary_has() {
    let text = std::fs::read_to_string(root().join("README.md")).unwrap();
    let commands = readme_commands(&text);
    let mut problems = Vec::new();
    let mut flags_seen = 0;
    for command in &commands {
        let mut words = command.split_whitespace().skip(1);
        let Some(sub) = words.next() else { continue };
        let help = help(sub);
        for word in words.filter(|w| w.starts_with("--")) {
            let flag = word.split('=').next().unwrap_or(word);
            flags_seen += 1;
            if !help.contains(&format!("{flag} ")) && !help.contains(&format!("{flag}\n")) {
                problems.push(format!("`psprobe {sub}` has no {flag} ({command})"));
            }
        }
    }
    assert!(
        commands.len() >= 5 && flags_seen >= 10,
        "{commands:?}: the scan is broken"
    );
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_link_scanner_sees_links_and_skips_code() {
    let sh = "```sh\nX=1 psprobe proxy --a \\\n  --b\nmariadb -uadmin psprobe -e 1\n```";
    assert_eq!(readme_commands(sh), vec!["psprobe proxy --a --b"]);
    let text = "see [a](a.md) and `[b](b.md)`\n```\n[c](c.md)\n```\n[d](d.md#x-y)";
    assert_eq!(links(text), vec!["a.md", "d.md#x-y"]);
    assert_eq!(
        anchor(" Settings are never lost"),
        "settings-are-never-lost"
    );
    assert!(!Path::new("does-not-exist.md").exists());
}

/// The demo's length and what it runs, where a new user reads them: `psprobe demo --help`,
/// the README and scripts/demo.sh state the same figures (src/demo/mod.rs checks the figures
/// against the demo's schedules).
#[test]
fn the_demo_is_described_alike_everywhere() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let script = std::fs::read_to_string(root().join("scripts/demo.sh")).unwrap();
    let help = help("demo");
    let flat = |t: &str| t.split_whitespace().collect::<Vec<_>>().join(" ");
    let (readme, script, help) = (flat(&readme), flat(&script), flat(&help));
    for (what, text) in [
        ("README.md", &readme),
        ("scripts/demo.sh", &script),
        ("demo --help", &help),
    ] {
        assert!(
            text.contains("About 5 minutes"),
            "{what}: the quick demo's length"
        );
        assert!(
            text.contains("up to 35 minutes"),
            "{what}: the full demo's length"
        );
    }
    for (what, text) in [("README.md", &readme), ("demo --help", &help)] {
        assert!(
            text.contains("five runtime scenarios"),
            "{what}: what the demo runs"
        );
    }
    let top = Command::new(env!("CARGO_BIN_EXE_psprobe"))
        .arg("--help")
        .output()
        .unwrap();
    let top = flat(&String::from_utf8_lossy(&top.stdout));
    assert!(
        top.contains("the five runtime scenarios, pfsoff (not with --quick)"),
        "{top}"
    );
}

/// The first command does its job only: scripts/demo.sh sets up with scripts/setup-demo.sh
/// (MariaDB, sysbench, a C compiler, the binary), never with the tests' scripts/setup.sh and
/// its trees, drivers and image; and the tests' list holds every package the demo's does, so
/// one apt run on a test machine installs both.
#[test]
fn the_demo_sets_up_only_what_it_needs() {
    let read = |p: &str| std::fs::read_to_string(root().join(p)).unwrap();
    let demo = read("scripts/demo.sh");
    let runs: Vec<&str> = demo
        .lines()
        .map(str::trim)
        .filter(|l| !l.starts_with('#') && l.starts_with("scripts/"))
        .collect();
    assert_eq!(
        runs,
        ["scripts/setup-demo.sh"],
        "scripts/demo.sh runs {runs:?}"
    );
    let packages = |text: &str| -> Vec<String> {
        let start = text.find("packages=(").expect("a packages=( list") + "packages=(".len();
        let end = start + text[start..].find(')').expect("the list's end");
        text[start..end]
            .split_whitespace()
            .map(str::to_string)
            .collect()
    };
    let demo_packages = packages(&read("scripts/setup-demo.sh"));
    let test_packages = packages(&read("scripts/setup.sh"));
    assert!(
        demo_packages.contains(&"sysbench".to_string()),
        "{demo_packages:?}"
    );
    for p in &demo_packages {
        assert!(
            test_packages.contains(p),
            "scripts/setup.sh lacks {p}, which the demo's setup installs"
        );
    }
    for heavy in [
        "percona-toolkit",
        "prometheus",
        "chromium",
        "podman",
        "debootstrap",
    ] {
        assert!(
            !demo_packages.iter().any(|p| p == heavy),
            "the demo's setup installs {heavy}, which only the tests use"
        );
    }
}
