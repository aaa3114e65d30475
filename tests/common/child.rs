//! Spawning long-lived helper processes (mariadbd, psprobe) so that they die
//! together with the test process, even if it is SIGKILLed or aborts.
//!
//! `PR_SET_PDEATHSIG` fires when the *thread* that forked the child exits, not
//! when the process exits. libtest runs every test on its own thread, so a
//! server spawned directly from a test (or from a tokio blocking-pool thread)
//! would be killed as soon as that thread ends — fatal for a server shared
//! across tests through a static. We therefore fork from one dedicated thread
//! that lives as long as the process.

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
        std::thread::Builder::new()
            .name("child-spawner".into())
            .spawn(move || {
                // Never returns while the process lives: `tx` sits in a static.
                for (mut cmd, reply) in rx {
                    let _ = reply.send(cmd.spawn());
                }
            })
            .expect("start child-spawner thread");
        tx
    })
}

/// Spawn `cmd` so that the kernel SIGKILLs it when this test process dies.
pub fn spawn_tied(mut cmd: Command) -> io::Result<Child> {
    let parent = std::process::id();
    // SAFETY: prctl and getppid are async-signal-safe; nothing allocates.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0,
                0,
                0,
            ) != 0
            {
                return Err(io::Error::last_os_error());
            }
            // The parent may have died between fork and prctl: then we would
            // already be reparented and never get the signal.
            if libc::getppid() as u32 != parent {
                return Err(io::Error::other("test process died during spawn"));
            }
            Ok(())
        });
    }
    let (reply_tx, reply_rx) = channel();
    spawner()
        .send((cmd, reply_tx))
        .expect("child-spawner thread is gone");
    reply_rx.recv().expect("child-spawner dropped the request")
}
