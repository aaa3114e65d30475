//! Reads the server's response to one command, packet by packet, and says when it is complete.

use crate::protocol::capabilities::*;
use crate::protocol::codec::lenenc_int;
use crate::protocol::response::*;
use crate::protocol::{Capabilities, PacketView, ResponseShape};

use super::events::{Outcome, UnobservedReason};

/// Where in a response we are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// OK / ERR / LOCAL INFILE request / column count (first or next result of a query).
    ResultStart,
    /// The client is sending the file of a LOAD DATA LOCAL INFILE; ends with an empty packet.
    InfileUpload,
    Columns {
        left: u64,
    },
    ColumnsEof,
    Rows,
    PrepareStart,
    PrepareParams {
        left: u16,
        columns: u16,
    },
    PrepareParamsEof {
        columns: u16,
    },
    PrepareColumns {
        left: u16,
    },
    PrepareColumnsEof,
    Simple,
    Text,
    Fetch,
    FieldList,
    Auth,
    Stream,
}

/// What one server packet did to the response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// More packets belong to this response.
    More,
    /// The response is complete.
    Done,
    /// A prepare-OK announced this statement id (the response may continue).
    Prepared {
        /// The server's id for the statement.
        id: u32,
        /// Whether the prepare's response is complete with this packet.
        done: bool,
    },
    /// The packet makes no sense here: stop observing the connection.
    Invalid(UnobservedReason),
}

/// Response-reading state of one command.
#[derive(Debug, Clone)]
pub struct ResponseReader {
    state: State,
    /// Rows of the result sets so far.
    pub rows: u64,
    /// Affected rows of the OK packets so far.
    pub affected_rows: u64,
    saw_result_set: bool,
    error: Option<u16>,
}

impl ResponseReader {
    /// A reader for a response of `shape`, before its first packet.
    pub fn new(shape: ResponseShape) -> Self {
        let state = match shape {
            ResponseShape::Query => State::ResultStart,
            ResponseShape::Prepare => State::PrepareStart,
            ResponseShape::Simple | ResponseShape::None => State::Simple,
            ResponseShape::Text => State::Text,
            ResponseShape::Fetch => State::Fetch,
            ResponseShape::FieldList => State::FieldList,
            ResponseShape::Auth => State::Auth,
            ResponseShape::Stream => State::Stream,
        };
        ResponseReader {
            state,
            rows: 0,
            affected_rows: 0,
            saw_result_set: false,
            error: None,
        }
    }

    /// How the response ended (or would, were it over now).
    pub fn outcome(&self) -> Outcome {
        match self.error {
            Some(code) => Outcome::Error(code),
            None if self.saw_result_set => Outcome::Rows,
            None => Outcome::Ok,
        }
    }

    /// Reading a result set's rows (of a query, an execute or a fetch): the next packets are
    /// rows until a terminator or an error.
    pub fn in_rows(&self) -> bool {
        matches!(self.state, State::Rows | State::Fetch)
    }

    /// Counts `n` rows the caller has seen to be plain rows
    /// ([`crate::protocol::response::is_plain_row_start`]) while [`ResponseReader::in_rows`]:
    /// what [`ResponseReader::on_server_packet`] would have done with each.
    pub fn add_rows(&mut self, n: u64) {
        self.rows = self.rows.saturating_add(n);
    }

    /// Client packets that belong to this command rather than starting a new one.
    pub fn takes_client_packets(&self) -> bool {
        matches!(self.state, State::InfileUpload | State::Auth)
    }

    /// A client packet while `takes_client_packets()`: file data, or authentication data.
    pub fn on_client_packet(&mut self, p: &PacketView<'_>) {
        if self.state == State::InfileUpload && p.len == 0 {
            self.state = State::ResultStart;
        }
    }

    /// Reads the response's next packet under the connection's capabilities.
    pub fn on_server_packet(&mut self, p: &PacketView<'_>, caps: Capabilities) -> Step {
        let Some(first) = p.first_byte() else {
            return Step::Invalid(UnobservedReason::MalformedPacket);
        };
        if first == ERR_HEADER {
            return match parse_err_code(p.head) {
                Ok((_, PROGRESS_REPORT_CODE)) => Step::More,
                Ok((_, code)) => {
                    self.error = Some(code);
                    Step::Done
                }
                Err(_) => Step::Invalid(UnobservedReason::MalformedPacket),
            };
        }
        let deprecate_eof = caps.has(CLIENT_DEPRECATE_EOF);
        match self.state {
            State::ResultStart | State::InfileUpload => self.result_start(p, first, caps),
            State::Columns { left } => {
                self.state = match left {
                    1 if deprecate_eof => State::Rows,
                    1 => State::ColumnsEof,
                    _ => State::Columns { left: left - 1 },
                };
                Step::More
            }
            State::ColumnsEof => {
                if !is_eof(p) {
                    return Step::Invalid(UnobservedReason::UnexpectedPacket);
                }
                match parse_eof_status(p.head) {
                    // A cursor was opened: rows come later, through COM_STMT_FETCH.
                    Ok((_, status)) if status & SERVER_STATUS_CURSOR_EXISTS != 0 => Step::Done,
                    Ok(_) => {
                        self.state = State::Rows;
                        Step::More
                    }
                    Err(_) => Step::Invalid(UnobservedReason::MalformedPacket),
                }
            }
            State::Rows | State::Fetch => {
                if !is_rows_terminator(p, deprecate_eof) {
                    self.rows += 1;
                    return Step::More;
                }
                // COM_STMT_FETCH returns rows of a result set opened by EXECUTE.
                self.saw_result_set = true;
                match terminator_status(p.head, deprecate_eof) {
                    Some(status) if status & SERVER_MORE_RESULTS_EXISTS != 0 => {
                        self.state = State::ResultStart;
                        Step::More
                    }
                    Some(_) => Step::Done,
                    None => Step::Invalid(UnobservedReason::MalformedPacket),
                }
            }
            State::PrepareStart => self.prepare_ok(p, first, caps),
            State::PrepareParams { left, columns } => {
                self.state = match left {
                    1 if !deprecate_eof => State::PrepareParamsEof { columns },
                    1 => return self.after_params(columns),
                    _ => State::PrepareParams {
                        left: left - 1,
                        columns,
                    },
                };
                Step::More
            }
            State::PrepareParamsEof { columns } => {
                if !is_eof(p) {
                    return Step::Invalid(UnobservedReason::UnexpectedPacket);
                }
                self.after_params(columns)
            }
            State::PrepareColumns { left } => match left {
                1 if deprecate_eof => Step::Done,
                1 => {
                    self.state = State::PrepareColumnsEof;
                    Step::More
                }
                _ => {
                    self.state = State::PrepareColumns { left: left - 1 };
                    Step::More
                }
            },
            State::PrepareColumnsEof => {
                if is_eof(p) {
                    Step::Done
                } else {
                    Step::Invalid(UnobservedReason::UnexpectedPacket)
                }
            }
            State::Simple => match first {
                OK_HEADER => {
                    if let Ok((_, ok)) = parse_ok(p.head) {
                        self.affected_rows = self.affected_rows.saturating_add(ok.affected_rows);
                    }
                    Step::Done
                }
                EOF_HEADER if is_eof(p) || deprecate_eof => Step::Done,
                _ => Step::Invalid(UnobservedReason::UnexpectedPacket),
            },
            State::Text => Step::Done,
            State::FieldList => {
                if is_rows_terminator(p, deprecate_eof) {
                    self.saw_result_set = true;
                    Step::Done
                } else {
                    self.rows += 1;
                    Step::More
                }
            }
            // Auth switch (0xFE), more data (0x01) and plugin packets continue; OK ends.
            State::Auth => match first {
                OK_HEADER => Step::Done,
                _ => Step::More,
            },
            State::Stream => {
                if is_eof(p) {
                    Step::Done
                } else {
                    self.rows += 1;
                    Step::More
                }
            }
        }
    }

    fn result_start(&mut self, p: &PacketView<'_>, first: u8, caps: Capabilities) -> Step {
        match first {
            OK_HEADER => match parse_ok(p.head) {
                Ok((_, ok)) => {
                    self.affected_rows = self.affected_rows.saturating_add(ok.affected_rows);
                    if ok.status & SERVER_MORE_RESULTS_EXISTS != 0 {
                        self.state = State::ResultStart;
                        Step::More
                    } else {
                        Step::Done
                    }
                }
                Err(_) => Step::Invalid(UnobservedReason::MalformedPacket),
            },
            LOCAL_INFILE_HEADER => {
                self.state = State::InfileUpload;
                Step::More
            }
            EOF_HEADER => Step::Invalid(UnobservedReason::UnexpectedPacket),
            _ => {
                let Ok((rest, columns)) = lenenc_int(p.head) else {
                    return Step::Invalid(UnobservedReason::MalformedPacket);
                };
                let metadata_follows = match (caps.has_metadata_flag(), rest) {
                    (false, []) => true,
                    (true, [flag]) => *flag != 0,
                    // MariaDB 10.6.5 omits the byte despite the capability (MDEV-27150).
                    (true, []) => true,
                    _ => return Step::Invalid(UnobservedReason::MalformedPacket),
                };
                if columns == 0 {
                    return Step::Invalid(UnobservedReason::MalformedPacket);
                }
                self.saw_result_set = true;
                self.state = match (metadata_follows, caps.has(CLIENT_DEPRECATE_EOF)) {
                    (true, _) => State::Columns { left: columns },
                    (false, true) => State::Rows,
                    (false, false) => State::ColumnsEof,
                };
                Step::More
            }
        }
    }

    fn prepare_ok(&mut self, p: &PacketView<'_>, first: u8, caps: Capabilities) -> Step {
        if first != OK_HEADER || p.head.len() < 12 {
            return Step::Invalid(UnobservedReason::UnexpectedPacket);
        }
        let h = p.head;
        let id = u32::from_le_bytes([h[1], h[2], h[3], h[4]]);
        let columns = u16::from_le_bytes([h[5], h[6]]);
        let params = u16::from_le_bytes([h[7], h[8]]);
        let metadata_follows =
            !caps.has(CLIENT_OPTIONAL_RESULTSET_METADATA) || h.get(12).copied().unwrap_or(1) != 0;
        let done = if !metadata_follows {
            true
        } else if params > 0 {
            self.state = State::PrepareParams {
                left: params,
                columns,
            };
            false
        } else {
            self.after_params(columns) == Step::Done
        };
        Step::Prepared { id, done }
    }

    fn after_params(&mut self, columns: u16) -> Step {
        if columns == 0 {
            return Step::Done;
        }
        self.state = State::PrepareColumns { left: columns };
        Step::More
    }
}
