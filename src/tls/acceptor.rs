//! psprobe's side of the client leg: a rustls server configuration (TLS 1.2 and 1.3) that
//! SIGHUP can replace while connections run. A handshake takes the configuration current when
//! it starts; connections already up keep theirs.

use std::path::PathBuf;
use std::sync::{Arc, RwLock};

use rustls::ServerConfig;

use super::certs::{self, CertChain};
use super::settings::CertSource;
use super::{provider, TlsError};

/// TLS session resumption: sessions are kept in memory (TLS 1.2 session ids, TLS 1.3 tickets
/// that name a cached session), so a reconnecting client (MySQL 8.0.29+ clients try) skips the
/// full handshake. A reload starts a new cache: no session outlives the certificate it was
/// made with.
const SESSION_CACHE: usize = 1024;

/// The server configuration, replaceable.
pub(crate) struct Acceptor {
    source: CertSource,
    names: Vec<String>,
    current: RwLock<Arc<ServerConfig>>,
    /// The CA clients can pass as --ssl-ca (generated certificates only).
    pub ca_path: Option<PathBuf>,
}

impl std::fmt::Debug for Acceptor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Acceptor")
            .field("source", &self.source)
            .finish_non_exhaustive()
    }
}

impl Acceptor {
    /// Loads (or makes) the certificate; `names` are the names a generated one must cover.
    pub(crate) fn load(source: CertSource, names: Vec<String>) -> Result<Acceptor, TlsError> {
        let (config, ca_path) = build(&source, &names)?;
        Ok(Acceptor {
            source,
            names,
            current: RwLock::new(config),
            ca_path,
        })
    }

    /// The configuration for a handshake starting now.
    pub(crate) fn config(&self) -> Arc<ServerConfig> {
        Arc::clone(&self.current.read().unwrap_or_else(|e| e.into_inner()))
    }

    /// Reads the certificate files again; on error the current configuration stays.
    pub(crate) fn reload(&self) -> Result<(), TlsError> {
        let (config, _) = build(&self.source, &self.names)?;
        *self.current.write().unwrap_or_else(|e| e.into_inner()) = config;
        Ok(())
    }
}

fn build(
    source: &CertSource,
    names: &[String],
) -> Result<(Arc<ServerConfig>, Option<PathBuf>), TlsError> {
    let (chain, ca_path) = match source {
        CertSource::Files { cert, key } => (certs::load_pem(cert, key)?, None),
        CertSource::Generated { dir } => {
            let made = certs::ensure_generated(dir, names)?;
            (certs::load_pem(&made.cert, &made.key)?, Some(made.ca))
        }
    };
    Ok((Arc::new(server_config(chain, source)?), ca_path))
}

fn server_config(chain: CertChain, source: &CertSource) -> Result<ServerConfig, TlsError> {
    let mut config = ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS12, &rustls::version::TLS13])
        .map_err(|e| TlsError::Config(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(chain.chain, chain.key)
        .map_err(|e| TlsError::Pair {
            files: match source {
                CertSource::Files { cert, key } => {
                    format!("{} and {}", cert.display(), key.display())
                }
                CertSource::Generated { dir } => format!("generated in {}", dir.display()),
            },
            message: e.to_string(),
        })?;
    config.session_storage = rustls::server::ServerSessionMemoryCache::new(SESSION_CACHE);
    // psprobe's order (AES-128-GCM first, see `provider`), not the client's.
    config.ignore_client_order = true;
    Ok(config)
}
