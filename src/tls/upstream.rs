//! psprobe's side of the server leg: a rustls client configuration and the three ways of
//! checking the server's certificate (skip, verify_ca, verify_identity).

use std::path::Path;
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};

use super::settings::ServerVerify;
use super::{provider, TlsError};

/// The client configuration for upstream legs. Sessions are resumed (rustls keeps them in
/// memory), which saves the server a full handshake per new connection.
pub(crate) fn client_config(
    verify: ServerVerify,
    ca: Option<&Path>,
) -> Result<ClientConfig, TlsError> {
    let provider = provider();
    let verifier: Arc<dyn ServerCertVerifier> = match (verify, ca) {
        (ServerVerify::Skip, _) => Arc::new(NoCheck(Arc::clone(&provider))),
        (_, None) => {
            return Err(TlsError::Config(
                "server_tls_verify needs server_tls_ca".into(),
            ))
        }
        (mode, Some(ca)) => {
            let roots = roots(ca)?;
            let webpki = WebPkiServerVerifier::builder_with_provider(roots, Arc::clone(&provider))
                .build()
                .map_err(|e| TlsError::Ca {
                    path: ca.to_path_buf(),
                    message: e.to_string(),
                })?;
            if mode == ServerVerify::VerifyIdentity {
                webpki
            } else {
                Arc::new(AnyName(webpki))
            }
        }
    };
    let config = ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS12, &rustls::version::TLS13])
        .map_err(|e| TlsError::Config(e.to_string()))?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    Ok(config)
}

/// The name the server's certificate is checked against (verify_identity) and sent as SNI
/// when it is a DNS name.
pub(crate) fn server_name(upstream: &str) -> ServerName<'static> {
    let host = upstream
        .rsplit_once(':')
        .map_or(upstream, |(host, _)| host)
        .trim_start_matches('[')
        .trim_end_matches(']');
    ServerName::try_from(host.to_string())
        .unwrap_or_else(|_| ServerName::try_from("psprobe-upstream").expect("a valid DNS name"))
}

fn roots(ca: &Path) -> Result<Arc<RootCertStore>, TlsError> {
    let bad = |message: String| TlsError::Ca {
        path: ca.to_path_buf(),
        message,
    };
    let text = std::fs::read(ca).map_err(|e| bad(e.to_string()))?;
    let mut roots = RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(&text) {
        let cert = cert.map_err(|e| bad(e.to_string()))?;
        roots.add(cert).map_err(|e| bad(e.to_string()))?;
    }
    if roots.is_empty() {
        return Err(bad("no CERTIFICATE in the file".into()));
    }
    Ok(Arc::new(roots))
}

/// `skip`: the connection is encrypted, the certificate not checked (the handshake's
/// signatures still are, against the key the server presented).
#[derive(Debug)]
struct NoCheck(Arc<CryptoProvider>);

impl ServerCertVerifier for NoCheck {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// `verify_ca`: the chain must lead to the given CA; the name in it does not matter.
#[derive(Debug)]
struct AnyName(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for AnyName {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_names_from_upstream_addresses() {
        assert_eq!(
            server_name("127.0.0.1:3306"),
            ServerName::try_from("127.0.0.1").unwrap()
        );
        assert_eq!(
            server_name("db1.internal:3306"),
            ServerName::try_from("db1.internal").unwrap()
        );
        assert_eq!(
            server_name("[::1]:3306"),
            ServerName::try_from("::1").unwrap()
        );
    }

    #[test]
    fn a_ca_file_without_certificates_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ca.pem");
        std::fs::write(&path, "nothing here\n").unwrap();
        let e = client_config(ServerVerify::VerifyCa, Some(&path)).unwrap_err();
        assert!(e.to_string().contains("ca.pem"), "{e}");
        assert!(client_config(ServerVerify::Skip, None).is_ok());
    }
}
