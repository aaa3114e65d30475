//! Waiting for the server's greeting, and saying so when the upstream is not behaving like a
//! MySQL server: one that greets late (a stalled server, or a port that waits for its client to
//! speak, as HTTP does) or greets with bytes that are not MySQL's.
//!
//! A MySQL server greets at once, so a greeting that has not come after [`GREETING_QUICK`]
//! ends the wait, with an ERR packet telling the client why, unless the upstream has greeted
//! another connection within [`GREETING_TIMEOUT`]: a server greeting others is a busy one (in
//! a connect storm of thousands its greetings take seconds), a port that greets nobody is not a
//! MySQL server (an HTTP port waits for its client to speak), or a stalled one. A busy server's
//! clients wait on: psprobe warns after [`GREETING_WARN_AFTER`] (rate limited) and gives up
//! after [`GREETING_TIMEOUT`].
//!
//! Must not: change what is relayed. Bytes that are not a greeting still go to the client as
//! they are (fail-open); this only adds the line an operator needs.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tokio::net::TcpStream;

use super::packet_io::{Got, PacketBuf};
use super::FloodLogs;
use crate::log_limit::more;

/// After this long without a greeting from an upstream that has greeted no connection lately,
/// the client is told and both legs close.
pub(crate) const GREETING_QUICK: Duration = Duration::from_secs(2);
/// After this long without a greeting, one WARN line (rate limited) says what is waited for.
pub(crate) const GREETING_WARN_AFTER: Duration = Duration::from_secs(5);
/// After this long without a greeting, the client is told and both legs close.
pub(crate) const GREETING_TIMEOUT: Duration = Duration::from_secs(30);
/// Bytes of a non-MySQL answer quoted in the log line.
const QUOTED: usize = 24;

/// When the upstream last greeted one of this proxy's connections.
#[derive(Debug)]
pub(crate) struct LastGreeting {
    origin: Instant,
    /// Milliseconds after `origin`, plus one; 0: never.
    at: AtomicU64,
}

impl LastGreeting {
    pub(crate) fn new() -> Self {
        LastGreeting {
            origin: Instant::now(),
            at: AtomicU64::new(0),
        }
    }

    /// A connection was greeted (as a MySQL server greets) now.
    pub(crate) fn record(&self) {
        let ms = u64::try_from(self.origin.elapsed().as_millis()).unwrap_or(u64::MAX - 1);
        self.at.store(ms + 1, Ordering::Relaxed);
    }

    /// Whether a connection was greeted within `within` of now.
    fn within(&self, within: Duration) -> bool {
        match self.at.load(Ordering::Relaxed) {
            0 => false,
            at => {
                let now = self.origin.elapsed().as_millis();
                now.saturating_sub(u128::from(at - 1)) <= within.as_millis()
            }
        }
    }
}

/// What came first on a new connection.
pub(crate) enum First {
    /// The server sent a packet (or what arrived before it ended or grew too large).
    Server(std::io::Result<Got>),
    /// The client spoke first (bytes are in its buffer) or went away (none are).
    Client(std::io::Result<Got>),
    /// Nothing came from the server within [`GREETING_QUICK`], and it greeted no other
    /// connection within [`GREETING_TIMEOUT`] either.
    Silent,
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
    who: &Who<'_>,
) -> First {
    let waits = Waits {
        quick: GREETING_QUICK,
        warn_after: GREETING_WARN_AFTER,
        timeout: GREETING_TIMEOUT,
    };
    let first = first_within(client, server, greeting, early, who, waits).await;
    if matches!(first, First::Server(Ok(Got::Packet))) && looks_like_mysql(greeting.bytes()) {
        who.greeted.record();
    }
    first
}

/// How long [`first`] waits before it gives up on a silent upstream, before its warning and
/// before it gives up on a busy one.
#[derive(Clone, Copy)]
struct Waits {
    quick: Duration,
    warn_after: Duration,
    timeout: Duration,
}

/// What the warnings name, their rate limit, and when the upstream last greeted anyone (the
/// connection's handshake context hands these down).
pub(crate) struct Who<'a> {
    pub logs: &'a FloodLogs,
    pub peer: SocketAddr,
    pub upstream: &'a str,
    pub greeted: &'a LastGreeting,
}

async fn first_within(
    client: &mut TcpStream,
    server: &mut TcpStream,
    greeting: &mut PacketBuf,
    early: &mut PacketBuf,
    who: &Who<'_>,
    Waits {
        quick,
        warn_after,
        timeout,
    }: Waits,
) -> First {
    let started = tokio::time::Instant::now();
    let mut warned = false;
    let mut quick_passed = false;
    loop {
        let deadline = started
            + match (quick_passed, warned) {
                (false, _) => quick,
                (true, false) => warn_after,
                (true, true) => timeout,
            };
        tokio::select! {
            got = greeting.read_packet(server) => return First::Server(got),
            got = early.read_packet(client) => return First::Client(got),
            () = tokio::time::sleep_until(deadline) => {
                if !quick_passed {
                    quick_passed = true;
                    if !who.greeted.within(timeout) {
                        if let Some(left_out) = who.logs.no_greeting.check() {
                            tracing::warn!(
                                "client {}: upstream {} sent no greeting within {}s and has \
                                 greeted no connection lately: is --upstream a MySQL port, or \
                                 is the server stalled? The client is told and both legs \
                                 close{}",
                                who.peer,
                                who.upstream,
                                quick.as_secs(),
                                more(left_out)
                            );
                        }
                        return First::Silent;
                    }
                    continue;
                }
                if warned {
                    if let Some(left_out) = who.logs.no_greeting.check() {
                        tracing::warn!(
                            "client {}: upstream {} sent no greeting within {}s; the client is \
                             told and both legs close{}",
                            who.peer,
                            who.upstream,
                            timeout.as_secs(),
                            more(left_out)
                        );
                    }
                    return First::TimedOut;
                }
                warned = true;
                if let Some(left_out) = who.logs.no_greeting.check() {
                    tracing::warn!(
                        "client {}: upstream {} has sent no greeting for {}s (a MySQL server \
                         greets at once): is --upstream a MySQL port, or is the server stalled? \
                         psprobe waits up to {}s{}",
                        who.peer,
                        who.upstream,
                        warn_after.as_secs(),
                        timeout.as_secs(),
                        more(left_out)
                    );
                }
            }
        }
    }
}

/// The message the client gets when a silent upstream greeted nobody.
pub(crate) fn silent_message(upstream: &str) -> String {
    format!(
        "psprobe: the server at {upstream} sent no greeting within {}s and greets no connection \
         (is it a MySQL server, or stalled?)",
        GREETING_QUICK.as_secs()
    )
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
pub(crate) fn warn_if_not_mysql(first_bytes: &[u8], who: &Who<'_>) {
    if looks_like_mysql(first_bytes) {
        return;
    }
    if let Some(left_out) = who.logs.no_greeting.check() {
        tracing::warn!(
            "client {}: upstream {} did not greet as a MySQL server (its first bytes: \"{}\"): \
             relayed as they are; is --upstream a MySQL port?{}",
            who.peer,
            who.upstream,
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
        let greeted = LastGreeting::new();
        let who = Who {
            logs: &logs,
            peer,
            upstream: "test",
            greeted: &greeted,
        };
        let waits = Waits {
            quick: Duration::from_millis(20),
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
        // An upstream that greeted nobody is given up on quickly...
        let started = std::time::Instant::now();
        let first = first_within(&mut client, &mut server, &mut g, &mut e, &who, waits).await;
        assert!(matches!(first, First::Silent));
        assert!(started.elapsed() < Duration::from_millis(150));
        // ...one that greeted another connection lately (a busy server) is waited for.
        greeted.record();
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
