//! `psprobe digest`: the fingerprint and digest id of statements given on the command line, on
//! stdin or in files, computed by the same [`Fingerprinter`] the proxy runs.
//!
//! Must not: fingerprint differently from the proxy: it calls the same code, never a copy.

use std::io::{self, BufWriter, Read, Write};
use std::path::PathBuf;

use anyhow::Context;
use clap::{Args, ValueEnum};
use psprobe_core::digest::{split_statements, DigestStyle, FingerprintOptions, Fingerprinter};

#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    psprobe digest --query 'SELECT c FROM sbtest1 WHERE id=42'\n  \
    psprobe digest --semicolon --format json queries.sql\n  \
    mysqlbinlog ... | psprobe digest --digest-style mysql")]
pub(crate) struct DigestArgs {
    /// A statement to fingerprint (repeat for several). Without --query or FILE, statements
    /// are read from stdin.
    #[arg(long, short = 'q', value_name = "SQL", allow_hyphen_values = true)]
    pub query: Vec<String>,
    /// Files of statements, one per line (or separated by `;` with --semicolon); `-` is stdin.
    #[arg(value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Statements in files and on stdin are separated by `;` (outside quotes and comments, as
    /// the mysql client splits them) instead of one per line.
    #[arg(long, short = 's')]
    pub semicolon: bool,
    /// text: `DIGEST<TAB>FINGERPRINT` per statement; json: one JSON object per line with
    /// digest, fingerprint and query.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// pt: pt-fingerprint's spacing and pt-query-digest's ids (the proxy's default); mysql:
    /// one canonical spacing from the tokens, so `id=1` and `id = 1` share a digest. Use the
    /// proxy's setting to get the proxy's digests.
    #[arg(long, value_name = "STYLE", default_value = "pt", value_parser = parse_style)]
    pub digest_style: DigestStyle,
    /// Fold digits inside identifiers like pt-fingerprint (sbtest1 and sbtest2 become sbtest?),
    /// as the proxy's --digest-fold-digits does.
    #[arg(long)]
    pub digest_fold_digits: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Format {
    Text,
    Json,
}

fn parse_style(s: &str) -> Result<DigestStyle, String> {
    s.parse()
        .map_err(|e: psprobe_core::digest::ParseDigestStyleError| e.to_string())
}

/// One fingerprinted statement.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub(crate) struct DigestLine {
    /// 16 uppercase hex digits.
    pub digest: String,
    pub fingerprint: String,
    pub query: String,
}

impl DigestArgs {
    pub(crate) fn options(&self) -> FingerprintOptions {
        FingerprintOptions {
            fold_identifier_digits: self.digest_fold_digits,
            style: self.digest_style,
            ..FingerprintOptions::default()
        }
    }
}

/// The statements of one input text: one per non-blank line, or separated by `;`.
pub(crate) fn statements(text: &[u8], semicolon: bool) -> Vec<&[u8]> {
    if semicolon {
        return split_statements(text);
    }
    text.split(|&b| b == b'\n')
        .map(<[u8]>::trim_ascii)
        .filter(|line| !line.is_empty())
        .collect()
}

/// Fingerprints each statement with `options`.
pub(crate) fn digest_lines<'a>(
    statements: impl IntoIterator<Item = &'a [u8]>,
    options: FingerprintOptions,
) -> Vec<DigestLine> {
    let mut fingerprinter = Fingerprinter::new(options);
    statements
        .into_iter()
        .map(|sql| {
            let f = fingerprinter.fingerprint(sql);
            DigestLine {
                digest: f.id().to_string(),
                fingerprint: f.to_string(),
                query: String::from_utf8_lossy(sql).into_owned(),
            }
        })
        .collect()
}

fn read_input(path: &PathBuf) -> anyhow::Result<Vec<u8>> {
    let mut text = Vec::new();
    if path.as_os_str() == "-" {
        io::stdin()
            .lock()
            .read_to_end(&mut text)
            .context("cannot read statements from stdin")?;
    } else {
        text = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    }
    Ok(text)
}

pub(crate) fn run(args: &DigestArgs) -> anyhow::Result<()> {
    let mut texts = Vec::new();
    let mut files = args.files.clone();
    if args.query.is_empty() && files.is_empty() {
        files.push(PathBuf::from("-"));
    }
    for path in &files {
        texts.push(read_input(path)?);
    }
    let statements = args
        .query
        .iter()
        .map(|q| q.as_bytes())
        .chain(texts.iter().flat_map(|t| statements(t, args.semicolon)));
    let lines = digest_lines(statements, args.options());
    let mut out = BufWriter::new(io::stdout().lock());
    match write_lines(&mut out, &lines, args.format).and_then(|()| out.flush()) {
        // `psprobe digest ... | head` closing the pipe early is not an error.
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        result => result.context("cannot write to stdout"),
    }
}

fn write_lines(out: &mut impl Write, lines: &[DigestLine], format: Format) -> io::Result<()> {
    for line in lines {
        match format {
            Format::Text => writeln!(out, "{}\t{}", line.digest, line.fingerprint)?,
            Format::Json => {
                serde_json::to_writer(&mut *out, line)?;
                writeln!(out)?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_and_semicolons() {
        assert_eq!(
            statements(b"select 1\n\n  select 2 \r\n", false),
            [&b"select 1"[..], b"select 2"]
        );
        assert_eq!(
            statements(b"select ';'\n;select\n2;", true),
            [&b"select ';'"[..], b"select\n2"]
        );
    }

    #[test]
    fn same_digest_as_the_fingerprinter() {
        let lines = digest_lines(
            [&b"SELECT c FROM t WHERE id=5"[..]],
            FingerprintOptions::default(),
        );
        let mut f = Fingerprinter::default();
        let want = f.fingerprint(b"SELECT c FROM t WHERE id=5");
        assert_eq!(lines[0].digest, want.id().to_string());
        assert_eq!(lines[0].fingerprint, "select c from t where id=?");
        let mut json = Vec::new();
        write_lines(&mut json, &lines, Format::Json).unwrap();
        let value: serde_json::Value = serde_json::from_slice(&json).unwrap();
        assert_eq!(value["digest"], want.id().to_string());
        assert_eq!(value["query"], "SELECT c FROM t WHERE id=5");
    }
}
