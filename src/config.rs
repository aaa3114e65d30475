//! Command line and TOML configuration, merged and validated once: flags win over the file,
//! the file wins over defaults. Every error names the setting and what to do about it.
//!
//! Must not: read the controller's credentials from the command line or print them.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Args;
use psprobe_core::digest::DigestStyle;
use serde::Deserialize;

use crate::duration::{duration_arg, parse_duration, DurationError};
use crate::metrics::DEFAULT_TOP_DIGESTS;
use crate::proxy::limits::DEFAULT_LISTEN_BACKLOG;
use crate::proxy::{MaxConnections, ProxySettings};
use crate::stats::DEFAULT_MAX_DIGESTS;

pub(crate) const DEFAULT_LISTEN: &str = "127.0.0.1:6033";
pub(crate) const DEFAULT_UPSTREAM: &str = "127.0.0.1:3306";
pub(crate) const DEFAULT_METRICS: &str = "127.0.0.1:9898";
pub(crate) const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
pub(crate) const DEFAULT_SHUTDOWN_GRACE: Duration = Duration::from_secs(10);
/// mysqld's own connect_timeout default: a client that has not answered the greeting by then
/// is not a client that is slow, it is one holding a slot.
pub(crate) const DEFAULT_CLIENT_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// A server behind a partition is given up after 4 times this (4 minutes): long enough for
/// any network hiccup, short enough that clients do not hang for TCP's default 15 minutes or,
/// waiting for an answer, forever.
pub(crate) const DEFAULT_UPSTREAM_KEEPALIVE: Duration = Duration::from_secs(60);
/// Linux's limit on TCP_KEEPIDLE and TCP_KEEPINTVL (seconds).
const MAX_UPSTREAM_KEEPALIVE: Duration = Duration::from_secs(32_767);

#[derive(Debug, Args)]
pub struct ProxyArgs {
    /// TOML config file; its [proxy] table sets the same options (flags override it).
    #[arg(long, short = 'c', value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Address clients connect to [default: 127.0.0.1:6033]. Port 0 picks a free port.
    #[arg(long, value_name = "IP:PORT")]
    pub listen: Option<String>,
    /// The MySQL / MariaDB server to forward to [default: 127.0.0.1:3306].
    #[arg(long, value_name = "HOST:PORT")]
    pub upstream: Option<String>,
    /// Address of the HTTP endpoint serving /metrics and /healthz [default: 127.0.0.1:9898].
    #[arg(long, value_name = "IP:PORT")]
    pub metrics: Option<String>,
    /// Give up connecting to the upstream after this long, e.g. 5s or 500ms [default: 5s].
    #[arg(long, value_name = "DURATION", value_parser = duration_arg)]
    pub connect_timeout: Option<Duration>,
    /// On SIGINT/SIGTERM, let open connections go on this long before closing them [default: 10s].
    #[arg(long, value_name = "DURATION", value_parser = duration_arg)]
    pub shutdown_grace: Option<Duration>,
    /// Client connections waiting to be accepted that the kernel queues (a burst of connects
    /// beyond it is dropped and retried by the clients' TCP seconds later). The kernel caps it
    /// at net.core.somaxconn (sysctl; often 4096) [default: 4096].
    #[arg(long, value_name = "N")]
    pub listen_backlog: Option<u32>,
    /// Client connections served at once; past it psprobe answers ERR 1040 "Too many
    /// connections" itself, as mysqld does. 0 = no limit [default: what psprobe's
    /// file-descriptor limit carries: (ulimit -n - 64) / 2; psprobe raises its soft limit to
    /// the hard one at start].
    #[arg(long, value_name = "N")]
    pub max_connections: Option<usize>,
    /// Close a client that has not sent its handshake response this long after it connected
    /// (slowloris protection; authentication after it is bounded by the server's own
    /// connect_timeout). 0 = no limit [default: 10s].
    #[arg(long, value_name = "DURATION", value_parser = duration_arg)]
    pub client_handshake_timeout: Option<Duration>,
    /// Check an upstream connection that has been silent this long with TCP keepalives, one
    /// every such interval; 3 unanswered, or data unacknowledged for 4 times as long, and the
    /// server is given up: its client's connection is closed and a command waiting for an
    /// answer counts as aborted. Without it, a partition leaves clients waiting for hours.
    /// 0 = the system's TCP defaults [default: 60s].
    #[arg(long, value_name = "DURATION", value_parser = duration_arg)]
    pub upstream_keepalive: Option<Duration>,
    /// Most query shapes (digests) tracked individually; past it new shapes count as `other`
    /// [default: 5000].
    #[arg(long, value_name = "N")]
    pub max_digests: Option<usize>,
    /// Digests exported as their own Prometheus series; the rest are summed under
    /// digest="other" [default: 50].
    #[arg(long, value_name = "N")]
    pub metrics_top_digests: Option<usize>,
    /// Fold digits inside identifiers like pt-fingerprint does (sbtest1 and sbtest2 become one
    /// digest, sbtest?). Off by default: different tables are different query shapes.
    #[arg(long)]
    pub digest_fold_digits: bool,
    /// How digests are spaced: pt (pt-fingerprint's spacing, pt-query-digest's ids) or mysql
    /// (one canonical spacing from the tokens, so `id=1` and `id = 1` share a digest; ids are
    /// psprobe's own) [default: pt].
    #[arg(long, value_name = "STYLE")]
    pub digest_style: Option<String>,
    /// Serve the MySQL-protocol admin interface here: read-only SQL (SQLite's dialect) over
    /// the tables digests, commands, phases, overhead, connections, scenarios and status, plus
    /// SHOW / DESCRIBE. Its password comes from --admin-password-file, PSPROBE_ADMIN_PASSWORD
    /// or `admin_password` in the config file, never from the command line; without one
    /// psprobe does not start.
    #[arg(long, value_name = "IP:PORT")]
    pub admin: Option<String>,
    /// User name of the admin interface [default: admin].
    #[arg(long, value_name = "NAME")]
    pub admin_user: Option<String>,
    /// File whose first line is the admin password (e.g. a mounted secret; keep it mode 600).
    /// Wins over PSPROBE_ADMIN_PASSWORD and `admin_password` in --config.
    #[arg(long, value_name = "FILE")]
    pub admin_password_file: Option<PathBuf>,
    /// Longest admin statement accepted, e.g. 65536, 64KiB or 4MiB; a longer one is answered
    /// with ERROR 1153 and dropped as it arrives, never buffered [default: 1MiB].
    #[arg(long, value_name = "BYTES")]
    pub admin_max_query_size: Option<String>,
    /// Refused: a password on the command line is readable by every user of the host.
    #[arg(long, hide = true, value_name = "PASSWORD")]
    pub admin_password: Option<String>,
    /// A /metrics or /healthz request must send its whole request head within this long, or it
    /// is answered 408 Request Timeout and closed; writing the answer gets as long again
    /// [default: 10s].
    #[arg(long, value_name = "DURATION", value_parser = duration_arg)]
    pub metrics_timeout: Option<Duration>,
    /// Log filter (error, warn, info, debug, trace, or a tracing filter) [default: info, or RUST_LOG].
    #[arg(long, value_name = "FILTER")]
    pub log: Option<String>,
    #[command(flatten)]
    pub schedule: crate::controller::schedule::args::ScheduleArgs,
    #[command(flatten)]
    pub tls: crate::tls::TlsArgs,
}

/// The `[proxy]` table of the config file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProxyFile {
    pub listen: Option<String>,
    pub upstream: Option<String>,
    pub metrics: Option<String>,
    pub connect_timeout: Option<String>,
    pub shutdown_grace: Option<String>,
    pub listen_backlog: Option<u32>,
    pub max_connections: Option<usize>,
    pub client_handshake_timeout: Option<String>,
    pub upstream_keepalive: Option<String>,
    pub max_digests: Option<usize>,
    pub metrics_top_digests: Option<usize>,
    pub digest_fold_digits: Option<bool>,
    pub digest_style: Option<String>,
    pub admin: Option<String>,
    pub admin_user: Option<String>,
    pub admin_password: Option<String>,
    pub admin_password_file: Option<PathBuf>,
    pub admin_max_query_size: Option<String>,
    pub metrics_timeout: Option<String>,
    pub log: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ConfigFile {
    #[serde(default)]
    pub proxy: ProxyFile,
    /// Read by the controller (`psprobe ps`); one file can serve both.
    #[serde(default)]
    pub controller: Option<toml::Table>,
    /// Accepted here so one file serves both; the controller's catalog reads them.
    #[serde(default)]
    #[allow(dead_code)]
    pub scenario: Option<Vec<toml::Table>>,
    /// Instrument groups for `--attribute`, read by the controller's catalog likewise.
    #[serde(default)]
    #[allow(dead_code)]
    pub group: Option<Vec<toml::Table>>,
    /// TLS options (`crate::tls::settings`).
    #[serde(default)]
    pub tls: Option<crate::tls::TlsFile>,
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("config file {path} is not valid: {message}")]
    Parse { path: PathBuf, message: String },
    #[error("{setting} = {value:?} is not an IP:PORT address (example: 127.0.0.1:6033)")]
    Address {
        setting: &'static str,
        value: String,
    },
    #[error("upstream = {0:?} needs a host and a port (example: 127.0.0.1:3306)")]
    Upstream(String),
    #[error("{setting} = {value:?} is not a size in bytes (examples: 65536, 64KiB, 4MiB)")]
    Size {
        setting: &'static str,
        value: String,
    },
    #[error(transparent)]
    Duration(#[from] DurationError),
    #[error("listen and upstream are the same address {0}: the proxy would connect to itself")]
    Loop(SocketAddr),
    #[error("listen and metrics are the same address {0}: give each its own port")]
    SamePort(SocketAddr),
    #[error("{0}")]
    Invalid(String),
}

/// Everything `psprobe proxy` runs with.
#[derive(Debug, Clone)]
pub struct ProxyConfig {
    pub listen: SocketAddr,
    pub metrics: SocketAddr,
    pub settings: ProxySettings,
    /// Backlog of the client listener.
    pub listen_backlog: u32,
    pub max_digests: usize,
    pub metrics_top_digests: usize,
    pub digest_fold_digits: bool,
    pub digest_style: DigestStyle,
    pub admin: Option<AdminConfig>,
    /// Bound on a metrics request's head arriving, and on its answer being written.
    pub metrics_timeout: Duration,
    pub log: String,
}

/// The admin interface's address and credentials.
#[derive(Clone)]
pub struct AdminConfig {
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

pub(crate) const ADMIN_PASSWORD_ENV: &str = "PSPROBE_ADMIN_PASSWORD";
/// Smallest `admin_max_query_size`: what clients send on connect must fit.
pub(crate) const MIN_ADMIN_QUERY_BYTES: usize = 4 << 10;
/// Largest `admin_max_query_size` (a MySQL packet holds 16 MiB; a statement this long is no
/// question about psprobe's tables).
pub(crate) const MAX_ADMIN_QUERY_BYTES: usize = 64 << 20;

impl ProxyConfig {
    pub fn from_args(args: &ProxyArgs) -> Result<Self, ConfigError> {
        let file = match &args.config {
            Some(path) => load_file(path)?.proxy,
            None => ProxyFile::default(),
        };
        Self::resolve(args, file)
    }

    /// The settings from the flags and the config file's `[proxy]` table (flags win).
    pub fn resolve(args: &ProxyArgs, file: ProxyFile) -> Result<Self, ConfigError> {
        let pick = |flag: &Option<String>, from_file: Option<String>, default: &str| {
            flag.clone()
                .or(from_file)
                .unwrap_or_else(|| default.to_string())
        };
        let listen = parse_addr("listen", &pick(&args.listen, file.listen, DEFAULT_LISTEN))?;
        let metrics = parse_addr(
            "metrics",
            &pick(&args.metrics, file.metrics, DEFAULT_METRICS),
        )?;
        let upstream = pick(&args.upstream, file.upstream, DEFAULT_UPSTREAM);
        validate_upstream(&upstream)?;
        let connect_timeout = duration_setting(
            args.connect_timeout,
            file.connect_timeout,
            "connect_timeout",
        )?
        .unwrap_or(DEFAULT_CONNECT_TIMEOUT);
        let shutdown_grace =
            duration_setting(args.shutdown_grace, file.shutdown_grace, "shutdown_grace")?
                .unwrap_or(DEFAULT_SHUTDOWN_GRACE);
        let client_handshake_timeout = Some(
            duration_setting(
                args.client_handshake_timeout,
                file.client_handshake_timeout,
                "client_handshake_timeout",
            )?
            .unwrap_or(DEFAULT_CLIENT_HANDSHAKE_TIMEOUT),
        )
        .filter(|d| !d.is_zero());
        let upstream_keepalive = Some(
            duration_setting(
                args.upstream_keepalive,
                file.upstream_keepalive,
                "upstream_keepalive",
            )?
            .unwrap_or(DEFAULT_UPSTREAM_KEEPALIVE),
        )
        .filter(|d| !d.is_zero());
        if let Some(idle) = upstream_keepalive {
            // The kernel takes whole seconds, at most 32767 (TCP_KEEPIDLE and TCP_KEEPINTVL).
            if idle < Duration::from_secs(1) || idle > MAX_UPSTREAM_KEEPALIVE {
                return Err(ConfigError::Invalid(format!(
                    "upstream_keepalive must be 0 (off) or between 1s and {}s (the kernel's \
                     limit), not {idle:?}",
                    MAX_UPSTREAM_KEEPALIVE.as_secs()
                )));
            }
        }
        let listen_backlog = args
            .listen_backlog
            .or(file.listen_backlog)
            .unwrap_or(DEFAULT_LISTEN_BACKLOG);
        if listen_backlog == 0 {
            return Err(ConfigError::Invalid(
                "listen_backlog must be at least 1 (the kernel caps it at net.core.somaxconn)"
                    .into(),
            ));
        }
        let max_connections = match args.max_connections.or(file.max_connections) {
            None => MaxConnections::FromFdLimit,
            Some(0) => MaxConnections::Unlimited,
            Some(n) => MaxConnections::At(n),
        };
        if let Ok(up) = upstream.parse::<SocketAddr>() {
            if up == listen {
                return Err(ConfigError::Loop(listen));
            }
        }
        if listen == metrics && listen.port() != 0 {
            return Err(ConfigError::SamePort(listen));
        }
        let max_digests = args
            .max_digests
            .or(file.max_digests)
            .unwrap_or(DEFAULT_MAX_DIGESTS);
        if max_digests == 0 {
            return Err(ConfigError::Invalid(
                "max_digests must be at least 1".into(),
            ));
        }
        let metrics_top_digests = args
            .metrics_top_digests
            .or(file.metrics_top_digests)
            .unwrap_or(DEFAULT_TOP_DIGESTS);
        if metrics_top_digests > max_digests {
            return Err(ConfigError::Invalid(format!(
                "metrics_top_digests ({metrics_top_digests}) cannot exceed max_digests ({max_digests})"
            )));
        }
        let digest_style = match args.digest_style.clone().or(file.digest_style) {
            Some(v) => v
                .parse()
                .map_err(|e: psprobe_core::digest::ParseDigestStyleError| {
                    ConfigError::Invalid(format!("digest_style: {e}"))
                })?,
            None => DigestStyle::default(),
        };
        if args.admin_password.is_some() {
            return Err(ConfigError::Invalid(format!(
                "--admin-password is not accepted: every user of this host can read the command \
                 line (ps, /proc/PID/cmdline); put the password in a mode-600 file given with \
                 --admin-password-file, in {ADMIN_PASSWORD_ENV}, or as admin_password in --config"
            )));
        }
        let metrics_timeout = match duration_setting(
            args.metrics_timeout,
            file.metrics_timeout,
            "metrics_timeout",
        )? {
            Some(d) => positive("metrics_timeout", d)?,
            None => crate::metrics::http::DEFAULT_REQUEST_TIMEOUT,
        };
        let admin = match args.admin.clone().or(file.admin) {
            None => None,
            Some(addr) => {
                let listen = parse_addr("admin", &addr)?;
                let password_file = args
                    .admin_password_file
                    .clone()
                    .or(file.admin_password_file);
                let password = match password_file {
                    Some(path) => Some(
                        crate::secrets::read_secret_file(&path, "admin password")
                            .map_err(|e| ConfigError::Invalid(e.to_string()))?,
                    ),
                    None => std::env::var(ADMIN_PASSWORD_ENV)
                        .ok()
                        .or(file.admin_password)
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
                let user = args
                    .admin_user
                    .clone()
                    .or(file.admin_user)
                    .unwrap_or_else(|| crate::admin::DEFAULT_USER.to_string());
                let max_query_bytes = match args
                    .admin_max_query_size
                    .clone()
                    .or(file.admin_max_query_size)
                {
                    Some(v) => admin_query_size(&v)?,
                    None => crate::admin::engine::MAX_QUERY_BYTES,
                };
                Some(AdminConfig {
                    listen,
                    user,
                    password,
                    max_query_bytes,
                })
            }
        };
        let log = args
            .log
            .clone()
            .or(file.log)
            .or_else(|| std::env::var("RUST_LOG").ok())
            .unwrap_or_else(|| "info".to_string());
        Ok(ProxyConfig {
            listen,
            metrics,
            settings: ProxySettings {
                upstream,
                connect_timeout,
                shutdown_grace,
                max_connections,
                client_handshake_timeout,
                upstream_keepalive,
            },
            listen_backlog,
            max_digests,
            metrics_top_digests,
            digest_fold_digits: args.digest_fold_digits || file.digest_fold_digits.unwrap_or(false),
            digest_style,
            admin,
            metrics_timeout,
            log,
        })
    }
}

/// The TLS settings of `psprobe proxy`: flags, then the `[tls]` table. Generated files go to
/// STATE_DIR/tls: --state-dir, else `[controller] state_dir`, else the XDG default.
pub(crate) fn tls_settings(args: &ProxyArgs) -> Result<crate::tls::TlsSettings, ConfigError> {
    let file = match &args.config {
        Some(path) => load_file(path)?,
        None => ConfigFile::default(),
    };
    let state_dir = args
        .schedule
        .state_dir
        .clone()
        .or_else(|| {
            let dir = file.controller.as_ref()?.get("state_dir")?.as_str()?;
            Some(PathBuf::from(dir))
        })
        .or_else(|| {
            crate::controller::paths::default_state_dir(
                std::env::var("XDG_STATE_HOME").ok().as_deref(),
                std::env::var("HOME").ok().as_deref(),
            )
        });
    crate::tls::TlsSettings::resolve(&args.tls, file.tls, state_dir.as_deref())
        .map_err(|e| ConfigError::Invalid(e.to_string()))
}

fn load_file(path: &Path) -> Result<ConfigFile, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    parse_file(&text, path)
}

/// The config file's text, parsed; `path` only names it in errors.
pub(crate) fn parse_file(text: &str, path: &Path) -> Result<ConfigFile, ConfigError> {
    toml::from_str(text).map_err(|e| ConfigError::Parse {
        path: path.to_path_buf(),
        message: e.message().to_string(),
    })
}

fn parse_addr(setting: &'static str, value: &str) -> Result<SocketAddr, ConfigError> {
    value.parse().map_err(|_| ConfigError::Address {
        setting,
        value: value.to_string(),
    })
}

fn validate_upstream(value: &str) -> Result<(), ConfigError> {
    if value.contains('@') || value.contains("://") {
        // Not quoted: it may hold a password.
        return Err(ConfigError::Invalid(
            "upstream is HOST:PORT, without a scheme or credentials: psprobe forwards each \
             client's own login (the controller's credentials go in PSPROBE_CONTROLLER_DSN or \
             --controller-dsn-file)"
                .into(),
        ));
    }
    let bad = || ConfigError::Upstream(value.to_string());
    let (host, port) = value.rsplit_once(':').ok_or_else(bad)?;
    if host.is_empty() || port.parse::<u16>().map_or(true, |p| p == 0) {
        return Err(bad());
    }
    Ok(())
}

/// The flag (typed by clap), else the file's value (a string, named in its error), else `None`.
fn duration_setting(
    arg: Option<Duration>,
    file: Option<String>,
    setting: &'static str,
) -> Result<Option<Duration>, ConfigError> {
    match arg {
        Some(d) => Ok(Some(d)),
        None => Ok(file.map(|v| parse_duration(setting, &v)).transpose()?),
    }
}

fn positive(setting: &'static str, d: Duration) -> Result<Duration, ConfigError> {
    if d.is_zero() {
        return Err(ConfigError::Invalid(format!(
            "{setting} must be longer than 0s"
        )));
    }
    Ok(d)
}

fn admin_query_size(value: &str) -> Result<usize, ConfigError> {
    let n = parse_size("admin_max_query_size", value)?;
    if !(MIN_ADMIN_QUERY_BYTES..=MAX_ADMIN_QUERY_BYTES).contains(&n) {
        return Err(ConfigError::Invalid(format!(
            "admin_max_query_size = {value:?} must be between {MIN_ADMIN_QUERY_BYTES} bytes \
             (4KiB) and {MAX_ADMIN_QUERY_BYTES} bytes (64MiB)"
        )));
    }
    Ok(n)
}

/// Parses a byte count: `65536`, `64k`, `64KiB`, `4M`, `4MiB`, `1G` (binary multiples).
pub(crate) fn parse_size(setting: &'static str, value: &str) -> Result<usize, ConfigError> {
    let bad = || ConfigError::Size {
        setting,
        value: value.to_string(),
    };
    let v = value.trim();
    let split = v.find(|c: char| !c.is_ascii_digit()).unwrap_or(v.len());
    let (number, unit) = v.split_at(split);
    let number: usize = number.parse().map_err(|_| bad())?;
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        _ => return Err(bad()),
    };
    number.checked_mul(1 << shift).ok_or_else(bad)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `psprobe proxy`'s flags alone (the CLI root is above this module).
    #[derive(Debug, clap::Parser)]
    struct Proxy {
        #[command(flatten)]
        args: ProxyArgs,
    }

    fn args(extra: &[&str]) -> ProxyArgs {
        let mut argv = vec!["psprobe-proxy"];
        argv.extend_from_slice(extra);
        <Proxy as clap::Parser>::try_parse_from(argv)
            .expect("valid argv")
            .args
    }

    #[test]
    fn defaults() {
        let c = ProxyConfig::from_args(&args(&[])).unwrap();
        assert_eq!(c.listen.to_string(), DEFAULT_LISTEN);
        assert_eq!(c.metrics.to_string(), DEFAULT_METRICS);
        assert_eq!(c.settings.upstream, DEFAULT_UPSTREAM);
        assert_eq!(c.settings.connect_timeout, DEFAULT_CONNECT_TIMEOUT);
        assert_eq!(c.listen_backlog, DEFAULT_LISTEN_BACKLOG);
        assert_eq!(c.settings.max_connections, MaxConnections::FromFdLimit);
        assert_eq!(
            c.settings.client_handshake_timeout,
            Some(DEFAULT_CLIENT_HANDSHAKE_TIMEOUT)
        );
        assert_eq!(
            c.settings.upstream_keepalive,
            Some(DEFAULT_UPSTREAM_KEEPALIVE)
        );
    }

    #[test]
    fn load_limits() {
        let c = ProxyConfig::from_args(&args(&[
            "--listen-backlog",
            "100",
            "--max-connections",
            "0",
            "--client-handshake-timeout",
            "0",
            "--upstream-keepalive",
            "0",
        ]))
        .unwrap();
        assert_eq!(c.listen_backlog, 100);
        assert_eq!(c.settings.max_connections, MaxConnections::Unlimited);
        assert_eq!(c.settings.client_handshake_timeout, None);
        assert_eq!(
            c.settings.upstream_keepalive, None,
            "0: the system's defaults"
        );
        let c = ProxyConfig::from_args(&args(&[
            "--max-connections",
            "7",
            "--client-handshake-timeout",
            "1500ms",
        ]))
        .unwrap();
        assert_eq!(c.settings.max_connections, MaxConnections::At(7));
        assert_eq!(
            c.settings.client_handshake_timeout,
            Some(Duration::from_millis(1500))
        );
        let e = ProxyConfig::from_args(&args(&["--listen-backlog", "0"])).unwrap_err();
        assert!(e.to_string().contains("somaxconn"), "{e}");
        for bad in ["500ms", "10h"] {
            let e = ProxyConfig::from_args(&args(&["--upstream-keepalive", bad])).unwrap_err();
            assert!(
                e.to_string().contains("between 1s and 32767s"),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn file_then_flags_win() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("psprobe.toml");
        std::fs::write(
            &path,
            "[proxy]\nlisten = \"127.0.0.1:7000\"\nupstream = \"db.example:3307\"\nconnect_timeout = \"250ms\"\nupstream_keepalive = \"15s\"\n",
        )
        .unwrap();
        let p = path.to_str().unwrap();
        let c = ProxyConfig::from_args(&args(&["--config", p])).unwrap();
        assert_eq!(c.listen.port(), 7000);
        assert_eq!(c.settings.upstream, "db.example:3307");
        assert_eq!(c.settings.connect_timeout, Duration::from_millis(250));
        assert_eq!(c.settings.upstream_keepalive, Some(Duration::from_secs(15)));
        let c =
            ProxyConfig::from_args(&args(&["--config", p, "--listen", "127.0.0.1:7001"])).unwrap();
        assert_eq!(c.listen.port(), 7001);
    }

    #[test]
    fn clear_errors() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bad.toml");
        std::fs::write(&path, "[proxy]\nlisten_addr = \"x\"\n").unwrap();
        let e = ProxyConfig::from_args(&args(&["-c", path.to_str().unwrap()])).unwrap_err();
        assert!(e.to_string().contains("listen_addr"), "{e}");
        let e = ProxyConfig::from_args(&args(&["--listen", "6033"])).unwrap_err();
        assert!(e.to_string().contains("IP:PORT"), "{e}");
        let e = ProxyConfig::from_args(&args(&["--upstream", "dbhost"])).unwrap_err();
        assert!(e.to_string().contains("host and a port"), "{e}");
        // A flag's duration is typed by clap, which names the flag; the file's, by the key.
        let e = <Proxy as clap::Parser>::try_parse_from(["p", "--connect-timeout", "soon"])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("--connect-timeout") && e.contains("not a duration"),
            "{e}"
        );
        std::fs::write(&path, "[proxy]\nconnect_timeout = \"soon\"\n").unwrap();
        let e = ProxyConfig::from_args(&args(&["-c", path.to_str().unwrap()])).unwrap_err();
        let e = e.to_string();
        assert!(
            e.contains("connect_timeout") && e.contains("duration"),
            "{e}"
        );
        let e = ProxyConfig::from_args(&args(&["--listen", "127.0.0.1:3306"])).unwrap_err();
        assert!(matches!(e, ConfigError::Loop(_)), "{e}");
        let e = ProxyConfig::from_args(&args(&["-c", "/nonexistent/psprobe.toml"])).unwrap_err();
        assert!(e.to_string().contains("cannot read"), "{e}");
        let e = ProxyConfig::from_args(&args(&["--digest-style", "tokens"])).unwrap_err();
        assert!(e.to_string().contains("use pt or mysql"), "{e}");
        let c = ProxyConfig::from_args(&args(&["--digest-style", "mysql"])).unwrap();
        assert_eq!(c.digest_style, DigestStyle::Mysql);
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("x", "65536").unwrap(), 65536);
        assert_eq!(parse_size("x", "64KiB").unwrap(), 64 << 10);
        assert_eq!(parse_size("x", "4M").unwrap(), 4 << 20);
        assert_eq!(parse_size("x", "1 mib").unwrap(), 1 << 20);
        assert!(parse_size("x", "1.5M").is_err());
        assert!(parse_size("x", "lots").is_err());
        assert!(parse_size("x", "99999999999999999999G").is_err());
    }

    #[test]
    fn passwords_stay_off_the_command_line() {
        let e = ProxyConfig::from_args(&args(&["--admin-password", "hunter2"])).unwrap_err();
        let text = e.to_string();
        assert!(text.contains("--admin-password-file"), "{text}");
        assert!(!text.contains("hunter2"), "{text}");
        let e = ProxyConfig::from_args(&args(&["--upstream", "mysql://u:hunter2@db:3306/"]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("without a scheme or credentials"), "{e}");
        assert!(!e.contains("hunter2"), "{e}");
    }

    #[test]
    fn admin_password_from_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pw");
        std::fs::write(&path, "from-file\n").unwrap();
        let c = ProxyConfig::from_args(&args(&[
            "--admin",
            "127.0.0.1:0",
            "--admin-password-file",
            path.to_str().unwrap(),
            "--admin-max-query-size",
            "64KiB",
        ]))
        .unwrap();
        let admin = c.admin.unwrap();
        assert_eq!(admin.password, "from-file");
        assert_eq!(admin.max_query_bytes, 64 << 10);
        let e = ProxyConfig::from_args(&args(&[
            "--admin",
            "127.0.0.1:0",
            "--admin-password-file",
            path.to_str().unwrap(),
            "--admin-max-query-size",
            "100",
        ]))
        .unwrap_err();
        assert!(e.to_string().contains("between 4096 bytes"), "{e}");
    }
}
