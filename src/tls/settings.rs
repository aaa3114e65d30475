//! TLS options: `--client-tls`, `--server-tls`, `--server-tls-verify`, `--server-tls-ca`,
//! `--tls-cert`, `--tls-key` and the `[tls]` table of the config file, validated once.

use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::{Args, ValueEnum};
use serde::Deserialize;

/// What psprobe does when a client asks for TLS (sends an SSLRequest).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Deserialize)]
#[serde(rename_all = "snake_case")]
#[value(rename_all = "snake_case")]
pub(crate) enum ClientTls {
    /// Answer the SSLRequest itself and observe the decrypted stream.
    Terminate,
    /// Forward the TLS bytes verbatim (the client talks TLS with the server; unobserved).
    Passthrough,
}

/// The upstream leg.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Deserialize)]
#[serde(rename_all = "snake_case")]
#[value(rename_all = "snake_case")]
pub(crate) enum ServerTls {
    /// TLS upstream exactly when the client used TLS (and the server offers it).
    AsClient,
    /// TLS upstream for every connection; servers that do not offer it are refused.
    Required,
    /// Never TLS upstream (clients that used TLS are terminated and go on in plain text).
    Disabled,
}

/// How psprobe checks the server's certificate on a TLS upstream leg.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Deserialize)]
#[serde(rename_all = "snake_case")]
#[value(rename_all = "snake_case")]
pub(crate) enum ServerVerify {
    /// Encrypt, check nothing (like a client with ssl-mode=PREFERRED / REQUIRED).
    Skip,
    /// The chain must lead to --server-tls-ca (like VERIFY_CA).
    VerifyCa,
    /// And name the upstream host (like VERIFY_IDENTITY).
    VerifyIdentity,
}

impl ClientTls {
    pub(crate) fn label(self) -> &'static str {
        match self {
            ClientTls::Terminate => "terminate",
            ClientTls::Passthrough => "passthrough",
        }
    }
}

impl ServerTls {}

/// Bound on each TLS handshake (client leg and server leg): a peer that stalls mid-handshake
/// is dropped after this long. Matches mysqld's default connect_timeout.
pub(crate) const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Debug, Default, Args)]
pub(crate) struct TlsArgs {
    /// When a client asks for TLS: `terminate` (psprobe answers with its own certificate and
    /// observes the decrypted stream; plain and TLS clients share the port) or `passthrough`
    /// (TLS bytes forwarded verbatim, connection unobserved) [default: terminate].
    #[arg(long, value_name = "MODE")]
    pub client_tls: Option<ClientTls>,
    /// The leg to the server: `as_client` (TLS upstream when the client used TLS), `required`
    /// (always TLS upstream), `disabled` (never; then only clients whose authentication works
    /// over a plain leg can use TLS to psprobe) [default: as_client].
    #[arg(long, value_name = "MODE")]
    pub server_tls: Option<ServerTls>,
    /// Check the server's certificate: `skip`, `verify_ca` (chain to --server-tls-ca) or
    /// `verify_identity` (and the --upstream host name) [default: skip].
    #[arg(long, value_name = "MODE")]
    pub server_tls_verify: Option<ServerVerify>,
    /// CA certificates (PEM) that sign the server's certificate, for verify_ca / verify_identity.
    #[arg(long, value_name = "FILE")]
    pub server_tls_ca: Option<PathBuf>,
    /// psprobe's certificate for clients (PEM, leaf first, then intermediates; the whole chain
    /// is sent). Without --tls-cert/--tls-key psprobe makes a CA and a certificate in
    /// STATE_DIR/tls (see --state-dir), reuses them on the next start and logs the CA's path
    /// for clients' --ssl-ca. SIGHUP reloads the files without dropping connections.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// Private key of --tls-cert (PEM: PKCS#8, PKCS#1 or SEC1).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// A TLS handshake (client or server leg) that takes longer is abandoned and the
    /// connection closed [default: 10s].
    #[arg(long, value_name = "DURATION", value_parser = crate::duration::duration_arg)]
    pub tls_handshake_timeout: Option<std::time::Duration>,
}

/// The `[tls]` table of the config file (same options, snake_case).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct TlsFile {
    pub client_tls: Option<ClientTls>,
    pub server_tls: Option<ServerTls>,
    pub server_tls_verify: Option<ServerVerify>,
    pub server_tls_ca: Option<PathBuf>,
    pub cert: Option<PathBuf>,
    pub key: Option<PathBuf>,
    pub handshake_timeout: Option<String>,
}

/// Where psprobe's own certificate comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum CertSource {
    Files {
        cert: PathBuf,
        key: PathBuf,
    },
    /// Made (once) and kept in this directory.
    Generated {
        dir: PathBuf,
    },
}

/// Validated TLS settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TlsSettings {
    pub client: ClientTls,
    pub server: ServerTls,
    pub verify: ServerVerify,
    pub server_ca: Option<PathBuf>,
    pub cert: CertSource,
    pub handshake_timeout: Duration,
    /// Said once in the log at start (a setting psprobe had to work around).
    pub note: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub(crate) enum TlsSettingsError {
    #[error("[tls] needs both cert and key (or neither, to let psprobe make them)")]
    HalfPair,
    #[error("server_tls_verify = {0} needs server_tls_ca: the CA file (PEM) that signs the server's certificate")]
    VerifyWithoutCa(&'static str),
    #[error(
        "server_tls_verify = {0} checks the upstream leg, which server_tls = disabled turns off"
    )]
    VerifyWithoutTls(&'static str),
    #[error("no directory for psprobe's generated TLS files (set XDG_STATE_HOME or HOME, pass --state-dir, or give --tls-cert and --tls-key): clients that ask for TLS are passed through, unobserved")]
    NoStateDir,
    #[error("{0}")]
    Timeout(String),
}

impl TlsSettings {
    /// Flags win over the file; `state_dir` is where generated files go (its `tls` folder).
    pub(crate) fn resolve(
        args: &TlsArgs,
        file: Option<TlsFile>,
        state_dir: Option<&Path>,
    ) -> Result<TlsSettings, TlsSettingsError> {
        let file = file.unwrap_or_default();
        let client = args
            .client_tls
            .or(file.client_tls)
            .unwrap_or(ClientTls::Terminate);
        let server = args
            .server_tls
            .or(file.server_tls)
            .unwrap_or(ServerTls::AsClient);
        let verify = args
            .server_tls_verify
            .or(file.server_tls_verify)
            .unwrap_or(ServerVerify::Skip);
        let server_ca = args.server_tls_ca.clone().or(file.server_tls_ca);
        let verify_label = match verify {
            ServerVerify::Skip => None,
            ServerVerify::VerifyCa => Some("verify_ca"),
            ServerVerify::VerifyIdentity => Some("verify_identity"),
        };
        if let Some(label) = verify_label {
            if server == ServerTls::Disabled {
                return Err(TlsSettingsError::VerifyWithoutTls(label));
            }
            if server_ca.is_none() {
                return Err(TlsSettingsError::VerifyWithoutCa(label));
            }
        }
        let handshake_timeout = match (args.tls_handshake_timeout, &file.handshake_timeout) {
            (Some(d), _) => d,
            (None, Some(v)) => crate::duration::parse_duration("tls_handshake_timeout", v)
                .map_err(|e| TlsSettingsError::Timeout(e.to_string()))?,
            (None, None) => HANDSHAKE_TIMEOUT,
        };
        if handshake_timeout.is_zero() {
            // Unlike --client-handshake-timeout, 0 cannot mean "no limit": a TLS handshake that
            // stalls would hold its connection (and a file descriptor) for ever.
            return Err(TlsSettingsError::Timeout(format!(
                "tls_handshake_timeout must be longer than 0s (every TLS handshake would time out); \
                 leave it out for the default {}s",
                HANDSHAKE_TIMEOUT.as_secs()
            )));
        }
        let mut note = None;
        let mut client = client;
        let cert = match (
            args.tls_cert.clone().or(file.cert),
            args.tls_key.clone().or(file.key),
        ) {
            (Some(cert), Some(key)) => CertSource::Files { cert, key },
            (None, None) => match state_dir {
                Some(dir) => CertSource::Generated {
                    dir: dir.join("tls"),
                },
                // Fail-open: nowhere to keep a certificate, so TLS is not terminated.
                None if client == ClientTls::Terminate => {
                    note = Some(TlsSettingsError::NoStateDir.to_string());
                    client = ClientTls::Passthrough;
                    CertSource::Generated {
                        dir: PathBuf::new(),
                    }
                }
                None => CertSource::Generated {
                    dir: PathBuf::new(),
                },
            },
            _ => return Err(TlsSettingsError::HalfPair),
        };
        Ok(TlsSettings {
            client,
            server,
            verify,
            server_ca,
            cert,
            handshake_timeout,
            note,
        })
    }

    /// Today's behaviour before TLS termination: TLS clients are forwarded verbatim, nothing
    /// is made or loaded. Used where psprobe runs in-process in front of a throwaway server.
    pub(crate) fn passthrough() -> TlsSettings {
        TlsSettings {
            client: ClientTls::Passthrough,
            server: ServerTls::AsClient,
            verify: ServerVerify::Skip,
            server_ca: None,
            cert: CertSource::Generated {
                dir: PathBuf::new(),
            },
            handshake_timeout: HANDSHAKE_TIMEOUT,
            note: None,
        }
    }

    /// True when psprobe needs a certificate of its own.
    pub(crate) fn terminates(&self) -> bool {
        self.client == ClientTls::Terminate
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(text: &str) -> TlsFile {
        toml::from_str(text).expect("valid [tls] table")
    }

    #[test]
    fn defaults_terminate_as_client_skip_generated() {
        let s = TlsSettings::resolve(&TlsArgs::default(), None, Some(Path::new("/s"))).unwrap();
        assert_eq!(s.client, ClientTls::Terminate);
        assert_eq!(s.server, ServerTls::AsClient);
        assert_eq!(s.verify, ServerVerify::Skip);
        assert_eq!(
            s.cert,
            CertSource::Generated {
                dir: PathBuf::from("/s/tls")
            }
        );
    }

    #[test]
    fn file_then_flags() {
        let f = file("client_tls = \"passthrough\"\nserver_tls = \"required\"\ncert = \"/c.pem\"\nkey = \"/k.pem\"\n");
        let s = TlsSettings::resolve(&TlsArgs::default(), Some(f), None).unwrap();
        assert_eq!(
            (s.client, s.server),
            (ClientTls::Passthrough, ServerTls::Required)
        );
        assert_eq!(
            s.cert,
            CertSource::Files {
                cert: "/c.pem".into(),
                key: "/k.pem".into()
            }
        );
        let args = TlsArgs {
            client_tls: Some(ClientTls::Terminate),
            ..TlsArgs::default()
        };
        let f = file("client_tls = \"passthrough\"\n");
        let s = TlsSettings::resolve(&args, Some(f), Some(Path::new("/s"))).unwrap();
        assert_eq!(s.client, ClientTls::Terminate);
    }

    #[test]
    fn bad_combinations_are_refused_with_the_setting_named() {
        let verify = TlsArgs {
            server_tls_verify: Some(ServerVerify::VerifyCa),
            ..TlsArgs::default()
        };
        let e = TlsSettings::resolve(&verify, None, Some(Path::new("/s"))).unwrap_err();
        assert!(e.to_string().contains("server_tls_ca"), "{e}");
        let f = file("server_tls = \"disabled\"\nserver_tls_verify = \"verify_identity\"\nserver_tls_ca = \"/ca\"\n");
        let e =
            TlsSettings::resolve(&TlsArgs::default(), Some(f), Some(Path::new("/s"))).unwrap_err();
        assert!(e.to_string().contains("disabled"), "{e}");
        let e = TlsSettings::resolve(&TlsArgs::default(), Some(file("cert = \"/c\"\n")), None)
            .unwrap_err();
        assert!(e.to_string().contains("both cert and key"), "{e}");
        assert!(toml::from_str::<TlsFile>("client_tls = \"maybe\"\n").is_err());
        assert!(toml::from_str::<TlsFile>("certificate = \"/c\"\n").is_err());
        let s = TlsSettings::resolve(&TlsArgs::default(), None, None).unwrap();
        assert_eq!(
            s.client,
            ClientTls::Passthrough,
            "nowhere to keep a certificate"
        );
        assert!(s.note.unwrap().contains("--tls-cert"));
        let zero = TlsArgs {
            tls_handshake_timeout: Some(Duration::ZERO),
            ..TlsArgs::default()
        };
        let e = TlsSettings::resolve(&zero, None, None).unwrap_err();
        assert!(e.to_string().contains("longer than 0s"), "{e}");
        let f = file("handshake_timeout = \"0s\"\n");
        let e = TlsSettings::resolve(&TlsArgs::default(), Some(f), None).unwrap_err();
        assert!(e.to_string().contains("longer than 0s"), "{e}");
        let f = file("handshake_timeout = \"soon\"\n");
        let e = TlsSettings::resolve(&TlsArgs::default(), Some(f), None).unwrap_err();
        assert!(e.to_string().contains("tls_handshake_timeout"), "{e}");
    }
}
