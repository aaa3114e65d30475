//! Everything the controller can fail with. Each message is one line that says what failed and
//! what to do about it, and never contains the DSN's password (only `user@host:port`).

use std::path::PathBuf;

/// How many mismatches a verification error spells out before saying "and N more".
const MISMATCHES_SHOWN: usize = 5;

#[derive(Debug, thiserror::Error)]
pub enum ControllerError {
    #[error(
        "no controller DSN: set {env}=mysql://USER:PASS@HOST:PORT/ in the environment, give a \
         file holding it with --controller-dsn-file, or put dsn = \"mysql://USER:PASS@HOST:PORT/\" \
         under [controller] in a file given with --config (the DSN is never taken from the \
         command line)",
        env = super::DSN_ENV
    )]
    NoDsn,

    #[error("the controller DSN from {origin} is not valid: {reason} (expected mysql://USER:PASS@HOST:PORT/)")]
    BadDsn { origin: String, reason: String },

    #[error("{0}")]
    SecretFile(#[from] crate::secrets::SecretError),

    #[error("config file {path}: {reason}")]
    Config { path: PathBuf, reason: String },

    #[error("instrument groups: {reason}")]
    Groups { reason: String },

    #[error("{0}")]
    PhaseLog(#[from] crate::phase_log::PhaseLogError),

    #[error("cannot connect to {target}: {reason}; is the server running, and are host and port in the controller DSN right?")]
    Unreachable { target: String, reason: String },

    #[error(
        "access denied for {target} (MySQL error {code}: {message}); check the user and password \
         of the controller DSN from {origin}"
    )]
    AccessDenied {
        target: String,
        code: u16,
        message: String,
        origin: String,
    },

    #[error(
        "{target} may not {action} (MySQL error {code}: {message}); as an admin run: GRANT \
         SELECT, UPDATE ON performance_schema.* TO {account}; GRANT SELECT, CREATE, INSERT, \
         DELETE ON psprobe.* TO {account};"
    )]
    NoPrivilege {
        target: String,
        account: String,
        action: String,
        code: u16,
        message: String,
    },

    #[error(
        "performance_schema is OFF on {target} ({version}); runtime scenarios need it ON: set \
         performance_schema=ON under [mysqld] in my.cnf and restart the server"
    )]
    PsOff { target: String, version: String },

    #[error("{target} failed to {action}: MySQL error {code}: {message}")]
    Sql {
        target: String,
        action: String,
        code: u16,
        message: String,
    },

    #[error("lost the connection to {target} while trying to {action}: {reason}")]
    Connection {
        target: String,
        action: String,
        reason: String,
    },

    #[error("unknown scenario '{name}'; valid scenarios: {}", valid.join(", "))]
    UnknownScenario { name: String, valid: Vec<String> },

    #[error(
        "scenario '{name}' needs a server restart (performance_schema=OFF and startup options are \
         startup-only settings): schedule it in `psprobe proxy --scenarios ...` with \
         --restart-cmd 'CMD {{pfs}} {{opts}}' (`psprobe ps apply` cannot restart the server). \
         Nothing was changed"
    )]
    NeedsRestart { name: String },

    #[error("scenario '{name}' has no startup form: {reason}")]
    StartupScenario { name: String, reason: String },

    #[error("restart hook: {reason}; check --restart-cmd")]
    Restart { reason: String },

    #[error("the server is down after a restart of psprobe's: {reason}; check --restart-cmd")]
    ServerDown { reason: String },

    #[error(
        "scenario 'original' is the snapshot of the settings psprobe found; restore it from its \
         snapshot (Controller::restore) rather than applying it directly"
    )]
    OriginalNeedsSnapshot,

    #[error(
        "{what} did not take effect on {target}: {} of {checked} rows differ: {}{}",
        mismatches.len(),
        mismatches.iter().take(MISMATCHES_SHOWN).cloned().collect::<Vec<_>>().join("; "),
        if mismatches.len() > MISMATCHES_SHOWN { format!("; and {} more", mismatches.len() - MISMATCHES_SHOWN) } else { String::new() }
    )]
    Verify {
        what: String,
        target: String,
        checked: usize,
        /// Each differing row as `Mismatch` renders it (model/setup_tables.rs).
        mismatches: Vec<String>,
    },

    #[error("state file {path}: cannot {action}: {reason}")]
    StateFile {
        path: PathBuf,
        action: &'static str,
        reason: String,
    },

    #[error("state file {path} is not a psprobe snapshot this version can read: {reason}")]
    StateFormat { path: PathBuf, reason: String },

    #[error(
        "no snapshot at {path} nor on the server: nothing to restore (psprobe ps apply saves one \
         before its first change; pass --state-file or --state-dir if it was saved elsewhere)"
    )]
    NoSnapshot { path: PathBuf },

    #[error(
        "state file {path} holds a snapshot of {saved}, but the controller DSN points at {found}; \
         restore that server first or use another --state-file"
    )]
    WrongServer {
        path: PathBuf,
        saved: String,
        found: String,
    },

    #[error(
        "not restoring the snapshot {summary}; {differ} setting(s) differ from it. Nothing was \
         changed. To keep the live settings run `{discard}`; to write the snapshot back anyway \
         run `{force}` (with the controller DSN in {env})",
        env = super::DSN_ENV
    )]
    StaleSnapshot {
        /// `WHERE (taken WHEN): WHY`.
        summary: String,
        differ: usize,
        discard: String,
        force: String,
    },

    #[error(
        "the snapshot {origin} is of a run that restarted the server as {mode} and was stopped \
         before it restarted it back, so its settings cannot be written yet: {what}"
    )]
    RestartFirst {
        origin: String,
        mode: String,
        /// What to do: pass --restart-cmd, or restart by hand and run `ps restore`.
        what: String,
    },

    #[error(
        "a psprobe controller is leading on {target} (connection {connection}); stop it first \
         (it restores the settings itself when it stops)"
    )]
    ControllerRunning { target: String, connection: u64 },

    #[error(
        "a snapshot left by a psprobe run that did not finish is on {target} (psprobe.snapshot, \
         taken {taken_at}); resolve it first with `psprobe ps restore` (or `psprobe ps restore \
         --discard` to keep the live settings)"
    )]
    LeftOnServer { target: String, taken_at: String },

    #[error(
        "another psprobe ({by}) leads the schedule on {target} now: this one was stopped or cut \
         off for over {stale_after:?} and was taken over; that psprobe restores the settings, \
         this one follows"
    )]
    LostLead {
        target: String,
        /// The leader seen holding the lock now, as its heartbeat names it.
        by: String,
        stale_after: std::time::Duration,
    },

    #[error(
        "{target} did not answer for {waited:?} ({reason}); nothing is changed until it answers"
    )]
    Stalled {
        target: String,
        waited: std::time::Duration,
        reason: String,
    },

    /// Boxed: the error travels through every controller `Result`, and this is its largest.
    #[error("{0}")]
    NotRestored(Box<NotRestored>),

    #[error("cannot find a directory for state files: set XDG_STATE_HOME or HOME, or pass --state-dir or --state-file")]
    NoStateDir,
}

/// A restore that could not finish: what is left on the server and the command that finishes.
#[derive(Debug, thiserror::Error)]
#[error(
    "could not restore the performance_schema settings of {target} within {within:?} ({reason}); \
     psprobe last applied {left}, so {differ} setting(s) may differ from before the run. The \
     snapshot is kept in {state_file} and on the server: once the server answers run \
     `{command}` (with the controller DSN in {env})",
    env = super::DSN_ENV
)]
pub struct NotRestored {
    pub target: String,
    pub within: std::time::Duration,
    pub reason: String,
    pub left: String,
    pub differ: String,
    pub state_file: PathBuf,
    pub command: String,
}

impl ControllerError {
    /// The controller ended with settings of psprobe's still on the server (a restore that
    /// could not finish): a stop then exits with [`EXIT_NOT_RESTORED`].
    pub fn leaves_server_changed(&self) -> bool {
        matches!(self, ControllerError::NotRestored(_))
    }
}

/// Exit status of a `psprobe proxy` that stopped without restoring the settings it changed.
pub(crate) const EXIT_NOT_RESTORED: u8 = 3;

pub(crate) type Result<T, E = ControllerError> = std::result::Result<T, E>;
