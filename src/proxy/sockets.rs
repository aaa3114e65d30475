//! Options on both legs' sockets, set once when each is connected.
//!
//! - No Nagle: commands and responses are small and latency-bound.
//! - Unsent bytes bounded (`TCP_NOTSENT_LOWAT`): a socket accepts more from psprobe only once
//!   fewer than [`UNSENT_LOW_WATER`] of its bytes wait to be sent. Without it the kernel grows
//!   each send buffer to 4 MiB, and a peer that stops reading (a client that asks for a large
//!   result and reads none of it) has that much more of the server's work queued in psprobe
//!   than it would have direct: measured, 8.5 MB of a 50 MB result produced per stalled
//!   client through psprobe against 3.9 MB direct, and with this bound 4.3-4.4 MB; the server's
//!   CPU spent on them is taken from every other client. Bytes already sent and not yet
//!   acknowledged are not bounded, so a long fat link keeps its throughput.

use tokio::net::TcpStream;

/// Unsent bytes above which a socket stops accepting psprobe's writes: four relay buffers.
pub(crate) const UNSENT_LOW_WATER: u32 = 128 * 1024;

/// Sets both options; one that cannot be set (a platform without it) leaves the kernel's
/// default, which costs only fairness, so it is logged at debug level.
pub(crate) fn tune(stream: &TcpStream) {
    if let Err(e) = stream.set_nodelay(true) {
        tracing::debug!("TCP_NODELAY not set: {e}");
    }
    if let Err(e) = socket2::SockRef::from(stream).set_tcp_notsent_lowat(UNSENT_LOW_WATER) {
        tracing::debug!("TCP_NOTSENT_LOWAT not set: {e}");
    }
}
