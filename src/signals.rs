//! What `psprobe proxy` does on each signal a daemon can receive. psprobe sits inline between
//! applications and their database, and scripts signal daemons for their own reasons
//! (logrotate's `postrotate` sends SIGUSR1 or SIGHUP, a terminal sends SIGTSTP and SIGWINCH):
//! only the documented shutdown may end it, nothing may stop it, and each signal received is
//! logged (one line per signal and per [`LOG_INTERVAL`] at most, with the count of the others).
//!
//! | signal | what psprobe does |
//! | --- | --- |
//! | SIGTERM, SIGINT, SIGQUIT | shuts down: stops the controller (restoring the performance_schema settings), then the proxy; one sent while stopping is logged and changes nothing |
//! | SIGHUP | reloads psprobe's TLS certificate when it terminates TLS (`proxy::reload_on_sighup`); else logged, nothing to reload |
//! | SIGUSR1, SIGUSR2, SIGALRM, SIGVTALRM, SIGPROF, SIGIO, SIGPWR, SIGSTKFLT, SIGRTMIN..SIGRTMAX | logged, ignored (their default ends the process) |
//! | SIGTSTP, SIGTTIN, SIGTTOU | logged, ignored (their default stops the process, which would stall every connection) |
//! | SIGXCPU, SIGXFSZ | logged (WARN), ignored: a file over its size limit then fails with an error; the kernel still kills at the hard CPU limit |
//! | SIGCONT | logged: psprobe was stopped (SIGSTOP) and goes on |
//! | SIGWINCH, SIGURG | logged at debug (routine for a process in a terminal or on a socket); ignored by default |
//! | SIGPIPE | ignored (Rust's runtime sets it so): a write to a closed socket fails with EPIPE |
//! | SIGCHLD | psprobe's own children (the restart command) ending; the runtime reaps them |
//! | SIGKILL, SIGSTOP | cannot be caught: SIGKILL ends psprobe at once (its next start restores the settings a crash left), SIGSTOP freezes it until SIGCONT |
//! | SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP, SIGSYS | faults of psprobe itself: left at their default (the process ends, with a core dump where enabled) |
//!
//! Must not: end or stop the process for any signal but the three of the shutdown, or log
//! more than a line per signal and interval however fast signals come.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::Notify;

use crate::log_limit::{more, RateLimited};

/// At most one line per signal in this interval (the others are counted into the next line).
pub(crate) const LOG_INTERVAL: Duration = Duration::from_secs(10);

/// What psprobe does on a signal it catches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Action {
    /// The documented shutdown.
    Shutdown,
    /// Reload the TLS certificate (done by the proxy's own handler); logged here only when
    /// there is nothing to reload.
    Hangup,
    /// Nothing: logged at INFO.
    Ignore,
    /// Nothing, but a resource limit was reached: logged at WARN.
    Limit,
    /// The process goes on after being stopped: logged at INFO.
    Continue,
    /// Routine: logged at DEBUG.
    Routine,
}

/// Every signal psprobe catches, with its name and action. Real-time signals are added by
/// [`caught`] (their numbers depend on the C library).
const CAUGHT: &[(libc::c_int, &str, Action)] = &[
    (libc::SIGTERM, "SIGTERM", Action::Shutdown),
    (libc::SIGINT, "SIGINT", Action::Shutdown),
    (libc::SIGQUIT, "SIGQUIT", Action::Shutdown),
    (libc::SIGHUP, "SIGHUP", Action::Hangup),
    (libc::SIGUSR1, "SIGUSR1", Action::Ignore),
    (libc::SIGUSR2, "SIGUSR2", Action::Ignore),
    (libc::SIGALRM, "SIGALRM", Action::Ignore),
    (libc::SIGVTALRM, "SIGVTALRM", Action::Ignore),
    (libc::SIGPROF, "SIGPROF", Action::Ignore),
    (libc::SIGIO, "SIGIO", Action::Ignore),
    (libc::SIGPWR, "SIGPWR", Action::Ignore),
    (libc::SIGSTKFLT, "SIGSTKFLT", Action::Ignore),
    (libc::SIGTSTP, "SIGTSTP", Action::Ignore),
    (libc::SIGTTIN, "SIGTTIN", Action::Ignore),
    (libc::SIGTTOU, "SIGTTOU", Action::Ignore),
    (libc::SIGXCPU, "SIGXCPU", Action::Limit),
    (libc::SIGXFSZ, "SIGXFSZ", Action::Limit),
    (libc::SIGCONT, "SIGCONT", Action::Continue),
    (libc::SIGWINCH, "SIGWINCH", Action::Routine),
    (libc::SIGURG, "SIGURG", Action::Routine),
];

/// [`CAUGHT`] and the real-time signals (SIGRTMIN+n, named so).
fn caught() -> Vec<(libc::c_int, String, Action)> {
    let mut all: Vec<_> = CAUGHT
        .iter()
        .map(|&(n, name, action)| (n, name.to_string(), action))
        .collect();
    let (min, max) = (libc::SIGRTMIN(), libc::SIGRTMAX());
    all.extend((min..=max).map(|n| (n, format!("SIGRTMIN+{}", n - min), Action::Ignore)));
    all
}

/// What the handlers share with the process's main task.
#[derive(Default)]
struct State {
    /// A shutdown signal came: the main task is stopping.
    stopping: AtomicBool,
    /// The proxy reloads its certificate on SIGHUP (it logs that itself).
    reloads_certificate: AtomicBool,
    shutdown: Notify,
}

/// The signal handlers of `psprobe proxy`, installed for the life of the process.
pub(crate) struct Signals {
    state: Arc<State>,
}

impl Signals {
    /// Catches every signal of [`CAUGHT`] from now on (a shutdown signal that comes before the
    /// main task waits for one is kept). A signal that cannot be watched keeps its default
    /// action, with a WARN line saying so.
    pub(crate) fn install() -> Signals {
        let state = Arc::new(State::default());
        for (number, name, action) in caught() {
            match signal(SignalKind::from_raw(number)) {
                Ok(mut stream) => {
                    let state = Arc::clone(&state);
                    tokio::spawn(async move {
                        let limit = RateLimited::new(LOG_INTERVAL);
                        while stream.recv().await.is_some() {
                            state.received(&name, action, &limit);
                        }
                    });
                }
                Err(e) => tracing::warn!("cannot watch {name} ({e}); it keeps its default action"),
            }
        }
        Signals { state }
    }

    /// The proxy terminates TLS and reloads its certificate on SIGHUP (and says so itself).
    pub(crate) fn set_reloads_certificate(&self, reloads: bool) {
        self.state
            .reloads_certificate
            .store(reloads, Ordering::Relaxed);
    }

    /// Resolves once SIGTERM, SIGINT or SIGQUIT has come (its line already logged).
    pub(crate) async fn shutdown(&self) {
        self.state.shutdown.notified().await;
    }
}

impl State {
    fn received(&self, name: &str, action: Action, limit: &RateLimited) {
        if action == Action::Shutdown && !self.stopping.swap(true, Ordering::SeqCst) {
            // The first shutdown signal: always said, at once.
            tracing::info!("{name} received: stopping");
            self.shutdown.notify_one();
            return;
        }
        if action == Action::Hangup && self.reloads_certificate.load(Ordering::Relaxed) {
            return;
        }
        let Some(suppressed) = limit.check() else {
            return;
        };
        let more = more(suppressed);
        match action {
            Action::Shutdown => tracing::warn!(
                "{name} received while stopping: the shutdown goes on (it restores the \
                 performance_schema settings first); SIGKILL ends psprobe at once, and its next \
                 start restores them{more}"
            ),
            Action::Hangup => tracing::info!(
                "SIGHUP received: ignored, psprobe terminates no TLS, so it has no certificate \
                 to reload (its logs go to stderr: nothing to reopen){more}"
            ),
            Action::Ignore => tracing::info!(
                "{name} received: ignored (psprobe acts only on SIGTERM, SIGINT and SIGQUIT, \
                 which stop it, and SIGHUP){more}"
            ),
            Action::Limit => tracing::warn!(
                "{name} received: a resource limit of psprobe's was reached (ulimit -t or -f); \
                 ignored, psprobe goes on{more}"
            ),
            Action::Continue => tracing::info!("{name} received: psprobe goes on{more}"),
            Action::Routine => tracing::debug!("{name} received: ignored{more}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_catchable_signal_has_one_action_and_the_faults_keep_theirs() {
        let all = caught();
        let mut numbers: Vec<_> = all.iter().map(|(n, ..)| *n).collect();
        numbers.sort_unstable();
        numbers.dedup();
        assert_eq!(numbers.len(), all.len(), "a signal listed twice");
        // Every standard signal (1..=31) is either caught, or left at a default that is
        // right for it: the uncatchable two, the process's own faults, SIGPIPE (ignored by
        // Rust's runtime) and SIGCHLD (the runtime's, for its children).
        let left = [
            libc::SIGKILL,
            libc::SIGSTOP,
            libc::SIGSEGV,
            libc::SIGBUS,
            libc::SIGILL,
            libc::SIGFPE,
            libc::SIGABRT,
            libc::SIGTRAP,
            libc::SIGSYS,
            libc::SIGPIPE,
            libc::SIGCHLD,
        ];
        for n in 1..=31 {
            assert!(
                numbers.contains(&n) != left.contains(&n),
                "signal {n} has no defined action (or two)"
            );
        }
        assert_eq!(numbers.last(), Some(&libc::SIGRTMAX()));
        let shutdown: Vec<_> = all
            .iter()
            .filter(|(.., a)| *a == Action::Shutdown)
            .map(|(_, name, _)| name.as_str())
            .collect();
        assert_eq!(shutdown, ["SIGTERM", "SIGINT", "SIGQUIT"]);
    }
}
