//! Sans-I/O MySQL / MariaDB wire protocol: pure functions and small state over byte slices.
//! Nothing in here knows about sockets or async runtimes, so every edge case is a unit test.
//!
//! Must not: panic or index out of bounds on any byte sequence (fuzzed), or allocate per packet.

pub mod auth;
pub mod capabilities;
pub mod codec;
pub mod command;
pub mod compress;
pub mod frame;
pub mod handshake;
pub mod response;

pub use auth::{cleartext_plugin, server_asks_for_cleartext};
pub use capabilities::{Capabilities, CLIENT_DEPRECATE_EOF, CLIENT_SSL};
pub use command::{binary_value, execute_header, query_text, statement_id};
pub use command::{CommandKind, ResponseShape};
pub use compress::{stored_frame, Algorithm, DecodeError, Decompressor};
pub use frame::{encode_packet, read_le24, Deframer, PacketView, HEADER_LEN, MAX_PACKET_PAYLOAD};
pub use handshake::{count_connect_attrs, parse_change_user, parse_client_hello, parse_greeting};
pub use handshake::{ChangeUser, ClientHello, Greeting, HandshakeResponse, MalformedAttrs};
pub use response::{encode_err, parse_eof_status, parse_err_code, parse_ok, OkPacket};
pub use response::{is_eof, is_rows_terminator, terminator_status};
