//! The scheduling options of `psprobe proxy` and their validation into [`ControllerSettings`].

use std::path::PathBuf;
use std::time::Duration;

use anyhow::bail;
use clap::Args;

use super::catalog::Catalog;
use super::dsn::{ControllerDsn, DSN_ENV};
use super::file::PsConfig;
use super::paths;
use super::runner::ControllerSettings;
use crate::config::parse_duration;

pub const DEFAULT_PHASE: &str = "30s";
pub const DEFAULT_SETTLE: &str = "5s";
pub const DEFAULT_RESTART_SETTLE: &str = "20s";
pub const DEFAULT_RESTART_TIMEOUT: &str = "120s";

#[derive(Debug, Args, Default)]
pub struct ScheduleArgs {
    /// Switch these performance_schema scenarios on the upstream server, in randomized blocks
    /// (comma-separated; `psprobe ps scenarios` lists them). Enables the controller: its
    /// credentials come from PSPROBE_CONTROLLER_DSN or `[controller] dsn` in --config.
    #[arg(long, value_delimiter = ',', value_name = "A,B,...")]
    pub scenarios: Vec<String>,
    /// Length of one phase: switch, settle, then measure for the rest [default: 30s].
    #[arg(long, value_name = "DURATION")]
    pub phase: Option<String>,
    /// Time after a switch excluded from measurement [default: 5s].
    #[arg(long, value_name = "DURATION")]
    pub settle: Option<String>,
    /// Settle time after a server restart (pfsoff and back) [default: 20s].
    #[arg(long, value_name = "DURATION")]
    pub restart_settle: Option<String>,
    /// Number of blocks (each runs every scenario once) [default: until stopped].
    #[arg(long, value_name = "N")]
    pub blocks: Option<u64>,
    /// Seed of the block order (recorded in the phase log) [default: from the clock].
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// Phase log (JSON Lines) [default: STATE_DIR/phases-HOST-PORT.jsonl].
    #[arg(long, value_name = "FILE")]
    pub phase_log: Option<PathBuf>,
    /// Where the settings snapshot and phase log live [default: ~/.local/state/psprobe].
    #[arg(long, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
    /// Command that restarts mysqld with performance_schema ON or OFF, `{pfs}` standing for
    /// the value, e.g. 'systemctl set-environment PFS={pfs} && systemctl restart mariadb'.
    /// Needed by the pfsoff scenario. Run with sh -c.
    #[arg(long, value_name = "CMD")]
    pub restart_cmd: Option<String>,
    /// mysqld's process id, when it runs on this host: each phase then records the server's
    /// CPU time, and reports show server CPU per statement by scenario.
    #[arg(long, value_name = "PID")]
    pub mysqld_pid: Option<u32>,
    /// How long the restart command and the server's return may take [default: 120s].
    #[arg(long, value_name = "DURATION")]
    pub restart_timeout: Option<String>,
}

fn duration(
    setting: &'static str,
    value: Option<&String>,
    default: &str,
) -> anyhow::Result<Duration> {
    Ok(parse_duration(
        setting,
        value.map_or(default, String::as_str),
    )?)
}

impl ScheduleArgs {
    /// `None` when no scenarios are scheduled (the controller is off).
    pub fn settings(
        &self,
        config_file: Option<&std::path::Path>,
        upstream: &str,
    ) -> anyhow::Result<Option<ControllerSettings>> {
        if self.scenarios.is_empty() {
            return Ok(None);
        }
        let config = config_file.map(PsConfig::load).transpose()?;
        let mut catalog = Catalog::builtin();
        if let Some(c) = &config {
            catalog.add_toml(&c.text, &c.path)?;
        }
        for (i, name) in self.scenarios.iter().enumerate() {
            catalog.get(name)?;
            if self.scenarios[..i].contains(name) {
                bail!("scenario {name} is listed twice in --scenarios; to run one scenario under two names (an A/A check), define the second name in the config file");
            }
        }
        let phase = duration("phase", self.phase.as_ref(), DEFAULT_PHASE)?;
        let settle = duration("settle", self.settle.as_ref(), DEFAULT_SETTLE)?;
        let restart_settle = duration(
            "restart_settle",
            self.restart_settle.as_ref(),
            DEFAULT_RESTART_SETTLE,
        )?;
        let restart_timeout = duration(
            "restart_timeout",
            self.restart_timeout.as_ref(),
            DEFAULT_RESTART_TIMEOUT,
        )?;
        if settle >= phase {
            bail!("--settle ({settle:?}) must be shorter than --phase ({phase:?}): nothing would be measured");
        }
        if self.restart_cmd.is_some() && restart_settle >= phase {
            bail!("--restart-settle ({restart_settle:?}) must be shorter than --phase ({phase:?})");
        }
        if self.blocks == Some(0) {
            bail!("--blocks must be at least 1 (leave it out to run until stopped)");
        }
        let env = std::env::var(DSN_ENV).ok();
        let file = config
            .as_ref()
            .map(|c| (c.path.as_path(), c.dsn.as_deref()));
        let dsn = ControllerDsn::resolve(env.as_deref(), file)?;
        let dir = self
            .state_dir
            .as_deref()
            .or_else(|| config.as_ref().and_then(|c| c.state_dir.as_deref()));
        let state_file = paths::state_file(None, dir, dsn.host(), dsn.port())?;
        let phase_log = match &self.phase_log {
            Some(p) => p.clone(),
            None => state_file.with_file_name(format!(
                "phases-{}",
                paths::state_file_name(dsn.host(), dsn.port())
                    .trim_start_matches("ps-snapshot-")
                    .replace(".json", ".jsonl")
            )),
        };
        let seed = self.seed.unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64)
        });
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|h| h.trim().to_string())
            .unwrap_or_else(|_| "psprobe".into());
        Ok(Some(ControllerSettings {
            dsn,
            catalog,
            scenarios: self.scenarios.clone(),
            phase,
            settle,
            restart_settle,
            blocks: self.blocks,
            seed,
            state_file,
            phase_log,
            restart_cmd: self.restart_cmd.clone(),
            restart_timeout,
            upstream: upstream.to_string(),
            identity: format!("{host}:{}", std::process::id()),
            on_phase: None,
            mysqld_pid: self.mysqld_pid.map(super::server_cpu::PidSource::Fixed),
        }))
    }
}
