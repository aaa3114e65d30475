//! TLS on both legs with rustls: psprobe answers a client's SSLRequest with its own
//! certificate and, when the upstream leg is to be encrypted too, connects to the server as a
//! TLS client, so what travels inside is observed like plain traffic. The tokio side (the
//! SSLRequest exchange) is in `proxy::handshake`; this module holds the configuration.
//!
//! Must not: log key material or passwords, or accept a server certificate that
//! `--server-tls-verify` says to refuse.

pub(crate) mod acceptor;
pub(crate) mod certs;
pub(crate) mod failure;
pub(crate) mod settings;
pub(crate) mod upstream;

use std::path::PathBuf;
use std::sync::Arc;

use rustls::pki_types::ServerName;

pub(crate) use acceptor::Acceptor;
pub(crate) use failure::{Cause, Leg};
pub(crate) use settings::{ClientTls, ServerTls, ServerVerify, TlsArgs, TlsFile, TlsSettings};

#[derive(Debug, thiserror::Error)]
pub(crate) enum TlsError {
    #[error("cannot read the {what} {path}: {source}")]
    Read {
        what: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} holds no {what} block in PEM form")]
    NoPem { what: &'static str, path: PathBuf },
    #[error("{path} is not valid PEM: {message}")]
    Pem { path: PathBuf, message: String },
    #[error("the certificate and key ({files}) cannot be used together: {message}")]
    Pair { files: String, message: String },
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("another psprobe holds {0} for too long; remove it if no psprobe is starting")]
    Locked(PathBuf),
    #[error("cannot make a certificate: {0}")]
    Generate(String),
    #[error("cannot use server_tls_ca {path}: {message}")]
    Ca { path: PathBuf, message: String },
    #[error("TLS configuration: {0}")]
    Config(String),
}

/// The one crypto provider psprobe uses (ring), with AES-128-GCM preferred: MySQL messages
/// are small, so a query costs one record each way on each leg, and AES-128 is the cheapest
/// of the suites every client offers (for psprobe, and for the server when it follows the
/// client's order). The other suites stay available.
pub(crate) fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    use rustls::CipherSuite as C;
    let mut provider = rustls::crypto::ring::default_provider();
    let rank = |s: &rustls::SupportedCipherSuite| match s.suite() {
        C::TLS13_AES_128_GCM_SHA256
        | C::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256
        | C::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 => 0,
        _ => 1,
    };
    // Stable: TLS 1.3 before 1.2 within each rank is kept.
    provider.cipher_suites.sort_by_key(rank);
    Arc::new(provider)
}

/// Everything a connection needs for TLS, built once at start.
pub(crate) struct TlsRuntime {
    pub settings: TlsSettings,
    /// psprobe's server side; `None` with `--client-tls passthrough`.
    pub acceptor: Option<Acceptor>,
    /// For upstream TLS legs; `None` with `--server-tls disabled`.
    pub connector: Option<tokio_rustls::TlsConnector>,
    pub server_name: ServerName<'static>,
}

impl std::fmt::Debug for TlsRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsRuntime")
            .field("settings", &self.settings)
            .field("acceptor", &self.acceptor)
            .field("upstream_tls", &self.connector.is_some())
            .finish_non_exhaustive()
    }
}

impl TlsRuntime {
    /// Loads or makes certificates and checks every file named, so that a bad setting stops
    /// psprobe at start rather than failing clients later.
    pub(crate) fn load(
        settings: TlsSettings,
        upstream: &str,
        listen: std::net::IpAddr,
    ) -> Result<TlsRuntime, TlsError> {
        let acceptor = if settings.terminates() {
            Some(Acceptor::load(
                settings.cert.clone(),
                certs::default_names(listen),
            )?)
        } else {
            None
        };
        let connector = if settings.server == ServerTls::Disabled {
            None
        } else {
            let config = upstream::client_config(settings.verify, settings.server_ca.as_deref())?;
            Some(tokio_rustls::TlsConnector::from(Arc::new(config)))
        };
        Ok(TlsRuntime {
            settings,
            acceptor,
            connector,
            server_name: upstream::server_name(upstream),
        })
    }

    /// No termination, no certificates: TLS clients are forwarded verbatim.
    pub(crate) fn passthrough(upstream: &str) -> TlsRuntime {
        let config = upstream::client_config(ServerVerify::Skip, None)
            .map(|c| tokio_rustls::TlsConnector::from(Arc::new(c)))
            .ok();
        TlsRuntime {
            settings: TlsSettings::passthrough(),
            acceptor: None,
            connector: config,
            server_name: upstream::server_name(upstream),
        }
    }
}
