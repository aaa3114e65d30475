//! The start of a connection, packet by packet: the server's greeting, the client's first
//! packet, and when that is an SSLRequest, TLS on the client leg (psprobe answers it itself)
//! and on the server leg (psprobe sends the SSLRequest on and connects as a TLS client). Then
//! the relay takes over the (decrypted) streams.
//!
//! Most connections leave here right after the client's first packet, and the relay sees the
//! authentication exchange as before. Only two set-ups make psprobe follow authentication
//! here, because the two legs then number their packets differently (one carries an
//! SSLRequest, the other not): a TLS client with `--server-tls disabled`, and a plain client
//! with `--server-tls required`.
//!
//! What a packet is (a greeting offering TLS, an SSLRequest, a login with a cleartext plugin)
//! is what the core's session machine parsed: each packet is read whole, shown to the
//! connection's [`Watch`] first, and psprobe acts on the watch's answer; the packet's bytes
//! are counted once it has gone on.
//!
//! Fail-open: whatever psprobe does not understand here (no greeting, a packet that is not a
//! handshake packet, one too large) is handed to the relay as it is, unobserved.
//!
//! Must not: parse what the session parses (greeting, client hello), record statistics itself
//! (the watch does), or change a packet beyond its sequence id and the CLIENT_SSL flag.

use std::io;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use psprobe_core::protocol::{
    encode_packet, server_asks_for_cleartext, server_asks_for_rsa, CLIENT_SSL,
};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::{client, server, TlsAcceptor};

use crate::log_limit::more;
use crate::metrics::ProxyMetrics;
use crate::observe::watch::{ClientHello, Side, Unsent, Watch};
use crate::tls::{Cause, ClientTls, Leg, ServerTls, TlsRuntime};

use super::greeting::{self, First};
use super::packet_io::{handshake_error, Got, PacketBuf};
use super::FloodLogs;

/// The client leg after the connection phase.
pub(crate) enum ClientLeg {
    Plain(TcpStream),
    Tls(Box<server::TlsStream<TcpStream>>),
}

/// The server leg after the connection phase.
pub(crate) enum ServerLeg {
    Plain(TcpStream),
    Tls(Box<client::TlsStream<TcpStream>>),
}

/// Streams ready for the relay, and bytes read from them that the relay must still forward
/// (and observe) first.
pub(crate) struct Established {
    pub client: ClientLeg,
    pub server: ServerLeg,
    pub client_rest: Vec<u8>,
    pub server_rest: Vec<u8>,
}

/// What a connection needs to know here.
pub(crate) struct Ctx<'a> {
    pub tls: &'a TlsRuntime,
    /// Where handshake failures and refused logins are counted.
    pub metrics: &'a ProxyMetrics,
    /// Where lines a flood of clients would repeat are rate limited.
    pub logs: &'a FloodLogs,
    pub peer: SocketAddr,
    pub upstream: &'a str,
    /// When the upstream last greeted a connection of this proxy.
    pub greeted: &'a greeting::LastGreeting,
}

impl<'a> Ctx<'a> {
    /// What the greeting's wait and warnings need of the connection.
    fn who(&self) -> greeting::Who<'a> {
        greeting::Who {
            logs: self.logs,
            peer: self.peer,
            upstream: self.upstream,
            greeted: self.greeted,
        }
    }
}

/// How long psprobe waits for the client to read an error it is told before closing.
const GOODBYE: Duration = Duration::from_secs(2);

fn raw(
    client: TcpStream,
    server: TcpStream,
    client_rest: Vec<u8>,
    server_rest: Vec<u8>,
) -> Established {
    Established {
        client: ClientLeg::Plain(client),
        server: ServerLeg::Plain(server),
        client_rest,
        server_rest,
    }
}

/// Whether a read from the client ended with the client gone before it sent a byte.
fn left(got: &io::Result<Got>, buf: &PacketBuf) -> bool {
    buf.bytes().is_empty() && matches!(got, Ok(Got::Eof) | Err(_))
}

/// Writes and flushes (a TLS writer keeps what it encrypted until flushed).
async fn send<W: AsyncWrite + Unpin>(to: &mut W, bytes: &[u8]) -> io::Result<()> {
    to.write_all(bytes).await?;
    to.flush().await
}

/// Runs the connection phase as far as psprobe needs to; `None` when the connection is over.
pub(crate) async fn run(
    mut client: TcpStream,
    mut server: TcpStream,
    watch: &mut Watch<'_>,
    ctx: &Ctx<'_>,
) -> Option<Established> {
    // The greeting, unless the client speaks first or goes away. (Bytes are read rather than
    // readiness awaited: a read that is dropped loses nothing, and readiness can be stale.)
    let mut greeting = PacketBuf::default();
    let mut early = PacketBuf::default();
    let got = match greeting::first(
        &mut client,
        &mut server,
        &mut greeting,
        &mut early,
        &ctx.who(),
    )
    .await
    {
        First::Server(got) => got,
        First::Client(early_got) => {
            if left(&early_got, &early) {
                // A MySQL client never half-closes: it is gone, and so is anything the server
                // could still say to it. Both legs close now rather than when the server gets
                // round to this connection (in a connect storm, thousands would wait).
                tracing::debug!("client {}: closed before the server's greeting", ctx.peer);
                return None;
            }
            Ok(Got::Eof)
        }
        First::TimedOut => {
            let message = greeting::timed_out_message(ctx.upstream);
            let _ = send(&mut client, &handshake_error(0, &message)).await;
            return None;
        }
        First::Silent => {
            let message = greeting::silent_message(ctx.upstream);
            let _ = send(&mut client, &handshake_error(0, &message)).await;
            return None;
        }
    };
    if !greeting.bytes().is_empty() {
        greeting::warn_if_not_mysql(greeting.bytes(), &ctx.who());
    }
    if !matches!(got, Ok(Got::Packet)) || !early.bytes().is_empty() {
        tracing::debug!(
            "client {}: no greeting psprobe follows; relayed as is",
            ctx.peer
        );
        return Some(raw(client, server, early.take(), greeting.take()));
    }
    let greeting = greeting.take();
    let unsent = watch.read_handshake(Side::Server, &greeting, Instant::now());
    let server_tls = watch.server_offers_tls();
    if server_tls == Some(false) && ctx.tls.settings.server == ServerTls::Required {
        let message = format!(
            "psprobe: the server at {} does not offer TLS, and psprobe runs with --server-tls required",
            ctx.upstream
        );
        fail(ctx, Leg::Server, Cause::NoTls, &message);
        let _ = send(&mut client, &handshake_error(0, &message)).await;
        return None;
    }
    let sent = send(&mut client, &greeting).await;
    watch.forwarded(unsent);
    sent.ok()?;
    if !watch.greeted() {
        // Not a greeting psprobe follows (an error, another protocol): relayed as it is.
        return Some(raw(client, server, Vec::new(), Vec::new()));
    }

    // The client's first packet: an SSLRequest or its handshake response.
    let mut first = PacketBuf::default();
    let mut early = PacketBuf::default();
    let got = tokio::select! {
        got = first.read_packet(&mut client) => {
            if left(&got, &first) {
                tracing::debug!("client {}: closed without answering the greeting", ctx.peer);
                return None;
            }
            got
        }
        // The server speaks first (its connect_timeout, say): relay whatever happens.
        _ = early.read_packet(&mut server) => Ok(Got::Eof),
    };
    if !matches!(got, Ok(Got::Packet)) || !early.bytes().is_empty() {
        return Some(raw(client, server, first.take(), early.take()));
    }
    let first = first.take();
    let unsent = watch.read_handshake(Side::Client, &first, Instant::now());
    match watch.client_hello() {
        ClientHello::SslRequest => {
            let server_offers_tls = server_tls == Some(true);
            ssl_request(
                client,
                server,
                &first,
                unsent,
                server_offers_tls,
                watch,
                ctx,
            )
            .await
        }
        ClientHello::Response
            if ctx.tls.settings.server == ServerTls::Required && first.len() >= 4 + 32 =>
        {
            tls_for_a_plain_client(client, server, &first, unsent, watch, ctx).await
        }
        _ => {
            let sent = send(&mut server, &first).await;
            watch.plain();
            watch.forwarded(unsent);
            sent.ok()?;
            Some(raw(client, server, Vec::new(), Vec::new()))
        }
    }
}

/// The client asked for TLS (`request`, read by the watch and not counted yet).
async fn ssl_request(
    client: TcpStream,
    mut server: TcpStream,
    request: &[u8],
    unsent: Unsent,
    server_offers_tls: bool,
    watch: &mut Watch<'_>,
    ctx: &Ctx<'_>,
) -> Option<Established> {
    let settings = &ctx.tls.settings;
    let acceptor = match &ctx.tls.acceptor {
        Some(a) if settings.client == ClientTls::Terminate && server_offers_tls => a,
        // Passthrough (or a client asking a server that offered no TLS): the TLS is theirs.
        _ => {
            tracing::debug!(
                "client {}: TLS left to client and server (client_tls {}, server offers TLS: {server_offers_tls})",
                ctx.peer,
                settings.client.label()
            );
            let sent = send(&mut server, request).await;
            watch.forwarded(unsent);
            watch.tls_passed_through();
            sent.ok()?;
            return Some(raw(client, server, Vec::new(), Vec::new()));
        }
    };
    let upstream_tls = settings.server != ServerTls::Disabled && ctx.tls.connector.is_some();
    if upstream_tls {
        let sent = send(&mut server, request).await;
        watch.forwarded(unsent);
        sent.ok()?;
    } else {
        watch.forwarded(unsent);
    }
    let timeout = settings.handshake_timeout;
    let accept = bounded(timeout, TlsAcceptor::from(acceptor.config()).accept(client));
    let (client_tls, server) = if upstream_tls {
        let connector = ctx.tls.connector.as_ref()?;
        let connect = bounded(
            timeout,
            connector.connect(ctx.tls.server_name.clone(), server),
        );
        let (c, s) = tokio::join!(accept, connect);
        (c, s.map(|s| ServerLeg::Tls(Box::new(s))))
    } else {
        (accept.await, Ok(ServerLeg::Plain(server)))
    };
    let mut client_tls = match client_tls {
        Ok(mut c) => {
            // Whatever rustls queued after the handshake (TLS 1.3 session tickets) goes out
            // before psprobe waits on the client, so a client that quits early can resume.
            let _ = bounded(timeout, c.flush()).await;
            c
        }
        Err(e) => {
            let message = format!("TLS handshake with the client failed: {e}");
            fail(ctx, Leg::Client, Cause::of(&e), &message);
            return None;
        }
    };
    let server = match server {
        Ok(s) => s,
        Err(e) => {
            let message = format!(
                "psprobe could not set up TLS to the server at {}: {e}",
                ctx.upstream
            );
            fail(ctx, Leg::Server, Cause::of(&e), &message);
            goodbye(&mut client_tls, 3, &message).await;
            return None;
        }
    };
    watch.tls_terminated();
    match server {
        ServerLeg::Tls(server) => Some(Established {
            client: ClientLeg::Tls(Box::new(client_tls)),
            server: ServerLeg::Tls(server),
            client_rest: Vec::new(),
            server_rest: Vec::new(),
        }),
        ServerLeg::Plain(server) => tls_client_plain_server(client_tls, server, watch, ctx).await,
    }
}

/// `--server-tls disabled`: the client's TLS ends at psprobe. Its packets go on numbered one
/// lower (the server never saw the SSLRequest), and exchanges that would put the password in
/// clear on the plain leg are refused.
async fn tls_client_plain_server(
    mut client: server::TlsStream<TcpStream>,
    mut server: TcpStream,
    watch: &mut Watch<'_>,
    ctx: &Ctx<'_>,
) -> Option<Established> {
    let mut hello = PacketBuf::default();
    let mut early = PacketBuf::default();
    let got = tokio::select! {
        got = hello.read_packet(&mut client) => got,
        // The server gave up waiting (its connect_timeout): the connection is over.
        _ = early.read_packet(&mut server) => Ok(Got::Eof),
    };
    if !matches!(got, Ok(Got::Packet)) {
        return None;
    }
    let hello = hello.take();
    let unsent = watch.read_handshake(Side::Client, &hello, Instant::now());
    if let Some(plugin) = watch.cleartext_auth() {
        refuse_cleartext(&mut client, hello[3].wrapping_add(1), plugin, ctx).await;
        return None;
    }
    let mut forwarded = hello.clone();
    forwarded[3] = forwarded[3].wrapping_sub(1);
    if forwarded.len() >= 8 {
        forwarded[5] &= !((CLIENT_SSL >> 8) as u8);
    }
    let sent = send(&mut server, &forwarded).await;
    watch.forwarded(unsent);
    sent.ok()?;
    if !authenticate(&mut client, &mut server, 1, Guard::Cleartext, watch, ctx).await {
        return None;
    }
    Some(Established {
        client: ClientLeg::Tls(Box::new(client)),
        server: ServerLeg::Plain(server),
        client_rest: Vec::new(),
        server_rest: Vec::new(),
    })
}

/// `--server-tls required` and a client that did not ask for TLS: psprobe sends an
/// SSLRequest of its own (the client's capabilities with CLIENT_SSL), connects as a TLS
/// client, and numbers the client's packets one higher.
async fn tls_for_a_plain_client(
    mut client: TcpStream,
    mut server: TcpStream,
    response: &[u8],
    unsent: Unsent,
    watch: &mut Watch<'_>,
    ctx: &Ctx<'_>,
) -> Option<Established> {
    if watch.cleartext_auth() == Some("sha256_password") {
        // Its first packet is already the RSA exchange (a key request or the encrypted
        // password), which the server does not take over TLS.
        watch.forwarded(unsent);
        refuse_rsa(
            &mut client,
            response[3].wrapping_add(1),
            "sha256_password",
            ctx,
        )
        .await;
        return None;
    }
    let mut request = response[4..4 + 32].to_vec();
    request[1] |= (CLIENT_SSL >> 8) as u8;
    send(&mut server, &encode_packet(1, &request)).await.ok()?;
    let connector = ctx.tls.connector.as_ref()?;
    let connect = connector.connect(ctx.tls.server_name.clone(), server);
    let mut server = match bounded(ctx.tls.settings.handshake_timeout, connect).await {
        Ok(s) => s,
        Err(e) => {
            let message = format!(
                "psprobe could not set up TLS to the server at {}: {e}",
                ctx.upstream
            );
            fail(ctx, Leg::Server, Cause::of(&e), &message);
            let _ = send(&mut client, &handshake_error(2, &message)).await;
            return None;
        }
    };
    let mut forwarded = response.to_vec();
    forwarded[3] = forwarded[3].wrapping_add(1);
    forwarded[5] |= (CLIENT_SSL >> 8) as u8;
    let sent = send(&mut server, &forwarded).await;
    watch.plain();
    watch.forwarded(unsent);
    sent.ok()?;
    // The client's packets go on one higher, the server's one lower (`authenticate` is told
    // the server-to-client shift as seen from the client: -1).
    if !authenticate(&mut client, &mut server, -1, Guard::Rsa, watch, ctx).await {
        return None;
    }
    Some(Established {
        client: ClientLeg::Plain(client),
        server: ServerLeg::Tls(Box::new(server)),
        client_rest: Vec::new(),
        server_rest: Vec::new(),
    })
}

/// Which server packets of the authentication exchange psprobe refuses to pass on.
#[derive(Clone, Copy)]
enum Guard {
    /// Those that make a TLS client send its password in clear (the server leg is plain).
    Cleartext,
    /// Those that make a plain client RSA-encrypt its password for a server that, reached
    /// over TLS, reads it only in clear.
    Rsa,
}

/// Relays the authentication exchange packet by packet until the server's OK or ERR ends
/// it. Server packets reach the client with their sequence id plus `shift`, client packets
/// the server with it minus `shift`. An exchange `guard` names is refused. `false` when the
/// connection is over.
async fn authenticate<C, U>(
    client: &mut C,
    server: &mut U,
    shift: i8,
    guard: Guard,
    watch: &mut Watch<'_>,
    ctx: &Ctx<'_>,
) -> bool
where
    C: AsyncRead + AsyncWrite + Unpin,
    U: AsyncRead + AsyncWrite + Unpin,
{
    let (mut from_client, mut from_server) = (PacketBuf::default(), PacketBuf::default());
    while watch.authenticating() {
        tokio::select! {
            got = from_client.read_packet(client) => {
                if !matches!(got, Ok(Got::Packet)) {
                    return false;
                }
                let original = from_client.take();
                let mut forwarded = original.clone();
                forwarded[3] = forwarded[3].wrapping_sub(shift as u8);
                let sent = send(server, &forwarded).await;
                watch.observe(Side::Client, &original, Instant::now());
                if sent.is_err() {
                    return false;
                }
            }
            got = from_server.read_packet(server) => {
                if !matches!(got, Ok(Got::Packet)) {
                    return false;
                }
                let mut forwarded = from_server.take();
                forwarded[3] = forwarded[3].wrapping_add(shift as u8);
                let payload = &forwarded[4..];
                match guard {
                    Guard::Cleartext => if let Some(plugin) = server_asks_for_cleartext(payload) {
                        refuse_cleartext(client, forwarded[3], plugin, ctx).await;
                        return false;
                    },
                    Guard::Rsa => if let Some(plugin) = server_asks_for_rsa(payload) {
                        refuse_rsa(client, forwarded[3], plugin, ctx).await;
                        return false;
                    },
                }
                let sent = send(client, &forwarded).await;
                watch.observe(Side::Server, &forwarded, Instant::now());
                if sent.is_err() {
                    return false;
                }
            }
        }
    }
    true
}

async fn refuse_cleartext<C: AsyncRead + AsyncWrite + Unpin>(
    client: &mut C,
    seq: u8,
    plugin: &str,
    ctx: &Ctx<'_>,
) {
    let message = format!(
        "psprobe: {plugin} authentication would send the password in clear text, and psprobe's \
         leg to the server is not encrypted (--server-tls disabled); use --server-tls as_client, \
         or connect without TLS"
    );
    tracing::warn!("client {}: {message}", ctx.peer);
    ctx.metrics.auth_failures.inc();
    let _ = send(client, &handshake_error(seq, &message)).await;
    let _ = client.shutdown().await;
}

/// `--server-tls required` and a plain client whose login needs the RSA exchange: the server,
/// reached over TLS, reads the password only in clear, and psprobe does not decrypt passwords
/// (docs/tls.md says why). One line says what to change.
async fn refuse_rsa<C: AsyncRead + AsyncWrite + Unpin>(
    client: &mut C,
    seq: u8,
    plugin: &str,
    ctx: &Ctx<'_>,
) {
    let when = if plugin == "caching_sha2_password" {
        " (caching_sha2_password needs it while the server has not cached the account: after \
         its start or FLUSH PRIVILEGES, until one login over TLS)"
    } else {
        ""
    };
    let message = format!(
        "psprobe: {plugin} authentication needs the password RSA-encrypted on this plain client \
         leg, and the server, reached over TLS (--server-tls required), takes it only in clear{when}; \
         connect the client with TLS (ssl-mode PREFERRED or REQUIRED), or run psprobe with \
         --server-tls as_client"
    );
    tracing::warn!("client {}: {message}", ctx.peer);
    ctx.metrics.auth_failures.inc();
    let _ = send(client, &handshake_error(seq, &message)).await;
    let _ = client.shutdown().await;
}

/// Tells a TLS client why it cannot go on: after reading its next packet (so that it is not
/// reset while writing), an ERR, then close.
async fn goodbye(client: &mut server::TlsStream<TcpStream>, seq: u8, message: &str) {
    let mut next = PacketBuf::default();
    let seq = match tokio::time::timeout(GOODBYE, next.read_packet(client)).await {
        Ok(Ok(Got::Packet)) => next.seq().wrapping_add(1),
        _ => seq,
    };
    let _ = send(client, &handshake_error(seq, message)).await;
    let _ = client.shutdown().await;
}

fn fail(ctx: &Ctx<'_>, leg: Leg, cause: Cause, message: &str) {
    ctx.metrics.transport.record_handshake_failure(leg, cause);
    // Counted per failure (the metric above); logged at most once a second per leg and cause,
    // with the count left out.
    if let Some(left_out) = ctx.logs.tls_failure(leg, cause).check() {
        tracing::warn!(
            "client {}: {message} ({} leg, {}); connection closed{}",
            ctx.peer,
            leg.label(),
            cause.label(),
            more(left_out)
        );
    }
}

/// A handshake future bounded by the handshake timeout.
async fn bounded<T>(
    limit: Duration,
    handshake: impl std::future::Future<Output = io::Result<T>>,
) -> io::Result<T> {
    match tokio::time::timeout(limit, handshake).await {
        Ok(result) => result,
        Err(_) => Err(io::Error::new(
            io::ErrorKind::TimedOut,
            format!("no complete handshake within {limit:?}"),
        )),
    }
}
