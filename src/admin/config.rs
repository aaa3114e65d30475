//! The admin interface's options: its address, user, password (from a file, the environment
//! or the config file, never the command line) and the longest statement it accepts, with
//! their defaults and checks.
//!
//! Must not: take the password from the command line, put it in an error message or a
//! `Debug` output, or know another module's options.

use std::net::SocketAddr;
use std::path::PathBuf;

use crate::setting::{parse_addr, parse_size, ConfigError};

pub(crate) const ADMIN_PASSWORD_ENV: &str = "PSPROBE_ADMIN_PASSWORD";
/// Smallest `admin_max_query_size`: what clients send on connect must fit.
pub(crate) const MIN_ADMIN_QUERY_BYTES: usize = 4 << 10;
/// Largest `admin_max_query_size` (a MySQL packet holds 16 MiB; a statement this long is no
/// question about psprobe's tables).
pub(crate) const MAX_ADMIN_QUERY_BYTES: usize = 64 << 20;

/// The admin interface's options as given (each the flag's, else the file's).
#[derive(Default)]
pub(crate) struct Options {
    pub listen: Option<String>,
    pub user: Option<String>,
    pub password_file: Option<PathBuf>,
    /// `admin_password` in the config file.
    pub password_in_file: Option<String>,
    pub max_query_size: Option<String>,
    /// `--admin-password` was given (refused, whatever it says).
    pub password_on_command_line: bool,
}

/// The admin interface's address and credentials.
#[derive(Clone)]
pub(crate) struct AdminConfig {
    pub listen: SocketAddr,
    pub user: String,
    pub password: String,
    /// Longest statement accepted.
    pub max_query_bytes: usize,
}

impl std::fmt::Debug for AdminConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AdminConfig")
            .field("listen", &self.listen)
            .field("user", &self.user)
            .field("max_query_bytes", &self.max_query_bytes)
            .finish_non_exhaustive()
    }
}

impl Options {
    /// Refuses a password given on the command line (checked whether or not the interface
    /// is on).
    pub(crate) fn check_command_line(&self) -> Result<(), ConfigError> {
        if self.password_on_command_line {
            return Err(ConfigError::Invalid(format!(
                "--admin-password is not accepted: every user of this host can read the command \
                 line (ps, /proc/PID/cmdline); put the password in a mode-600 file given with \
                 --admin-password-file, in {ADMIN_PASSWORD_ENV}, or as admin_password in --config"
            )));
        }
        Ok(())
    }

    /// `None` when the interface is off (no address).
    pub(crate) fn resolve(self) -> Result<Option<AdminConfig>, ConfigError> {
        self.check_command_line()?;
        let Some(addr) = self.listen else {
            return Ok(None);
        };
        let listen = parse_addr("admin", &addr)?;
        let password = match self.password_file {
            Some(path) => Some(
                crate::secrets::read_secret_file(&path, "admin password")
                    .map_err(|e| ConfigError::Invalid(e.to_string()))?,
            ),
            None => std::env::var(ADMIN_PASSWORD_ENV)
                .ok()
                .or(self.password_in_file)
                .filter(|p| !p.is_empty()),
        };
        let password = password.ok_or_else(|| {
            let exposure = if listen.ip().is_loopback() {
                "anyone on this host could read psprobe's statistics"
            } else {
                "it listens beyond this host"
            };
            ConfigError::Invalid(format!(
                "--admin {listen} needs a password ({exposure}): set \
                 {ADMIN_PASSWORD_ENV}, or give --admin-password-file FILE, or \
                 admin_password in the config file"
            ))
        })?;
        let user = self.user.unwrap_or_else(|| super::DEFAULT_USER.to_string());
        let max_query_bytes = match self.max_query_size {
            Some(v) => query_size(&v)?,
            None => super::limits::MAX_QUERY_BYTES,
        };
        Ok(Some(AdminConfig {
            listen,
            user,
            password,
            max_query_bytes,
        }))
    }
}

fn query_size(value: &str) -> Result<usize, ConfigError> {
    let n = parse_size("admin_max_query_size", value)?;
    if !(MIN_ADMIN_QUERY_BYTES..=MAX_ADMIN_QUERY_BYTES).contains(&n) {
        return Err(ConfigError::Invalid(format!(
            "admin_max_query_size = {value:?} must be between {MIN_ADMIN_QUERY_BYTES} bytes \
             (4KiB) and {MAX_ADMIN_QUERY_BYTES} bytes (64MiB)"
        )));
    }
    Ok(n)
}
