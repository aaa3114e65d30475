//! SQL fingerprints: queries that differ only in their literal values map to the same
//! normalized text (the *fingerprint*) and the same 64-bit [`DigestId`].
//!
//! The rules are pt-fingerprint's (percona-toolkit `QueryRewriter::fingerprint`) wherever those
//! are right for MySQL syntax, and MySQL's own lexical rules where pt-fingerprint's regexes get
//! it wrong (identifiers with digits, hex/bit literals, charset introducers, binary minus,
//! doubled quotes, `--` comments, optimizer hints, ...). Every intended difference is listed, with
//! an example, in `docs/fingerprint.md`, and checked against the real `pt-fingerprint` by
//! `tests/checks/fingerprint_vs_pt.rs`.
//!
//! Sans-I/O and allocation-free in steady state: a [`Fingerprinter`] owns reusable buffers and
//! [`Fingerprinter::fingerprint`] borrows its result from them.
//!
//! ```
//! use psprobe_core::digest::Fingerprinter;
//! let mut fp = Fingerprinter::default();
//! let f = fp.fingerprint(b"SELECT c FROM sbtest1 WHERE id=42");
//! assert_eq!(f.text(), b"select c from sbtest1 where id=?");
//! assert_eq!(f.id().to_string().len(), 16);
//! ```
//!
//! Must not: allocate per query in the steady state, or depend on an async runtime.

mod canonical;
mod fingerprint;
mod id;
mod lex;
mod post;
mod split;
mod style;

pub use fingerprint::{Fingerprint, FingerprintOptions, Fingerprinter, DEFAULT_MAX_LEN};
pub use id::{DigestId, ParseDigestIdError};
pub use split::split_statements;
pub use style::{DigestStyle, ParseDigestStyleError};
