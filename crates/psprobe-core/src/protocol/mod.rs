//! Sans-I/O MySQL / MariaDB wire protocol: pure functions and small state over byte slices.
//! Nothing in here knows about sockets or async runtimes, so every edge case is a unit test.
//!
//! Must not: panic or index out of bounds on any byte sequence (fuzzed), or allocate per packet.

// The parts are crate-private: outside the core, the protocol is the names re-exported below
// (each one used by psprobe, its tests, benches or fuzz targets, or named in the signature or
// contract of one that is). They are `pub(crate)`, not private, because the session machine
// is the protocol's other half and reads the same bytes by the same constants (every
// capability flag, header byte and parser), which would otherwise need a second list here.
pub(crate) mod auth;
pub(crate) mod capabilities;
pub(crate) mod codec;
pub(crate) mod command;
pub(crate) mod compress;
pub(crate) mod frame;
pub(crate) mod handshake;
pub(crate) mod response;

pub use auth::{cleartext_plugin, server_asks_for_cleartext, server_asks_for_rsa};
pub use capabilities::{Capabilities, CLIENT_DEPRECATE_EOF, CLIENT_SSL};
pub use command::{binary_value, execute_header, query_text, statement_id};
pub use command::{CommandKind, ResponseShape};
pub use compress::{stored_frame, Algorithm, DecodeError, Decoded, Decompressor};
pub use frame::{encode_packet, read_le24, Deframer, PacketView, HEADER_LEN, MAX_PACKET_PAYLOAD};
pub use handshake::{count_connect_attrs, parse_change_user, parse_client_hello, parse_greeting};
pub use handshake::{ChangeUser, ClientHello, Greeting, HandshakeResponse, MalformedAttrs};
pub use response::{encode_err, parse_eof_status, parse_err_code, parse_ok, OkPacket};
pub use response::{is_eof, is_rows_terminator, terminator_status};
