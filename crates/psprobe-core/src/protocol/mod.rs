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

pub use capabilities::Capabilities;
pub use command::{CommandKind, ResponseShape};
pub use frame::{Deframer, PacketView, MAX_PACKET_PAYLOAD};
