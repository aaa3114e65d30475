//! A published table for `psprobe experiment --compare FILE.csv`: per workload, concurrency and
//! scenario, statements/s (`qps`) or the change in percent against the table's own baseline
//! (`change_percent`, empty or 0 for the baseline itself: the seed study's is pfsoff). Either
//! way each value becomes a level relative to the others of its workload and concurrency, so
//! it can be re-based onto whatever baseline psprobe measured each scenario against.
//!
//! Must not: accept a file it cannot read in full (every mistake is one line naming the file
//! and the line, before the study starts), or mix statements/s and percents in one level.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use thiserror::Error;

const NEEDS: &str = "a published table needs the columns workload, threads (or concurrency), scenario, and qps or change_percent";

#[derive(Debug, Error, PartialEq, Eq)]
pub(crate) enum PublishedError {
    #[error("cannot read --compare {path}: {why}")]
    Read { path: String, why: String },
    #[error("--compare {path} has no {column} column: {NEEDS}")]
    MissingColumn { path: String, column: &'static str },
    #[error("--compare {path} has neither a qps nor a change_percent column: {NEEDS}")]
    NoValue { path: String },
    #[error("--compare {path} line {line}: {found} fields where the header has {header}")]
    Fields {
        path: String,
        line: usize,
        found: usize,
        header: usize,
    },
    #[error("--compare {path} line {line}: unknown workload {name:?}; use {known}")]
    Workload {
        path: String,
        line: usize,
        name: String,
        known: String,
    },
    #[error(
        "--compare {path} line {line}: unknown scenario {name:?} (not built in, nor in --config)"
    )]
    Scenario {
        path: String,
        line: usize,
        name: String,
    },
    #[error("--compare {path} line {line}: {text:?} is not a number of client threads")]
    Threads {
        path: String,
        line: usize,
        text: String,
    },
    #[error("--compare {path} line {line}: {column} {text:?} is not {what}")]
    Value {
        path: String,
        line: usize,
        column: &'static str,
        text: String,
        what: &'static str,
    },
    #[error("--compare {path} line {line}: {key} is listed before, at {first}")]
    Twice {
        path: String,
        line: usize,
        key: String,
        first: String,
    },
    #[error("--compare {path} line {line}: {key} mixes statements/s and percents with {first}: one kind per workload and concurrency")]
    Mixed {
        path: String,
        line: usize,
        key: String,
        first: String,
    },
    #[error("--compare {path} has a header but no rows")]
    NoRows { path: String },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Qps,
    Percent,
}

/// The published values of one workload at one concurrency: each scenario's level, where it
/// was read, and which kind they are.
#[derive(Debug, Default)]
struct Level {
    scenarios: BTreeMap<String, (f64, String)>,
    kind: Option<(Kind, String)>,
}

/// Every `--compare` file's values, by workload and concurrency.
#[derive(Debug, Default)]
pub(crate) struct Published {
    pub files: Vec<PathBuf>,
    levels: BTreeMap<(String, u32), Level>,
}

fn column(header: &[String], names: &[&str]) -> Option<usize> {
    header.iter().position(|h| names.contains(&h.as_str()))
}

fn fields(line: &str) -> Vec<String> {
    line.split(',')
        .map(|f| f.trim().trim_matches('"').trim().to_string())
        .collect()
}

impl Published {
    /// Reads every file; `workloads`: those psprobe runs; `known`: whether a scenario name is
    /// one psprobe knows.
    pub(crate) fn load(
        paths: &[PathBuf],
        workloads: &[&str],
        mut known: impl FnMut(&str) -> bool,
    ) -> Result<Self, PublishedError> {
        let mut out = Published::default();
        for path in paths {
            let text = std::fs::read_to_string(path).map_err(|e| PublishedError::Read {
                path: path.display().to_string(),
                why: e.to_string(),
            })?;
            out.add(path, &text, workloads, &mut known)?;
            out.files.push(path.clone());
        }
        Ok(out)
    }

    fn add(
        &mut self,
        path: &Path,
        text: &str,
        workloads: &[&str],
        known: &mut impl FnMut(&str) -> bool,
    ) -> Result<(), PublishedError> {
        let name = path.display().to_string();
        let mut lines = text
            .lines()
            .enumerate()
            .map(|(i, l)| (i + 1, l.trim()))
            .filter(|(_, l)| !l.is_empty() && !l.starts_with('#'));
        let header: Vec<String> = lines
            .next()
            .map(|(_, l)| fields(l).iter().map(|f| f.to_lowercase()).collect())
            .unwrap_or_default();
        let need = |names: &[&str], column_name: &'static str| {
            column(&header, names).ok_or(PublishedError::MissingColumn {
                path: name.clone(),
                column: column_name,
            })
        };
        let workload_at = need(&["workload"], "workload")?;
        let threads_at = need(&["threads", "concurrency"], "threads")?;
        let scenario_at = need(&["scenario"], "scenario")?;
        let (value_at, kind) = match (
            column(&header, &["qps"]),
            column(&header, &["change_percent"]),
        ) {
            (Some(q), _) => (q, Kind::Qps),
            (None, Some(c)) => (c, Kind::Percent),
            (None, None) => return Err(PublishedError::NoValue { path: name }),
        };
        let mut rows = 0;
        for (line, text) in lines {
            let f = fields(text);
            if f.len() != header.len() {
                return Err(PublishedError::Fields {
                    path: name,
                    line,
                    found: f.len(),
                    header: header.len(),
                });
            }
            let workload = &f[workload_at];
            if !workloads.contains(&workload.as_str()) {
                return Err(PublishedError::Workload {
                    path: name,
                    line,
                    name: workload.clone(),
                    known: workloads.join(", "),
                });
            }
            let scenario = &f[scenario_at];
            if !known(scenario) {
                return Err(PublishedError::Scenario {
                    path: name,
                    line,
                    name: scenario.clone(),
                });
            }
            let threads: u32 = f[threads_at]
                .parse()
                .ok()
                .filter(|t| *t > 0)
                .ok_or_else(|| PublishedError::Threads {
                    path: name.clone(),
                    line,
                    text: f[threads_at].clone(),
                })?;
            let level = read_level(&f[value_at], kind).ok_or_else(|| PublishedError::Value {
                path: name.clone(),
                line,
                column: if kind == Kind::Qps {
                    "qps"
                } else {
                    "change_percent"
                },
                text: f[value_at].clone(),
                what: if kind == Kind::Qps {
                    "a rate above 0"
                } else {
                    "a percent above -100 (empty for the baseline)"
                },
            })?;
            let here = format!("{name} line {line}");
            let key = format!("{workload}, {threads} threads, {scenario}");
            let entry = self.levels.entry((workload.clone(), threads)).or_default();
            match &entry.kind {
                Some((k, first)) if *k != kind => {
                    return Err(PublishedError::Mixed {
                        path: name,
                        line,
                        key,
                        first: first.clone(),
                    })
                }
                Some(_) => {}
                None => entry.kind = Some((kind, here.clone())),
            }
            if let Some((_, first)) = entry.scenarios.get(scenario) {
                return Err(PublishedError::Twice {
                    path: name,
                    line,
                    key,
                    first: first.clone(),
                });
            }
            entry.scenarios.insert(scenario.clone(), (level, here));
            rows += 1;
        }
        if rows == 0 {
            return Err(PublishedError::NoRows { path: name });
        }
        Ok(())
    }

    /// The published change of `scenario` against `baseline` (percent), where both have a value.
    pub(crate) fn change(
        &self,
        workload: &str,
        threads: u32,
        scenario: &str,
        baseline: &str,
    ) -> Option<f64> {
        let level = self.levels.get(&(workload.to_string(), threads))?;
        let of = |s: &str| level.scenarios.get(s).map(|v| v.0);
        Some((of(scenario)? / of(baseline)? - 1.0) * 100.0)
    }

    /// Each scenario's level (comparable within one workload and concurrency only).
    pub(crate) fn levels(&self, workload: &str, threads: u32) -> BTreeMap<String, f64> {
        self.levels
            .get(&(workload.to_string(), threads))
            .map(|l| l.scenarios.iter().map(|(s, v)| (s.clone(), v.0)).collect())
            .unwrap_or_default()
    }

    /// The concurrencies published for `workload`.
    pub(crate) fn threads(&self, workload: &str) -> Vec<u32> {
        self.levels
            .keys()
            .filter(|(w, _)| w == workload)
            .map(|(_, t)| *t)
            .collect()
    }
}

/// A rate as it is; a percent change as the ratio to the baseline.
fn read_level(text: &str, kind: Kind) -> Option<f64> {
    match kind {
        Kind::Qps => text
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && *v > 0.0),
        Kind::Percent if text.is_empty() => Some(1.0),
        Kind::Percent => text
            .trim_end_matches('%')
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && *v > -100.0)
            .map(|v| 1.0 + v / 100.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const WORKLOADS: [&str; 3] = ["oltp_read_only", "oltp_read_write", "oltp_write_only"];

    fn parse(text: &str) -> Result<Published, PublishedError> {
        let mut p = Published::default();
        p.add(Path::new("t.csv"), text, &WORKLOADS, &mut |s: &str| {
            s.starts_with("pfs")
        })?;
        Ok(p)
    }

    #[test]
    fn rates_and_percents_rebase_onto_any_baseline() {
        let p = parse(
            "# the seed study, table 1\nworkload,concurrency,scenario,qps\noltp_read_only,1,pfsoff,3456\noltp_read_only,1,pfson_conoff_insoff,3209\noltp_read_only, 1 ,pfson_conon_inson,3116\n",
        )
        .unwrap();
        let c = p
            .change("oltp_read_only", 1, "pfson_conon_inson", "pfsoff")
            .unwrap();
        assert!((c - (3116.0 / 3456.0 - 1.0) * 100.0).abs() < 1e-9);
        let c = p
            .change(
                "oltp_read_only",
                1,
                "pfson_conon_inson",
                "pfson_conoff_insoff",
            )
            .unwrap();
        assert!((c - (3116.0 / 3209.0 - 1.0) * 100.0).abs() < 1e-9);
        assert!(p.change("oltp_read_only", 2, "pfsoff", "pfsoff").is_none());
        assert_eq!(p.threads("oltp_read_only"), [1]);

        let p = parse("workload,threads,scenario,change_percent\noltp_write_only,8,pfsoff,\noltp_write_only,8,pfson_conon_inson,-16.44%\noltp_write_only,8,pfson_conoff_insoff,-13.34\n").unwrap();
        let c = p
            .change(
                "oltp_write_only",
                8,
                "pfson_conon_inson",
                "pfson_conoff_insoff",
            )
            .unwrap();
        assert!((c - ((1.0 - 0.1644) / (1.0 - 0.1334) - 1.0) * 100.0).abs() < 1e-9);
    }

    #[test]
    fn every_mistake_names_the_file_and_line() {
        let cases = [
            ("", "has no workload column"),
            ("workload,threads,qps\n", "has no scenario column"),
            ("workload,scenario,qps\n", "has no threads column"),
            ("workload,threads,scenario\n", "neither a qps nor a change_percent"),
            ("workload,threads,scenario,qps\n", "has a header but no rows"),
            ("workload,threads,scenario,qps\noltp_read_only,1,pfsoff\n", "line 2: 3 fields where the header has 4"),
            ("workload,threads,scenario,qps\noltp_point,1,pfsoff,5\n", "line 2: unknown workload \"oltp_point\""),
            ("workload,threads,scenario,qps\noltp_read_only,1,everything,5\n", "line 2: unknown scenario \"everything\""),
            ("workload,threads,scenario,qps\noltp_read_only,0,pfsoff,5\n", "line 2: \"0\" is not a number of client threads"),
            ("workload,threads,scenario,qps\noltp_read_only,1,pfsoff,fast\n", "qps \"fast\" is not a rate above 0"),
            ("workload,threads,scenario,change_percent\noltp_read_only,1,pfsoff,-120\n", "is not a percent above -100"),
            ("workload,threads,scenario,qps\n\noltp_read_only,1,pfsoff,5\noltp_read_only,1,pfsoff,6\n", "line 4: oltp_read_only, 1 threads, pfsoff is listed before, at t.csv line 3"),
        ];
        for (text, says) in cases {
            let err = parse(text).expect_err(text).to_string();
            assert!(
                err.contains(says) && err.contains("t.csv"),
                "{text:?}: {err}"
            );
            assert_eq!(err.lines().count(), 1, "{err}");
        }
        let mut p = parse("workload,threads,scenario,qps\noltp_read_only,1,pfsoff,5\n").unwrap();
        let err = p
            .add(
                Path::new("u.csv"),
                "workload,threads,scenario,change_percent\noltp_read_only,1,pfson_conon_inson,-5\n",
                &WORKLOADS,
                &mut |_: &str| true,
            )
            .expect_err("mixed");
        assert!(
            err.to_string()
                .contains("u.csv line 2: oltp_read_only, 1 threads, pfson_conon_inson mixes statements/s and percents with t.csv line 2"),
            "{err}"
        );
        let missing = Published::load(&[PathBuf::from("/nonexistent/x.csv")], &WORKLOADS, |_| true)
            .expect_err("missing file");
        assert!(missing
            .to_string()
            .starts_with("cannot read --compare /nonexistent/x.csv"));
    }

    /// The seed study's tables kept in docs/ read as a published table: eleven levels of six
    /// scenarios each, the read-only one's 1,024-thread cost as the study prints it.
    #[test]
    fn the_seed_study_s_tables_in_docs_parse() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/seed-study");
        let files: Vec<PathBuf> = [
            "rds-read-only.csv",
            "rds-read-write.csv",
            "rds-write-only.csv",
        ]
        .iter()
        .map(|f| dir.join(f))
        .collect();
        let known = crate::controller::model::catalog::Catalog::seed_names();
        let p = Published::load(&files, &WORKLOADS, |s| known.iter().any(|k| k == s))
            .expect("the seed tables parse");
        for w in WORKLOADS {
            assert_eq!(
                p.threads(w),
                [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024],
                "{w}"
            );
            assert!(p.levels(w, 64).len() == 6, "{w}");
        }
        let c = p
            .change("oltp_read_only", 1024, "pfson_conon_inson", "pfsoff")
            .unwrap();
        // The study printed its percents from unrounded rates: within 0.02 points.
        assert!((c + 29.11).abs() < 0.02, "{c}");
        let c = p
            .change("oltp_write_only", 1, "pfson_conon_inson", "pfsoff")
            .unwrap();
        assert!((c + 10.86).abs() < 0.02, "{c}");
    }
}
