//! The proxy's own options: where it listens and with what backlog, the upstream, its
//! timeouts, connection limit and keepalive, with their defaults and checks. The root config
//! picks each value (flag, else the `[proxy]` table) and hands them here.
//!
//! Must not: read flags or files itself, or know another module's options.

use std::net::SocketAddr;
use std::time::Duration;

use crate::setting::{parse_addr, ConfigError, GivenDuration};

use super::limits::{self, DEFAULT_LISTEN_BACKLOG};
use super::relay_pool::RelayRuntime;

pub(crate) const DEFAULT_LISTEN: &str = "127.0.0.1:6033";
pub(crate) const DEFAULT_UPSTREAM: &str = "127.0.0.1:3306";
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

/// What the proxy needs to run, validated by the config layer.
#[derive(Debug, Clone)]
pub(crate) struct ProxySettings {
    /// `host:port` of the MySQL / MariaDB server.
    pub upstream: String,
    pub connect_timeout: Duration,
    /// How long open connections may go on after a shutdown signal before they are cut.
    pub shutdown_grace: Duration,
    /// Client connections served at once; past it clients get ERR 1040.
    pub max_connections: MaxConnections,
    /// A client that has not sent its handshake response this long after it connected is
    /// closed (slowloris). `None`: no limit.
    pub client_handshake_timeout: Option<Duration>,
    /// Keepalive idle time and interval of upstream connections (see
    /// [`super::upstream::keep_alive`]). `None`: the system's TCP defaults.
    pub upstream_keepalive: Option<Duration>,
    /// Where connections run (`--relay-runtime`, `--relay-threads`).
    pub relay: RelayRuntime,
}

/// `--max-connections`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MaxConnections {
    /// What the file-descriptor limit carries ([`limits::default_max_connections`]).
    FromFdLimit,
    Unlimited,
    At(usize),
}

impl MaxConnections {
    /// The limit in effect now; `None`: no limit.
    pub(crate) fn resolve(self) -> Option<usize> {
        match self {
            MaxConnections::FromFdLimit => limits::default_max_connections(),
            MaxConnections::Unlimited => None,
            MaxConnections::At(n) => Some(n),
        }
    }
}

/// The proxy's options as given (each the flag's, else the file's).
#[derive(Debug, Default)]
pub(crate) struct Options {
    pub listen: Option<String>,
    pub upstream: Option<String>,
    pub connect_timeout: GivenDuration,
    pub shutdown_grace: GivenDuration,
    pub listen_backlog: Option<u32>,
    pub max_connections: Option<usize>,
    pub client_handshake_timeout: GivenDuration,
    pub upstream_keepalive: GivenDuration,
    pub relay_runtime: Option<String>,
    pub relay_threads: Option<usize>,
}

/// The proxy's options, checked and with their defaults.
#[derive(Debug, Clone)]
pub(crate) struct Config {
    pub listen: SocketAddr,
    /// Backlog of the client listener.
    pub listen_backlog: u32,
    pub settings: ProxySettings,
}

impl Options {
    pub(crate) fn resolve(self) -> Result<Config, ConfigError> {
        let listen = self.listen.as_deref().unwrap_or(DEFAULT_LISTEN);
        let listen = parse_addr("listen", listen)?;
        let upstream = self
            .upstream
            .unwrap_or_else(|| DEFAULT_UPSTREAM.to_string());
        validate_upstream(&upstream)?;
        let connect_timeout = self
            .connect_timeout
            .read("connect_timeout")?
            .unwrap_or(DEFAULT_CONNECT_TIMEOUT);
        let shutdown_grace = self
            .shutdown_grace
            .read("shutdown_grace")?
            .unwrap_or(DEFAULT_SHUTDOWN_GRACE);
        let client_handshake_timeout = Some(
            self.client_handshake_timeout
                .read("client_handshake_timeout")?
                .unwrap_or(DEFAULT_CLIENT_HANDSHAKE_TIMEOUT),
        )
        .filter(|d| !d.is_zero());
        let upstream_keepalive = Some(
            self.upstream_keepalive
                .read("upstream_keepalive")?
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
        let relay = RelayRuntime::from_options(self.relay_runtime.as_deref(), self.relay_threads)
            .map_err(ConfigError::Invalid)?;
        let listen_backlog = self.listen_backlog.unwrap_or(DEFAULT_LISTEN_BACKLOG);
        if listen_backlog == 0 {
            return Err(ConfigError::Invalid(
                "listen_backlog must be at least 1 (the kernel caps it at net.core.somaxconn)"
                    .into(),
            ));
        }
        let max_connections = match self.max_connections {
            None => MaxConnections::FromFdLimit,
            Some(0) => MaxConnections::Unlimited,
            Some(n) => MaxConnections::At(n),
        };
        if let Ok(up) = upstream.parse::<SocketAddr>() {
            if up == listen {
                return Err(ConfigError::Loop(listen));
            }
        }
        Ok(Config {
            listen,
            listen_backlog,
            settings: ProxySettings {
                upstream,
                connect_timeout,
                shutdown_grace,
                max_connections,
                client_handshake_timeout,
                upstream_keepalive,
                relay,
            },
        })
    }
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
