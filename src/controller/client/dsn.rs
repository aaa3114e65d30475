//! The controller's connection string. It comes from the environment or a config file, never from
//! argv (where `ps` would show it to every user), and it is only ever shown as `user@host:port`:
//! `Debug` and `Display` are redacted, and errors never quote it.

use std::fmt;
use std::path::Path;

use mysql_async::{Opts, UrlError};

use crate::controller::error::{ControllerError, Result};

use crate::controller::DSN_ENV;

/// A parsed `mysql://USER:PASS@HOST:PORT/` URL plus where it came from.
#[derive(Clone)]
pub struct ControllerDsn {
    opts: Opts,
    origin: String,
}

impl ControllerDsn {
    /// Parse `url`; `origin` names where it came from, for error messages (never the URL itself).
    pub fn parse(url: &str, origin: &str) -> Result<Self> {
        let bad = |reason: String| ControllerError::BadDsn {
            origin: origin.to_string(),
            reason,
        };
        let url = url.trim();
        if url.is_empty() {
            return Err(bad("it is empty".into()));
        }
        if !url.starts_with("mysql://") {
            return Err(bad("it must start with mysql://".into()));
        }
        let mut opts = Opts::from_url(url).map_err(|e| bad(describe_url_error(&e)))?;
        if !url.contains("prefer_socket=") {
            // mysql_async otherwise moves a TCP connection to the server's unix socket when
            // that file is reachable: the controller would then bypass the host:port the
            // operator gave (a different network path, e.g. around a link being cut).
            opts = mysql_async::OptsBuilder::from_opts(opts)
                .prefer_socket(false)
                .into();
        }
        if opts.user().is_none_or(str::is_empty) {
            return Err(bad("it names no user".into()));
        }
        Ok(ControllerDsn {
            opts,
            origin: origin.to_string(),
        })
    }

    /// The DSN in the first line of the file at `path` (`--controller-dsn-file`).
    pub fn from_file(path: &Path) -> Result<Self> {
        let url = crate::secrets::read_secret_file(path, "controller DSN")?;
        Self::parse(&url, &format!("--controller-dsn-file {}", path.display()))
    }

    /// The DSN from `dsn_file` when given, else as [`ControllerDsn::resolve`] finds it.
    pub fn resolve_with_file(
        dsn_file: Option<&Path>,
        env_value: Option<&str>,
        file: Option<(&Path, Option<&str>)>,
    ) -> Result<Self> {
        match dsn_file {
            Some(path) => Self::from_file(path),
            None => Self::resolve(env_value, file),
        }
    }

    /// The DSN from the environment (`env_value` = value of [`DSN_ENV`]) or, failing that, from
    /// the `[controller] dsn` of the config file at `file`. The environment wins when both are set.
    pub fn resolve(env_value: Option<&str>, file: Option<(&Path, Option<&str>)>) -> Result<Self> {
        if let Some(url) = env_value.filter(|v| !v.trim().is_empty()) {
            if let Some((path, Some(_))) = file {
                tracing::info!(
                    "both {DSN_ENV} and [controller] dsn in {} are set; using {DSN_ENV}",
                    path.display()
                );
            }
            return Self::parse(url, DSN_ENV);
        }
        if let Some((path, Some(url))) = file {
            return Self::parse(url, &format!("[controller] dsn in {}", path.display()));
        }
        Err(ControllerError::NoDsn)
    }

    /// `user@host:port`: the only form of the DSN that may be printed.
    pub fn redacted(&self) -> String {
        let host = self.host();
        let host = if host.contains(':') && !host.starts_with('[') {
            format!("[{host}]")
        } else {
            host.to_string()
        };
        format!("{}@{host}:{}", self.user(), self.port())
    }

    pub fn user(&self) -> &str {
        self.opts.user().unwrap_or("")
    }

    pub fn host(&self) -> &str {
        self.opts.ip_or_hostname()
    }

    pub fn port(&self) -> u16 {
        self.opts.tcp_port()
    }

    /// Where the DSN came from, e.g. "PSPROBE_CONTROLLER_DSN".
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// The same credentials and options for the server at `host`:`port` (a duet's second
    /// instance: a clone of the first, with its accounts); `origin` says where that came from.
    pub fn at(&self, host: &str, port: u16, origin: &str) -> Self {
        ControllerDsn {
            opts: mysql_async::OptsBuilder::from_opts(self.opts.clone())
                .ip_or_hostname(host)
                .tcp_port(port)
                .into(),
            origin: origin.to_string(),
        }
    }

    pub(crate) fn opts(&self) -> Opts {
        self.opts.clone()
    }
}

impl fmt::Display for ControllerDsn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.redacted())
    }
}

impl fmt::Debug for ControllerDsn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ControllerDsn")
            .field("target", &self.redacted())
            .field("origin", &self.origin)
            .finish_non_exhaustive()
    }
}

/// What is wrong with a URL, without repeating any part of it that could hold the password.
fn describe_url_error(e: &UrlError) -> String {
    match e {
        UrlError::Parse(p) => format!("not a URL ({p})"),
        UrlError::UnsupportedScheme { .. } => "it must start with mysql://".into(),
        UrlError::UnknownParameter { param } => format!("unknown parameter `{param}`"),
        UrlError::InvalidParamValue { param, .. } => format!("bad value for parameter `{param}`"),
        UrlError::FeatureRequired { param, feature } => {
            format!("parameter `{param}` needs feature `{feature}`, which this build lacks")
        }
        _ => "invalid or incomplete URL".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "s3cr3t-pw";

    fn dsn() -> ControllerDsn {
        ControllerDsn::parse(&format!("mysql://probe:{SECRET}@db.example:3307/"), DSN_ENV).unwrap()
    }

    #[test]
    fn redacted_forms_hide_the_password() {
        let d = dsn();
        assert_eq!(d.redacted(), "probe@db.example:3307");
        assert_eq!(d.to_string(), "probe@db.example:3307");
        let debug = format!("{d:?}");
        assert!(!debug.contains(SECRET), "{debug}");
        assert!(debug.contains("probe@db.example:3307"));
    }

    #[test]
    fn at_keeps_the_credentials_for_another_server() {
        let d = dsn().at("127.0.0.1", 3310, "--duet-upstream");
        assert_eq!(d.redacted(), "probe@127.0.0.1:3310");
        assert_eq!(d.opts().pass(), Some(SECRET));
        assert_eq!(d.origin(), "--duet-upstream");
    }

    #[test]
    fn default_port_and_ipv6() {
        let d = ControllerDsn::parse("mysql://u:p@127.0.0.1/", DSN_ENV).unwrap();
        assert_eq!(d.port(), 3306);
        let d = ControllerDsn::parse("mysql://u:p@[::1]:3310/", DSN_ENV).unwrap();
        assert_eq!(d.redacted(), "u@[::1]:3310");
    }

    #[test]
    fn bad_dsns_never_echo_the_secret() {
        for url in [
            format!("probe:{SECRET}@host:3306"),
            format!("postgres://probe:{SECRET}@host/"),
            format!("mysql://probe:{SECRET}@host:99999/"),
            format!("mysql://probe:{SECRET}@host/?nonsense={SECRET}"),
            format!("mysql://probe:{SECRET}@host/?pool_min={SECRET}"),
            format!("mysql://:{SECRET}@host/"),
            String::new(),
        ] {
            let e = ControllerDsn::parse(&url, DSN_ENV).unwrap_err();
            let msg = e.to_string();
            assert!(matches!(e, ControllerError::BadDsn { .. }), "{url}: {msg}");
            assert!(!msg.contains(SECRET), "{url}: {msg}");
            assert!(msg.contains(DSN_ENV), "{msg}");
        }
    }

    #[test]
    fn a_dsn_file_wins_and_its_errors_name_the_file_only() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("dsn");
        std::fs::write(&path, format!("mysql://f:{SECRET}@h3:3/\n")).unwrap();
        let d =
            ControllerDsn::resolve_with_file(Some(&path), Some("mysql://a:x@h1:1/"), None).unwrap();
        assert_eq!(d.redacted(), "f@h3:3");
        assert!(d.origin().starts_with("--controller-dsn-file "));
        std::fs::write(&path, format!("probe:{SECRET}@h3:3\n")).unwrap();
        let e = ControllerDsn::from_file(&path).unwrap_err().to_string();
        assert!(e.contains("--controller-dsn-file"), "{e}");
        assert!(!e.contains(SECRET), "{e}");
        let e = ControllerDsn::from_file(&dir.path().join("missing"))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("cannot read controller DSN from"), "{e}");
    }

    #[test]
    fn resolve_prefers_env_then_file() {
        let path = Path::new("/etc/psprobe.toml");
        let d = ControllerDsn::resolve(
            Some("mysql://a:x@h1:1/"),
            Some((path, Some("mysql://b:y@h2:2/"))),
        )
        .unwrap();
        assert_eq!(d.redacted(), "a@h1:1");
        let d = ControllerDsn::resolve(None, Some((path, Some("mysql://b:y@h2:2/")))).unwrap();
        assert_eq!(d.redacted(), "b@h2:2");
        assert!(d.origin().contains("/etc/psprobe.toml"));
        let d = ControllerDsn::resolve(Some("  "), Some((path, Some("mysql://b:y@h2:2/"))));
        assert_eq!(d.unwrap().redacted(), "b@h2:2");
        assert!(matches!(
            ControllerDsn::resolve(None, Some((path, None))),
            Err(ControllerError::NoDsn)
        ));
        assert!(matches!(
            ControllerDsn::resolve(None, None),
            Err(ControllerError::NoDsn)
        ));
    }
}
