//! What a follower asks of the server, as one trait: the round trip, the lock (with the
//! holder's heartbeat), the leader's published row, and ending a stalled leader's connections.
//! `Leadership` does it over its MySQL connection; the follower's tests script it without a
//! server.
//!
//! Must not: decide anything about following (which window is measured, when to take over):
//! that is the follower's ([`super::follow`]).

use std::time::Duration;

use crate::controller::client::leadership::{Leadership, LockPoll};
use crate::controller::error::Result;
use crate::controller::model::phase_row::PhaseRow;

/// The server as a follower sees it.
pub(crate) trait FollowServer {
    /// One round trip (to size the follower's safety margin).
    async fn ping(&mut self) -> Result<Duration>;

    /// Tries the leader lock without waiting: `Acquired` means this psprobe leads now;
    /// otherwise the holder, with its heartbeat's age.
    async fn poll_lock(&mut self) -> Result<LockPoll>;

    /// The leader's published row (`None`: no row yet).
    async fn read(&mut self) -> Result<Option<PhaseRow>>;

    /// Ends these connections (a stalled leader's, to free the lock).
    async fn kill(&mut self, connections: &[u64]) -> Result<()>;
}

impl FollowServer for Leadership {
    async fn ping(&mut self) -> Result<Duration> {
        Leadership::ping(self).await
    }

    async fn poll_lock(&mut self) -> Result<LockPoll> {
        Leadership::poll_lock(self).await
    }

    async fn read(&mut self) -> Result<Option<PhaseRow>> {
        Leadership::read(self).await
    }

    async fn kill(&mut self, connections: &[u64]) -> Result<()> {
        Leadership::kill(self, connections).await
    }
}
