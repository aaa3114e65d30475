//! The digest id: a 64-bit name for a fingerprint, identical to pt-query-digest's query ID.

use md5::{Digest, Md5};
use std::fmt;
use std::str::FromStr;

/// The id of a query fingerprint: the last 16 hex digits (8 bytes) of the MD5 of the
/// fingerprint bytes, read as a big-endian `u64`.
///
/// This is exactly pt-query-digest's query ID (`uc substr(md5_hex($fingerprint), -16)`), so ids
/// printed by psprobe can be looked up in pt-query-digest reports for the same fingerprint.
///
/// **Stability:** the id is a pure function of the fingerprint bytes. It is stable across psprobe
/// releases for as long as the fingerprint of a query is; a change to the fingerprint rules that
/// alters a query's fingerprint changes its id too (such changes are called out in the release
/// notes and in `docs/fingerprint.md`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct DigestId(pub u64);

impl DigestId {
    /// The id of an already-normalized fingerprint.
    pub fn of_fingerprint(fingerprint: &[u8]) -> DigestId {
        let digest = Md5::digest(fingerprint);
        let mut tail = [0u8; 8];
        tail.copy_from_slice(&digest[8..16]);
        DigestId(u64::from_be_bytes(tail))
    }

    /// The raw 64-bit value.
    pub fn as_u64(self) -> u64 {
        self.0
    }
}

/// Sixteen uppercase hex digits, zero-padded: the pt-query-digest spelling.
impl fmt::Display for DigestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:016X}", self.0)
    }
}

/// Error parsing a [`DigestId`] from text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseDigestIdError;

impl fmt::Display for ParseDigestIdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a digest id is 1 to 16 hex digits")
    }
}

impl std::error::Error for ParseDigestIdError {}

/// Parses the hex spelling (either case, at most 16 digits, no prefix).
impl FromStr for DigestId {
    type Err = ParseDigestIdError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s.is_empty() || s.len() > 16 || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(ParseDigestIdError);
        }
        u64::from_str_radix(s, 16)
            .map(DigestId)
            .map_err(|_| ParseDigestIdError)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_md5_tail_uppercase() {
        // md5("select ?") = c0d6b5d1bd5ac9f5f6b5c8da8b3b64b6 ... computed independently below.
        let id = DigestId::of_fingerprint(b"select ?");
        let full = Md5::digest(b"select ?");
        let hex: String = full.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(id.to_string(), hex[16..].to_uppercase());
        assert_eq!(id.to_string().len(), 16);
    }

    #[test]
    fn known_value_of_empty_string() {
        // md5("") = d41d8cd98f00b204e9800998ecf8427e
        assert_eq!(
            DigestId::of_fingerprint(b"").to_string(),
            "E9800998ECF8427E"
        );
    }

    #[test]
    fn display_zero_pads() {
        assert_eq!(DigestId(0xAB).to_string(), "00000000000000AB");
    }

    #[test]
    fn parse_round_trips() {
        let id = DigestId::of_fingerprint(b"select c from sbtest1 where id=?");
        assert_eq!(id.to_string().parse::<DigestId>(), Ok(id));
        assert_eq!(
            "e9800998ecf8427e".parse::<DigestId>(),
            Ok(DigestId(0xE980_0998_ECF8_427E))
        );
        assert!("".parse::<DigestId>().is_err());
        assert!("0x12".parse::<DigestId>().is_err());
        assert!("12345678901234567".parse::<DigestId>().is_err());
    }
}
