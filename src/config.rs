//! Command line and TOML configuration, merged and validated once: flags win over the file,
//! the file wins over defaults. Every error names the setting and what to do about it.
//!
//! This is the composition: `psprobe proxy`'s flags and the `[proxy]` table, each value picked
//! (flag, else file) and handed to the module that owns it, which applies its defaults and
//! checks (`proxy::config`, `observe::config`, `metrics::config`, `admin::config`, TLS in
//! `tls`); checks across modules (listen vs metrics) stay here. Shared readers and the error
//! type are in `setting`.
//!
//! Must not: read the controller's credentials from the command line or print them.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Args;
use psprobe_core::digest::DigestStyle;
use serde::Deserialize;

use crate::admin::config::{self as admin_config, AdminConfig};
use crate::duration::duration_arg;
use crate::metrics::config as metrics_config;
use crate::observe::config as observe_config;
use crate::proxy::config as proxy_config;
use crate::proxy::ProxySettings;
use crate::setting::GivenDuration;

pub(crate) use crate::proxy::config::{
    DEFAULT_CLIENT_HANDSHAKE_TIMEOUT, DEFAULT_UPSTREAM_KEEPALIVE,
};
pub(crate) use crate::setting::ConfigError;

#[derive(Debug, Args)]
pub(crate) struct ProxyArgs {
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
    /// How connections are run: `work-stealing` runs them on tokio's shared multi-threaded
    /// pool, where any worker may take any connection; `loops` puts each connection (both
    /// legs) on one of a pool of single-threaded event loops, the one with the fewest
    /// connections when it arrives (about twice the rate at 1-2 busy clients; see
    /// docs/performance.md before using it with psprobe's controller) [default:
    /// work-stealing].
    #[arg(long, value_name = "MODE", value_parser = ["loops", "work-stealing"])]
    pub relay_runtime: Option<String>,
    /// Event loops of `--relay-runtime loops` (given alone, it asks for loops) [default: one
    /// per CPU psprobe may run on].
    #[arg(long, value_name = "N")]
    pub relay_threads: Option<usize>,
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
    /// Serve no live page on the metrics port (`/`: the run so far, with the report's charts,
    /// refreshed as segments finish; `/report.json`: its JSON report).
    #[arg(long)]
    pub no_live_page: bool,
    /// Log filter (error, warn, info, debug, trace, or a tracing filter) [default: info, or RUST_LOG].
    #[arg(long, value_name = "FILTER")]
    pub log: Option<String>,
    #[command(flatten)]
    pub schedule: crate::controller::schedule::args::ScheduleArgs,
    #[command(flatten)]
    pub tls: crate::tls::TlsArgs,
    #[command(flatten)]
    pub duet: DuetProxyArgs,
}

/// `psprobe proxy --duet-upstream` and its companions (checked in src/proxy_duet.rs).
#[derive(Debug, Args, Default)]
pub(crate) struct DuetProxyArgs {
    /// Run --scenarios as a duet (docs/measurement.md, "Duet runs"): HOST:PORT of a second
    /// instance of your server on the same host, a clone of --upstream's (same version, same
    /// data, same accounts). Every phase is entered by restart on both servers at once, into
    /// the two scenarios of a pair, measured over the same seconds, the roles swapped at the
    /// next phase. Its clients connect to --duet-listen: drive both ports with the same load.
    /// Not valid for writes that must reach one database, servers on different hosts, or a
    /// disk one side saturates.
    #[arg(long, value_name = "HOST:PORT")]
    pub duet_upstream: Option<String>,
    /// Where the second instance's clients connect (side b's proxy); needed with
    /// --duet-upstream.
    #[arg(long, value_name = "IP:PORT", requires = "duet_upstream")]
    pub duet_listen: Option<String>,
    /// Side b's /metrics, /healthz and live page [default: a free port on --metrics's address,
    /// printed at start as duet_metrics=].
    #[arg(long, value_name = "IP:PORT", requires = "duet_upstream")]
    pub duet_metrics: Option<String>,
    /// Restarts the second instance, as --restart-cmd does the first ({pfs}, {opts}); needed
    /// with --duet-upstream.
    #[arg(long, value_name = "CMD", requires = "duet_upstream")]
    pub duet_restart_cmd: Option<String>,
    /// The second instance's mysqld pid file (read again after every restart): each phase
    /// then records its CPU time, and with --mysqld-pid-file for the first the report says
    /// what share of the CPU each side got.
    #[arg(long, value_name = "FILE", requires = "duet_upstream")]
    pub duet_mysqld_pid_file: Option<PathBuf>,
    /// The second instance's controller DSN, when its accounts differ from the first's
    /// [default: the controller's DSN with --duet-upstream's host and port].
    #[arg(long, value_name = "FILE", requires = "duet_upstream")]
    pub duet_controller_dsn_file: Option<PathBuf>,
    /// Where each side's psprobe proxy runs: two CPU lists as `taskset -c` takes them, A/B
    /// (e.g. 0-1/2-3), or `auto` (this process's CPUs in two halves). Each side's proxy has
    /// worker threads of its own either way; pinned, the restart commands run on their side's
    /// CPUs too, so a server a command starts directly (not through systemd) inherits them
    /// [default: not pinned].
    #[arg(long, value_name = "A/B|auto", requires = "duet_upstream")]
    pub duet_cpus: Option<String>,
    /// Side b's phase log [default: side a's with .b before its extension].
    #[arg(long, value_name = "FILE", requires = "duet_upstream")]
    pub duet_phase_log: Option<PathBuf>,
}

/// The `[proxy]` table of the config file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ProxyFile {
    pub listen: Option<String>,
    pub upstream: Option<String>,
    pub metrics: Option<String>,
    pub connect_timeout: Option<String>,
    pub shutdown_grace: Option<String>,
    pub listen_backlog: Option<u32>,
    pub max_connections: Option<usize>,
    pub client_handshake_timeout: Option<String>,
    pub upstream_keepalive: Option<String>,
    pub relay_runtime: Option<String>,
    pub relay_threads: Option<usize>,
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
    /// `false`: no live page on the metrics port.
    pub live_page: Option<bool>,
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

/// Everything `psprobe proxy` runs with.
#[derive(Debug, Clone)]
pub(crate) struct ProxyConfig {
    pub listen: SocketAddr,
    pub metrics: SocketAddr,
    pub settings: ProxySettings,
    /// Backlog of the client listener.
    pub listen_backlog: u32,
    pub max_digests: usize,
    pub metrics_top_digests: usize,
    pub digest_fold_digits: bool,
    pub digest_style: DigestStyle,
    /// The admin interface, when it is on (admin/config.rs).
    pub admin: Option<AdminConfig>,
    /// Bound on a metrics request's head arriving, and on its answer being written.
    pub metrics_timeout: Duration,
    /// The metrics port serves the live page (`/`, `/report.json`).
    pub live_page: bool,
    pub log: String,
}

impl ProxyConfig {
    pub(crate) fn from_args(args: &ProxyArgs) -> Result<Self, ConfigError> {
        let file = match &args.config {
            Some(path) => load_file(path)?.proxy,
            None => ProxyFile::default(),
        };
        Self::resolve(args, file)
    }

    /// The settings from the flags and the config file's `[proxy]` table (flags win): each
    /// module's options picked here, defaulted and checked by the module.
    pub(crate) fn resolve(args: &ProxyArgs, file: ProxyFile) -> Result<Self, ConfigError> {
        let proxy = proxy_config::Options {
            listen: args.listen.clone().or(file.listen),
            upstream: args.upstream.clone().or(file.upstream),
            connect_timeout: GivenDuration::new(args.connect_timeout, file.connect_timeout),
            shutdown_grace: GivenDuration::new(args.shutdown_grace, file.shutdown_grace),
            listen_backlog: args.listen_backlog.or(file.listen_backlog),
            max_connections: args.max_connections.or(file.max_connections),
            client_handshake_timeout: GivenDuration::new(
                args.client_handshake_timeout,
                file.client_handshake_timeout,
            ),
            upstream_keepalive: GivenDuration::new(
                args.upstream_keepalive,
                file.upstream_keepalive,
            ),
            relay_runtime: args.relay_runtime.clone().or(file.relay_runtime),
            relay_threads: args.relay_threads.or(file.relay_threads),
        };
        let metrics = metrics_config::Options {
            listen: args.metrics.clone().or(file.metrics),
            top_digests: args.metrics_top_digests.or(file.metrics_top_digests),
            timeout: GivenDuration::new(args.metrics_timeout, file.metrics_timeout),
            live_page: !args.no_live_page && file.live_page.unwrap_or(true),
        };
        let observe = observe_config::Options {
            max_digests: args.max_digests.or(file.max_digests),
            fold_digits: args.digest_fold_digits || file.digest_fold_digits.unwrap_or(false),
            style: args.digest_style.clone().or(file.digest_style),
        };
        let admin = admin_config::Options {
            listen: args.admin.clone().or(file.admin),
            user: args.admin_user.clone().or(file.admin_user),
            password_file: args
                .admin_password_file
                .clone()
                .or(file.admin_password_file),
            password_in_file: file.admin_password,
            max_query_size: args
                .admin_max_query_size
                .clone()
                .or(file.admin_max_query_size),
            password_on_command_line: args.admin_password.is_some(),
        };

        let proxy = proxy.resolve()?;
        let metrics_listen = metrics.listen()?;
        if proxy.listen == metrics_listen && proxy.listen.port() != 0 {
            return Err(ConfigError::SamePort(proxy.listen));
        }
        let metrics = metrics.resolve(observe.max_digests()?)?;
        let observe = observe.resolve()?;
        admin.check_command_line()?;
        let admin = admin.resolve()?;
        let log = args
            .log
            .clone()
            .or(file.log)
            .or_else(|| std::env::var("RUST_LOG").ok())
            .unwrap_or_else(|| "info".to_string());
        Ok(ProxyConfig {
            listen: proxy.listen,
            metrics: metrics.listen,
            settings: proxy.settings,
            listen_backlog: proxy.listen_backlog,
            max_digests: observe.max_digests,
            metrics_top_digests: metrics.top_digests,
            digest_fold_digits: observe.fold_digits,
            digest_style: observe.style,
            admin,
            metrics_timeout: metrics.timeout,
            live_page: metrics.live_page,
            log,
        })
    }

    /// Observation's part (it builds the observer).
    pub(crate) fn observe(&self) -> observe_config::Config {
        observe_config::Config {
            max_digests: self.max_digests,
            fold_digits: self.digest_fold_digits,
            style: self.digest_style,
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::config::DEFAULT_METRICS;
    use crate::proxy::config::{DEFAULT_CONNECT_TIMEOUT, DEFAULT_LISTEN, DEFAULT_UPSTREAM};
    use crate::proxy::limits::DEFAULT_LISTEN_BACKLOG;
    use crate::proxy::MaxConnections;

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
    fn relay_runtime_from_flags_and_file() {
        use crate::proxy::relay_pool::RelayRuntime;
        use std::num::NonZeroUsize;
        let c = ProxyConfig::from_args(&args(&[])).unwrap();
        assert_eq!(c.settings.relay, RelayRuntime::WorkStealing);
        let c = ProxyConfig::from_args(&args(&["--relay-runtime", "loops"])).unwrap();
        assert_eq!(c.settings.relay, RelayRuntime::Loops(None));
        let c = ProxyConfig::from_args(&args(&["--relay-threads", "4"])).unwrap();
        assert_eq!(c.settings.relay, RelayRuntime::Loops(NonZeroUsize::new(4)));
        let c = ProxyConfig::from_args(&args(&["--relay-runtime", "work-stealing"])).unwrap();
        assert_eq!(c.settings.relay, RelayRuntime::WorkStealing);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("relay.toml");
        let p = path.to_str().unwrap();
        std::fs::write(&path, "[proxy]\nrelay_threads = 0\n").unwrap();
        let e = ProxyConfig::from_args(&args(&["-c", p]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("relay_threads must be at least 1"), "{e}");
        std::fs::write(&path, "[proxy]\nrelay_runtime = \"threads\"\n").unwrap();
        let e = ProxyConfig::from_args(&args(&["-c", p]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("loops, work-stealing"), "{e}");
        // A flag's bad mode is clap's error, naming the flag and the modes.
        let e = <Proxy as clap::Parser>::try_parse_from(["p", "--relay-runtime", "steal"])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("--relay-runtime") && e.contains("work-stealing"),
            "{e}"
        );
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
