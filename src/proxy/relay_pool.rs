//! Where connections run: a pool of single-threaded event loops, each owning both legs of the
//! connections placed on it, or tokio's shared work-stealing pool (`--relay-runtime`).
//!
//! Why a pool of event loops: with work stealing, a socket's readiness on one worker woke
//! another to steal, 1.6 futex calls and 2 context switches a query at 2 clients
//! (docs/performance.md); HAProxy and pingora's no-steal runtime keep a connection on one
//! thread. A new connection goes to the loop with the fewest open connections (ties taken in
//! turn), not a hash of its address, so loops stay even as connections come and go.
//!
//! Must not: touch a connection's bytes, or put anything but the accept hand-off between
//! threads (the relay of a placed connection never leaves its loop).

use std::future::Future;
use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::runtime::Handle;
use tokio::sync::oneshot;

/// `--relay-runtime`: how the relay's connections are run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum RelayRuntime {
    /// One single-threaded event loop per thread; `None`: one per CPU psprobe may run on.
    Loops(Option<NonZeroUsize>),
    /// tokio's multi-threaded runtime, shared with the rest of psprobe. The default: on
    /// MySQL 9.7 the controller's switches stalled for seconds under the loops' higher load
    /// (docs/performance.md, "The relay runtime"), which is not understood yet.
    #[default]
    WorkStealing,
}

impl RelayRuntime {
    pub(crate) const NAMES: [&'static str; 2] = ["loops", "work-stealing"];

    /// From `--relay-runtime` and `--relay-threads` (which only loops take; given alone, it
    /// asks for loops).
    pub(crate) fn from_options(
        runtime: Option<&str>,
        threads: Option<usize>,
    ) -> Result<Self, String> {
        let threads = match threads {
            None => None,
            Some(n) => Some(NonZeroUsize::new(n).ok_or_else(|| {
                "relay_threads must be at least 1 (leave it out for one per CPU)".to_string()
            })?),
        };
        match (runtime, threads) {
            (None, None) => Ok(RelayRuntime::WorkStealing),
            (None | Some("loops"), threads) => Ok(RelayRuntime::Loops(threads)),
            (Some("work-stealing"), Some(_)) => Err(
                "relay_threads is for relay_runtime = \"loops\"; the work-stealing runtime has \
                 a worker per CPU"
                    .to_string(),
            ),
            (Some("work-stealing"), None) => Ok(RelayRuntime::WorkStealing),
            (Some(other), _) => Err(format!(
                "relay_runtime is one of {}, not {other:?}",
                Self::NAMES.join(", ")
            )),
        }
    }
}

/// The pool of event loops, or the caller's runtime. Dropped, it stops its loops (their
/// connections are cut); the proxy drops it once every connection has ended.
pub(crate) enum RelayPool {
    Loops(Vec<EventLoop>),
    Shared,
}

/// One event loop: a thread running a current-thread runtime until `stop` is dropped.
pub(crate) struct EventLoop {
    handle: Handle,
    open: Arc<AtomicUsize>,
    _stop: oneshot::Sender<()>,
}

impl RelayPool {
    /// Starts the loops `runtime` asks for. Their threads inherit the calling thread's CPU
    /// set (a duet side's pinning), and "one per CPU" counts the CPUs of that set.
    pub(crate) fn start(runtime: RelayRuntime) -> std::io::Result<Self> {
        let threads = match runtime {
            RelayRuntime::WorkStealing => return Ok(RelayPool::Shared),
            RelayRuntime::Loops(Some(n)) => n.get(),
            RelayRuntime::Loops(None) => {
                std::thread::available_parallelism().map_or(1, NonZeroUsize::get)
            }
        };
        let loops = (0..threads)
            .map(EventLoop::start)
            .collect::<std::io::Result<Vec<_>>>()?;
        Ok(RelayPool::Loops(loops))
    }

    /// How many event loops run the relay (0: the shared runtime).
    pub(crate) fn loops(&self) -> usize {
        match self {
            RelayPool::Loops(loops) => loops.len(),
            RelayPool::Shared => 0,
        }
    }

    /// Where the next connection goes: the loop with the fewest open connections, the first
    /// such loop after `turn` (so ties are taken in turn). `None`: the caller's runtime.
    pub(crate) fn place(&self, turn: &mut usize) -> Option<Placed<'_>> {
        let RelayPool::Loops(loops) = self else {
            return None;
        };
        let n = loops.len();
        let start = *turn % n;
        let chosen = (0..n)
            .map(|i| (start + i) % n)
            .min_by_key(|&i| loops[i].open.load(Ordering::Relaxed))
            .unwrap_or(0);
        *turn = chosen + 1;
        Some(Placed(&loops[chosen]))
    }
}

/// A connection's loop, chosen by [`RelayPool::place`].
pub(crate) struct Placed<'a>(&'a EventLoop);

impl Placed<'_> {
    /// The loop's runtime, to spawn the connection on.
    pub(crate) fn handle(&self) -> &Handle {
        &self.0.handle
    }

    /// Wraps `connection` so the loop counts it open until it ends (however it ends).
    pub(crate) fn counted<F: Future>(&self, connection: F) -> impl Future<Output = F::Output> {
        let open = Arc::clone(&self.0.open);
        open.fetch_add(1, Ordering::Relaxed);
        let guard = OpenGuard(open);
        async move {
            let _guard = guard;
            connection.await
        }
    }
}

struct OpenGuard(Arc<AtomicUsize>);

impl Drop for OpenGuard {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl EventLoop {
    fn start(index: usize) -> std::io::Result<Self> {
        let (stop, stopped) = oneshot::channel::<()>();
        let (ready, handle) = std::sync::mpsc::channel();
        // The runtime is built and dropped on its own thread: dropped on the caller's (a tokio
        // worker), it would panic.
        std::thread::Builder::new()
            .name(format!("psprobe-relay-{index}"))
            .spawn(move || {
                let runtime = match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(runtime) => runtime,
                    Err(e) => {
                        let _ = ready.send(Err(e));
                        return;
                    }
                };
                let _ = ready.send(Ok(runtime.handle().clone()));
                // Returns when the pool drops its sender; dropping the runtime then ends
                // (cancels) whatever connections it still holds.
                let _ = runtime.block_on(stopped);
            })?;
        let handle = handle.recv().map_err(|_| {
            std::io::Error::other("a relay thread ended before its runtime started")
        })??;
        Ok(EventLoop {
            handle,
            open: Arc::new(AtomicUsize::new(0)),
            _stop: stop,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_pick_the_runtime_and_refuse_what_does_not_fit() {
        assert_eq!(
            RelayRuntime::from_options(None, None),
            Ok(RelayRuntime::WorkStealing)
        );
        assert_eq!(
            RelayRuntime::from_options(Some("loops"), None),
            Ok(RelayRuntime::Loops(None))
        );
        assert_eq!(
            RelayRuntime::from_options(None, Some(2)),
            Ok(RelayRuntime::Loops(NonZeroUsize::new(2))),
            "threads alone ask for loops"
        );
        assert_eq!(
            RelayRuntime::from_options(Some("loops"), Some(3)),
            Ok(RelayRuntime::Loops(NonZeroUsize::new(3)))
        );
        assert_eq!(
            RelayRuntime::from_options(Some("work-stealing"), None),
            Ok(RelayRuntime::WorkStealing)
        );
        let zero = RelayRuntime::from_options(None, Some(0)).unwrap_err();
        assert!(zero.contains("at least 1"), "{zero}");
        let both = RelayRuntime::from_options(Some("work-stealing"), Some(2)).unwrap_err();
        assert!(both.contains("loops"), "{both}");
        let bad = RelayRuntime::from_options(Some("steal"), None).unwrap_err();
        assert!(
            bad.contains("loops, work-stealing") && bad.contains("steal"),
            "{bad}"
        );
    }

    #[test]
    fn connections_go_to_the_emptiest_loop_and_ties_in_turn() {
        let pool = RelayPool::start(RelayRuntime::Loops(NonZeroUsize::new(3))).unwrap();
        let RelayPool::Loops(loops) = &pool else {
            panic!("loops expected");
        };
        let index = |p: &Placed<'_>| loops.iter().position(|l| std::ptr::eq(l, p.0)).unwrap();
        let mut turn = 0;
        // Three ties in turn: 0, 1, 2; each kept open by its counted future.
        let mut held = Vec::new();
        for expected in 0..3 {
            let placed = pool.place(&mut turn).unwrap();
            assert_eq!(index(&placed), expected);
            held.push(Box::pin(placed.counted(std::future::pending::<()>())));
        }
        // Loop 1's connection ends: the next one goes there, not to loop 0 in turn.
        drop(held.remove(1));
        let placed = pool.place(&mut turn).unwrap();
        assert_eq!(index(&placed), 1);
        assert_eq!(pool.loops(), 3);
    }

    #[test]
    fn a_placed_connection_runs_on_its_loop_thread() {
        let pool = RelayPool::start(RelayRuntime::Loops(NonZeroUsize::new(2))).unwrap();
        let mut turn = 0;
        let placed = pool.place(&mut turn).unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        placed.handle().spawn(placed.counted(async move {
            let name = std::thread::current().name().map(str::to_string);
            let _ = tx.send(name);
        }));
        let name = rx.recv_timeout(std::time::Duration::from_secs(10)).unwrap();
        assert_eq!(name.as_deref(), Some("psprobe-relay-0"));
    }

    #[test]
    fn work_stealing_runs_on_the_callers_runtime() {
        let pool = RelayPool::start(RelayRuntime::WorkStealing).unwrap();
        assert!(pool.place(&mut 0).is_none());
        assert_eq!(pool.loops(), 0);
    }
}
