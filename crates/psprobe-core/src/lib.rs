//! psprobe's sans-I/O core: what it knows about the bytes between a MySQL client and server.
//!
//! - [`protocol`]: the wire format: packet framing (plain and compressed), the handshake,
//!   commands and responses, parsed with `nom` from borrowed bytes.
//! - [`session`]: one connection's state machine: both directions' bytes in, in any chunking,
//!   command start/finish events out (with outcome, rows and latency from the caller's clock).
//! - [`digest`]: SQL fingerprints and digest ids, compatible with pt-fingerprint.
//!
//! What it must not do: no networking, no async runtime, no threads, no global state, no
//! clock (times come in with the bytes), no panic on any byte sequence, and no allocation
//! sized by a length field it has not received the bytes of. psprobe's proxy is the I/O shell
//! around it; its fuzz targets and benchmarks drive it directly.

#![deny(missing_docs)]

pub mod digest;
pub mod protocol;
pub mod session;
