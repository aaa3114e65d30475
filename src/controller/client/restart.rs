//! The restart hook: `--restart-cmd 'CMD {pfs} {opts}'` restarts mysqld with
//! performance_schema ON or OFF (`{pfs}`) and extra startup options (`{opts}`: shell-quoted
//! words, empty except for `NAME@startup` scenarios), for the scenarios that need a restart.
//! psprobe runs it, then waits (bounded) until the server accepts connections again and has
//! loaded its buffer pool back, so a restarted phase does not start on a cold cache.

use std::time::Duration;

use tokio::process::Command;

use crate::controller::error::{ControllerError, Result};

pub async fn restart_server(
    command: &str,
    performance_schema: bool,
    opts: &str,
    timeout: Duration,
) -> Result<()> {
    let value = if performance_schema { "ON" } else { "OFF" };
    let line = command.replace("{pfs}", value).replace("{opts}", opts);
    tracing::info!("restarting the server with performance_schema={value}: {line}");
    let run = Command::new("sh")
        .arg("-c")
        .arg(&line)
        .kill_on_drop(true)
        .output();
    let output = match tokio::time::timeout(timeout, run).await {
        Ok(Ok(output)) => output,
        Ok(Err(e)) => {
            return Err(ControllerError::Restart {
                reason: format!("cannot run `{line}`: {e}"),
            })
        }
        Err(_) => {
            return Err(ControllerError::Restart {
                reason: format!("`{line}` did not finish within {timeout:?}"),
            })
        }
    };
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let last = stderr
            .lines()
            .last()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .unwrap_or("no output on stderr");
        return Err(ControllerError::Restart {
            reason: format!("`{line}` failed ({}): {last}", output.status),
        });
    }
    Ok(())
}

/// Connects once the restarted server accepts connections with performance_schema as wanted.
pub async fn wait_ready(
    dsn: &super::dsn::ControllerDsn,
    performance_schema: bool,
    timeout: Duration,
) -> Result<super::server::Controller> {
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        let last = match super::server::Controller::connect(dsn).await {
            Ok(mut ctl) if ctl.info().performance_schema.unwrap_or(false) == performance_schema => {
                match ctl.buffer_pool_loading().await {
                    Ok(Some(status)) if tokio::time::Instant::now() < deadline => {
                        tracing::debug!("waiting for the buffer pool load: {status}");
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        continue;
                    }
                    _ => return Ok(ctl),
                }
            }
            Ok(ctl) => format!(
                "performance_schema is {:?}, expected {}",
                ctl.info().performance_schema,
                performance_schema
            ),
            Err(e) => e.to_string(),
        };
        if tokio::time::Instant::now() >= deadline {
            return Err(ControllerError::Restart {
                reason: format!("the server was not back within {timeout:?}: {last}"),
            });
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}
