//! What the session machine reports: commands starting and finishing, and observation ending.

use std::time::{Duration, Instant};

use crate::protocol::CommandKind;

/// The statement behind a command, as far as it is known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Statement<'a> {
    /// The command carries no SQL (PING, QUIT, ...).
    None,
    /// SQL text of COM_QUERY or COM_STMT_PREPARE; cut at the capture limit when `truncated`.
    Text {
        /// The text, as sent (never unescaped or decoded).
        sql: &'a [u8],
        /// The text went on past what psprobe captures.
        truncated: bool,
    },
    /// A prepared statement by id, with the text it was prepared from when psprobe saw that.
    Prepared {
        /// The server's statement id.
        id: u32,
        /// Its text, when psprobe saw the PREPARE.
        sql: Option<&'a [u8]>,
    },
}

/// A command the client sent.
#[derive(Debug, Clone, Copy)]
pub struct CommandStarted<'a> {
    /// Number of the command on its connection, starting at 0; `CommandFinished` repeats it.
    pub seq: u64,
    /// The command byte's kind.
    pub kind: CommandKind,
    /// Its SQL, as far as it is known.
    pub statement: Statement<'a>,
    /// When its first byte was read (the caller's clock).
    pub at: Instant,
}

/// How a command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// OK (or EOF) without a result set.
    Ok,
    /// At least one result set was returned, and no error.
    Rows,
    /// ERR packet with this error code.
    Error(u16),
    /// The command has no response by design (COM_STMT_CLOSE, SEND_LONG_DATA, QUIT).
    NoResponse,
    /// The connection ended before the response was complete.
    Aborted,
    /// Observation of the connection stopped (an `UnobservedReason`) before the response was
    /// seen; the server may well have answered. Not a failure of the command.
    Unobserved,
}

impl Outcome {
    /// Stable, bounded label for metrics.
    pub fn label(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Rows => "rows",
            Outcome::Error(_) => "error",
            Outcome::NoResponse => "no_response",
            Outcome::Aborted => "aborted",
            Outcome::Unobserved => "unobserved",
        }
    }

    /// Every label of [`Outcome::label`], in a fixed order (metric series are pre-registered).
    pub const LABELS: &'static [&'static str] = &[
        "ok",
        "rows",
        "error",
        "no_response",
        "aborted",
        "unobserved",
    ];

    /// Position of `label()` in [`Outcome::LABELS`].
    pub fn index(self) -> usize {
        match self {
            Outcome::Ok => 0,
            Outcome::Rows => 1,
            Outcome::Error(_) => 2,
            Outcome::NoResponse => 3,
            Outcome::Aborted => 4,
            Outcome::Unobserved => 5,
        }
    }
}

/// A command whose response ended (or that will get none).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommandFinished {
    /// The `seq` of its [`CommandStarted`].
    pub seq: u64,
    /// The command byte's kind.
    pub kind: CommandKind,
    /// How it ended.
    pub outcome: Outcome,
    /// Rows of all result sets of the response.
    pub rows: u64,
    /// Sum of affected rows of the OK packets of the response.
    pub affected_rows: u64,
    /// Bytes the client sent for this command, headers included.
    pub request_bytes: u64,
    /// Bytes the server answered with, headers included.
    pub response_bytes: u64,
    /// From the command's first packet to its response's last; `None` for untimed commands.
    pub latency: Option<Duration>,
}

/// Why a connection stopped being observed (it is still forwarded verbatim).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum UnobservedReason {
    /// The client switched to TLS.
    Tls,
    /// The compressed protocol could not be decoded (corrupt frame, wrong declared length).
    CompressionError,
    /// A pre-4.1 client or a greeting other than protocol version 10.
    UnsupportedProtocol,
    /// A packet that could not be parsed where one was expected.
    MalformedPacket,
    /// A packet that is valid but not expected in the current state.
    UnexpectedPacket,
    /// More commands sent ahead of their responses than psprobe tracks.
    PipelineTooDeep,
}

impl UnobservedReason {
    /// Every reason, in a fixed order (metric series are pre-registered).
    pub const ALL: &'static [UnobservedReason] = &[
        UnobservedReason::Tls,
        UnobservedReason::CompressionError,
        UnobservedReason::UnsupportedProtocol,
        UnobservedReason::MalformedPacket,
        UnobservedReason::UnexpectedPacket,
        UnobservedReason::PipelineTooDeep,
    ];

    /// Stable, bounded label for metrics and logs.
    pub fn label(self) -> &'static str {
        match self {
            UnobservedReason::Tls => "tls",
            UnobservedReason::CompressionError => "compression_error",
            UnobservedReason::UnsupportedProtocol => "unsupported_protocol",
            UnobservedReason::MalformedPacket => "malformed_packet",
            UnobservedReason::UnexpectedPacket => "unexpected_packet",
            UnobservedReason::PipelineTooDeep => "pipeline_too_deep",
        }
    }

    /// True for parse failures, as opposed to features psprobe knowingly does not look into.
    pub fn is_parse_error(self) -> bool {
        matches!(
            self,
            UnobservedReason::MalformedPacket
                | UnobservedReason::UnexpectedPacket
                | UnobservedReason::PipelineTooDeep
                | UnobservedReason::CompressionError
        )
    }
}

/// Receives the session's events. Called on the relay's hot path: implementations must not
/// block or allocate per call.
pub trait EventSink {
    /// A command was sent.
    fn command_started(&mut self, event: &CommandStarted<'_>);
    /// A command's response ended; commands finish in the order they started, except those
    /// without a response, which finish at once.
    fn command_finished(&mut self, event: &CommandFinished);
    /// Observation of the connection stopped (it is still forwarded); once per connection.
    fn unobserved(&mut self, reason: UnobservedReason);
    /// The connection phase finished: authentication succeeded (`true`) or was refused.
    fn authenticated(&mut self, _ok: bool) {}
    /// The client's handshake response: its user name and default database (never its auth
    /// data). Once per connection.
    fn client_hello(&mut self, _user: &[u8], _database: Option<&[u8]>) {}
}
