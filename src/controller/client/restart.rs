//! The restart hook: `--restart-cmd 'CMD {pfs} {opts}'` restarts mysqld with
//! performance_schema ON or OFF (`{pfs}`) and extra startup options (`{opts}`: shell-quoted
//! words, empty except for `NAME@startup` scenarios), for the scenarios that need a restart.
//! psprobe runs it, then waits (bounded) until the server accepts connections again and has
//! loaded its buffer pool back, so a restarted phase does not start on a cold cache. Meanwhile
//! it probes the server's port every 20 ms, so each restart's parts are measured: how long the
//! server took to stop, to start, and to answer the first query ([`RestartTiming`]).

use std::time::{Duration, Instant};

use tokio::process::Command;
use tokio::sync::watch;

use crate::clock::unix_now;
use crate::controller::error::{ControllerError, Result};

/// How long a timed-out restart command's process group gets between SIGTERM and SIGKILL.
const KILL_GRACE: Duration = Duration::from_secs(2);
/// A line while a restart takes long, at most this often.
const PROGRESS_EVERY: Duration = Duration::from_secs(10);
/// The first line when the command finished and the server is not back: soon, so that a
/// command that exits 0 with the server down is said while psprobe waits (what is left of
/// --restart-timeout after a slow stop can be shorter than PROGRESS_EVERY).
const FIRST_NOT_BACK: Duration = Duration::from_secs(5);

pub(crate) async fn restart_server(
    command: &str,
    performance_schema: bool,
    opts: &str,
    timeout: Duration,
) -> Result<()> {
    let value = if performance_schema { "ON" } else { "OFF" };
    let line = command.replace("{pfs}", value).replace("{opts}", opts);
    tracing::debug!("restarting the server with performance_schema={value}: {line}");
    // A group of its own, so a command past its timeout is stopped with everything it started
    // (a server it would bring up later, in a state nobody expects, included).
    let child = Command::new("sh")
        .arg("-c")
        .arg(&line)
        .process_group(0)
        .kill_on_drop(true)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(child) => child,
        Err(e) => {
            return Err(ControllerError::Restart {
                reason: format!("cannot run `{line}`: {e}"),
            })
        }
    };
    let group = child.id();
    // stderr is read as it comes (a command that prints a lot must not block on the pipe);
    // only its last line is kept.
    let stderr = child.stderr.take();
    let last_line = tokio::spawn(async move { last_line_of(stderr).await });
    let started = Instant::now();
    let status = loop {
        let left = timeout.saturating_sub(started.elapsed());
        match tokio::time::timeout(left.min(PROGRESS_EVERY), child.wait()).await {
            Ok(Ok(status)) => break status,
            Ok(Err(e)) => {
                return Err(ControllerError::Restart {
                    reason: format!("cannot wait for `{line}`: {e}"),
                })
            }
            Err(_) if started.elapsed() >= timeout => {
                kill_group(group, &mut child).await;
                return Err(ControllerError::Restart {
                    reason: format!(
                        "`{line}` did not finish within {timeout:?}; it was stopped with its \
                         process group"
                    ),
                });
            }
            Err(_) => tracing::warn!(
                "the restart command has run for {:.0?} and has not finished (it is stopped at \
                 --restart-timeout, {timeout:?})",
                started.elapsed()
            ),
        }
    };
    if !status.success() {
        let last = last_line.await.ok().flatten();
        return Err(ControllerError::Restart {
            reason: format!(
                "`{line}` failed ({status}): {}",
                last.as_deref().unwrap_or("no output on stderr")
            ),
        });
    }
    Ok(())
}

/// The last non-empty line of a command's stderr, reading all of it (bounded memory).
async fn last_line_of(stderr: Option<tokio::process::ChildStderr>) -> Option<String> {
    use tokio::io::{AsyncBufReadExt, AsyncReadExt};
    /// A line longer than this is cut (a command printing one endless line).
    const MAX_LINE: usize = 4096;
    let stderr = stderr?;
    let mut reader = tokio::io::BufReader::new(stderr);
    let mut last = None;
    let mut buf = Vec::new();
    loop {
        buf.clear();
        let read = (&mut reader)
            .take(MAX_LINE as u64)
            .read_until(b'\n', &mut buf)
            .await;
        match read {
            Ok(0) | Err(_) => return last,
            Ok(_) => {
                let text = String::from_utf8_lossy(&buf).trim().to_string();
                if !text.is_empty() {
                    last = Some(text);
                }
            }
        }
    }
}

/// SIGTERM to the command's process group, SIGKILL after [`KILL_GRACE`].
async fn kill_group(group: Option<u32>, child: &mut tokio::process::Child) {
    let Some(pgid) = group.and_then(|g| i32::try_from(g).ok()) else {
        let _ = child.kill().await;
        return;
    };
    // SAFETY: killpg(2) on the group this process made for the command (process_group(0)).
    unsafe { libc::killpg(pgid, libc::SIGTERM) };
    if tokio::time::timeout(KILL_GRACE, child.wait())
        .await
        .is_err()
    {
        // SAFETY: as above.
        unsafe { libc::killpg(pgid, libc::SIGKILL) };
        let _ = child.wait().await;
    } else {
        // The shell is gone; what it started in the group may not be.
        // SAFETY: as above.
        unsafe { libc::killpg(pgid, libc::SIGKILL) };
    }
}

/// Slack on a server's start time, which comes from its uptime in whole seconds.
const UPTIME_SLACK_S: u64 = 1;

/// How one restart went, from the moment the restart command started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct RestartTiming {
    /// Until the server refused connections (`None`: never seen down between two probes).
    pub stop: Option<Duration>,
    /// From then until it accepted connections again.
    pub start: Option<Duration>,
    /// The command's own run time.
    pub command: Duration,
    /// Until the first query succeeded with performance_schema as asked.
    pub first_query: Duration,
}

impl RestartTiming {
    /// "stop 0.9 s, start 0.3 s, first query after 1.4 s".
    pub(crate) fn describe(&self) -> String {
        let s = |d: Option<Duration>| {
            d.map_or("-".to_string(), |d| format!("{:.1} s", d.as_secs_f64()))
        };
        format!(
            "stop {}, start {}, first query after {:.1} s",
            s(self.stop),
            s(self.start),
            self.first_query.as_secs_f64()
        )
    }
}

/// Runs the restart command, waits for the server (see [`wait_ready`]), and times both, with
/// the server's port (`addr`) probed meanwhile for when it went down and came back.
pub(crate) async fn restart_and_wait(
    command: &str,
    performance_schema: bool,
    opts: &str,
    timeout: Duration,
    dsn: &super::dsn::ControllerDsn,
) -> Result<(super::server::Controller, RestartTiming)> {
    let t0 = Instant::now();
    let since = unix_now();
    let (done_tx, done_rx) = watch::channel(false);
    let addr = format!("{}:{}", dsn.host(), dsn.port());
    // The sender lives in the work: when it ends, however it ends, the probe stops too (a
    // command that fails before the server goes down must not leave it waiting for a restart).
    let work = async move {
        let done = done_tx;
        restart_server(command, performance_schema, opts, timeout).await?;
        let command_took = t0.elapsed();
        // One bound for the command and the return together.
        let left = timeout
            .saturating_sub(t0.elapsed())
            .max(Duration::from_secs(1));
        let ctl = wait_ready(dsn, performance_schema, left, Some(since)).await?;
        let _ = done.send(true);
        Ok::<_, ControllerError>((ctl, command_took))
    };
    let (outcome, (down, up)) = tokio::join!(work, watch_port(&addr, done_rx));
    let (ctl, command_took) = outcome?;
    Ok((
        ctl,
        RestartTiming {
            stop: down.map(|d| d - t0),
            start: down.zip(up).map(|(d, u)| u.saturating_duration_since(d)),
            command: command_took,
            first_query: t0.elapsed(),
        },
    ))
}

/// Probes `addr` every 20 ms until `done`: when it first refused connections, and when it
/// accepted them again after that.
async fn watch_port(
    addr: &str,
    mut done: watch::Receiver<bool>,
) -> (Option<Instant>, Option<Instant>) {
    const EVERY: Duration = Duration::from_millis(20);
    let (mut down, mut up) = (None, None);
    loop {
        let probe = tokio::time::timeout(EVERY * 5, tokio::net::TcpStream::connect(addr));
        let accepting = matches!(probe.await, Ok(Ok(_)));
        let now = Instant::now();
        match (accepting, down) {
            (false, None) => down = Some(now),
            (true, Some(_)) if up.is_none() => up = Some(now),
            _ => {}
        }
        if up.is_some() || *done.borrow() {
            return (down, up);
        }
        tokio::select! {
            () = tokio::time::sleep(EVERY) => {}
            changed = done.changed() => if changed.is_err() || *done.borrow() { return (down, up); }
        }
    }
}

/// Connects once the restarted server accepts connections with performance_schema as wanted.
///
/// `restarted_since` (unix seconds, when the restart command began): a server that started
/// before then is still the old one (a command that returns before it stops the server), and
/// is waited for like one that does not answer yet.
pub(crate) async fn wait_ready(
    dsn: &super::dsn::ControllerDsn,
    performance_schema: bool,
    timeout: Duration,
    restarted_since: Option<u64>,
) -> Result<super::server::Controller> {
    let started = tokio::time::Instant::now();
    let deadline = started + timeout;
    let mut say_at = started + FIRST_NOT_BACK;
    loop {
        // A loading buffer pool is looked at more often than a server that does not answer.
        let mut pause = Duration::from_millis(250);
        let last = match super::server::Controller::connect(dsn).await {
            // Still the old server (a restart command that returns before it stops it): wait.
            Ok(ctl)
                if ctl
                    .info()
                    .identity
                    .started_at_unix
                    .zip(restarted_since)
                    .is_some_and(|(s, since)| s + UPTIME_SLACK_S < since) =>
            {
                "the server has not restarted yet".to_string()
            }
            Ok(mut ctl) if ctl.info().performance_schema.unwrap_or(false) == performance_schema => {
                match ctl.buffer_pool_loading().await {
                    // Waited for like a server not back yet: the same bound and progress lines.
                    Ok(Some(status)) if tokio::time::Instant::now() < deadline => {
                        tracing::debug!("waiting for the buffer pool load: {status}");
                        pause = Duration::from_millis(100);
                        format!("it is loading its buffer pool back: {status}")
                    }
                    _ => return Ok(ctl),
                }
            }
            Ok(ctl) => {
                // The server is up with the other setting: the command did not pass {pfs} on
                // (or the server ignored it). Waiting would not change that.
                let on_off = |b: bool| if b { "ON" } else { "OFF" };
                return Err(ControllerError::Restart {
                    reason: format!(
                        "the server came back with performance_schema={}, not {}: does the restart command pass {{pfs}} on to mysqld?",
                        ctl.info().performance_schema.map_or("unknown", on_off),
                        on_off(performance_schema)
                    ),
                });
            }
            Err(e) => e.to_string(),
        };
        if tokio::time::Instant::now() >= deadline {
            return Err(ControllerError::Restart {
                reason: format!("the server was not back within {timeout:?}: {last}"),
            });
        }
        if tokio::time::Instant::now() >= say_at {
            say_at = tokio::time::Instant::now() + PROGRESS_EVERY;
            tracing::warn!(
                "the restart command finished {:.0?} ago and the server is not back yet ({last}); \
                 waiting up to --restart-timeout ({timeout:?})",
                started.elapsed()
            );
        }
        tokio::time::sleep(pause).await;
    }
}
