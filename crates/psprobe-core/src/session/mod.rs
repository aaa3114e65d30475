//! Per-connection protocol state machine: bytes of both directions in, events out.
//!
//! The relay calls [`Session::on_client_bytes`] / [`Session::on_server_bytes`] with each chunk
//! it forwards and the time the chunk arrived. The session de-frames packets, follows the
//! connection phase and the command/response exchange, and reports to an [`EventSink`]. It
//! never fails: anything it cannot follow turns observation off for this connection (and says
//! why); the relay keeps forwarding regardless.
//!
//! TLS: after an SSLRequest the session waits for the proxy to say whether it terminated TLS
//! ([`Session::tls_established`]: the decrypted stream follows) or not ([`Session::unobserve`]).
//! Compression: once the server's OK ends authentication on a compressed connection, both
//! directions are decoded (a copy; see [`crate::protocol::Decompressor`]) before de-framing.
//! With a decode budget ([`Session::set_decode_budget`]) a chunk whose frames inflate to more
//! than the budget is decoded in steps: the call returns with the rest kept
//! ([`Session::is_behind`]), and [`Session::catch_up`] decodes the next step, its events
//! timed as of the chunk's arrival. A proxy relays other connections' bytes in between.

mod events;
mod prepared;
mod response;

use std::collections::VecDeque;
use std::ops::ControlFlow;
use std::time::Instant;

pub use events::{
    CommandFinished, CommandStarted, EventSink, Outcome, Statement, UnobservedReason,
};
pub use prepared::{PreparedStatements, LAST_PREPARED_ID};
pub use response::{ResponseReader, Step};

use crate::protocol::auth::cleartext_plugin;
use crate::protocol::capabilities::*;
use crate::protocol::command::{self, CommandKind, ResponseShape};
use crate::protocol::compress::{Algorithm, Decoded, Decompressor, Plain};
use crate::protocol::handshake::{parse_client_hello, parse_greeting, ClientHello};
use crate::protocol::response::{is_plain_row_start, parse_err_code, ERR_HEADER, OK_HEADER};
use crate::protocol::{Capabilities, Deframer, PacketView};

/// Bytes of a client packet captured for parsing: the 64 KiB of SQL a digest looks at, plus
/// room for the command byte and MySQL 8 query attributes in front of it.
pub const CLIENT_CAPTURE_LIMIT: usize = 64 * 1024 + 1024;
/// Bytes of a server packet captured: headers of OK / ERR / greeting; rows are only counted.
pub const SERVER_CAPTURE_LIMIT: usize = 1024;
/// Commands a client may send ahead of their responses before psprobe stops following.
/// Each costs ~150 bytes while in flight (here and in the recorder), so this bounds a
/// connection's worst case to ~600 KiB; the queue keeps its capacity, so a connection that
/// pipelines allocates only while its deepest pipeline grows, not per command.
pub const MAX_PIPELINE_DEPTH: usize = 4096;

/// Where a connection's conversation is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Connected; the server's greeting has not come yet.
    AwaitGreeting,
    /// Greeted; the client's SSLRequest or handshake response has not come yet.
    AwaitClientHello,
    /// The client sent an SSLRequest; what follows is TLS, terminated by the proxy or not.
    AwaitTls,
    /// Credentials sent; authentication exchanges until the server's OK or ERR.
    Authenticating,
    /// Logged in: commands and their responses.
    Command,
    /// The connection is over as far as the protocol goes (QUIT, refused login, server error).
    Closed,
    /// Observation stopped; bytes are still forwarded.
    Unobserved,
}

/// A command sent by the client whose response is not complete yet.
#[derive(Debug)]
struct InFlight {
    seq: u64,
    kind: CommandKind,
    started: Instant,
    request_bytes: u64,
    response_bytes: u64,
    response: ResponseReader,
    /// COM_STMT_PREPARE: the text, kept until the prepare-OK tells its statement id.
    prepare_sql: Option<Box<[u8]>>,
    /// COM_STMT_PREPARE: a pipelined COM_STMT_CLOSE(-1) already closed it.
    closed_early: bool,
}

/// The protocol state of one connection.
#[derive(Debug)]
pub struct Session {
    client_frames: Deframer,
    server_frames: Deframer,
    /// Decoders of the compressed protocol, from the end of authentication on.
    client_decoder: Option<Box<Decompressor>>,
    server_decoder: Option<Box<Decompressor>>,
    /// When the client packet now being received began to arrive.
    client_packet_start: Instant,
    /// Decoded bytes one call decodes at most (`usize::MAX`: no limit).
    decode_budget: usize,
    /// A chunk a budget cut short, still to be decoded.
    backlog: Option<Backlog>,
    machine: Machine,
}

/// What is needed to go on with a chunk a decode budget cut short.
#[derive(Debug, Clone, Copy)]
struct Backlog {
    /// Which direction's decoder holds it.
    client: bool,
    /// When the chunk arrived: its events are timed as of then.
    at: Instant,
    /// (Client side) no packet of the chunk has completed yet.
    first: bool,
}

/// Decoded (or plain) bytes into a de-framer, which may let the decoder skip what its capture
/// has no room for. `on_packet` gets each packet and when it began to arrive.
struct Deframing<'a, P> {
    frames: &'a mut Deframer,
    /// When the packet being received began to arrive: set at packet boundaries.
    packet_start: &'a mut Instant,
    now: Instant,
    on_packet: P,
}

impl<P> Plain for Deframing<'_, P>
where
    P: FnMut(PacketView<'_>, Instant) -> ControlFlow<()>,
{
    fn bytes(&mut self, plain: &[u8]) -> ControlFlow<()> {
        if self.frames.is_at_boundary() {
            *self.packet_start = self.now;
        }
        let start = *self.packet_start;
        let on_packet = &mut self.on_packet;
        self.frames.feed(plain, |p| on_packet(p, start))
    }

    fn ignorable(&self) -> usize {
        self.frames.ignorable()
    }

    fn skipped(&mut self, n: usize) -> ControlFlow<()> {
        let start = *self.packet_start;
        let on_packet = &mut self.on_packet;
        self.frames.skip(n, |p| on_packet(p, start))
    }
}

/// Where the bytes of a decoding step come from.
#[derive(Clone, Copy)]
enum Input<'a> {
    Chunk(&'a [u8]),
    Backlog,
}

#[derive(Debug)]
struct Machine {
    phase: Phase,
    server_caps: u64,
    caps: Capabilities,
    compression: Option<Algorithm>,
    /// Set by the server's OK on a compressed connection: the bytes after it are compressed.
    compression_starts: bool,
    next_seq: u64,
    in_flight: VecDeque<InFlight>,
    statements: PreparedStatements,
    /// COM_QUIT arrived behind commands still waiting for their responses.
    quitting: bool,
    /// The cleartext plugin the client's handshake response named, if it named one.
    cleartext_auth: Option<&'static str>,
}

impl Session {
    /// A connection that has just been accepted at `now`.
    pub fn new(now: Instant) -> Self {
        Session {
            client_frames: Deframer::new(CLIENT_CAPTURE_LIMIT),
            server_frames: Deframer::new(SERVER_CAPTURE_LIMIT),
            client_decoder: None,
            server_decoder: None,
            client_packet_start: now,
            decode_budget: usize::MAX,
            backlog: None,
            machine: Machine {
                phase: Phase::AwaitGreeting,
                server_caps: 0,
                caps: Capabilities::default(),
                compression: None,
                compression_starts: false,
                next_seq: 0,
                in_flight: VecDeque::new(),
                statements: PreparedStatements::default(),
                quitting: false,
                cleartext_auth: None,
            },
        }
    }

    /// Where the conversation is.
    pub fn phase(&self) -> Phase {
        self.machine.phase
    }

    /// Capabilities both sides agreed on (known once the client's handshake response is seen).
    pub fn capabilities(&self) -> Capabilities {
        self.machine.caps
    }

    /// Capabilities the server's greeting offers (none until the greeting has been parsed): a
    /// proxy decides on them (does the server offer TLS?) without parsing the greeting again.
    pub fn server_capabilities(&self) -> Capabilities {
        Capabilities(self.machine.server_caps)
    }

    /// The authentication plugin the client's handshake response named when that plugin
    /// sends the password in clear ([`crate::protocol::cleartext_plugin`]): a proxy that
    /// does not encrypt its leg to the server refuses it.
    pub fn cleartext_auth(&self) -> Option<&'static str> {
        self.machine.cleartext_auth
    }

    /// False once observation stopped or the protocol conversation ended; feeding more bytes
    /// is then harmless but pointless.
    pub fn is_observing(&self) -> bool {
        !matches!(self.machine.phase, Phase::Unobserved | Phase::Closed)
    }

    /// The connection's prepared statements (id -> text), for labelling executions.
    pub fn prepared_statements(&self) -> &PreparedStatements {
        &self.machine.statements
    }

    /// The protocol compression negotiated (known once the client's handshake response is seen).
    pub fn compression(&self) -> Option<Algorithm> {
        self.machine.compression
    }

    /// The client's SSLRequest was answered by the proxy itself: the decrypted stream that
    /// follows carries the handshake response (sequence id 2) and the rest of the connection.
    pub fn tls_established(&mut self) {
        if self.machine.phase == Phase::AwaitTls {
            self.machine.phase = Phase::AwaitClientHello;
        }
    }

    /// Stops observing this connection (it is still forwarded) and says why, once.
    pub fn unobserve<S: EventSink>(&mut self, reason: UnobservedReason, sink: &mut S) {
        if self.is_observing() {
            let _ = self.machine.stop_observing(reason, sink);
        }
    }

    /// Decodes at most about `budget` bytes of a compressed chunk per call (and per
    /// [`Session::catch_up`]); `None`: a call decodes all it is given. Only compressed
    /// connections are affected: anything else is at most as long as its chunk.
    pub fn set_decode_budget(&mut self, budget: Option<usize>) {
        self.decode_budget = budget.unwrap_or(usize::MAX);
    }

    /// A chunk already fed is not wholly decoded yet (see [`Session::set_decode_budget`]).
    /// Bytes fed meanwhile are decoded after it, in one go.
    pub fn is_behind(&self) -> bool {
        self.backlog.is_some()
    }

    /// Decodes the next step of what [`Session::is_behind`] says is left.
    pub fn catch_up<S: EventSink>(&mut self, sink: &mut S) {
        let Some(backlog) = self.backlog.take() else {
            return;
        };
        if !self.is_observing() {
            return;
        }
        if backlog.client {
            self.decode_client(Input::Backlog, backlog.at, backlog.first, sink);
        } else {
            self.decode_server(Input::Backlog, backlog.at, sink);
        }
    }

    /// Whatever a budget left is decoded before newer bytes, in one go: a caller that feeds
    /// while [`Session::is_behind`] gets the order right and pays the time.
    fn finish_backlog<S: EventSink>(&mut self, sink: &mut S) {
        let budget = std::mem::replace(&mut self.decode_budget, usize::MAX);
        self.catch_up(sink);
        self.decode_budget = budget;
    }

    /// Feeds bytes the client sent (any chunking), read at `now`; events go to `sink`.
    pub fn on_client_bytes<S: EventSink>(&mut self, data: &[u8], now: Instant, sink: &mut S) {
        self.finish_backlog(sink);
        if !self.is_observing() {
            return;
        }
        if self.machine.phase == Phase::AwaitTls {
            // TLS records the proxy did not terminate.
            let _ = self.machine.stop_observing(UnobservedReason::Tls, sink);
            return;
        }
        self.decode_client(Input::Chunk(data), now, true, sink);
    }

    /// De-frames (and, compressed, decodes first) client bytes that arrived at `now`;
    /// `first`: no packet of this chunk has completed yet.
    fn decode_client<S: EventSink>(
        &mut self,
        input: Input<'_>,
        now: Instant,
        mut first: bool,
        sink: &mut S,
    ) {
        let Session {
            client_frames,
            client_decoder,
            client_packet_start,
            decode_budget,
            backlog,
            machine,
            ..
        } = self;
        let decoded = {
            let mut plain = Deframing {
                frames: client_frames,
                packet_start: client_packet_start,
                now,
                on_packet: |p: PacketView<'_>, packet_start: Instant| {
                    // Packets after the first one in this chunk began arriving in this chunk.
                    let started = if first { packet_start } else { now };
                    first = false;
                    machine.on_client_packet(&p, started, sink)
                },
            };
            match (client_decoder, input) {
                (Some(decoder), Input::Chunk(data)) => {
                    decoder.feed_plain_within(data, *decode_budget, &mut plain)
                }
                (Some(decoder), Input::Backlog) => decoder.resume_plain(*decode_budget, &mut plain),
                (None, Input::Chunk(data)) => Ok(match plain.bytes(data) {
                    ControlFlow::Continue(()) => Decoded::Done,
                    ControlFlow::Break(()) => Decoded::Stopped,
                }),
                (None, Input::Backlog) => Ok(Decoded::Done),
            }
        };
        match decoded {
            Ok(Decoded::More) => {
                *backlog = Some(Backlog {
                    client: true,
                    at: now,
                    first,
                });
                return;
            }
            Ok(_) => {}
            Err(_) => {
                let _ = machine.stop_observing(UnobservedReason::CompressionError, sink);
            }
        }
        if !first {
            *client_packet_start = now;
        }
    }

    /// Feeds bytes the server sent (any chunking), read at `now`; events go to `sink`.
    pub fn on_server_bytes<S: EventSink>(&mut self, data: &[u8], now: Instant, sink: &mut S) {
        self.finish_backlog(sink);
        if !self.is_observing() {
            return;
        }
        if self.machine.phase == Phase::AwaitTls {
            let _ = self.machine.stop_observing(UnobservedReason::Tls, sink);
            return;
        }
        if self.server_decoder.is_some() {
            self.decode_server(Input::Chunk(data), now, sink);
            return;
        }
        let Session {
            server_frames,
            server_decoder,
            client_decoder,
            machine,
            ..
        } = self;
        let mut rest = data;
        loop {
            // A result set's rows are only counted: whole ones in the chunk are skipped in a
            // tight loop, not read one by one (most of a range query's response).
            if machine.in_row_run() {
                let (rows, bytes) =
                    server_frames.skip_whole_packets_while(&mut rest, is_plain_row_start);
                machine.add_rows(rows, bytes);
            }
            let mut rows_follow = false;
            let (_, used) = server_frames.feed_counted(rest, |p| {
                let flow = machine.on_server_packet(&p, now, sink);
                if machine.compression_starts {
                    // Whatever follows this OK in the chunk is compressed.
                    return ControlFlow::Break(());
                }
                if flow.is_continue() && machine.in_row_run() {
                    rows_follow = true;
                    return ControlFlow::Break(());
                }
                flow
            });
            rest = &rest[used..];
            if !rows_follow || rest.is_empty() {
                break;
            }
        }
        if std::mem::take(&mut machine.compression_starts) {
            if let Some(algorithm) = machine.compression {
                *server_decoder = Some(Box::new(Decompressor::new(algorithm)));
                *client_decoder = Some(Box::new(Decompressor::new(algorithm)));
                if !rest.is_empty() {
                    self.on_server_bytes(rest, now, sink);
                }
            }
        }
    }

    /// Decodes compressed server bytes that arrived at `now` (from the backlog: the rest of
    /// such a chunk), then de-frames them.
    fn decode_server<S: EventSink>(&mut self, input: Input<'_>, now: Instant, sink: &mut S) {
        let Session {
            server_frames,
            server_decoder,
            decode_budget,
            backlog,
            machine,
            ..
        } = self;
        let Some(decoder) = server_decoder else {
            return;
        };
        // Server packets are timed as of the chunk, not as of their start.
        let mut packet_start = now;
        let mut plain = Deframing {
            frames: server_frames,
            packet_start: &mut packet_start,
            now,
            on_packet: |p: PacketView<'_>, _| machine.on_server_packet(&p, now, sink),
        };
        let decoded = match input {
            Input::Chunk(data) => decoder.feed_plain_within(data, *decode_budget, &mut plain),
            Input::Backlog => decoder.resume_plain(*decode_budget, &mut plain),
        };
        match decoded {
            Ok(Decoded::More) => {
                *backlog = Some(Backlog {
                    client: false,
                    at: now,
                    first: false,
                });
            }
            Ok(_) => {}
            Err(_) => {
                let _ = machine.stop_observing(UnobservedReason::CompressionError, sink);
            }
        }
    }

    /// The connection is gone: commands still waiting for a response end as aborted. What a
    /// decode budget left undecoded is dropped (the connection ended before it was read).
    pub fn on_close<S: EventSink>(&mut self, sink: &mut S) {
        self.backlog = None;
        self.machine.end_in_flight(Outcome::Aborted, sink);
        if self.machine.phase != Phase::Unobserved {
            self.machine.phase = Phase::Closed;
        }
    }
}

impl Machine {
    fn stop_observing<S: EventSink>(
        &mut self,
        reason: UnobservedReason,
        sink: &mut S,
    ) -> ControlFlow<()> {
        // Their responses will go by unread: not aborted (the server may answer them all).
        self.end_in_flight(Outcome::Unobserved, sink);
        self.phase = Phase::Unobserved;
        sink.unobserved(reason);
        ControlFlow::Break(())
    }

    /// Ends every command still waiting for its response with `outcome`, untimed.
    fn end_in_flight<S: EventSink>(&mut self, outcome: Outcome, sink: &mut S) {
        while let Some(cmd) = self.in_flight.pop_front() {
            sink.command_finished(&CommandFinished {
                seq: cmd.seq,
                kind: cmd.kind,
                outcome,
                rows: cmd.response.rows,
                affected_rows: cmd.response.affected_rows,
                request_bytes: cmd.request_bytes,
                response_bytes: cmd.response_bytes,
                latency: None,
            });
        }
    }

    fn on_client_packet<S: EventSink>(
        &mut self,
        p: &PacketView<'_>,
        at: Instant,
        sink: &mut S,
    ) -> ControlFlow<()> {
        match self.phase {
            Phase::AwaitClientHello => self.client_hello(p, sink),
            // Authentication data (scrambles, plugin exchange) needs no reading.
            Phase::Authenticating => ControlFlow::Continue(()),
            Phase::Command => {
                if let Some(front) = self.in_flight.front_mut() {
                    if front.response.takes_client_packets() {
                        front.request_bytes += p.wire_len();
                        front.response.on_client_packet(p);
                        return ControlFlow::Continue(());
                    }
                }
                self.command(p, at, sink)
            }
            Phase::AwaitGreeting => self.stop_observing(UnobservedReason::UnexpectedPacket, sink),
            Phase::AwaitTls => self.stop_observing(UnobservedReason::Tls, sink),
            Phase::Closed | Phase::Unobserved => ControlFlow::Break(()),
        }
    }

    /// The server is sending the rows of a result set (see [`ResponseReader::in_rows`]).
    fn in_row_run(&self) -> bool {
        self.phase == Phase::Command
            && self
                .in_flight
                .front()
                .is_some_and(|front| front.response.in_rows())
    }

    /// Counts `rows` plain rows of `bytes` on the wire skipped while [`Machine::in_row_run`].
    fn add_rows(&mut self, rows: u64, bytes: u64) {
        if let Some(front) = self.in_flight.front_mut() {
            front.response.add_rows(rows);
            front.response_bytes += bytes;
        }
    }

    fn on_server_packet<S: EventSink>(
        &mut self,
        p: &PacketView<'_>,
        at: Instant,
        sink: &mut S,
    ) -> ControlFlow<()> {
        match self.phase {
            Phase::AwaitGreeting => self.greeting(p, sink),
            Phase::Authenticating => match p.first_byte() {
                Some(OK_HEADER) => {
                    sink.authenticated(true);
                    self.phase = Phase::Command;
                    // Compression starts after the OK that ends authentication.
                    self.compression_starts = self.compression.is_some();
                    ControlFlow::Continue(())
                }
                Some(ERR_HEADER) => {
                    sink.authenticated(false);
                    self.phase = Phase::Closed;
                    ControlFlow::Break(())
                }
                // Auth switch request, more data, or a plugin's own packets.
                _ => ControlFlow::Continue(()),
            },
            Phase::Command => self.response(p, at, sink),
            Phase::AwaitClientHello | Phase::AwaitTls => {
                self.stop_observing(UnobservedReason::UnexpectedPacket, sink)
            }
            Phase::Closed | Phase::Unobserved => ControlFlow::Break(()),
        }
    }

    fn greeting<S: EventSink>(&mut self, p: &PacketView<'_>, sink: &mut S) -> ControlFlow<()> {
        if p.first_byte() == Some(ERR_HEADER) {
            // The server refused the connection (too many connections, host blocked, ...).
            sink.authenticated(false);
            self.phase = Phase::Closed;
            return ControlFlow::Break(());
        }
        if p.first_byte() != Some(10) {
            return self.stop_observing(UnobservedReason::UnsupportedProtocol, sink);
        }
        match parse_greeting(p.head) {
            Ok((_, greeting)) => {
                self.server_caps = greeting.capabilities;
                self.phase = Phase::AwaitClientHello;
                ControlFlow::Continue(())
            }
            Err(_) => self.stop_observing(UnobservedReason::MalformedPacket, sink),
        }
    }

    fn client_hello<S: EventSink>(&mut self, p: &PacketView<'_>, sink: &mut S) -> ControlFlow<()> {
        let client_caps = match parse_client_hello(p.head) {
            Ok((_, ClientHello::SslRequest { .. })) => {
                self.phase = Phase::AwaitTls;
                return ControlFlow::Continue(());
            }
            Ok((_, ClientHello::Response(r))) => {
                sink.client_hello(r.username, r.database);
                self.cleartext_auth = r.auth_plugin.and_then(cleartext_plugin);
                r.capabilities
            }
            Err(_) if p.head.len() >= 4 && p.head[1] & 0x02 == 0 => {
                // CLIENT_PROTOCOL_41 (bit 9, in the second byte) is missing: a 3.20 client.
                return self.stop_observing(UnobservedReason::UnsupportedProtocol, sink);
            }
            Err(_) => return self.stop_observing(UnobservedReason::MalformedPacket, sink),
        };
        self.caps = Capabilities(client_caps & self.server_caps);
        // With both flags zlib is used (MySQL's documentation of the compression layer).
        self.compression = if self.caps.has(CLIENT_COMPRESS) {
            Some(Algorithm::Zlib)
        } else if self.caps.has(CLIENT_ZSTD_COMPRESSION) {
            Some(Algorithm::Zstd)
        } else {
            None
        };
        self.phase = Phase::Authenticating;
        ControlFlow::Continue(())
    }

    fn command<S: EventSink>(
        &mut self,
        p: &PacketView<'_>,
        at: Instant,
        sink: &mut S,
    ) -> ControlFlow<()> {
        let Some(&command_byte) = p.head.first() else {
            return self.stop_observing(UnobservedReason::MalformedPacket, sink);
        };
        if p.seq != 0 {
            return self.stop_observing(UnobservedReason::UnexpectedPacket, sink);
        }
        if self.in_flight.len() >= MAX_PIPELINE_DEPTH {
            return self.stop_observing(UnobservedReason::PipelineTooDeep, sink);
        }
        let kind = CommandKind::from_byte(command_byte);
        let body = &p.head[1..];
        let seq = self.next_seq;
        self.next_seq += 1;

        let mut statement_id = None;
        let mut pipelined_on_prepare = false;
        let statement = match kind {
            CommandKind::Query => {
                match command::query_text(body, self.caps.has(CLIENT_QUERY_ATTRIBUTES)) {
                    Ok((_, sql)) => Statement::Text {
                        sql,
                        truncated: !p.is_whole(),
                    },
                    Err(_) if !p.is_whole() => Statement::None,
                    Err(_) => return self.stop_observing(UnobservedReason::MalformedPacket, sink),
                }
            }
            CommandKind::StmtPrepare => Statement::Text {
                sql: body,
                truncated: !p.is_whole(),
            },
            CommandKind::StmtExecute
            | CommandKind::StmtFetch
            | CommandKind::StmtReset
            | CommandKind::StmtClose
            | CommandKind::StmtSendLongData
            | CommandKind::StmtBulkExecute => match command::statement_id(body) {
                Ok((_, LAST_PREPARED_ID)) if self.pipelined_prepare().is_some() => {
                    // MariaDB pipelining: "the statement prepared last" is still in flight;
                    // its id is not known yet, its text is.
                    pipelined_on_prepare = true;
                    Statement::Prepared {
                        id: LAST_PREPARED_ID,
                        sql: self
                            .pipelined_prepare()
                            .and_then(|p| p.prepare_sql.as_deref()),
                    }
                }
                Ok((_, id)) => {
                    let id = self.statements.resolve(id);
                    statement_id = Some(id);
                    Statement::Prepared {
                        id,
                        sql: self.statements.get(id),
                    }
                }
                Err(_) => return self.stop_observing(UnobservedReason::MalformedPacket, sink),
            },
            _ => Statement::None,
        };
        sink.command_started(&CommandStarted {
            seq,
            kind,
            statement,
            at,
        });

        let shape = kind.response_shape();
        if shape == ResponseShape::None {
            sink.command_finished(&CommandFinished {
                seq,
                kind,
                outcome: Outcome::NoResponse,
                rows: 0,
                affected_rows: 0,
                request_bytes: p.wire_len(),
                response_bytes: 0,
                latency: None,
            });
            match (kind, statement_id) {
                (CommandKind::StmtClose, Some(id)) => self.statements.remove(id),
                (CommandKind::StmtClose, None) if pipelined_on_prepare => {
                    if let Some(prepare) = self.pipelined_prepare_mut() {
                        prepare.closed_early = true;
                    }
                }
                // The server answers what came before QUIT, then closes.
                (CommandKind::Quit, _) if !self.in_flight.is_empty() => self.quitting = true,
                (CommandKind::Quit, _) => self.phase = Phase::Closed,
                _ => {}
            }
            return ControlFlow::Continue(());
        }
        let prepare_sql =
            (kind == CommandKind::StmtPrepare && p.is_whole()).then(|| Box::from(body));
        self.in_flight.push_back(InFlight {
            seq,
            kind,
            started: at,
            request_bytes: p.wire_len(),
            response_bytes: 0,
            response: ResponseReader::new(shape),
            prepare_sql,
            closed_early: false,
        });
        ControlFlow::Continue(())
    }

    /// The newest COM_STMT_PREPARE still waiting for its prepare-OK.
    fn pipelined_prepare(&self) -> Option<&InFlight> {
        self.in_flight
            .iter()
            .rev()
            .find(|c| c.kind == CommandKind::StmtPrepare)
    }

    fn pipelined_prepare_mut(&mut self) -> Option<&mut InFlight> {
        self.in_flight
            .iter_mut()
            .rev()
            .find(|c| c.kind == CommandKind::StmtPrepare)
    }

    fn response<S: EventSink>(
        &mut self,
        p: &PacketView<'_>,
        at: Instant,
        sink: &mut S,
    ) -> ControlFlow<()> {
        let caps = self.caps;
        let Some(front) = self.in_flight.front_mut() else {
            // An unsolicited ERR precedes the server closing the connection (killed, timeout).
            if p.first_byte() == Some(ERR_HEADER) && parse_err_code(p.head).is_ok() {
                self.phase = Phase::Closed;
                return ControlFlow::Break(());
            }
            return self.stop_observing(UnobservedReason::UnexpectedPacket, sink);
        };
        front.response_bytes += p.wire_len();
        let done = match front.response.on_server_packet(p, caps) {
            Step::More => false,
            Step::Done => true,
            Step::Prepared { id, done } => {
                match front.prepare_sql.take() {
                    _ if front.closed_early => self.statements.insert_without_text(id),
                    Some(sql) => self.statements.insert(id, sql),
                    None => self.statements.insert_without_text(id),
                }
                done
            }
            Step::Invalid(reason) => return self.stop_observing(reason, sink),
        };
        if !done {
            return ControlFlow::Continue(());
        }
        let Some(cmd) = self.in_flight.pop_front() else {
            return ControlFlow::Continue(());
        };
        let outcome = cmd.response.outcome();
        if outcome == Outcome::Ok
            && matches!(
                cmd.kind,
                CommandKind::ChangeUser | CommandKind::ResetConnection
            )
        {
            self.statements.clear();
        }
        if self.quitting && self.in_flight.is_empty() {
            self.phase = Phase::Closed;
        }
        let timed = cmd.kind.response_shape() != ResponseShape::Stream;
        sink.command_finished(&CommandFinished {
            seq: cmd.seq,
            kind: cmd.kind,
            outcome,
            rows: cmd.response.rows,
            affected_rows: cmd.response.affected_rows,
            request_bytes: cmd.request_bytes,
            response_bytes: cmd.response_bytes,
            latency: timed.then(|| at.saturating_duration_since(cmd.started)),
        });
        ControlFlow::Continue(())
    }
}

#[cfg(test)]
mod tests;
