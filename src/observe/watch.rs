//! One connection's observation, as the proxy sees it: every chunk it relays goes through
//! [`Watch::observe`] (counted, then fed to the core's session machine, whose events reach the
//! live connection entry and the recorder). In the connection phase the proxy feeds each
//! handshake packet first ([`Watch::read_handshake`]) and acts on what the session parsed of it
//! (does the server offer TLS, did the client ask for it, does its login send the password in
//! clear); the packet's bytes are counted once it has gone on ([`Watch::forwarded`]).
//!
//! Must not: read or write a socket, wait, allocate per chunk, or decide what is forwarded: it
//! answers the proxy's questions, the proxy decides.

use std::time::Instant;

use psprobe_core::protocol::CLIENT_SSL;
use psprobe_core::session::{Phase, Session, UnobservedReason};

use super::connections::{LiveConnection, Tracked};
use super::{ConnectionRecorder, Observer};
use crate::metrics::{Direction, ProxyMetrics, TlsCarriage};

/// Decoded bytes of a compressed connection observed in one step (well under a millisecond
/// of inflating): a 16 MiB frame that came in 16 KiB is decoded over many of the relay's
/// turns, not in one while other connections' bytes wait.
pub(crate) const DECODE_STEP: usize = 256 * 1024;

/// Which way a direction carries bytes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Side {
    Client,
    Server,
}

/// What the client's first packet (or the first inside TLS) was, as the session read it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum ClientHello {
    /// An SSLRequest: TLS follows.
    SslRequest,
    /// A handshake response: authentication follows.
    Response,
    /// Something the session does not follow: the connection goes on unobserved.
    Other,
}

/// A handshake packet the session has read and whose bytes are not counted yet.
#[must_use = "count the packet with Watch::forwarded once it has gone on"]
pub(crate) struct Unsent {
    side: Side,
    len: usize,
    /// The session was observing when the packet came (else its bytes count as unobserved).
    fed: bool,
}

/// What the relay (and the connection phase before it) tells the session and the metrics.
pub(crate) struct Watch<'a> {
    session: Session,
    sink: Tracked<'a, ConnectionRecorder<'a>>,
    metrics: &'a ProxyMetrics,
    /// How the connection is carried, until it is counted (once its handshake response, and
    /// so its compression, is known).
    carriage: Option<TlsCarriage>,
    /// The side the last chunk came from (turns on unobserved connections are counted).
    last_side: Option<Side>,
}

impl<'a> Watch<'a> {
    /// The watch of a connection accepted at `now`, recording into `observer` and `live`.
    pub(crate) fn new(observer: &'a Observer, live: &'a LiveConnection, now: Instant) -> Self {
        let mut session = Session::new(now);
        // A compressed chunk that inflates to megabytes is decoded in steps between other
        // connections' bytes (the relay calls `catch_up`), not in one go.
        session.set_decode_budget(Some(DECODE_STEP));
        Watch {
            session,
            sink: live.track(ConnectionRecorder::new(observer)),
            metrics: &observer.metrics,
            carriage: None,
            last_side: None,
        }
    }

    /// Counts and parses a chunk that came from `side` at `now`.
    pub(crate) fn observe(&mut self, side: Side, chunk: &[u8], now: Instant) {
        let fed = self.session.phase() != Phase::Unobserved;
        self.count(side, chunk.len(), fed);
        if fed {
            match side {
                Side::Client => self.session.on_client_bytes(chunk, now, &mut self.sink),
                Side::Server => self.session.on_server_bytes(chunk, now, &mut self.sink),
            }
        }
        self.after(side);
    }

    /// A compressed chunk already relayed is not wholly decoded yet: the relay reads nothing
    /// more on this connection and calls [`Watch::catch_up`] a step a turn.
    pub(crate) fn behind(&self) -> bool {
        self.session.is_behind()
    }

    /// Decodes the next step (at most [`DECODE_STEP`] bytes) of what is behind.
    pub(crate) fn catch_up(&mut self) {
        self.session.catch_up(&mut self.sink);
    }

    /// Feeds a whole connection-phase packet to the session before the proxy acts on it; its
    /// bytes are counted by [`Watch::forwarded`], or never if the connection ends instead.
    pub(crate) fn read_handshake(&mut self, side: Side, packet: &[u8], now: Instant) -> Unsent {
        let fed = self.session.phase() != Phase::Unobserved;
        if fed {
            match side {
                Side::Client => self.session.on_client_bytes(packet, now, &mut self.sink),
                Side::Server => self.session.on_server_bytes(packet, now, &mut self.sink),
            }
        }
        Unsent {
            side,
            len: packet.len(),
            fed,
        }
    }

    /// Counts a packet read by [`Watch::read_handshake`], now that it has gone on (or that the
    /// proxy tried: bytes that reached psprobe are counted whatever the write did).
    pub(crate) fn forwarded(&mut self, unsent: Unsent) {
        self.count(unsent.side, unsent.len, unsent.fed);
        self.after(unsent.side);
    }

    /// Bytes by scenario and direction, and those of unobserved connections.
    fn count(&mut self, side: Side, len: usize, fed: bool) {
        let metrics = self.metrics;
        let scenario = metrics.scenarios().current();
        let direction = match side {
            Side::Client => Direction::ClientToServer,
            Side::Server => Direction::ServerToClient,
        };
        metrics.bytes(scenario, direction).inc_by(len as u64);
        if !fed {
            let transport = &metrics.transport;
            transport.unobserved_bytes[direction as usize].inc_by(len as u64);
            if side == Side::Client && self.last_side != Some(Side::Client) {
                transport.unobserved_exchanges.inc();
            }
        }
    }

    fn after(&mut self, side: Side) {
        self.last_side = Some(side);
        if self.carriage.is_some()
            && !matches!(
                self.session.phase(),
                Phase::AwaitGreeting | Phase::AwaitClientHello | Phase::AwaitTls
            )
        {
            self.count_carriage();
        }
    }

    /// The session read the server's greeting and waits for the client's answer.
    pub(crate) fn greeted(&self) -> bool {
        self.session.phase() == Phase::AwaitClientHello
    }

    /// Whether the greeting offers TLS; `None` when the session could not read it.
    pub(crate) fn server_offers_tls(&self) -> Option<bool> {
        self.greeted()
            .then(|| self.session.server_capabilities().has(CLIENT_SSL))
    }

    /// What the client's packet just read was.
    pub(crate) fn client_hello(&self) -> ClientHello {
        match self.session.phase() {
            Phase::AwaitTls => ClientHello::SslRequest,
            Phase::Authenticating => ClientHello::Response,
            _ => ClientHello::Other,
        }
    }

    /// The cleartext plugin the client's handshake response named, if any.
    pub(crate) fn cleartext_auth(&self) -> Option<&'static str> {
        self.session.cleartext_auth()
    }

    /// Authentication is still going on (neither OK nor ERR from the server yet).
    pub(crate) fn authenticating(&self) -> bool {
        self.session.phase() == Phase::Authenticating
    }

    /// psprobe terminated the client's TLS: the decrypted stream is observed.
    pub(crate) fn tls_terminated(&mut self) {
        self.session.tls_established();
        self.carriage = Some(TlsCarriage::Terminated);
    }

    /// The TLS the client asked for is left to client and server: unobserved from here on,
    /// and counted as passed through.
    pub(crate) fn tls_passed_through(&mut self) {
        self.session
            .unobserve(UnobservedReason::Tls, &mut self.sink);
        self.carriage = Some(TlsCarriage::Passthrough);
        self.count_carriage();
    }

    /// The connection goes on without TLS on the client leg.
    pub(crate) fn plain(&mut self) {
        self.carriage = Some(TlsCarriage::None);
    }

    /// Counts the connection's carriage now (if not yet): compression as far as it is known.
    pub(crate) fn count_carriage(&mut self) {
        if let Some(tls) = self.carriage.take() {
            let compression = match tls {
                TlsCarriage::Passthrough => None,
                _ => Some(self.session.compression()),
            };
            self.metrics.transport.record_connection(tls, compression);
        }
    }

    /// The connection is over: its carriage counted if it was not, commands still waiting for
    /// a response end as aborted.
    pub(crate) fn close(&mut self) {
        self.count_carriage();
        self.session.on_close(&mut self.sink);
    }

    /// Whether observation stopped before the end (the session gave up on the bytes).
    pub(crate) fn unobserved(&self) -> bool {
        self.session.phase() == Phase::Unobserved
    }
}
