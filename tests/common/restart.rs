//! A restart hook for the harness's servers, any flavor (`--restart-cmd 'sh restart.sh {pfs}
//! {opts}'`), able to misbehave on purpose on chosen calls (fail, hang, ignore `{pfs}`), and the
//! reaper of the servers it started.

use std::path::{Path, PathBuf};

use super::controller::poll;
use super::server::Server;

fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// How the script misbehaves: on its n-th call (from 1).
#[derive(Debug, Clone, Copy, Default)]
pub struct Faults {
    /// Exits 1 without restarting anything.
    pub fail_at: Option<u32>,
    /// Hangs (longer than any restart timeout a test sets).
    pub hang_at: Option<u32>,
    /// Restarts with performance_schema the other way than `{pfs}` says.
    pub ignore_pfs_at: Option<u32>,
    /// Stops the server, waits this many seconds, then starts it (a slow command).
    pub slow_at: Option<(u32, u32)>,
    /// Stops the server and exits 0 without starting it again.
    pub down_at: Option<u32>,
}

/// Writes `restart.sh ON|OFF [OPTION...]`: stops the server of the harness's pid file
/// (SIGTERM), waits until it is gone, and starts it again detached, with the same arguments
/// (read from /proc; in its tree with chroot for a chroot flavor) but `--performance-schema=$1`
/// and the options after it (a startup scenario's). Appends each pid it starts to `DIR/pids`;
/// misbehaves as `faults` say.
pub fn restart_script_with(db: &Server, dir: &Path, faults: Faults) -> PathBuf {
    let cmdline = std::fs::read_to_string(format!("/proc/{}/cmdline", db.pid())).unwrap();
    let args: Vec<&str> = cmdline.split('\0').filter(|a| !a.is_empty()).collect();
    let pid_file = db.pid_file().display().to_string();
    let keep = |a: &&&str| !a.starts_with("--performance-schema=");
    let prefix = db.program_prefix();
    let kept: Vec<String> = prefix
        .iter()
        .map(|a| sh_quote(a))
        .chain(args.iter().filter(keep).map(|a| sh_quote(a)))
        .collect();
    let file = |name: &str| sh_quote(&dir.join(name).display().to_string());
    let at = |n: Option<u32>| n.map_or("0".to_string(), |n| n.to_string());
    let text = format!(
        "#!/bin/sh\nset -eu\ncalls={calls}\nn=$(( $(cat $calls 2>/dev/null || echo 0) + 1 ))\necho $n >$calls\n\
         if [ $n = {fail} ]; then echo 'simulated failure of the restart command' >&2; exit 1; fi\n\
         if [ $n = {hang} ]; then exec sleep 600; fi\n\
         pfs=$1\nshift\nif [ $n = {ignore} ]; then if [ $pfs = ON ]; then pfs=OFF; else pfs=ON; fi; fi\n\
         old=$(cat {pid} 2>/dev/null || true)\n\
         if [ -n \"$old\" ]; then kill -TERM \"$old\" 2>/dev/null || true; \
         while [ -e /proc/$old ] && ! grep -q '^State:.Z' /proc/$old/status; do sleep 0.05; done; fi\n\
         if [ $n = {down} ]; then exit 0; fi\n\
         if [ $n = {slow} ]; then sleep {slow_s}; fi\n\
         setsid nohup {server} \"--performance-schema=$pfs\" \"$@\" </dev/null >>{log} 2>&1 &\necho $! >>{pids}\n",
        calls = file("calls"),
        fail = at(faults.fail_at),
        hang = at(faults.hang_at),
        ignore = at(faults.ignore_pfs_at),
        down = at(faults.down_at),
        slow = at(faults.slow_at.map(|(n, _)| n)),
        slow_s = faults.slow_at.map_or(0, |(_, s)| s),
        pid = sh_quote(&pid_file),
        server = kept.join(" "),
        log = file("restarted.log"),
        pids = file("pids"),
    );
    std::fs::write(dir.join("restart.sh"), text).unwrap();
    dir.join("restart.sh")
}

/// [`restart_script_with`] without faults.
pub fn restart_script(db: &Server, dir: &Path) -> PathBuf {
    restart_script_with(db, dir, Faults::default())
}

/// Kills the servers the restart script started (the harness kills only its own child).
pub struct Reaper(pub PathBuf);

impl Drop for Reaper {
    fn drop(&mut self) {
        let pids = std::fs::read_to_string(self.0.join("pids")).unwrap_or_default();
        for pid in pids.lines() {
            let proc_file = |f: &str| std::fs::read_to_string(format!("/proc/{pid}/{f}"));
            let server = |c: String| c.contains("mariadbd") || c.contains("mysqld");
            if !proc_file("cmdline").is_ok_and(server) {
                continue;
            }
            // SAFETY: kill(2) on a server our script started, still running.
            unsafe { libc::kill(pid.parse().unwrap(), libc::SIGKILL) };
            poll("a restarted server to die", 10, || {
                proc_file("status").map_or(Some(()), |s| s.contains("State:\tZ").then_some(()))
            });
        }
    }
}
