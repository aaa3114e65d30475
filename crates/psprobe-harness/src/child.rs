//! Helper processes (mariadbd, psprobe, Prometheus, a benchmark script) that die with the
//! process that started them, even when it is SIGKILLed or aborts.
//!
//! `PR_SET_PDEATHSIG` fires when the *thread* that forked the child exits, not when the
//! process does. A test harness runs every test on its own thread, so a server spawned from a
//! test (or from a runtime's blocking thread) would be killed as soon as that thread ends:
//! fatal for a server shared across tests through a static. [`spawn_tied`] therefore forks
//! from one dedicated thread that lives as long as the process.

use std::io;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command};
use std::sync::mpsc::{channel, Sender};
use std::sync::OnceLock;

type Request = (Command, Sender<io::Result<Child>>);

static SPAWNER: OnceLock<Sender<Request>> = OnceLock::new();

fn spawner() -> &'static Sender<Request> {
    SPAWNER.get_or_init(|| {
        let (tx, rx) = channel::<Request>();
        let started = std::thread::Builder::new()
            .name("child-spawner".into())
            .spawn(move || {
                // Never returns while the process lives: `tx` sits in a static.
                for (mut cmd, reply) in rx {
                    let _ = reply.send(cmd.spawn());
                }
            });
        if let Err(e) = started {
            // The requests then fail one by one with "spawner is gone" below.
            eprintln!("cannot start the child-spawner thread: {e}");
        }
        tx
    })
}

/// Spawns `cmd` so that the kernel sends it `signal` when this process dies (SIGKILL for a
/// server; SIGTERM for a script whose trap stops what it started).
pub fn spawn_tied_with(mut cmd: Command, signal: i32) -> io::Result<Child> {
    tie_to_parent(&mut cmd, signal);
    let (reply_tx, reply_rx) = channel();
    spawner()
        .send((cmd, reply_tx))
        .map_err(|_| io::Error::other("the child-spawner thread is gone"))?;
    reply_rx
        .recv()
        .map_err(|_| io::Error::other("the child-spawner thread dropped the request"))?
}

/// [`spawn_tied_with`] SIGKILL.
pub fn spawn_tied(cmd: Command) -> io::Result<Child> {
    spawn_tied_with(cmd, libc::SIGKILL)
}

fn tie_to_parent(cmd: &mut Command, signal: i32) {
    let parent = std::process::id();
    // SAFETY: prctl and getppid are async-signal-safe; nothing allocates.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, signal as libc::c_ulong, 0, 0, 0) != 0 {
                return Err(io::Error::last_os_error());
            }
            // The parent may have died between fork and prctl: then the child has been
            // reparented already and would never get the signal.
            if libc::getppid() as u32 != parent {
                return Err(io::Error::other("the parent died during spawn"));
            }
            Ok(())
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tied_child_runs_and_is_reaped() {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "exit 3"]);
        let status = spawn_tied(cmd).unwrap().wait().unwrap();
        assert_eq!(status.code(), Some(3));
    }

    #[test]
    fn a_missing_program_is_an_error_not_a_panic() {
        let err = spawn_tied(Command::new("/nonexistent/program")).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
    }
}
