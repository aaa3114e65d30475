//! Runs the psprobe binary under test as a child process and talks to its
//! metrics endpoint with a bare std TcpStream (no HTTP client dependency).

use super::netns::Netns;
use super::prom::Scrape;
use psprobe_harness::child::spawn_tied;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{channel, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const STARTUP_TIMEOUT: Duration = Duration::from_secs(30);
const HTTP_TIMEOUT: Duration = Duration::from_secs(10);

pub struct Probe {
    child: Child,
    proxy: String,
    metrics: String,
    /// With `--admin`: where the admin interface listens.
    admin: Option<String>,
    /// The `psprobe listening ...` line, for fields the accessors do not cover (a duet's).
    listening: String,
    stderr: Arc<Mutex<Vec<u8>>>,
}

impl Probe {
    /// `psprobe proxy --listen 127.0.0.1:0 --upstream UPSTREAM --metrics 127.0.0.1:0 EXTRA…`,
    /// returning once it has announced its bound addresses on stdout.
    pub fn start(upstream: &str, extra: &[&str]) -> Probe {
        Self::start_with_env(upstream, extra, &[])
    }

    /// Like [`Probe::start`], with extra environment variables (e.g. the controller's DSN).
    pub fn start_with_env(upstream: &str, extra: &[&str], env: &[(&str, &str)]) -> Probe {
        Self::start_on("127.0.0.1:0", upstream, extra, env)
    }

    /// Like [`Probe::start_with_env`], listening on `listen`.
    pub fn start_on(listen: &str, upstream: &str, extra: &[&str], env: &[(&str, &str)]) -> Probe {
        let cmd = Command::new(env!("CARGO_BIN_EXE_psprobe"));
        Self::launch(cmd, listen, "127.0.0.1:0", upstream, extra, env)
    }

    /// psprobe on another host: it runs inside `netns`, its proxy and metrics listeners on
    /// the host's management address (reachable from the test process and from clients on
    /// that host alike).
    pub fn start_in(netns: &Netns, upstream: &str, extra: &[&str]) -> Probe {
        Self::start_in_with_env(netns, upstream, extra, &[])
    }

    /// Like [`Probe::start_in`], with extra environment variables (the controller's DSN).
    pub fn start_in_with_env(
        netns: &Netns,
        upstream: &str,
        extra: &[&str],
        env: &[(&str, &str)],
    ) -> Probe {
        let cmd = netns.command(env!("CARGO_BIN_EXE_psprobe"));
        let any_port = format!("{}:0", netns.mgmt_ip());
        Self::launch(cmd, &any_port, &any_port, upstream, extra, env)
    }

    /// Like [`Probe::start`], with RLIMIT_NOFILE set to `nofile` (soft and hard) in the
    /// child, as `ulimit -n` would.
    pub fn start_with_fd_limit(upstream: &str, extra: &[&str], nofile: u64) -> Probe {
        use std::os::unix::process::CommandExt;
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_psprobe"));
        let limit = libc::rlimit {
            rlim_cur: nofile,
            rlim_max: nofile,
        };
        // SAFETY: setrlimit is async-signal-safe and reads a struct copied into the closure.
        unsafe {
            cmd.pre_exec(move || {
                if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        Self::launch(cmd, "127.0.0.1:0", "127.0.0.1:0", upstream, extra, &[])
    }

    fn launch(
        mut cmd: Command,
        listen: &str,
        metrics: &str,
        upstream: &str,
        extra: &[&str],
        env: &[(&str, &str)],
    ) -> Probe {
        cmd.envs(env.iter().copied());
        cmd.args(["proxy", "--listen", listen, "--upstream", upstream])
            .args(["--metrics", metrics])
            .args(extra);
        Self::start_command(cmd)
    }

    /// A psprobe whose whole command line the caller makes (the packaged binary in a chroot,
    /// an image under podman): it must run `proxy` and print psprobe's listening line on stdout.
    pub fn start_command(mut cmd: Command) -> Probe {
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = spawn_tied(cmd).expect("spawn psprobe binary");

        // Logs go to stderr; drain it continuously so the pipe never fills
        // and blocks the proxy, keeping everything for `stderr_text`.
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let (buf, mut pipe) = (stderr.clone(), child.stderr.take().expect("stderr piped"));
        let stderr_reader = std::thread::spawn(move || {
            let mut chunk = [0u8; 8192];
            while let Ok(n @ 1..) = pipe.read(&mut chunk) {
                buf.lock()
                    .expect("stderr buffer poisoned")
                    .extend_from_slice(&chunk[..n]);
            }
        });

        // Hand over the first stdout line, then keep draining. If psprobe
        // exits first, the sender drops and recv reports Disconnected.
        let (tx, rx) = channel();
        let stdout = child.stdout.take().expect("stdout piped");
        std::thread::spawn(move || {
            let mut lines = BufReader::new(stdout).lines();
            if let Some(Ok(first)) = lines.next() {
                let _ = tx.send(first);
            }
            lines.for_each(drop);
        });

        let mut probe = Probe {
            child,
            proxy: String::new(),
            metrics: String::new(),
            admin: None,
            listening: String::new(),
            stderr,
        };
        let line = match rx.recv_timeout(STARTUP_TIMEOUT) {
            Ok(line) => line,
            Err(RecvTimeoutError::Timeout) => {
                // Drop prints the captured stderr while unwinding.
                panic!("psprobe printed nothing on stdout within {STARTUP_TIMEOUT:?}")
            }
            Err(RecvTimeoutError::Disconnected) => {
                let status = probe.wait_exit(Duration::from_secs(5));
                let _ = stderr_reader.join(); // pipe is closed once it exited
                panic!("psprobe exited before listening ({status:?})")
            }
        };
        for field in line.split_whitespace() {
            match field.split_once('=') {
                Some(("proxy", a)) => probe.proxy = a.to_owned(),
                Some(("metrics", a)) => probe.metrics = a.to_owned(),
                Some(("admin", a)) => probe.admin = Some(a.to_owned()),
                _ => {}
            }
        }
        probe.listening = line.clone();
        assert!(
            line.starts_with("psprobe listening ")
                && !probe.proxy.is_empty()
                && !probe.metrics.is_empty(),
            "unexpected first stdout line from psprobe: {line:?}"
        );
        probe
    }

    /// A `NAME=VALUE` field of the line psprobe announced its addresses with (e.g.
    /// `duet_proxy`).
    pub fn listening_field(&self, name: &str) -> Option<&str> {
        self.listening
            .split_whitespace()
            .find_map(|f| f.strip_prefix(name)?.strip_prefix('='))
    }

    pub fn proxy_addr(&self) -> &str {
        &self.proxy
    }

    pub fn proxy_port(&self) -> u16 {
        let port = self
            .proxy
            .rsplit_once(':')
            .expect("proxy addr has a port")
            .1;
        port.parse().expect("proxy port is numeric")
    }

    /// The admin interface's address (`--admin` given).
    pub fn admin_addr(&self) -> &str {
        self.admin
            .as_deref()
            .expect("psprobe was started without --admin")
    }

    pub fn metrics_addr(&self) -> &str {
        &self.metrics
    }

    pub fn metrics_url(&self) -> String {
        format!("http://{}/metrics", self.metrics)
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Resident set size now, in bytes (VmRSS of /proc/PID/status).
    pub fn rss_bytes(&self) -> u64 {
        let path = format!("/proc/{}/status", self.child.id());
        let status = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {path}: {e}"));
        let kib = status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
            .unwrap_or_else(|| panic!("no VmRSS in {path}:\n{status}"));
        kib * 1024
    }

    /// Whether the process is still running (it never exits on its own in these tests).
    pub fn is_running(&mut self) -> bool {
        self.child
            .try_wait()
            .expect("try_wait on psprobe")
            .is_none()
    }

    /// Everything psprobe has written to stderr so far.
    pub fn stderr_text(&self) -> String {
        String::from_utf8_lossy(&self.stderr.lock().expect("stderr buffer poisoned")).into_owned()
    }

    /// HTTP/1.0 GET against the metrics listener; returns (status, body).
    pub fn http_get(&self, path: &str) -> (u16, String) {
        let addr: SocketAddr = self.metrics.parse().expect("metrics addr is IP:PORT");
        let mut s = TcpStream::connect_timeout(&addr, HTTP_TIMEOUT)
            .unwrap_or_else(|e| panic!("connect to metrics {addr}: {e}"));
        s.set_read_timeout(Some(HTTP_TIMEOUT))
            .expect("set read timeout");
        write!(s, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").expect("send HTTP request");
        let mut raw = Vec::new();
        s.read_to_end(&mut raw)
            .unwrap_or_else(|e| panic!("read GET {path} response: {e}"));
        let raw = String::from_utf8(raw).expect("HTTP response is not UTF-8");
        let (head, body) = raw
            .split_once("\r\n\r\n")
            .unwrap_or_else(|| panic!("no header/body separator in response to {path}: {raw:?}"));
        let status = head.split_whitespace().nth(1).and_then(|c| c.parse().ok());
        (
            status.unwrap_or_else(|| panic!("bad status line: {head:?}")),
            body.to_owned(),
        )
    }

    /// Sends `request` as it is (no Host header added, nothing fixed up) to the metrics
    /// listener and reads until psprobe closes or `timeout` passes.
    pub fn http_raw(&self, request: &[u8], timeout: Duration) -> RawHttp {
        let addr: SocketAddr = self.metrics.parse().expect("metrics addr is IP:PORT");
        let mut s = TcpStream::connect_timeout(&addr, HTTP_TIMEOUT)
            .unwrap_or_else(|e| panic!("connect to metrics {addr}: {e}"));
        s.set_read_timeout(Some(timeout)).expect("set read timeout");
        s.write_all(request).expect("send HTTP request");
        let started = Instant::now();
        let mut raw = Vec::new();
        let closed = s.read_to_end(&mut raw).is_ok();
        RawHttp::new(raw, closed, started.elapsed())
    }

    /// A field of /proc/PID/status in KiB (VmRSS, VmHWM).
    pub fn status_kib(&self, field: &str) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .expect("read /proc/PID/status of psprobe");
        status
            .lines()
            .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .unwrap_or_else(|| panic!("no {field} in /proc/PID/status"))
    }

    pub fn scrape(&self) -> Scrape {
        let (status, body) = self.http_get("/metrics");
        assert_eq!(status, 200, "GET /metrics returned {status}: {body}");
        Scrape::parse(&body)
    }

    pub fn healthz(&self) -> u16 {
        self.http_get("/healthz").0
    }

    pub fn signal(&self, sig: libc::c_int) {
        // SAFETY: plain syscall on our own (not yet reaped) child's pid.
        let rc = unsafe { libc::kill(self.child.id() as libc::pid_t, sig) };
        assert_eq!(
            rc,
            0,
            "kill({}, {sig}): {}",
            self.child.id(),
            std::io::Error::last_os_error()
        );
    }

    /// Wait up to `timeout` for psprobe to exit on its own.
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait on psprobe") {
                return Some(status);
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20)); // poll interval
        }
    }
}

impl Drop for Probe {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("--- psprobe stderr ---\n{}", self.stderr_text());
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What came back for a raw HTTP request.
#[derive(Debug)]
pub struct RawHttp {
    /// The status code, when a status line came.
    pub status: Option<u16>,
    pub text: String,
    /// psprobe closed the connection (rather than the read timing out).
    pub closed: bool,
    /// From the request being sent to the connection closing (or the timeout).
    pub elapsed: Duration,
}

impl RawHttp {
    pub fn new(raw: Vec<u8>, closed: bool, elapsed: Duration) -> Self {
        let text = String::from_utf8_lossy(&raw).into_owned();
        let status = text
            .strip_prefix("HTTP/1.1 ")
            .and_then(|rest| rest.get(..3)?.parse().ok());
        RawHttp {
            status,
            text,
            closed,
            elapsed,
        }
    }

    /// The body (after the empty line).
    pub fn body(&self) -> &str {
        self.text.split_once("\r\n\r\n").map_or("", |(_, b)| b)
    }
}
