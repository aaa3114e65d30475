//! `psprobe ps ...`: inspect and change performance_schema settings by scenario.

use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};

use super::client::dsn::ControllerDsn;
use super::client::left_behind::{self, Hint, Mode, Outcome, Rights};
use super::client::server::{ApplyReport, Controller};
use super::error::ControllerError;
use super::model::catalog::Catalog;
use super::model::file::PsConfig;
use super::model::scenario::Scenario;
use super::model::setup_tables::SetupState;
use super::model::snapshot::Snapshot;
use super::paths;
use super::show;
use super::DSN_ENV;

const LONG_ABOUT: &str = "\
Inspects and changes performance_schema (PS) settings on a MySQL or MariaDB server, by scenario.

A scenario is a named setting of the PS setup tables: which rows of setup_consumers are enabled, \
and which rows of setup_instruments are ENABLED and TIMED. psprobe knows the six scenarios of the \
reference study (pfsoff, pfson_conoff_insoff, pfson_conon_insoff, pfson_conon_ins_sqlon, \
pfson_conoff_inson, pfson_conon_inson), 'original' (the settings found before the first change), \
and any [[scenario]] tables of the --config file. Run `psprobe ps scenarios --sql` to see them.

Credentials: the controller connects with the DSN mysql://USER:PASS@HOST:PORT/ taken from the \
first line of the --controller-dsn-file, else the PSPROBE_CONTROLLER_DSN environment variable, \
else `dsn` under [controller] in the --config file. It is never accepted on the command line and never printed: messages \
show USER@HOST:PORT only. The account needs: GRANT SELECT, UPDATE ON performance_schema.* TO ... \
(and, for `psprobe proxy --scenarios`: GRANT SELECT, CREATE, INSERT, DELETE ON psprobe.* TO ...)

Leaving the server as found: before its first change `apply` saves every row of both setup tables \
to a state file (JSON, written atomically), and `restore` writes them back, checks every row and \
removes the file. The default state file is ps-snapshot-HOST-PORT.json in --state-dir, else \
[controller] state_dir, else $XDG_STATE_HOME/psprobe, else ~/.local/state/psprobe.

Config file example:
  [controller]
  dsn = \"mysql://psprobe:secret@db1:3306/\"
  [[scenario]]
  name = \"statements_only\"
  description = \"statement instruments, statement consumers\"
  consumers = { enable = [\"global_instrumentation\", \"thread_instrumentation\", \"events_statements_%\"] }
  instruments = { enable = [\"statement/%\"], timed = [\"statement/%\"] }
Patterns are SQL LIKE patterns ('%' any run, '_' one character); a pattern without '%' is an exact \
name. Rows not matched are set to NO. Leaving out `consumers` or `instruments` leaves that table \
as it is; leaving out `timed` makes it equal to `enable`.";

// The `Ps` variant's doc comment in config.rs sets about/long_about, so the details go after
// the option list.
#[derive(Debug, Args)]
#[command(
    after_long_help = LONG_ABOUT,
    after_help = "Credentials come from --controller-dsn-file, PSPROBE_CONTROLLER_DSN or \
                  --config, never from argv. \
                  See --help for the details."
)]
pub(crate) struct PsArgs {
    /// TOML file with [controller] dsn = "mysql://USER:PASS@HOST:PORT/" (and optional
    /// state_dir) and any [[scenario]] tables; other tables are ignored.
    #[arg(long, short = 'c', value_name = "FILE", global = true)]
    pub config: Option<PathBuf>,
    /// Directory for snapshot state files [default: [controller] state_dir,
    /// $XDG_STATE_HOME/psprobe or ~/.local/state/psprobe].
    #[arg(long, value_name = "DIR", global = true)]
    pub state_dir: Option<PathBuf>,
    /// File whose first line is the DSN mysql://USER:PASS@HOST:PORT/ (keep it mode 600); wins
    /// over PSPROBE_CONTROLLER_DSN and [controller] dsn.
    #[arg(long, value_name = "FILE", global = true)]
    pub controller_dsn_file: Option<PathBuf>,
    #[command(subcommand)]
    pub command: PsCommand,
}

#[derive(Debug, Subcommand)]
pub(crate) enum PsCommand {
    /// List the scenarios psprobe knows: name, whether it needs a restart, description.
    ///
    /// Needs no server. User scenarios come from the [[scenario]] tables of --config.
    Scenarios {
        /// Also print the SQL each scenario runs.
        #[arg(long)]
        sql: bool,
    },
    /// List the instrument groups `psprobe proxy --attribute` measures: name, what each turns
    /// on (its instruments, enabled and timed, and its consumers; global and thread
    /// instrumentation go with any group), description.
    ///
    /// Needs no server. User groups come from the [[group]] tables of --config:
    ///   [[group]]
    ///   name = "innodb_mutexes"
    ///   consumers = ["events_waits_current"]
    ///   instruments = ["wait/synch/mutex/innodb/%"]
    Groups {
        /// Also print the SQL that turns each group alone on.
        #[arg(long)]
        sql: bool,
        /// Also count each group's rows on the server (needs the controller DSN): a group
        /// with none is left out of an attribution there.
        #[arg(long)]
        server: bool,
    },
    /// Show the server's flavour and version, whether PS is on, the consumers, the instruments
    /// per class, and which known scenario the current settings match.
    ///
    /// Changes nothing.
    Show {
        /// State file to compare with [default: see --state-dir].
        #[arg(long, value_name = "PATH")]
        state_file: Option<PathBuf>,
    },
    /// Apply a scenario and check every row of both setup tables afterwards.
    ///
    /// Before the first change, saves a snapshot of the current settings to the state file (an
    /// existing snapshot of the same server is kept, so `restore` always returns to the settings
    /// found before the first `apply`). Scenario names the server lacks (older versions) are
    /// skipped with a warning. Fails if any row does not read back as the scenario sets it.
    /// `original` writes the snapshot back but keeps the state file. `pfsoff` needs a server
    /// restart and is refused.
    Apply {
        /// Scenario name (see `psprobe ps scenarios`).
        scenario: String,
        /// State file for the snapshot [default: see --state-dir].
        #[arg(long, value_name = "PATH")]
        state_file: Option<PathBuf>,
    },
    /// Write the saved snapshot back, check every row, and remove it (state file and server).
    ///
    /// The snapshot is the one a scheduled run left on the server (psprobe.snapshot) if there is
    /// one, else the state file's. Only psprobe's rows are written back: a row holding what
    /// psprobe found or what it last applied (the scenario its run last published, either side
    /// of a switch it did not finish, or the last `ps apply`). A row holding anything else was
    /// set by someone else (a DBA): it is kept as it is and named. After a server restart
    /// psprobe did not make, nothing of psprobe's is left and the snapshot is dropped. Only
    /// when it cannot tell what psprobe last applied (no record on the server) does restore
    /// change nothing and exit with an error; then choose: --force writes the snapshot over
    /// everything, --discard keeps the live settings and drops the snapshot.
    Restore {
        /// State file holding the snapshot [default: see --state-dir].
        #[arg(long, value_name = "PATH")]
        state_file: Option<PathBuf>,
        /// Write the whole snapshot back, over rows someone else changed after psprobe's last
        /// change too (or after a server restart since).
        #[arg(long, conflicts_with = "discard")]
        force: bool,
        /// Keep the live settings: remove the snapshot (state file and psprobe.snapshot on the
        /// server) without changing any row.
        #[arg(long)]
        discard: bool,
    },
}

pub(crate) fn run(args: &PsArgs) -> anyhow::Result<()> {
    crate::runtime::init_logging_from_env(None);
    let config = args.config.as_deref().map(PsConfig::load).transpose()?;
    let mut catalog = Catalog::builtin();
    if let Some(c) = &config {
        catalog.add_toml(&c.text, &c.path)?;
    }
    let groups = catalog.groups().clone();
    let warnings = crate::secrets::argv_warnings(std::env::args_os())
        .into_iter()
        .chain(crate::secrets::exposed_secret_files(
            None,
            args.controller_dsn_file.as_deref(),
            args.config.as_deref(),
        ));
    for warning in warnings {
        eprintln!("psprobe: warning: {warning}");
    }
    let ctx = Context {
        config,
        catalog,
        state_dir: args.state_dir.clone(),
        dsn_file: args.controller_dsn_file.clone(),
    };
    match &args.command {
        PsCommand::Scenarios { sql } => {
            print!("{}", show::scenarios(&ctx.catalog, *sql));
            Ok(())
        }
        PsCommand::Groups { sql, server } => {
            let state = if *server {
                Some(crate::runtime::block_on_current_thread(ctx.read_state())?)
            } else {
                None
            };
            print!("{}", show::groups(&groups, *sql, state.as_ref()));
            Ok(())
        }
        PsCommand::Show { state_file } => block_on(ctx.show(state_file.as_deref())),
        PsCommand::Apply {
            scenario,
            state_file,
        } => block_on(ctx.apply(scenario, state_file.as_deref())),
        PsCommand::Restore {
            state_file,
            force,
            discard,
        } => {
            let mode = match (force, discard) {
                (true, _) => Mode::Force,
                (_, true) => Mode::Discard,
                _ => Mode::Proved,
            };
            block_on(ctx.restore(state_file.as_deref(), mode))
        }
    }
}

fn block_on<F: std::future::Future<Output = anyhow::Result<()>>>(f: F) -> anyhow::Result<()> {
    crate::runtime::block_on_current_thread(f)
}

struct Context {
    config: Option<PsConfig>,
    catalog: Catalog,
    state_dir: Option<PathBuf>,
    dsn_file: Option<PathBuf>,
}

impl Context {
    fn dsn(&self) -> Result<ControllerDsn, ControllerError> {
        let env = std::env::var(DSN_ENV).ok();
        let file = self
            .config
            .as_ref()
            .map(|c| (c.path.as_path(), c.dsn.as_deref()));
        ControllerDsn::resolve_with_file(self.dsn_file.as_deref(), env.as_deref(), file)
    }

    fn state_file(
        &self,
        explicit: Option<&Path>,
        dsn: &ControllerDsn,
    ) -> Result<PathBuf, ControllerError> {
        let dir = self
            .state_dir
            .as_deref()
            .or_else(|| self.config.as_ref().and_then(|c| c.state_dir.as_deref()));
        paths::state_file(explicit, dir, dsn.host(), dsn.port())
    }

    /// Both setup tables as the server has them (no change).
    async fn read_state(&self) -> anyhow::Result<SetupState> {
        let dsn = self.dsn()?;
        let mut ctl = Controller::connect(&dsn).await?;
        let state = match ctl.require_ps() {
            Ok(()) => ctl.read_state().await.map_err(anyhow::Error::from),
            Err(e) => Err(e.into()),
        };
        ctl.disconnect().await;
        state
    }

    async fn show(&self, state_file: Option<&Path>) -> anyhow::Result<()> {
        let dsn = self.dsn()?;
        let path = self.state_file(state_file, &dsn)?;
        let mut ctl = Controller::connect(&dsn).await?;
        let state = if ctl.require_ps().is_ok() {
            match ctl.read_state().await {
                Ok(s) => Some(s),
                Err(e) => {
                    ctl.disconnect().await;
                    return Err(e.into());
                }
            }
        } else {
            None
        };
        let info = ctl.info().clone();
        ctl.disconnect().await;
        let snapshot = match Snapshot::load_if_exists(&path).and_then(|s| {
            s.map(|s| s.check_server(&info.identity, &path).map(|()| s))
                .transpose()
        }) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("psprobe: warning: {e}");
                None
            }
        };
        print!(
            "{}",
            show::server(&show::ShowInput {
                target: &dsn.redacted(),
                info: &info,
                state: state.as_ref(),
                catalog: &self.catalog,
                state_file: &path,
                snapshot: snapshot.as_ref(),
            })
        );
        Ok(())
    }

    async fn apply(&self, name: &str, state_file: Option<&Path>) -> anyhow::Result<()> {
        // Refuse what cannot work before connecting to anything.
        let scenario = self.catalog.clone().resolve(name)?.clone();
        if scenario.requires_restart() {
            return Err(ControllerError::NeedsRestart {
                name: scenario.name,
            }
            .into());
        }
        let dsn = self.dsn()?;
        let path = self.state_file(state_file, &dsn)?;
        let mut ctl = Controller::connect(&dsn).await?;
        let result = async {
            ctl.require_ps()?;
            // No controller may switch meanwhile, and what a dead run left comes first.
            left_behind::hold_controller_lock(&mut ctl).await?;
            if let Some(left) = left_behind::on_server(&mut ctl, Rights::Optional).await? {
                return Err(ControllerError::LeftOnServer {
                    target: ctl.target().to_string(),
                    taken_at: left.taken_at,
                }
                .into());
            }
            apply_with_snapshot(&mut ctl, &scenario, &path).await
        }
        .await;
        ctl.disconnect().await;
        result
    }

    async fn restore(&self, state_file: Option<&Path>, mode: Mode) -> anyhow::Result<()> {
        let dsn = self.dsn()?;
        let path = self.state_file(state_file, &dsn)?;
        // Refuse early, before connecting, when the file is unreadable.
        let in_file = Snapshot::load_if_exists(&path)?.is_some();
        let mut ctl = match Controller::connect(&dsn).await {
            Ok(ctl) => ctl,
            Err(e) if !in_file => {
                anyhow::bail!(
                    "no snapshot at {}, and cannot look on the server: {e}",
                    path.display()
                )
            }
            Err(e) => return Err(e.into()),
        };
        let hint = Hint {
            restore_command: self.restore_command(&path),
            trust_unrecorded: true,
        };
        let result = async {
            ctl.require_ps()?;
            left_behind::hold_controller_lock(&mut ctl).await?;
            left_behind::resolve(
                &mut ctl,
                &path,
                &self.catalog,
                mode,
                Rights::Optional,
                &hint,
            )
            .await
        }
        .await;
        ctl.disconnect().await;
        match result {
            Ok(Outcome::Nothing) => Err(ControllerError::NoSnapshot { path }.into()),
            Ok(Outcome::Restored {
                snapshot,
                report,
                origin,
                claims,
                ..
            }) => {
                print_report(&report, &dsn.redacted(), false);
                for claim in snapshot.claims.iter().chain(&claims) {
                    println!("kept as someone else set it: {claim}");
                }
                println!(
                    "restored the snapshot taken {}; removed it ({origin})",
                    snapshot.taken_at
                );
                Ok(())
            }
            Ok(Outcome::Discarded {
                snapshot,
                origin,
                restarted: None,
            }) => {
                println!(
                    "discarded the snapshot taken {} ({origin}); the live settings stay as they are",
                    snapshot.taken_at
                );
                Ok(())
            }
            Ok(Outcome::Discarded {
                snapshot,
                origin,
                restarted: Some(_),
            }) => {
                println!(
                    "nothing to restore: the server restarted since the snapshot {origin} was \
                     taken ({}), not by psprobe, so it holds its own settings; removed the snapshot",
                    snapshot.taken_at
                );
                Ok(())
            }
            Ok(Outcome::RestartFirst { origin, mode, .. }) => Err(ControllerError::RestartFirst {
                origin,
                mode,
                what: format!(
                    "restart the server with its own options, then run `{}` again",
                    self.restore_command(&path)
                ),
            }
            .into()),
            Err(e) => Err(e.into()),
        }
    }

    /// `psprobe ps [--config FILE] restore --state-file PATH`, for messages.
    fn restore_command(&self, path: &Path) -> String {
        let config = self
            .config
            .as_ref()
            .map(|c| format!(" --config {}", c.path.display()))
            .unwrap_or_default();
        format!("psprobe ps{config} restore --state-file {}", path.display())
    }
}

async fn apply_with_snapshot(
    ctl: &mut Controller,
    scenario: &Scenario,
    path: &Path,
) -> anyhow::Result<()> {
    ctl.require_ps()?;
    let saved = ctl.ensure_snapshot(path).await?;
    if saved.created {
        println!(
            "saved the current settings ({} rows) to {}",
            saved.snapshot.state.rows(),
            path.display()
        );
    } else {
        println!(
            "keeping the snapshot taken {} in {}",
            saved.snapshot.taken_at,
            path.display()
        );
        if saved.server_restarted_since {
            eprintln!(
                "psprobe: warning: the server restarted after that snapshot was taken; restore \
                 will write the snapshot's settings back, not the server's current defaults"
            );
        }
    }
    let report = ctl.apply_or_restore(scenario, &saved.snapshot).await?;
    // What `restore` proves the live rows against; this server start is now known too.
    let mut snapshot = saved.snapshot;
    snapshot.applied = Some(scenario.name.clone());
    snapshot.known_start_unix = ctl.info().identity.started_at_unix;
    snapshot.save(path)?;
    print_report(&report, ctl.target(), true);
    println!(
        "put the original settings back with: psprobe ps restore --state-file {}",
        path.display()
    );
    Ok(())
}

fn print_report(report: &ApplyReport, target: &str, with_sql: bool) {
    for w in &report.warnings {
        eprintln!("psprobe: warning: {w}");
    }
    println!(
        "applied {} on {target}: {} statement(s), {} row(s) changed, {} rows verified",
        report.scenario,
        report.statements.len(),
        report.rows_changed,
        report.rows_verified
    );
    if with_sql && report.scenario != "original" {
        for s in &report.statements {
            println!("  {s};");
        }
    }
}
