//! psprobe's own certificate: loaded from PEM files, or made once with rcgen and kept.
//!
//! Generated files live in one directory (mode 0700): `ca.pem` (a CA, basicConstraints
//! CA:TRUE, for clients' --ssl-ca), `ca-key.pem`, `server-cert.pem` (the leaf, X.509 v3 with
//! subjectAltNames, followed by the CA: the whole chain is sent), `server-key.pem`, and
//! `server-names.txt` (the names the leaf was issued for). Keys are written mode 0600. On the
//! next start the files are reused; the leaf is re-issued by the same CA when a name is missing
//! (another --listen address), so clients keep trusting the same ca.pem. Several psprobe
//! processes starting at once agree on one set through a lock file.

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose,
};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

use super::TlsError;

pub(crate) const CA_FILE: &str = "ca.pem";
pub(crate) const CA_KEY_FILE: &str = "ca-key.pem";
pub(crate) const CERT_FILE: &str = "server-cert.pem";
pub(crate) const KEY_FILE: &str = "server-key.pem";
const NAMES_FILE: &str = "server-names.txt";
const LOCK_FILE: &str = ".lock";
/// A lock older than this was left by a process that died while holding it.
const STALE_LOCK: Duration = Duration::from_secs(30);
const LOCK_WAIT: Duration = Duration::from_secs(10);
const CA_COMMON_NAME: &str = "psprobe local CA";

/// A certificate chain (leaf first) and its key.
pub(crate) struct CertChain {
    pub chain: Vec<CertificateDer<'static>>,
    pub key: PrivateKeyDer<'static>,
}

impl std::fmt::Debug for CertChain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CertChain")
            .field("certificates", &self.chain.len())
            .finish_non_exhaustive()
    }
}

/// Reads a PEM chain and key.
pub(crate) fn load_pem(cert: &Path, key: &Path) -> Result<CertChain, TlsError> {
    let text = fs::read(cert).map_err(|source| TlsError::Read {
        what: "certificate",
        path: cert.to_path_buf(),
        source,
    })?;
    let chain = CertificateDer::pem_slice_iter(&text)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| TlsError::Pem {
            path: cert.to_path_buf(),
            message: e.to_string(),
        })?;
    if chain.is_empty() {
        return Err(TlsError::NoPem {
            what: "CERTIFICATE",
            path: cert.to_path_buf(),
        });
    }
    let text = fs::read(key).map_err(|source| TlsError::Read {
        what: "private key",
        path: key.to_path_buf(),
        source,
    })?;
    let key_der = PrivateKeyDer::from_pem_slice(&text).map_err(|e| match e {
        rustls::pki_types::pem::Error::NoItemsFound => TlsError::NoPem {
            what: "PRIVATE KEY",
            path: key.to_path_buf(),
        },
        e => TlsError::Pem {
            path: key.to_path_buf(),
            message: e.to_string(),
        },
    })?;
    Ok(CertChain {
        chain,
        key: key_der,
    })
}

/// The names psprobe's generated certificate covers: loopback, the host name, and the listen
/// address when it is a specific one.
pub(crate) fn default_names(listen: std::net::IpAddr) -> Vec<String> {
    let mut names = vec!["localhost".to_string(), "127.0.0.1".into(), "::1".into()];
    if let Ok(host) = fs::read_to_string("/proc/sys/kernel/hostname") {
        let host = host.trim();
        if !host.is_empty() && rustls::pki_types::DnsName::try_from(host).is_ok() {
            names.push(host.to_string());
        }
    }
    if !listen.is_unspecified() {
        names.push(listen.to_string());
    }
    names.sort();
    names.dedup();
    names
}

/// Paths of a generated set.
#[derive(Debug, Clone)]
pub(crate) struct Generated {
    pub ca: PathBuf,
    pub cert: PathBuf,
    pub key: PathBuf,
    /// True when this call made the CA (first start); the tests check the CA is made once.
    #[cfg_attr(not(test), allow(dead_code))]
    pub made_ca: bool,
}

/// Makes sure `dir` holds a CA and a leaf covering `names`; makes what is missing.
pub(crate) fn ensure_generated(dir: &Path, names: &[String]) -> Result<Generated, TlsError> {
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|source| TlsError::Write {
            path: dir.to_path_buf(),
            source,
        })?;
    let _lock = DirLock::acquire(dir)?;
    let paths = Generated {
        ca: dir.join(CA_FILE),
        cert: dir.join(CERT_FILE),
        key: dir.join(KEY_FILE),
        made_ca: false,
    };
    let ca_key_path = dir.join(CA_KEY_FILE);
    let (ca_params, ca_key, made_ca) = if paths.ca.exists() && ca_key_path.exists() {
        let pem = read_text(&ca_key_path, "CA key")?;
        let key = KeyPair::from_pem(&pem).map_err(|e| TlsError::Pem {
            path: ca_key_path.clone(),
            message: e.to_string(),
        })?;
        (ca_params()?, key, false)
    } else {
        let params = ca_params()?;
        let key = KeyPair::generate().map_err(generate_error)?;
        let cert = params.self_signed(&key).map_err(generate_error)?;
        write_file(&ca_key_path, key.serialize_pem().as_bytes(), 0o600)?;
        write_file(&paths.ca, cert.pem().as_bytes(), 0o644)?;
        // A new CA makes any leaf from before useless.
        let _ = fs::remove_file(dir.join(NAMES_FILE));
        (params, key, true)
    };
    let names_path = dir.join(NAMES_FILE);
    let issued: Vec<String> = fs::read_to_string(&names_path)
        .map(|t| t.lines().map(str::to_string).collect())
        .unwrap_or_default();
    let covered = names.iter().all(|n| issued.contains(n));
    if !covered || !paths.cert.exists() || !paths.key.exists() {
        let mut all: Vec<String> = issued.into_iter().chain(names.iter().cloned()).collect();
        all.sort();
        all.dedup();
        let ca_pem = read_text(&paths.ca, "CA certificate")?;
        let issuer = Issuer::new(ca_params, ca_key);
        let mut leaf = CertificateParams::new(all.clone()).map_err(generate_error)?;
        let mut dn = DistinguishedName::new();
        dn.push(DnType::CommonName, "psprobe");
        dn.push(DnType::OrganizationName, "psprobe");
        leaf.distinguished_name = dn;
        leaf.is_ca = IsCa::ExplicitNoCa;
        leaf.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        leaf.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        leaf.use_authority_key_identifier_extension = true;
        validity(&mut leaf);
        let key = KeyPair::generate().map_err(generate_error)?;
        let cert = leaf.signed_by(&key, &issuer).map_err(generate_error)?;
        write_file(&paths.key, key.serialize_pem().as_bytes(), 0o600)?;
        let chain = format!("{}{}", cert.pem(), ca_pem);
        write_file(&paths.cert, chain.as_bytes(), 0o644)?;
        write_file(&names_path, all.join("\n").as_bytes(), 0o600)?;
    }
    Ok(Generated { made_ca, ..paths })
}

/// The CA's parameters. They are the same on every start (the subject and key identifiers
/// a leaf refers to come from them and the stored key), so a leaf can be re-issued later.
fn ca_params() -> Result<CertificateParams, TlsError> {
    let mut params = CertificateParams::new(Vec::<String>::new()).map_err(generate_error)?;
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, CA_COMMON_NAME);
    dn.push(DnType::OrganizationName, "psprobe");
    params.distinguished_name = dn;
    params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    validity(&mut params);
    Ok(params)
}

fn validity(params: &mut CertificateParams) {
    params.not_before = rcgen::date_time_ymd(2025, 1, 1);
    params.not_after = rcgen::date_time_ymd(2049, 12, 31);
}

fn generate_error(e: rcgen::Error) -> TlsError {
    TlsError::Generate(e.to_string())
}

fn read_text(path: &Path, what: &'static str) -> Result<String, TlsError> {
    fs::read_to_string(path).map_err(|source| TlsError::Read {
        what,
        path: path.to_path_buf(),
        source,
    })
}

/// Writes through a temporary file and a rename, so a reader (SIGHUP reload, another
/// process) sees the old file or the new one, never half of one.
fn write_file(path: &Path, data: &[u8], mode: u32) -> Result<(), TlsError> {
    let err = |source| TlsError::Write {
        path: path.to_path_buf(),
        source,
    };
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    let mut f = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(mode)
        .open(&tmp)
        .map_err(err)?;
    f.write_all(data).and_then(|()| f.sync_all()).map_err(err)?;
    fs::rename(&tmp, path).map_err(err)
}

/// Held while the directory's files are checked and written.
struct DirLock(PathBuf);

impl DirLock {
    fn acquire(dir: &Path) -> Result<DirLock, TlsError> {
        let path = dir.join(LOCK_FILE);
        let deadline = Instant::now() + LOCK_WAIT;
        loop {
            match OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&path)
            {
                Ok(_) => return Ok(DirLock(path)),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    let stale = fs::metadata(&path)
                        .and_then(|m| m.modified())
                        .ok()
                        .and_then(|t| crate::clock::system_now().duration_since(t).ok())
                        .is_some_and(|age| age > STALE_LOCK);
                    if stale {
                        let _ = fs::remove_file(&path);
                        continue;
                    }
                    if Instant::now() >= deadline {
                        return Err(TlsError::Locked(path));
                    }
                    // Another psprobe is writing the files: a few milliseconds at most.
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(source) => return Err(TlsError::Write { path, source }),
            }
        }
    }
}

impl Drop for DirLock {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn mode(p: &Path) -> u32 {
        fs::metadata(p).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn generated_once_reused_and_reissued_for_new_names() {
        let dir = tempfile::tempdir().unwrap();
        let tls = dir.path().join("tls");
        let names = vec!["localhost".to_string(), "127.0.0.1".to_string()];
        let first = ensure_generated(&tls, &names).unwrap();
        assert!(first.made_ca);
        assert_eq!(mode(&tls.join(CA_KEY_FILE)), 0o600);
        assert_eq!(mode(&first.key), 0o600);
        assert_eq!(mode(&tls), 0o700);
        let chain = load_pem(&first.cert, &first.key).unwrap();
        assert_eq!(chain.chain.len(), 2, "leaf and CA");
        let ca = fs::read(&first.ca).unwrap();
        let cert = fs::read(&first.cert).unwrap();

        let again = ensure_generated(&tls, &names).unwrap();
        assert!(!again.made_ca);
        assert_eq!(fs::read(&again.cert).unwrap(), cert, "reused as is");

        let more = vec!["10.1.2.3".to_string()];
        ensure_generated(&tls, &more).unwrap();
        assert_eq!(fs::read(&first.ca).unwrap(), ca, "same CA");
        assert_ne!(fs::read(&first.cert).unwrap(), cert, "new leaf");
        let names = fs::read_to_string(tls.join(NAMES_FILE)).unwrap();
        assert!(names.contains("10.1.2.3") && names.contains("localhost"));
        assert!(!tls.join(LOCK_FILE).exists());
    }

    #[test]
    fn clear_errors_for_bad_files() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("nope.pem");
        let e = load_pem(&missing, &missing).unwrap_err();
        assert!(e.to_string().contains("nope.pem"), "{e}");
        let empty = dir.path().join("empty.pem");
        fs::write(&empty, "hello\n").unwrap();
        let e = load_pem(&empty, &empty).unwrap_err();
        assert!(e.to_string().contains("CERTIFICATE"), "{e}");
    }

    #[test]
    fn names_cover_loopback_and_a_specific_listen_address() {
        let n = default_names("10.0.0.5".parse().unwrap());
        assert!(n.contains(&"localhost".to_string()) && n.contains(&"10.0.0.5".to_string()));
        let n = default_names("0.0.0.0".parse().unwrap());
        assert!(!n.contains(&"0.0.0.0".to_string()) && n.contains(&"127.0.0.1".to_string()));
    }
}
