//! SIGINT and SIGTERM for the commands that start throwaway servers (`demo`, `experiment`,
//! `duet`): from the command's first step on they only set a flag, which each stage checks,
//! so the command stops between or inside its stages and the servers (in sessions of their
//! own, which a terminal's Ctrl-C does not reach) are stopped and their folders removed on
//! the way out. Without it a signal in the first second of a stage, before the stage watched
//! for it, ended the process and left the servers running.
//!
//! Must not: do anything in the handler but store to an atomic (async-signal-safe).

use std::sync::atomic::{AtomicBool, Ordering};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    INTERRUPTED.store(true, Ordering::SeqCst);
}

/// From now on SIGINT and SIGTERM set the flag instead of ending the process.
pub(crate) fn install() {
    let handler = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
    // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
    unsafe {
        libc::signal(libc::SIGINT, handler);
        libc::signal(libc::SIGTERM, handler);
    }
}

/// Whether SIGINT or SIGTERM came since [`install`].
pub(super) fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// An error when SIGINT or SIGTERM came: the caller returns it, and its servers are stopped
/// as it unwinds.
pub(super) fn check() -> anyhow::Result<()> {
    if interrupted() {
        anyhow::bail!("interrupted: the throwaway servers are stopped and their folders removed; nothing is reported");
    }
    Ok(())
}
