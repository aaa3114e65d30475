//! Certificates made for a test: a CA (CA:TRUE) and a leaf it signs (X.509 v3,
//! subjectAltNames as given), with rcgen. A MariaDB server's TLS, a client's key pair.

use std::fs;
use std::path::{Path, PathBuf};

/// CA, server certificate and key in PEM files.
pub struct Certs {
    pub dir: PathBuf,
    pub ca: PathBuf,
    pub cert: PathBuf,
    pub key: PathBuf,
}

impl Certs {
    /// Writes a fresh CA and a server certificate for `names` into `dir`.
    pub fn make(dir: &Path, ca_name: &str, names: &[&str]) -> Certs {
        use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
        fs::create_dir_all(dir).expect("mkdir certs");
        let ca_key = KeyPair::generate().expect("CA key");
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        ca_params
            .distinguished_name
            .push(DnType::CommonName, ca_name);
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params.key_usages = vec![
            rcgen::KeyUsagePurpose::KeyCertSign,
            rcgen::KeyUsagePurpose::DigitalSignature,
        ];
        let ca_cert = ca_params.self_signed(&ca_key).expect("CA cert");
        let issuer = Issuer::new(ca_params, ca_key);
        let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        let mut leaf = CertificateParams::new(names).expect("leaf params");
        leaf.distinguished_name
            .push(DnType::CommonName, "mariadb test server");
        leaf.use_authority_key_identifier_extension = true;
        let key = KeyPair::generate().expect("leaf key");
        let cert = leaf.signed_by(&key, &issuer).expect("leaf cert");
        let certs = Certs {
            dir: dir.to_path_buf(),
            ca: dir.join("ca.pem"),
            cert: dir.join("server-cert.pem"),
            key: dir.join("server-key.pem"),
        };
        fs::write(&certs.ca, ca_cert.pem()).expect("write ca");
        fs::write(&certs.cert, cert.pem()).expect("write cert");
        fs::write(&certs.key, key.serialize_pem()).expect("write key");
        certs
    }
}
