//! A study's state on disk, so that one killed (SIGKILL, a crash, a reboot) goes on where it
//! stopped: `STEM.study.json` holds the options it was started with, the throwaway server it
//! runs on and the direct checks so far; `STEM.cells.json` (cells.rs) the finished runs.
//! `--resume` keeps every finished run, stops the server a killed study left behind, and goes
//! on at the first unfinished run; a study is never overwritten without it.
//!
//! Must not: resume a study under other options (its cells would not be one table), or stop
//! any process but the throwaway server the study itself started.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use serde::{Deserialize, Serialize};

use super::cells::CellRow;

/// What makes two runs of a study cells of one table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct StudyPlan {
    pub workloads: Vec<String>,
    pub threads: Vec<u32>,
    pub scenarios: Vec<String>,
    pub duration_ms: u64,
    pub phase_ms: Option<u64>,
    pub settle_ms: Option<u64>,
    pub slow_phase_ms: u64,
    pub slow_blocks: u64,
    pub seed: Option<u64>,
    pub direct_check: u32,
    /// `--server` (a study made before the option ran MariaDB).
    #[serde(default = "mariadb")]
    pub server: String,
    /// `--duet`: pfsoff's column from duet runs.
    #[serde(default)]
    pub duet: bool,
}

fn mariadb() -> String {
    "mariadb".into()
}

/// A direct check's line for one run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct DirectLine {
    pub workload: String,
    pub threads: u32,
    pub line: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct StudyFile {
    plan: StudyPlan,
    /// The throwaway server's directory while a run may be using it.
    server_dir: Option<PathBuf>,
    /// The copy of it a duet runs on, while it runs.
    #[serde(default)]
    twin_dir: Option<PathBuf>,
    direct: Vec<DirectLine>,
}

/// The study at one output stem.
pub(crate) struct Study {
    path: PathBuf,
    file: StudyFile,
    /// Finished runs' cells (from an earlier part of the study).
    pub done: Vec<CellRow>,
}

impl Study {
    /// Starts the study at `stem`, or with `resume` goes on with the one there.
    pub(crate) fn begin(stem: &Path, plan: StudyPlan, resume: bool) -> anyhow::Result<Self> {
        let path = super::cells::beside(stem, "study.json");
        let exists = path.exists();
        if !resume {
            if exists {
                bail!(
                    "{} holds a study already: add --resume to go on with it, or give another -o",
                    path.display()
                );
            }
            let study = Study {
                path,
                file: StudyFile {
                    plan,
                    server_dir: None,
                    twin_dir: None,
                    direct: Vec::new(),
                },
                done: Vec::new(),
            };
            study.save()?;
            return Ok(study);
        }
        if !exists {
            bail!(
                "--resume: there is no study at {}; start it without --resume",
                path.display()
            );
        }
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        let mut file: StudyFile = serde_json::from_str(&text).with_context(|| {
            format!(
                "{} is not a psprobe study file; give another -o",
                path.display()
            )
        })?;
        if file.plan != plan {
            bail!(
                "--resume: the study at {} was started with other options ({}); give the same options to go on with it",
                path.display(),
                differences(&file.plan, &plan)
            );
        }
        for dir in [file.server_dir.take(), file.twin_dir.take()]
            .into_iter()
            .flatten()
        {
            stop_left_server(&dir);
        }
        let cells = super::cells::beside(stem, "cells.json");
        let done: Vec<CellRow> = match std::fs::read_to_string(&cells) {
            Ok(text) => serde_json::from_str(&text).with_context(|| {
                format!("{} is damaged; start the study again", cells.display())
            })?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(e).with_context(|| format!("cannot read {}", cells.display())),
        };
        // A direct check whose run's cells were not written belongs to a run done again.
        file.direct.retain(|d| {
            done.iter()
                .any(|c| c.workload == d.workload && c.threads == d.threads)
        });
        let study = Study { path, file, done };
        study.save()?;
        Ok(study)
    }

    /// True when `workload` at `threads` finished in an earlier part of the study.
    pub(crate) fn finished(&self, workload: &str, threads: u32) -> bool {
        self.done
            .iter()
            .any(|c| c.workload == workload && c.threads == threads)
    }

    /// Records the throwaway server the study runs on (stopped by a later `--resume` if this
    /// process dies with it running).
    pub(crate) fn server(&mut self, dir: Option<&Path>) -> anyhow::Result<()> {
        self.file.server_dir = dir.map(Path::to_path_buf);
        self.save()
    }

    /// Records the copy of the server a duet runs on (`None` once it is gone).
    pub(crate) fn twin(&mut self, dir: Option<&Path>) -> anyhow::Result<()> {
        self.file.twin_dir = dir.map(Path::to_path_buf);
        self.save()
    }

    pub(crate) fn add_direct(&mut self, line: DirectLine) -> anyhow::Result<()> {
        self.file.direct.push(line);
        self.save()
    }

    pub(crate) fn direct(&self) -> &[DirectLine] {
        &self.file.direct
    }

    fn save(&self) -> anyhow::Result<()> {
        let text = serde_json::to_string_pretty(&self.file).context("cannot encode the study")?;
        super::cells::replace_file(&self.path, &(text + "\n"))
    }
}

/// Stops the throwaway server a killed study left running, and removes its directory: only
/// a directory psprobe made for one (its name and its control script say so).
fn stop_left_server(dir: &Path) {
    let ours = dir.file_name().is_some_and(|n| {
        n.to_string_lossy()
            .starts_with(crate::demo::throwaway::DIR_PREFIX)
    });
    let script = dir.join("server.sh");
    if !ours || !script.exists() {
        return;
    }
    println!(
        "experiment: stopping the server the interrupted study left running ({})",
        dir.display()
    );
    let _ = std::process::Command::new("sh")
        .arg(&script)
        .arg("stop")
        .status();
    let _ = std::fs::remove_dir_all(dir);
}

/// The options that differ, `name was, now is`, from the plans' own fields (so a field added
/// to [`StudyPlan`] is compared without a line here).
fn differences(was: &StudyPlan, now: &StudyPlan) -> String {
    let fields = |plan: &StudyPlan| match serde_json::to_value(plan) {
        Ok(serde_json::Value::Object(map)) => map,
        _ => serde_json::Map::new(),
    };
    let (was, now) = (fields(was), fields(now));
    was.iter()
        .filter_map(|(name, a)| {
            let b = now.get(name).unwrap_or(&serde_json::Value::Null);
            (a != b).then(|| format!("{name} {a}, now {b}"))
        })
        .collect::<Vec<_>>()
        .join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan() -> StudyPlan {
        StudyPlan {
            workloads: vec!["oltp_read_only".into()],
            threads: vec![1, 2],
            scenarios: vec!["a".into(), "b".into()],
            duration_ms: 12_000,
            phase_ms: None,
            settle_ms: None,
            slow_phase_ms: 12_000,
            slow_blocks: 3,
            seed: None,
            direct_check: 0,
            server: "mariadb".into(),
            duet: false,
        }
    }

    #[test]
    fn a_study_is_never_overwritten_and_resumes_only_under_its_options() {
        let dir = tempfile::tempdir().unwrap();
        let stem = dir.path().join("s");
        let err = Study::begin(&stem, plan(), true).err().unwrap().to_string();
        assert!(err.contains("there is no study"), "{err}");
        let mut study = Study::begin(&stem, plan(), false).unwrap();
        study
            .add_direct(DirectLine {
                workload: "oltp_read_only".into(),
                threads: 1,
                line: "x".into(),
            })
            .unwrap();
        let err = Study::begin(&stem, plan(), false)
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("add --resume"), "{err}");
        let other = StudyPlan {
            threads: vec![1, 4],
            ..plan()
        };
        let err = Study::begin(&stem, other, true).err().unwrap().to_string();
        assert!(err.contains("threads [1,2], now [1,4]"), "{err}");
        assert!(!err.contains("workloads"), "only what differs: {err}");
        // No cells yet: nothing finished, and the direct line of a run not written is dropped.
        let study = Study::begin(&stem, plan(), true).unwrap();
        assert!(!study.finished("oltp_read_only", 1));
        assert!(study.direct().is_empty());
    }

    #[test]
    fn only_a_throwaway_directory_is_stopped_and_removed() {
        let dir = tempfile::tempdir().unwrap();
        let other = dir.path().join("not-ours");
        std::fs::create_dir(&other).unwrap();
        std::fs::write(other.join("server.sh"), "exit 0\n").unwrap();
        stop_left_server(&other);
        assert!(
            other.exists(),
            "a directory psprobe did not name is left alone"
        );
    }
}
