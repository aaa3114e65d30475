//! One rule for every statement the controller sends: it is bounded by [`STATEMENT_TIMEOUT`],
//! and a statement that timed out or was cancelled (its future dropped mid-flight) leaves its
//! connection in an unknown state, so later statements on it fail at once and the caller
//! connects anew. A controller cut off from the server then stops instead of hanging.
//!
//! Must not: map errors to messages (each connection's owner knows its target and account).

use std::future::Future;
use std::time::Duration;

use mysql_async::Error as MyError;

use crate::controller::error::ControllerError;

/// A statement that takes longer has failed.
pub(crate) const STATEMENT_TIMEOUT: Duration = Duration::from_secs(10);

/// Why a guarded statement gave no answer.
#[derive(Debug)]
pub(crate) enum Failure {
    /// An earlier statement on this connection timed out or was cancelled.
    Broken,
    TimedOut,
    Sql(MyError),
}

impl Failure {
    /// The error for the user; `sql` explains what the server or driver said.
    pub(crate) fn into_error(
        self,
        target: &str,
        what: &str,
        sql: impl FnOnce(MyError) -> ControllerError,
    ) -> ControllerError {
        let lost = |reason: String| ControllerError::Connection {
            target: target.to_string(),
            action: what.to_string(),
            reason,
        };
        match self {
            Failure::Broken => lost("an earlier statement timed out on this connection".into()),
            Failure::TimedOut => lost(format!("no answer within {STATEMENT_TIMEOUT:?}")),
            Failure::Sql(e) => sql(e),
        }
    }
}

/// Whether a connection may still be used; kept beside the connection it guards.
#[derive(Debug, Default)]
pub(crate) struct StatementGuard {
    broken: bool,
}

impl StatementGuard {
    pub(crate) fn is_broken(&self) -> bool {
        self.broken
    }

    /// Runs `statement` (built on the guarded connection; nothing is sent before it is polled).
    pub(crate) async fn run<T>(
        &mut self,
        statement: impl Future<Output = Result<T, MyError>>,
    ) -> Result<T, Failure> {
        if self.broken {
            return Err(Failure::Broken);
        }
        // Stays set if this future is dropped before the statement completes.
        self.broken = true;
        match tokio::time::timeout(STATEMENT_TIMEOUT, statement).await {
            Err(_) => Err(Failure::TimedOut),
            Ok(Ok(value)) => {
                self.broken = false;
                Ok(value)
            }
            Ok(Err(e)) => {
                // A server's error answer leaves the session usable; a driver or I/O error not.
                self.broken = !matches!(e, MyError::Server(_));
                Err(Failure::Sql(e))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_cancelled_or_failed_statement_breaks_the_connection_and_an_answer_does_not() {
        let mut guard = StatementGuard::default();
        assert_eq!(guard.run(async { Ok::<_, MyError>(1) }).await.ok(), Some(1));
        // Dropped mid-flight (a select took the other branch): the connection is unknown.
        let pending = guard.run(std::future::pending::<Result<u8, MyError>>());
        let cancelled = tokio::time::timeout(Duration::from_millis(1), pending).await;
        assert!(cancelled.is_err());
        assert!(guard.is_broken());
        let refused = guard.run(async { Ok::<_, MyError>(2) }).await;
        assert!(matches!(refused, Err(Failure::Broken)), "{refused:?}");
        // A driver error breaks it too.
        let mut guard = StatementGuard::default();
        let io = MyError::Io(std::io::Error::other("reset").into());
        assert!(guard.run(async { Err::<u8, _>(io) }).await.is_err());
        assert!(guard.is_broken());
    }
}
