//! MariaDB servers with TLS on, in two versions: the host's 10.11 (Debian 12) and 11.8
//! (Debian 13) run with chroot from the folder scripts/setup.sh unpacks with debootstrap.
//! The server's certificate, key and CA are made here (rcgen: a CA with CA:TRUE, an X.509 v3
//! leaf with subjectAltNames localhost and 127.0.0.1).

use super::cli::{run_with_timeout, CLI_TIMEOUT, DATABASE, PASSWORD, USER};
use super::datadir::{copy_dir, LOG_FILE_SIZE};
use super::mariadb::{MariaDb, Options};
use psprobe_harness::child::spawn_tied;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};
use tempfile::TempDir;

/// The Debian 13 tree (override with PSPROBE_TRIXIE_ROOT).
pub fn trixie_root() -> PathBuf {
    let root = std::env::var_os("PSPROBE_TRIXIE_ROOT")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target/trixie-mariadb"));
    assert!(
        root.join("usr/sbin/mariadbd").exists(),
        "{} has no MariaDB 11.8: run scripts/setup.sh (it debootstraps Debian 13 there)",
        root.display()
    );
    root
}

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

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    /// The host's mariadb-server (Debian 12).
    V10_11,
    /// Debian 13's, from the chroot.
    V11_8,
}

impl Version {
    pub const ALL: [Version; 2] = [Version::V10_11, Version::V11_8];
}

/// A TLS-enabled server of either version.
pub enum TlsServer {
    Host {
        db: MariaDb,
        certs: Certs,
        _dir: TempDir,
    },
    Chroot(ChrootDb),
}

impl TlsServer {
    pub fn start(version: Version, extra: &[&str]) -> TlsServer {
        match version {
            Version::V10_11 => {
                // Named like the harness's other dirs, so a run that was killed is swept.
                let dir = super::datadir::tempdir("certs");
                let certs = Certs::make(dir.path(), "test server CA", &["localhost", "127.0.0.1"]);
                let mut extra_args = ssl_args(&certs.ca, &certs.cert, &certs.key);
                extra_args.extend(extra.iter().map(|s| s.to_string()));
                let db = MariaDb::start(Options {
                    performance_schema: false,
                    extra_args,
                });
                TlsServer::Host {
                    db,
                    certs,
                    _dir: dir,
                }
            }
            Version::V11_8 => TlsServer::Chroot(ChrootDb::start(extra)),
        }
    }

    pub fn addr(&self) -> String {
        match self {
            TlsServer::Host { db, .. } => db.addr(),
            TlsServer::Chroot(c) => c.addr(),
        }
    }

    /// The server's own CA (host path).
    pub fn ca(&self) -> &Path {
        match self {
            TlsServer::Host { certs, .. } => &certs.ca,
            TlsServer::Chroot(c) => &c.certs.ca,
        }
    }

    pub fn sql(&self, query: &str) -> String {
        match self {
            TlsServer::Host { db, .. } => db.sql(query),
            TlsServer::Chroot(c) => c.sql(query),
        }
    }

    pub fn version(&self) -> Version {
        match self {
            TlsServer::Host { .. } => Version::V10_11,
            TlsServer::Chroot(_) => Version::V11_8,
        }
    }
}

fn ssl_args(ca: &Path, cert: &Path, key: &Path) -> Vec<String> {
    vec![
        format!("--ssl-ca={}", ca.display()),
        format!("--ssl-cert={}", cert.display()),
        format!("--ssl-key={}", key.display()),
    ]
}

/// A free loopback port (racy by nature: starting a server retries with another).
fn free_port() -> u16 {
    psprobe_harness::ports::free_port().expect("a free port on 127.0.0.1")
}

/// A MariaDB 11.8 server running inside the Debian 13 tree. Its files live in the tree's /tmp.
pub struct ChrootDb {
    child: Option<Child>,
    port: u16,
    root: PathBuf,
    /// Path of `dir` as seen inside the chroot.
    inside: String,
    pub certs: Certs,
    /// Declared last: removed after the server is killed.
    dir: TempDir,
}

static TRIXIE_TEMPLATE: OnceLock<(TempDir, String)> = OnceLock::new();

/// `mariadb-install-db` inside the tree, once per test process.
fn trixie_template(root: &Path) -> &'static (TempDir, String) {
    TRIXIE_TEMPLATE.get_or_init(|| {
        sweep_dead(&root.join("tmp"));
        let dir = tempfile::Builder::new()
            .prefix(&format!("psprobe-mariadb-{}-template-", std::process::id()))
            .tempdir_in(root.join("tmp"))
            .expect("template dir in the trixie tree");
        let inside = inside_path(root, dir.path());
        let mut cmd = Command::new("chroot");
        cmd.arg(root).args([
            "mariadb-install-db",
            "--no-defaults",
            &format!("--datadir={inside}/data"),
            "--user=root",
            "--auth-root-authentication-method=normal",
            "--skip-test-db",
            // The tree has no resolver set up for the host name; nothing here needs it.
            "--force",
            LOG_FILE_SIZE,
        ]);
        let out = run_with_timeout(cmd, None, Duration::from_secs(300));
        assert!(
            out.status.success(),
            "mariadb-install-db (11.8, chroot) failed:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (dir, inside)
    })
}

/// Removes folders an earlier, killed test process left in the tree's /tmp.
fn sweep_dead(tmp: &Path) {
    let Ok(entries) = fs::read_dir(tmp) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let pid = name
            .strip_prefix("psprobe-mariadb-")
            .and_then(|r| r.split('-').next())
            .and_then(|p| p.parse::<i32>().ok());
        if let Some(pid) = pid {
            if !Path::new(&format!("/proc/{pid}")).exists() {
                let _ = fs::remove_dir_all(entry.path());
            }
        }
    }
}

fn inside_path(root: &Path, path: &Path) -> String {
    let rel = path.strip_prefix(root).expect("path inside the tree");
    format!("/{}", rel.display())
}

impl ChrootDb {
    pub fn start(extra: &[&str]) -> ChrootDb {
        let root = trixie_root();
        let template = trixie_template(&root);
        let dir = tempfile::Builder::new()
            .prefix(&format!("psprobe-mariadb-{}-server-", std::process::id()))
            .tempdir_in(root.join("tmp"))
            .expect("server dir in the trixie tree");
        copy_dir(&template.0.path().join("data"), &dir.path().join("data"));
        let inside = inside_path(&root, dir.path());
        let certs = Certs::make(
            &dir.path().join("certs"),
            "test server CA",
            &["localhost", "127.0.0.1"],
        );
        let mut db = ChrootDb {
            child: None,
            port: 0,
            root,
            inside,
            certs,
            dir,
        };
        let extra: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
        let mut last = String::new();
        for _ in 0..3 {
            db.port = free_port();
            match db.launch(&extra) {
                Ok(()) => {
                    db.sql(&format!(
                        "CREATE USER '{USER}'@'%' IDENTIFIED BY '{PASSWORD}'; \
                         GRANT ALL PRIVILEGES ON *.* TO '{USER}'@'%' WITH GRANT OPTION; \
                         CREATE DATABASE {DATABASE};"
                    ));
                    return db;
                }
                Err(log) => last = log,
            }
        }
        panic!("mariadbd 11.8 (chroot) did not start:\n{last}");
    }

    fn launch(&mut self, extra: &[String]) -> Result<(), String> {
        let d = &self.inside;
        let c = format!("{d}/certs");
        let log = self.dir.path().join("data/error.log");
        let mut cmd = Command::new("chroot");
        cmd.arg(&self.root)
            .arg("mariadbd")
            .arg("--no-defaults")
            .arg(format!("--datadir={d}/data"))
            .arg(format!("--port={}", self.port))
            .arg("--bind-address=127.0.0.1")
            .arg(format!("--socket={d}/mysqld.sock"))
            .arg(format!("--pid-file={d}/mariadbd.pid"))
            .arg(format!("--log-error={d}/data/error.log"))
            .args([
                "--user=root",
                "--performance-schema=OFF",
                "--max-allowed-packet=256M",
                "--skip-log-bin",
                "--innodb-buffer-pool-size=64M",
                LOG_FILE_SIZE,
            ])
            .args(ssl_args(
                Path::new(&format!("{c}/ca.pem")),
                Path::new(&format!("{c}/server-cert.pem")),
                Path::new(&format!("{c}/server-key.pem")),
            ))
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        self.child = Some(spawn_tied(cmd).expect("spawn chroot mariadbd"));
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let child = self.child.as_mut().expect("just spawned");
            if let Some(status) = child.try_wait().expect("try_wait") {
                self.child = None;
                return Err(format!(
                    "exited: {status}\n{}",
                    fs::read_to_string(&log).unwrap_or_default()
                ));
            }
            if let Ok(v) = self.try_sql("SELECT @@version") {
                if v.starts_with("11.8") {
                    return Ok(());
                }
            }
            if Instant::now() > deadline {
                self.kill();
                return Err(format!(
                    "not ready in 60 s\n{}",
                    fs::read_to_string(&log).unwrap_or_default()
                ));
            }
            std::thread::sleep(Duration::from_millis(50)); // poll interval
        }
    }

    pub fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// SQL as root with the host's client (it uses TLS: the server requires nothing else).
    pub fn try_sql(&self, query: &str) -> Result<String, String> {
        let mut cmd = Command::new("mariadb");
        cmd.args(psprobe_harness::mariadb::root_cli_args(self.port))
            .args(["--connect-timeout=2", "-e", query]);
        let out = run_with_timeout(cmd, None, CLI_TIMEOUT);
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        } else {
            Err(String::from_utf8_lossy(&out.stderr).into_owned())
        }
    }

    pub fn sql(&self, query: &str) -> String {
        self.try_sql(query)
            .unwrap_or_else(|e| panic!("SQL failed on 11.8: {query}\n{e}"))
    }

    /// A file of the host as a path inside the tree (copied into this server's folder).
    pub fn copy_in(&self, file: &Path, name: &str) -> String {
        fs::copy(file, self.dir.path().join(name)).expect("copy into the tree");
        format!("{}/{name}", self.inside)
    }

    /// Runs Debian 13's `mariadb` 11.8 client (inside the tree) against `addr`.
    pub fn client_11_8(&self, addr: &str, args: &[&str]) -> Output {
        let (host, port) = addr.rsplit_once(':').expect("HOST:PORT");
        let mut cmd = Command::new("chroot");
        cmd.arg(&self.root)
            .args([
                "mariadb",
                "--no-defaults",
                "--protocol=TCP",
                "-h",
                host,
                "-P",
                port,
            ])
            .arg(format!("-u{USER}"))
            .arg(format!("-p{PASSWORD}"))
            .arg(DATABASE)
            .args(args);
        run_with_timeout(cmd, None, CLI_TIMEOUT)
    }

    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for ChrootDb {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let log =
                fs::read_to_string(self.dir.path().join("data/error.log")).unwrap_or_default();
            let tail: Vec<&str> = log.lines().rev().take(20).collect();
            eprintln!("--- mariadbd 11.8 error.log tail ---");
            for l in tail.iter().rev() {
                eprintln!("{l}");
            }
        }
        self.kill();
    }
}
