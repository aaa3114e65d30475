//! Targets for text a user or client supplies: SQL to fingerprint, admin SQL (and the admin
//! port's bytes before it), config files, the phase log.

use std::path::Path;
use std::sync::OnceLock;

use clap::Parser;
use psprobe_core::digest::{
    split_statements, DigestId, DigestStyle, FingerprintOptions, Fingerprinter,
};
use tokio::io::AsyncReadExt;

use super::input::{chunks, poll_once, Input, Pieces};
use crate::admin::dialect::{self, Statement};
use crate::admin::wire::CommandReader;
use crate::cli::{Cli, Command};
use crate::config::{parse_file, ProxyArgs, ProxyConfig};
use crate::controller::client::dsn::ControllerDsn;
use crate::controller::model::catalog::Catalog;
use crate::controller::model::file::PsConfig;
use crate::controller::model::setup_tables::{ConsumerRow, InstrumentRow, SetupState};
use crate::duration::parse_duration;

/// The fingerprinter (both styles, with and without digit folding, a small or the default
/// length cap) and the statement splitter of `psprobe digest`.
pub(super) fn digest(data: &[u8]) {
    let mut input = Input::new(data);
    let flags = input.byte();
    let opts = FingerprintOptions {
        max_len: if flags & 4 == 0 {
            psprobe_core::digest::DEFAULT_MAX_LEN
        } else {
            usize::from(input.byte())
        },
        fold_identifier_digits: flags & 1 != 0,
        style: if flags & 2 == 0 {
            DigestStyle::Pt
        } else {
            DigestStyle::Mysql
        },
    };
    let sql = input.rest();
    let mut fp = Fingerprinter::new(opts);
    let looked_at = sql.len().min(opts.max_len);
    let f = fp.fingerprint(sql);
    // The documented bound ("at most about twice the capped input"), loosely.
    assert!(
        f.text().len() <= 2 * looked_at + 64,
        "a {looked_at}-byte query gave a {}-byte fingerprint",
        f.text().len()
    );
    assert_eq!(f.id(), DigestId::of_fingerprint(f.text()));
    let _ = f.to_string();
    for statement in split_statements(sql) {
        assert!(!statement.is_empty());
        let _ = fp.fingerprint(statement);
    }
    let _ = crate::digest_cli::statements(sql, false);
}

/// The admin interface's path to SQLite. Flag bit 0 clear: the bytes are a query's text (as
/// opensrv hands it over, so only UTF-8 gets there) for the dialect translation. Set: they are
/// what a client sends to the admin port, through the command rewriter, whose COM_QUERY
/// texts then go to the translation.
pub(super) fn admin_sql(data: &[u8]) {
    let mut input = Input::new(data);
    let flags = input.byte();
    if flags & 1 == 0 {
        if let Ok(sql) = std::str::from_utf8(input.rest()) {
            translate(sql);
        }
        return;
    }
    let max_command = usize::from(input.u16());
    let cuts = input.cuts();
    let stream = input.rest();
    let mut reader = CommandReader::new(Pieces::new(&chunks(stream, &cuts)), max_command);
    let mut out = Vec::new();
    let read = poll_once(reader.read_to_end(&mut out));
    if read.is_err() {
        return; // an oversized login packet: the connection is closed
    }
    // The rewriter never passes on more than it received, plus its short markers.
    assert!(out.len() <= stream.len() + 64 * (stream.len() / 4 + 1));
    let mut packets = Input::new(&out);
    while !packets.is_empty() {
        let header = packets.take(4);
        let len = header
            .iter()
            .take(3)
            .enumerate()
            .fold(0, |acc, (i, &b)| acc | usize::from(b) << (8 * i));
        let payload = packets.take(len);
        if let [0x03, text @ ..] = payload {
            if let Ok(sql) = std::str::from_utf8(text) {
                translate(sql);
            }
        }
    }
}

fn translate(sql: &str) {
    let _ = crate::admin::session::SessionInfo::new("admin", "127.0.0.1", 1).use_database(sql);
    match dialect::parse(sql) {
        Ok(Statement::Query(q)) => {
            assert!(!q.sql.is_empty());
            let _ = q.column_name(sql);
            for (rewritten, original) in &q.renames {
                let _ = q.column_name(rewritten);
                let _ = q.column_name(original);
            }
        }
        Ok(_) => {}
        Err(e) => {
            let _ = e.kind();
            let _ = e.to_string();
        }
    }
}

fn proxy_args() -> &'static ProxyArgs {
    static ARGS: OnceLock<ProxyArgs> = OnceLock::new();
    ARGS.get_or_init(|| match Cli::try_parse_from(["psprobe", "proxy"]) {
        Ok(Cli {
            command: Command::Proxy(args),
        }) => *args,
        _ => panic!("`psprobe proxy` parses"),
    })
}

/// A server's setup tables, for planning the file's scenarios against.
fn setup_state() -> &'static SetupState {
    static STATE: OnceLock<SetupState> = OnceLock::new();
    STATE.get_or_init(|| SetupState {
        consumers: [
            "events_stages_current",
            "events_statements_history",
            "statements_digest",
        ]
        .iter()
        .map(|n| ConsumerRow {
            name: n.to_string(),
            enabled: true,
        })
        .collect(),
        instruments: [
            "statement/sql/select",
            "wait/io/file/sql/binlog",
            "memory/sql/THD",
        ]
        .iter()
        .map(|n| InstrumentRow {
            name: n.to_string(),
            enabled: false,
            // Memory instruments cannot be timed (NULL).
            timed: (!n.starts_with("memory")).then_some(true),
        })
        .collect(),
    })
}

/// A config file (any bytes, as text) through every reader of it: the proxy's `[proxy]` and
/// `[tls]` tables, the controller's `[controller]` table and DSN, and the `[[scenario]]`
/// tables, each scenario then planned against a server's rows.
pub(super) fn config(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let path = Path::new("fuzz.toml");
    if let Ok(file) = parse_file(&text, path) {
        let args = proxy_args();
        if let Ok(c) = ProxyConfig::resolve(args, file.proxy) {
            assert!(c.max_digests >= 1);
        }
        let _ = crate::tls::settings::TlsSettings::resolve(
            &args.tls,
            file.tls,
            Some(Path::new("/nonexistent-state")),
        );
    }
    if let Ok(ps) = PsConfig::parse(text.to_string(), path) {
        if let Some(dsn) = &ps.dsn {
            if let Ok(d) = ControllerDsn::parse(dsn, "fuzz") {
                assert!(!d.redacted().is_empty());
            }
        }
    }
    // A secret file's first line: never a byte-order mark, blanks at its ends or a line end.
    let (secret, _ignored) = crate::secrets::secret_of(&text);
    assert!(!secret.starts_with(['\u{feff}', ' ', '\t']), "{secret:?}");
    assert!(!secret.ends_with([' ', '\t', '\r']), "{secret:?}");
    assert!(!secret.contains('\n'), "{secret:?}");
    let mut catalog = Catalog::builtin();
    if catalog.add_toml(&text, path).is_ok() {
        for scenario in catalog.iter() {
            let _ = scenario.sql();
            if let Ok(plan) = scenario.plan(setup_state()) {
                assert_eq!(plan.expected.rows(), setup_state().rows());
            }
        }
    }
    for line in text.lines().take(8) {
        let _ = parse_duration("fuzz", line);
    }
}

/// A phase log (any bytes, as text) read and turned into the report `psprobe report` prints.
pub(super) fn phase_log(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let log = crate::phase_log::parse_log(&text);
    let baseline = log.phases.first().map(|p| p.scenario.clone());
    for baseline in [None, baseline.as_deref()] {
        if let Ok(report) = crate::report::report_of(&log.phases, baseline) {
            for format in [crate::report::Format::Md, crate::report::Format::Json] {
                let _ = crate::report::render(&report, format);
            }
        }
    }
}
