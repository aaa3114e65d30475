//! A duet of pfsoff against its reference on a throwaway server already in use and a copy of
//! its data made for it (`psprobe experiment --duet` per run, `psprobe demo --duet`): each
//! side pinned to half the CPUs with half the clients (at least one), so the clients per CPU
//! are the run's; its report written where the caller says.
//!
//! Must not: leave the server pinned, or the copy running, whatever the duet did.

use std::path::Path;
use std::time::Duration;

use super::duet::pins;
use super::duet_run::run_duet;
use super::duet_run::DuetFiles;
use super::server_choice::ServerChoice;
use super::{sysbench, throwaway, Plan, ScheduledRun};
use crate::controller::model::catalog::Catalog;

/// One duet phase: restart settle and measured window (a pair is two, about 11 s with the
/// restarts here).
pub(crate) const PHASE: Duration = Duration::from_secs(5);
/// The least duet time worth running: about 5 pairs, the fewest an interval is given from.
pub(crate) const MIN_DUET: Duration = Duration::from_secs(60);

/// A duet of pfsoff against `reference` on `server` and a copy of it.
pub(crate) struct DuetOnCopy<'a> {
    pub server: &'a throwaway::Throwaway,
    pub choice: &'a ServerChoice,
    pub tables: &'a sysbench::Tables,
    pub catalog: &'a Catalog,
    pub reference: &'a str,
    pub workload: &'static str,
    /// The run's clients, split between the sides.
    pub threads: u32,
    /// The longest the duet may take.
    pub duration: Duration,
    /// It ends once its interval is within this many points.
    pub target: f64,
    pub seed: Option<u64>,
    /// Names the processes and progress lines ("experiment-duet").
    pub who: &'a str,
}

impl DuetOnCopy<'_> {
    /// Runs the duet, writing both sides' logs to `files` and the report to `report`.
    /// `on_twin`: told the copy's folder while it runs (`None` once it is gone), so a resumed
    /// study can stop it.
    pub(crate) fn run(
        &self,
        files: &DuetFiles,
        report: &Path,
        mut on_twin: impl FnMut(Option<&Path>) -> anyhow::Result<()>,
    ) -> anyhow::Result<()> {
        let twin = self.server.twin(self.choice)?;
        on_twin(Some(twin.dir()))?;
        println!(
            "{}: the duet's second server, a copy of the data, on {} (data in {})",
            self.who,
            twin.addr(),
            twin.dir().display()
        );
        let cpus = pins("auto")?;
        if let Some([pa, pb]) = &cpus {
            self.server.pin(self.choice, pa)?;
            twin.pin(self.choice, pb)?;
        }
        let plan = Plan::duet(self.duration, PHASE, Some(self.target), self.seed);
        let run = ScheduledRun {
            workload: self.workload,
            threads: (self.threads / 2).max(1),
            catalog: self.catalog.clone(),
            scenarios: vec![self.reference.to_string(), "pfsoff".to_string()],
            attribution: None,
            phase_log: files.logs[0].clone(),
            sysbench_out: files.sysbench[0].clone(),
        };
        let ran = run_duet(
            [self.server, &twin],
            self.tables,
            &plan,
            &run,
            files,
            cpus.clone(),
            self.who,
        );
        // The server runs on every CPU again for what comes next, whatever the duet did.
        let unpinned = self
            .server
            .unpin(self.choice)
            .and_then(|()| self.server.restart(true));
        drop(twin);
        on_twin(None)?;
        ran?;
        unpinned?;
        let placement = match &cpus {
            Some([pa, pb]) => format!(
                "Server a, its sysbench and its psprobe proxy ran on CPUs {pa}, server b's (a copy of a's data) on {pb}; {} clients each.",
                run.threads
            ),
            None => "Both sides shared every CPU (fewer than two here).".to_string(),
        };
        crate::report::duet::write(&files.logs, &placement, report)?;
        Ok(())
    }
}
