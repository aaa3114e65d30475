//! Waiting for the server's greeting, and saying so when the upstream is not behaving like a
//! MySQL server: one that greets late (a stalled server, or a port that waits for its client to
//! speak, as HTTP does) or greets with bytes that are not MySQL's.
//!
//! A MySQL server greets at once, so psprobe warns after [`GREETING_WARN_AFTER`] without one
//! (rate limited: every client of such an upstream waits the same way), and gives up after
//! [`GREETING_TIMEOUT`], telling the client why with an ERR packet.
//!
//! Must not: change what is relayed. Bytes that are not a greeting still go to the client as
//! they are (fail-open); this only adds the line an operator needs.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::net::TcpStream;

use super::handshake::Ctx;
use super::packet_io::{Got, PacketBuf};
use super::FloodLogs;
use crate::log_limit::more;

/// After this long without a greeting, one WARN line (rate limited) says what is waited for.
pub(crate) const GREETING_WARN_AFTER: Duration = Duration::from_secs(5);
/// After this long without a greeting, the client is told and both legs close.
pub(crate) const GREETING_TIMEOUT: Duration = Duration::from_secs(30);
/// Bytes of a non-MySQL answer quoted in the log line.
const QUOTED: usize = 24;

/// What came first on a new connection.
pub(crate) enum First {
    /// The server sent a packet (or what arrived before it ended or grew too large).
    Server(std::io::Result<Got>),
    /// The client spoke first (bytes are in its buffer) or went away (none are).
    Client(std::io::Result<Got>),
    /// Nothing came from the server within [`GREETING_TIMEOUT`].
    TimedOut,
}

/// Waits for whichever side speaks first; reads go into `greeting` and `early` (a read that is
/// cancelled loses nothing, so the wait can be re-entered after the warning).
pub(crate) async fn first(
    client: &mut TcpStream,
    server: &mut TcpStream,
    greeting: &mut PacketBuf,
    early: &mut PacketBuf,
    ctx: &Ctx<'_>,
) -> First {
    let waits = Waits {
        warn_after: GREETING_WARN_AFTER,
        timeout: GREETING_TIMEOUT,
    };
    let who = Who {
        logs: ctx.logs,
        peer: ctx.peer,
        upstream: ctx.upstream,
    };
    first_within(client, server, greeting, early, &who, waits).await
}

/// How long [`first`] waits before its warning and before it gives up.
#[derive(Clone, Copy)]
struct Waits {
    warn_after: Duration,
    timeout: Duration,
}

/// What the warnings name, and their rate limit.
struct Who<'a> {
    logs: &'a FloodLogs,
    peer: SocketAddr,
    upstream: &'a str,
}

async fn first_within(
    client: &mut TcpStream,
    server: &mut TcpStream,
    greeting: &mut PacketBuf,
    early: &mut PacketBuf,
    ctx: &Who<'_>,
    Waits {
        warn_after,
        timeout,
    }: Waits,
) -> First {
    let started = tokio::time::Instant::now();
    let mut warned = false;
    loop {
        let deadline = started + if warned { timeout } else { warn_after };
        tokio::select! {
            got = greeting.read_packet(server) => return First::Server(got),
            got = early.read_packet(client) => return First::Client(got),
            () = tokio::time::sleep_until(deadline) => {
                if warned {
                    if let Some(left_out) = ctx.logs.no_greeting.check() {
                        tracing::warn!(
                            "client {}: upstream {} sent no greeting within {}s; the client is \
                             told and both legs close{}",
                            ctx.peer,
                            ctx.upstream,
                            timeout.as_secs(),
                            more(left_out)
                        );
                    }
                    return First::TimedOut;
                }
                warned = true;
                if let Some(left_out) = ctx.logs.no_greeting.check() {
                    tracing::warn!(
                        "client {}: upstream {} has sent no greeting for {}s (a MySQL server \
                         greets at once): is --upstream a MySQL port, or is the server stalled? \
                         psprobe waits up to {}s{}",
                        ctx.peer,
                        ctx.upstream,
                        warn_after.as_secs(),
                        timeout.as_secs(),
                        more(left_out)
                    );
                }
            }
        }
    }
}

/// The message the client gets when no greeting came.
pub(crate) fn timed_out_message(upstream: &str) -> String {
    format!(
        "psprobe: the server at {upstream} sent no greeting within {}s (is it a MySQL server?)",
        GREETING_TIMEOUT.as_secs()
    )
}

/// Says (rate limited) that the upstream's first bytes are not a MySQL greeting: neither a
/// protocol-10 greeting nor an ERR packet. Such bytes are still relayed as they are.
pub(crate) fn warn_if_not_mysql(first_bytes: &[u8], ctx: &Ctx<'_>) {
    if looks_like_mysql(first_bytes) {
        return;
    }
    if let Some(left_out) = ctx.logs.no_greeting.check() {
        tracing::warn!(
            "client {}: upstream {} did not greet as a MySQL server (its first bytes: \"{}\"): \
             relayed as they are; is --upstream a MySQL port?{}",
            ctx.peer,
            ctx.upstream,
            quoted(first_bytes),
            more(left_out)
        );
    }
}

/// A whole packet whose payload starts as a greeting (protocol version 10) or an ERR packet
/// (a server refusing the host, or too many connections) does.
fn looks_like_mysql(bytes: &[u8]) -> bool {
    if bytes.len() < 5 {
        return false;
    }
    let len = usize::from(bytes[0]) | usize::from(bytes[1]) << 8 | usize::from(bytes[2]) << 16;
    bytes.len() == 4 + len && bytes[3] == 0 && matches!(bytes[4], 10 | 0xFF)
}

/// The first bytes, printable for one log line.
fn quoted(bytes: &[u8]) -> String {
    String::from_utf8_lossy(&bytes[..bytes.len().min(QUOTED)])
        .chars()
        .flat_map(char::escape_debug)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn greetings_and_errors_look_like_mysql_http_does_not() {
        let whole = [&[5u8, 0, 0, 0, 10][..], b"5.7."].concat();
        assert!(looks_like_mysql(&whole));
        let mut cut = whole.clone();
        cut[0] = 8;
        assert!(!looks_like_mysql(&cut), "a cut packet is not a greeting");
        assert!(looks_like_mysql(&[3, 0, 0, 0, 0xFF, 0x10, 0x04]));
        assert!(!looks_like_mysql(b"HTTP/1.1 400 Bad Request\r\n"));
        assert!(!looks_like_mysql(b""));
        assert_eq!(
            quoted(b"HTTP/1.1 400 Bad Request\r\nServer: x"),
            "HTTP/1.1 400 Bad Request"
        );
        assert_eq!(quoted(b"\r\n\x00"), "\\r\\n\\0");
    }

    /// An upstream that accepts and never speaks (an HTTP port): a warning after the first
    /// wait, the end after the second; a server that greets, or a client that goes, ends it.
    #[tokio::test]
    async fn a_silent_upstream_times_out_and_a_greeting_or_a_leaving_client_does_not() {
        let logs = FloodLogs::new();
        let peer: SocketAddr = "127.0.0.1:1".parse().unwrap();
        let who = Who {
            logs: &logs,
            peer,
            upstream: "test",
        };
        let waits = Waits {
            warn_after: Duration::from_millis(50),
            timeout: Duration::from_millis(150),
        };
        let pair = || async {
            let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let a = TcpStream::connect(l.local_addr().unwrap()).await.unwrap();
            let (b, _) = l.accept().await.unwrap();
            (a, b)
        };
        let (mut client, client_far) = pair().await;
        let (mut server, mut server_far) = pair().await;
        let (mut g, mut e) = (PacketBuf::default(), PacketBuf::default());
        let started = std::time::Instant::now();
        let first = first_within(&mut client, &mut server, &mut g, &mut e, &who, waits).await;
        assert!(matches!(first, First::TimedOut));
        assert!(started.elapsed() >= Duration::from_millis(150));

        use tokio::io::AsyncWriteExt;
        server_far.write_all(&[1, 0, 0, 0, 10]).await.unwrap();
        let first = first_within(&mut client, &mut server, &mut g, &mut e, &who, waits).await;
        assert!(matches!(first, First::Server(Ok(Got::Packet))));
        assert_eq!(g.bytes(), [1, 0, 0, 0, 10]);

        drop(client_far);
        let (mut g, mut e) = (PacketBuf::default(), PacketBuf::default());
        let first = first_within(&mut client, &mut server, &mut g, &mut e, &who, waits).await;
        assert!(matches!(first, First::Client(Ok(Got::Eof))));
    }
}
