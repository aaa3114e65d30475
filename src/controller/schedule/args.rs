//! The scheduling options of `psprobe proxy` and their validation into [`ControllerSettings`].

use std::path::PathBuf;
use std::time::Duration;

use anyhow::bail;
use clap::Args;

use super::attribution::AttributionPlan;
use super::settings::ControllerSettings;
use crate::controller::client::dsn::ControllerDsn;
use crate::controller::client::server_cpu::PidSource;
use crate::controller::error::ControllerError;
use crate::controller::model::catalog::Catalog;
use crate::controller::model::file::PsConfig;
use crate::controller::model::startup::twin_name;
use crate::controller::paths;
use crate::controller::DSN_ENV;
use crate::duration::{duration_arg, parse_duration};

/// One slot of a runtime-switched scenario. Chosen by measurement (docs/measurement.md): the
/// slot length that gave the tightest interval under sysbench on the 2-core machine.
pub(crate) const DEFAULT_PHASE: &str = "250ms";
pub(crate) const DEFAULT_SEGMENT: &str = "5s";
/// Settle time after a restart before the restart profile has chosen one (the profile
/// usually finds 1-3 s on a throwaway server; `--restart-settle` fixes it).
pub(crate) const INITIAL_RESTART_SETTLE: &str = "5s";
/// A phase entered by restart: settle + measured window. Short, so many pairs fit a run: their
/// noise is mostly each server start's own level (measured: 7.5-9% SD per start on the 2-core
/// machine, nearly the same for 3 s as for 11 s measured), so more starts beat longer windows
/// (docs/measurement.md, "Restart pairs").
pub(crate) const DEFAULT_SLOW_PHASE: &str = "5s";
pub(crate) const DEFAULT_SLOW_BLOCKS: u64 = 4;
pub(crate) const DEFAULT_SLOW_EVERY: &str = "2m";
pub(crate) const DEFAULT_RESTART_TIMEOUT: &str = "120s";
/// How long a stop may spend restoring: long enough for a few tries at a server that is slow
/// to answer, short enough for a service manager's stop timeout (systemd's is 90 s).
pub(crate) const DEFAULT_STOP_TIMEOUT: &str = "30s";
/// Shortest slot: switching takes a few milliseconds of it.
pub(crate) const MIN_PHASE: Duration = Duration::from_millis(100);
/// The reference restart scenarios are compared with, when scheduled.
pub(crate) const PREFERRED_SLOW_REFERENCE: &str = "pfson_conoff_insoff";

#[derive(Debug, Args, Default)]
pub(crate) struct ScheduleArgs {
    /// Switch these performance_schema scenarios on the upstream server (comma-separated;
    /// `psprobe ps scenarios` lists them; `NAME@startup` is runtime scenario NAME set by
    /// server options at startup). Enables the controller: its credentials come from
    /// --controller-dsn-file, PSPROBE_CONTROLLER_DSN or `[controller] dsn` in --config.
    /// Scenarios switched at runtime
    /// alternate fast (--phase); those needing a restart (pfsoff, NAME@startup) run in slow
    /// blocks of their own with a reference (--slow-reference).
    #[arg(long, value_delimiter = ',', value_name = "A,B,...")]
    pub scenarios: Vec<String>,
    /// File whose first line is the controller's DSN mysql://USER:PASS@HOST:PORT/ (e.g. a
    /// mounted secret; keep it mode 600). Wins over PSPROBE_CONTROLLER_DSN and `[controller]
    /// dsn` in --config.
    #[arg(long, value_name = "FILE")]
    pub controller_dsn_file: Option<PathBuf>,
    /// Refused: a DSN on the command line is readable by every user of the host.
    #[arg(long, hide = true, value_name = "DSN")]
    pub controller_dsn: Option<String>,
    /// One slot of a runtime-switched scenario: switch, settle, measure [default: 250ms, the
    /// length that gave the tightest intervals here, lengthened as the run goes while the
    /// switches take more than a fifth of a slot (they queue behind a busy server's clients);
    /// see docs/measurement.md]. Given, the slot stays as given.
    #[arg(long, value_name = "DURATION", value_parser = duration_arg)]
    pub phase: Option<Duration>,
    /// Time after each switch left out of measurement [default: chosen as the run goes from
    /// the carryover profile, starting at a quarter of --phase, at most 250ms].
    #[arg(long, value_name = "DURATION", value_parser = duration_arg)]
    pub settle: Option<Duration>,
    /// Slots are written and analysed in segments of about this long [default: 5s].
    #[arg(long, value_name = "DURATION", value_parser = duration_arg)]
    pub segment: Option<Duration>,
    /// Stop after this long (the slow blocks are spread over it).
    #[arg(long, value_name = "DURATION", value_parser = duration_arg)]
    pub duration: Option<Duration>,
    /// Stop as soon as every throughput and mean-latency interval of the runtime-switched
    /// scenarios (an --attribute run: of every group) is within +-P percentage points (or at
    /// --duration), after the slow blocks; in a run of scenarios entered by restart only,
    /// without --slow-blocks, end the slow blocks once every restart comparison is.
    #[arg(long, value_name = "P")]
    pub target_halfwidth: Option<f64>,
    /// Settle time after a server restart, before the measured window [default: chosen as
    /// the run goes from the restart profile (when the statement rate is back to steady),
    /// starting at 5s].
    #[arg(long, value_name = "DURATION", value_parser = duration_arg)]
    pub restart_settle: Option<Duration>,
    /// One phase of a scenario entered by restart: restart settle + measured window (the
    /// restart itself comes on top) [default: 5s, or --phase when nothing is switched at
    /// runtime].
    #[arg(long, value_name = "DURATION", value_parser = duration_arg)]
    pub slow_phase: Option<Duration>,
    /// Slow blocks (each restarts into every restart scenario and the reference once)
    /// [default: 4, or --blocks when nothing is switched at runtime].
    #[arg(long, value_name = "N")]
    pub slow_blocks: Option<u64>,
    /// The runtime scenario restart scenarios are compared with, itself entered by restart
    /// [default: pfson_conoff_insoff if scheduled, else the first runtime scenario].
    #[arg(long, value_name = "SCENARIO")]
    pub slow_reference: Option<String>,
    /// Without --blocks or --duration: fast time between slow blocks [default: 2m].
    #[arg(long, value_name = "DURATION", value_parser = duration_arg)]
    pub slow_every: Option<Duration>,
    /// Number of fast blocks (each runs every runtime scenario once) [default: until
    /// --duration, the target, or stopped].
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
    /// Command that restarts mysqld, `{pfs}` standing for ON or OFF (performance_schema) and
    /// `{opts}` for extra mysqld options (NAME@startup scenarios), e.g. 'systemctl
    /// set-environment PFS={pfs} OPTS="{opts}" && systemctl restart mariadb'. Needed by
    /// pfsoff and NAME@startup. Run with sh -c.
    #[arg(long, value_name = "CMD")]
    pub restart_cmd: Option<String>,
    /// mysqld's process id, when it runs on this host: each phase then records the server's
    /// CPU time, and reports show server CPU per statement by scenario.
    #[arg(long, value_name = "PID", conflicts_with = "mysqld_pid_file")]
    pub mysqld_pid: Option<u32>,
    /// mysqld's pid file, read again at every phase (the pid changes when a restart scenario
    /// restarts the server), as --mysqld-pid.
    #[arg(long, value_name = "FILE")]
    pub mysqld_pid_file: Option<PathBuf>,
    /// How long the restart command and the server's return may take; a command still
    /// running then is killed with its process group [default: 120s].
    #[arg(long, value_name = "DURATION", value_parser = duration_arg)]
    pub restart_timeout: Option<Duration>,
    /// How long a stop (SIGTERM, SIGINT) may spend putting the settings back; past it psprobe
    /// exits with status 3 and one line naming what is left on the server and the `psprobe ps
    /// restore` command that finishes the job (a restart already under way finishes first,
    /// within --restart-timeout) [default: 30s].
    #[arg(long, value_name = "DURATION", value_parser = duration_arg)]
    pub stop_timeout: Option<Duration>,
    /// Measure what each instrument group costs, all at once, instead of --scenarios: a
    /// randomized two-level fractional factorial design (resolution IV or better: 8 runs for
    /// up to 4 groups, 16 for 8, 32 for 16) switched on the fast schedule, one design point
    /// per slot, one replicate per segment, plus a point with nothing instrumented. Without a
    /// list: every built-in group (`psprobe ps groups`); groups the server lacks are left out.
    #[arg(long, value_delimiter = ',', num_args = 0..=1, value_name = "GROUP,...")]
    pub attribute: Option<Vec<String>>,
    /// With --attribute: recommend the richest set of groups whose predicted throughput cost,
    /// at the upper end of its 95% interval, stays within P percent (e.g. 2).
    #[arg(long, value_name = "P")]
    pub budget: Option<f64>,
    /// With --budget: groups the recommendation must hold (e.g. statements,sync_waits).
    #[arg(long, value_delimiter = ',', value_name = "GROUP,...")]
    pub need: Vec<String>,
    /// With --budget: after the design, confirm the recommendation by a fast A/B against
    /// nothing instrumented, for this long [default: a third of --duration, at least 1m].
    #[arg(long, value_name = "DURATION", num_args = 0..=1, default_missing_value = "auto")]
    pub confirm: Option<String>,
}

/// The runtime scenario restart scenarios are compared with when none is requested:
/// pfson_conoff_insoff if scheduled, else the first runtime scenario; `None` when nothing
/// needs a restart (or nothing runs at runtime).
pub(crate) fn default_slow_reference(catalog: &Catalog, scenarios: &[String]) -> Option<String> {
    let needs_restart = |name: &String| catalog.get(name).is_ok_and(|s| s.requires_restart());
    if !scenarios.iter().any(needs_restart) {
        return None;
    }
    let runtime: Vec<&String> = scenarios.iter().filter(|n| !needs_restart(n)).collect();
    runtime
        .iter()
        .find(|n| n.as_str() == PREFERRED_SLOW_REFERENCE)
        .or(runtime.first())
        .map(|n| (*n).clone())
}

/// The flag's value, else the default (a constant written as the help text shows it).
fn duration(
    setting: &'static str,
    value: Option<Duration>,
    default: &str,
) -> anyhow::Result<Duration> {
    match value {
        Some(v) => Ok(v),
        None => Ok(parse_duration(setting, default)?),
    }
}

/// The scenarios to run, and the attribution plan when `--attribute` chose them.
struct Chosen {
    catalog: Catalog,
    scenarios: Vec<String>,
    attribution: Option<AttributionPlan>,
}

impl ScheduleArgs {
    /// `None` when neither scenarios nor an attribution are asked for (the controller is off).
    pub(crate) fn settings(
        &self,
        config_file: Option<&std::path::Path>,
        upstream: &str,
    ) -> anyhow::Result<Option<ControllerSettings>> {
        if self.controller_dsn.is_some() {
            bail!(
                "--controller-dsn is not accepted: every user of this host can read the command \
                 line (ps, /proc/PID/cmdline); put the DSN in a mode-600 file given with \
                 --controller-dsn-file, in {DSN_ENV}, or as dsn under [controller] in --config"
            );
        }
        if self.scenarios.is_empty() && self.attribute.is_none() {
            for (set, flag) in [
                (self.budget.is_some(), "--budget"),
                (!self.need.is_empty(), "--need"),
                (self.confirm.is_some(), "--confirm"),
            ] {
                if set {
                    bail!("{flag} goes with --attribute (what each instrument group costs)");
                }
            }
            return Ok(None);
        }
        let config = config_file.map(PsConfig::load).transpose()?;
        let chosen = self.choose(config.as_ref())?;
        let slow = self.slow(&chosen)?;
        let timing = self.timing(&slow)?;
        let env = std::env::var(DSN_ENV).ok();
        let file = config
            .as_ref()
            .map(|c| (c.path.as_path(), c.dsn.as_deref()));
        let dsn = ControllerDsn::resolve_with_file(
            self.controller_dsn_file.as_deref(),
            env.as_deref(),
            file,
        )?;
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
            // Any value will do; the clock's milliseconds differ from one run to the next.
            crate::clock::now_ms().wrapping_mul(0x9e37_79b9_7f4a_7c15)
        });
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|h| h.trim().to_string())
            .unwrap_or_else(|_| "psprobe".into());
        let mut attribution = chosen.attribution;
        if let Some(plan) = attribution.as_mut() {
            plan.confirm = self.confirm_duration(timing.duration)?;
        }
        Ok(Some(ControllerSettings {
            dsn,
            catalog: chosen.catalog,
            scenarios: chosen.scenarios,
            phase: timing.phase,
            phase_auto: self.phase.is_none(),
            settle: self.settle,
            segment: timing.segment,
            restart_settle: slow.restart_settle,
            restart_settle_auto: self.restart_settle.is_none(),
            slow_phase: slow.phase,
            slow_blocks: slow.blocks,
            slow_reference: slow.reference,
            slow_every: timing.slow_every,
            blocks: if timing.fast_part { self.blocks } else { None },
            duration: timing.duration,
            target_halfwidth: self.target_halfwidth,
            seed,
            state_file,
            phase_log,
            restart_cmd: self.restart_cmd.clone(),
            restart_timeout: timing.restart_timeout,
            stop_timeout: timing.stop_timeout,
            config_path: config_file.map(std::path::Path::to_path_buf),
            upstream: upstream.to_string(),
            identity: format!("{host}:{}", std::process::id()),
            on_phase: None,
            mysqld_pid: match (self.mysqld_pid, &self.mysqld_pid_file) {
                (Some(pid), _) => Some(PidSource::Fixed(pid)),
                (None, Some(file)) => Some(PidSource::File(file.clone())),
                (None, None) => None,
            },
            attribution,
            duet: None,
        }))
    }

    /// The catalog (built-in and the config file's scenarios) and what runs: `--scenarios`,
    /// or the groups of `--attribute` (their design's points come once the server's rows are
    /// known).
    fn choose(&self, config: Option<&PsConfig>) -> anyhow::Result<Chosen> {
        let mut catalog = Catalog::builtin();
        if let Some(c) = config {
            catalog.add_toml(&c.text, &c.path)?;
        }
        let groups = catalog.groups().clone();
        let Some(asked) = &self.attribute else {
            for (i, name) in self.scenarios.iter().enumerate() {
                catalog.resolve(name)?;
                if self.scenarios[..i].contains(name) {
                    bail!("scenario {name} is listed twice in --scenarios; to run one scenario under two names (an A/A check), define the second name in the config file");
                }
            }
            return Ok(Chosen {
                catalog,
                scenarios: self.scenarios.clone(),
                attribution: None,
            });
        };
        if !self.scenarios.is_empty() {
            bail!("--attribute and --scenarios do not go together: --attribute chooses its own scenarios (its design's points); run the scenarios in a run of their own");
        }
        if asked.iter().any(|g| g.trim().is_empty()) {
            bail!("--attribute {}: an empty group name; list groups separated by commas, or give --attribute alone for every built-in group", asked.join(","));
        }
        let names = if asked.is_empty() {
            groups.builtin_names()
        } else {
            asked.clone()
        };
        let selected = groups.select(&names)?;
        let budget = match self.budget {
            Some(p) if !(p > 0.0 && p <= 100.0) => bail!(
                "--budget {p}: give the percent of throughput you accept to lose, more than 0 and at most 100 (e.g. 2)"
            ),
            other => other,
        };
        if budget.is_none() {
            for (set, flag) in [
                (!self.need.is_empty(), "--need"),
                (self.confirm.is_some(), "--confirm"),
            ] {
                if set {
                    bail!(
                        "{flag} goes with --budget (the throughput percent the advice may spend)"
                    );
                }
            }
        }
        for name in &self.need {
            if !selected.iter().any(|g| g.name == *name) {
                bail!(
                    "--need {name}: not among the groups measured ({}); add it to --attribute",
                    names.join(", ")
                );
            }
        }
        Ok(Chosen {
            catalog,
            scenarios: Vec::new(),
            attribution: Some(AttributionPlan::new(selected, budget, self.need.clone())),
        })
    }

    /// `--confirm`'s duration: as given, or a third of the run (at least a minute).
    fn confirm_duration(&self, run: Option<Duration>) -> anyhow::Result<Option<Duration>> {
        match self.confirm.as_deref() {
            None => Ok(None),
            Some("auto") => Ok(Some(
                run.map_or(Duration::from_secs(120), |d| d / 3)
                    .max(Duration::from_secs(60)),
            )),
            Some(text) => {
                let d = parse_duration("confirm", text)?;
                if d.is_zero() {
                    bail!("--confirm {text}: give how long to confirm, e.g. 2m");
                }
                Ok(Some(d))
            }
        }
    }

    /// The restart scenarios' settings: their reference, phase, blocks, settle; checked.
    fn slow(&self, chosen: &Chosen) -> anyhow::Result<Slow> {
        let catalog = &chosen.catalog;
        let needs_restart = |name: &String| catalog.get(name).is_ok_and(|s| s.requires_restart());
        let runtime: Vec<&String> = chosen
            .scenarios
            .iter()
            .filter(|n| !needs_restart(n))
            .collect();
        let restart: Vec<&String> = chosen
            .scenarios
            .iter()
            .filter(|n| needs_restart(n))
            .collect();
        let reference = if restart.is_empty() {
            None
        } else {
            Some(match &self.slow_reference {
                Some(r) if runtime.contains(&r) => r.clone(),
                Some(r) => bail!(
                    "--slow-reference {r} must be one of the runtime scenarios in --scenarios ({})",
                    runtime.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")
                ),
                None => match default_slow_reference(catalog, &chosen.scenarios) {
                    Some(r) => r,
                    None => bail!(
                        "{} needs a runtime scenario to be compared with: add one (e.g. {PREFERRED_SLOW_REFERENCE}) to --scenarios",
                        restart[0]
                    ),
                },
            })
        };
        if let (Some(name), None) = (restart.first(), &self.restart_cmd) {
            return Err(ControllerError::NeedsRestart {
                name: (*name).clone(),
            }
            .into());
        }
        let startup = restart.iter().find(|n| twin_name(n).is_some());
        if let (Some(name), Some(cmd)) = (startup, &self.restart_cmd) {
            if !cmd.contains("{opts}") {
                bail!("{name} starts the server with extra options: --restart-cmd must pass them on where it says {{opts}}");
            }
        }
        // Nothing switched fast when the only runtime scenario is the slow reference (an
        // attribution's points are all fast).
        let fast_part = chosen.attribution.is_some()
            || runtime.len() >= 2
            || (runtime.len() == 1 && restart.is_empty());
        let phase = duration("phase", self.phase, DEFAULT_PHASE)?;
        let slow_phase = match (self.slow_phase, fast_part) {
            (Some(v), _) => v,
            (None, false) if self.phase.is_some() => phase,
            (None, _) => parse_duration("slow_phase", DEFAULT_SLOW_PHASE)?,
        };
        let restart_settle = match self.restart_settle {
            Some(given) => given,
            None => parse_duration("restart_settle", INITIAL_RESTART_SETTLE)?.min(slow_phase / 2),
        };
        if !restart.is_empty() && restart_settle >= slow_phase {
            let name = if self.slow_phase.is_some() || fast_part {
                "--slow-phase"
            } else {
                "--phase"
            };
            bail!("--restart-settle ({restart_settle:?}) must be shorter than {name} ({slow_phase:?})");
        }
        if self.blocks == Some(0) || self.slow_blocks == Some(0) {
            bail!("--blocks and --slow-blocks must be at least 1 (leave them out to run until stopped)");
        }
        Ok(Slow {
            reference,
            phase: slow_phase,
            blocks: match (self.slow_blocks, fast_part) {
                (Some(n), _) => Some(n),
                (None, false) => self.blocks,
                (None, true) => Some(DEFAULT_SLOW_BLOCKS),
            },
            restart_settle,
            fast_part,
        })
    }

    /// The fast schedule's timing and the run's length; checked.
    fn timing(&self, slow: &Slow) -> anyhow::Result<Timing> {
        let phase = duration("phase", self.phase, DEFAULT_PHASE)?;
        if slow.fast_part && phase < MIN_PHASE {
            bail!("--phase ({phase:?}) must be at least {MIN_PHASE:?}: a switch takes a few milliseconds of each slot");
        }
        if let Some(settle) = self.settle {
            if settle >= phase {
                bail!("--settle ({settle:?}) must be shorter than --phase ({phase:?}): nothing would be measured");
            }
        }
        if self.duration.is_some_and(|d| d.is_zero()) {
            bail!("--duration must be longer than 0s");
        }
        if self.stop_timeout.is_some_and(|d| d.is_zero()) {
            bail!("--stop-timeout must be longer than 0s: a stop needs time to put the settings back (leave it out for 30s)");
        }
        if self.restart_timeout.is_some_and(|d| d.is_zero()) {
            bail!("--restart-timeout must be longer than 0s (leave it out for 120s)");
        }
        if let Some(p) = self.target_halfwidth {
            if !(p > 0.0 && p < 100.0) {
                bail!("--target-halfwidth {p} must be a number of percentage points between 0 and 100, e.g. 1");
            }
        }
        Ok(Timing {
            phase,
            segment: duration("segment", self.segment, DEFAULT_SEGMENT)?,
            slow_every: duration("slow_every", self.slow_every, DEFAULT_SLOW_EVERY)?,
            restart_timeout: duration(
                "restart_timeout",
                self.restart_timeout,
                DEFAULT_RESTART_TIMEOUT,
            )?,
            stop_timeout: duration("stop_timeout", self.stop_timeout, DEFAULT_STOP_TIMEOUT)?,
            duration: self.duration,
            fast_part: slow.fast_part,
        })
    }
}

/// The restart scenarios' settings.
struct Slow {
    reference: Option<String>,
    phase: Duration,
    blocks: Option<u64>,
    restart_settle: Duration,
    /// Something is switched at runtime.
    fast_part: bool,
}

/// The fast schedule's timing.
struct Timing {
    phase: Duration,
    segment: Duration,
    slow_every: Duration,
    restart_timeout: Duration,
    stop_timeout: Duration,
    duration: Option<Duration>,
    fast_part: bool,
}
