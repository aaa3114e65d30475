//! [`DigestStyle`]: how a fingerprint is spaced, chosen with `--digest-style`.

use std::fmt;
use std::str::FromStr;

/// How the tokens of a fingerprint are spaced.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum DigestStyle {
    /// pt-fingerprint's: the query's own spacing, runs collapsed to one space (`id=?` and
    /// `id = ?` are two digests). Digest ids are pt-query-digest's query ids.
    #[default]
    Pt,
    /// One canonical spacing derived from the token stream, as MySQL's own statement digest
    /// does (`id=1` and `id = 1` are one digest, `id = ?`). Digest ids are psprobe's own.
    Mysql,
}

impl DigestStyle {
    /// The spelling used on the command line and in the config file.
    pub fn name(self) -> &'static str {
        match self {
            DigestStyle::Pt => "pt",
            DigestStyle::Mysql => "mysql",
        }
    }
}

impl fmt::Display for DigestStyle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Error for a digest style name other than `pt` or `mysql`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("digest style {0:?} is not known (use pt or mysql)")]
pub struct ParseDigestStyleError(pub String);

impl FromStr for DigestStyle {
    type Err = ParseDigestStyleError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "pt" => Ok(DigestStyle::Pt),
            "mysql" => Ok(DigestStyle::Mysql),
            _ => Err(ParseDigestStyleError(s.to_string())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for style in [DigestStyle::Pt, DigestStyle::Mysql] {
            assert_eq!(style.name().parse::<DigestStyle>(), Ok(style));
        }
        assert_eq!("MySQL".parse::<DigestStyle>(), Ok(DigestStyle::Mysql));
        assert!("tokens".parse::<DigestStyle>().is_err());
        assert_eq!(DigestStyle::default(), DigestStyle::Pt);
    }
}
