//! Hosts on one machine: each `Netns` is a network namespace (its own loopback, routes and
//! ports) joined to the root namespace by a veth pair, the "management network" the test
//! process uses to start servers, run SQL and scrape /metrics. Host-to-host traffic goes
//! through a [`super::faulty_link::FaultyLink`] instead, so faults never hit the test's own
//! control traffic. The root namespace does not forward (ip_forward is left alone, no routes
//! between hosts), so a cut link really cuts the hosts off from each other.
//!
//! Needs iproute2 (scripts/setup.sh installs it: missing, it fails the test), root and
//! /dev/net/tun: without those two, which a container may deny whatever is installed,
//! [`unavailable`] says why and the tests skip.

use super::cli::run_with_timeout;
use super::datadir::is_root;
use std::fs::{self, File};
use std::io::{self, Write};
use std::net::Ipv4Addr;
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

const IP: &str = "/usr/sbin/ip";
const NETNS_DIR: &str = "/run/netns";
/// Namespaces are named `psp<pid>n<k>` (<= 15 bytes, so the root-side veth `pv<pid>n<k>` fits
/// an interface name): a SIGKILLed test process leaves them behind, and the next process
/// recognises and removes them (see [`sweep_stale`]).
const NS_PREFIX: &str = "psp";
/// Serialises the choice of management subnets among concurrent test processes: the root
/// namespace's addresses are shared by all of them.
const LOCK_FILE: &str = "/run/lock/psprobe-netns.lock";

/// Why namespaces cannot be used here, or None when they can. Checked once per process by
/// actually creating (and removing) a namespace with a TUN device, the two things we need.
/// Panics without iproute2: a tool the setup installs is never a reason to skip.
pub fn unavailable() -> Option<String> {
    assert!(
        Path::new(IP).exists(),
        "{IP} (iproute2) is not installed: scripts/setup.sh installs it"
    );
    static WHY: OnceLock<Option<String>> = OnceLock::new();
    WHY.get_or_init(|| {
        if !is_root() {
            return Some("not root (network namespaces need CAP_NET_ADMIN)".into());
        }
        if !Path::new("/dev/net/tun").exists() {
            return Some("/dev/net/tun does not exist (no TUN driver)".into());
        }
        sweep_stale();
        match Netns::create() {
            Ok(ns) => match ns.open_tun("psptunprobe") {
                Ok(_) => None,
                Err(e) => Some(format!("cannot create a TUN device in a namespace: {e}")),
            },
            Err(e) => Some(format!("cannot create a network namespace: {e}")),
        }
    })
    .clone()
}

/// Set (to anything) to make namespaces unavailable on purpose: the skip rule's own test.
pub const FORCE_UNAVAILABLE: &str = "PSPROBE_TEST_NO_NETNS";

/// Whether this runs under CI (`CI=true`, as CI services set it; or `CI=1`).
pub fn under_ci() -> bool {
    matches!(std::env::var("CI").as_deref(), Ok("true") | Ok("1"))
}

/// True when the test must skip, after printing why (bypassing libtest's capture, so it shows
/// in CI logs; scripts/test.sh counts these lines). Under CI a test that cannot make its
/// namespaces fails with the reason instead: a CI run must not pass without running it.
pub fn skip_unless_available(test: &str) -> bool {
    let forced = std::env::var(FORCE_UNAVAILABLE)
        .ok()
        .map(|v| format!("{FORCE_UNAVAILABLE}={v}: namespaces made unavailable on purpose"));
    match forced.or_else(unavailable) {
        None => false,
        Some(why) if under_ci() => {
            panic!("{test} cannot run its real setup under CI (CI is set): {why}")
        }
        Some(why) => {
            let _ = writeln!(io::stderr(), "SKIPPED {test}: {why}");
            true
        }
    }
}

/// Runs `ip ARGS`; Err carries its stderr.
pub fn ip(args: &[&str]) -> io::Result<()> {
    let mut cmd = Command::new(IP);
    cmd.args(args);
    let out = run_with_timeout(cmd, None, Duration::from_secs(30));
    if out.status.success() {
        Ok(())
    } else {
        Err(io::Error::other(format!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )))
    }
}

/// One host: a network namespace with loopback up and a veth to the root namespace.
pub struct Netns {
    name: String,
    /// Kept open for `setns` in children and helper threads.
    fd: File,
    /// This host's address on its management veth (the root side is `.1` of the same /30).
    mgmt: Ipv4Addr,
}

impl Netns {
    pub fn create() -> io::Result<Netns> {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let name = format!(
            "{NS_PREFIX}{}n{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        ip(&["netns", "add", &name])?;
        // From here on, Drop removes the namespace (and with it both veth ends).
        let fd = match File::open(Path::new(NETNS_DIR).join(&name)) {
            Ok(fd) => fd,
            Err(e) => {
                let _ = ip(&["netns", "del", &name]);
                return Err(e);
            }
        };
        let mut ns = Netns {
            name,
            fd,
            mgmt: Ipv4Addr::UNSPECIFIED,
        };
        ip(&["-n", &ns.name, "link", "set", "lo", "up"])?;
        ns.mgmt = ns.add_management_veth()?;
        Ok(ns)
    }

    /// Creates the veth pair and gives both ends the first free /30 of 10.78.0.0/16 in the
    /// root namespace (under a lock, as other test processes pick theirs concurrently).
    fn add_management_veth(&self) -> io::Result<Ipv4Addr> {
        let root_end = format!("pv{}", &self.name[NS_PREFIX.len()..]);
        ip(&[
            "link", "add", &root_end, "type", "veth", "peer", "name", "mgmt0", "netns", &self.name,
        ])?;
        let lock = fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(LOCK_FILE)?;
        // SAFETY: flock on a descriptor we own; released when `lock` is closed.
        if unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX) } != 0 {
            return Err(io::Error::last_os_error());
        }
        let used = Command::new(IP)
            .args(["-4", "-o", "addr", "show"])
            .output()?;
        let used = String::from_utf8_lossy(&used.stdout).into_owned();
        let subnet = (0u32..16_384)
            .map(|i| {
                (
                    Ipv4Addr::from(0x0a4e_0000 + i * 4 + 1),
                    Ipv4Addr::from(0x0a4e_0000 + i * 4 + 2),
                )
            })
            .find(|(root, _)| !used.contains(&format!("inet {root}/")))
            .ok_or_else(|| io::Error::other("10.78.0.0/16 is full of management subnets"))?;
        ip(&["addr", "add", &format!("{}/30", subnet.0), "dev", &root_end])?;
        drop(lock);
        ip(&["link", "set", &root_end, "up"])?;
        let inner = format!("{}/30", subnet.1);
        ip(&["-n", &self.name, "addr", "add", &inner, "dev", "mgmt0"])?;
        ip(&["-n", &self.name, "link", "set", "mgmt0", "up"])?;
        Ok(subnet.1)
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// This host's address as seen from the root namespace (the test process).
    pub fn mgmt_ip(&self) -> Ipv4Addr {
        self.mgmt
    }

    /// Runs `ip ARGS` inside this namespace.
    pub fn ip(&self, args: &[&str]) -> io::Result<()> {
        let mut all = vec!["-n", &self.name];
        all.extend_from_slice(args);
        ip(&all)
    }

    /// Makes `cmd` run inside this namespace (the child joins it between fork and exec).
    pub fn enter(&self, cmd: &mut Command) {
        let fd: RawFd = self.fd.as_raw_fd();
        // SAFETY: setns is async-signal-safe and allocates nothing. The fd stays open while
        // `self` lives, which outlasts the spawn.
        unsafe {
            cmd.pre_exec(move || {
                if libc::setns(fd, libc::CLONE_NEWNET) != 0 {
                    return Err(io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }

    /// `Command::new(program)` that runs inside this namespace.
    pub fn command(&self, program: &str) -> Command {
        let mut cmd = Command::new(program);
        self.enter(&mut cmd);
        cmd
    }

    /// Runs `f` on a short-lived thread that has joined this namespace: sockets and TUN
    /// devices it creates belong to the namespace for good (setns is per thread, and the
    /// thread ends with `f`, so no other code ever runs in the wrong namespace).
    pub fn run_inside<T: Send + 'static>(
        &self,
        f: impl FnOnce() -> io::Result<T> + Send + 'static,
    ) -> io::Result<T> {
        let fd = self.fd.try_clone()?;
        std::thread::spawn(move || {
            // SAFETY: setns on this thread only, with a namespace fd we own.
            if unsafe { libc::setns(fd.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
                return Err(io::Error::last_os_error());
            }
            f()
        })
        .join()
        .map_err(|_| io::Error::other("thread inside the namespace panicked"))?
    }

    /// Opens a new TUN device `name` (IFF_TUN | IFF_NO_PI: bare IP packets) in this namespace.
    /// The device lives as long as the returned file.
    pub fn open_tun(&self, name: &str) -> io::Result<File> {
        let name = name.to_owned();
        self.run_inside(move || open_tun_here(&name))
    }
}

/// `struct ifreq` as TUNSETIFF reads it: the name, then the flags (the rest is padding).
#[repr(C)]
struct IfReq {
    name: [u8; libc::IFNAMSIZ],
    flags: libc::c_short,
    _pad: [u8; 22],
}

fn open_tun_here(name: &str) -> io::Result<File> {
    let file = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/net/tun")?;
    let mut req = IfReq {
        name: [0; libc::IFNAMSIZ],
        flags: (libc::IFF_TUN | libc::IFF_NO_PI) as libc::c_short,
        _pad: [0; 22],
    };
    if name.len() >= libc::IFNAMSIZ {
        return Err(io::Error::other(format!(
            "interface name {name:?} is too long"
        )));
    }
    req.name[..name.len()].copy_from_slice(name.as_bytes());
    // SAFETY: TUNSETIFF reads (and may write back the name into) an ifreq-sized buffer.
    if unsafe { libc::ioctl(file.as_raw_fd(), libc::TUNSETIFF, &mut req as *mut IfReq) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(file)
}

impl Drop for Netns {
    fn drop(&mut self) {
        // Processes still inside keep it alive only until they die (callers kill theirs
        // first); the veth pair goes with the namespace.
        let _ = ip(&["netns", "del", &self.name]);
    }
}

/// Removes namespaces left by test processes that no longer exist.
fn sweep_stale() {
    let Ok(entries) = fs::read_dir(NETNS_DIR) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let pid = name
            .strip_prefix(NS_PREFIX)
            .and_then(|r| r.split('n').next())
            .and_then(|p| p.parse::<libc::pid_t>().ok());
        let Some(pid) = pid else { continue };
        // SAFETY: signal 0 only probes for existence. ESRCH = owner is gone.
        let gone = unsafe { libc::kill(pid, 0) } == -1
            && io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH);
        if gone {
            let _ = ip(&["netns", "del", &name]);
        }
    }
}
