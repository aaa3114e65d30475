//! Byte builders for the session tests: packets and payloads as MySQL 8 / MariaDB 10.11 put
//! them on the wire. Payload builders return the payload only; `packet` / `packets` frame it;
//! a `Step` is framed bytes one side sends.

use crate::protocol::capabilities::*;
use crate::protocol::MAX_PACKET_PAYLOAD;

pub const SERVER_STATUS_AUTOCOMMIT: u16 = 0x0002;

/// MySQL 8.0 server: every capability up to CLIENT_QUERY_ATTRIBUTES (bit 27).
pub const MYSQL8_SERVER_CAPS: u64 = 0x0FFF_FFFF;
/// MariaDB 10.11 server: no bit 0 ("CLIENT_MYSQL"), no MySQL-only bits 25..27, and the
/// extended capabilities PROGRESS, COM_MULTI, STMT_BULK_OPERATIONS, EXTENDED_METADATA,
/// CACHE_METADATA in the high half.
pub const MARIADB_SERVER_CAPS: u64 = (0x01FF_FFFF & !CLIENT_MYSQL) | (0x1F << 32);

/// What a typical 4.1+ connector asks for (a MySQL-flavoured client: bit 0 set).
pub const BASE_CLIENT_CAPS: u64 = CLIENT_LONG_PASSWORD
    | CLIENT_LOCAL_FILES
    | CLIENT_PROTOCOL_41
    | 0x2000 // CLIENT_TRANSACTIONS
    | CLIENT_SECURE_CONNECTION
    | CLIENT_MULTI_STATEMENTS
    | CLIENT_MULTI_RESULTS
    | CLIENT_PLUGIN_AUTH
    | CLIENT_CONNECT_ATTRS
    | CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA
    | CLIENT_SESSION_TRACK;

/// A MariaDB connector: bit 0 cleared, extended capabilities announced.
pub const MARIADB_CLIENT_CAPS: u64 = (BASE_CLIENT_CAPS & !CLIENT_MYSQL)
    | MARIADB_CLIENT_PROGRESS
    | MARIADB_CLIENT_STMT_BULK_OPERATIONS
    | MARIADB_CLIENT_CACHE_METADATA;

/// One physical packet. The payload must fit one packet; use `split_packet` otherwise.
pub fn packet(seq: u8, payload: &[u8]) -> Vec<u8> {
    let len = payload.len();
    assert!(len < MAX_PACKET_PAYLOAD, "use split_packet for {len} bytes");
    let mut out = Vec::with_capacity(len + 4);
    out.extend_from_slice(&[len as u8, (len >> 8) as u8, (len >> 16) as u8, seq]);
    out.extend_from_slice(payload);
    out
}

/// A payload as a peer frames it: 0xFFFFFF-byte packets, then a shorter one (empty when the
/// length is an exact multiple). Returns the bytes and the next sequence id.
pub fn split_packet(first_seq: u8, payload: &[u8]) -> (Vec<u8>, u8) {
    let mut out = Vec::with_capacity(payload.len() + 8);
    let mut seq = first_seq;
    let mut rest = payload;
    loop {
        let n = rest.len().min(MAX_PACKET_PAYLOAD);
        out.extend_from_slice(&[n as u8, (n >> 8) as u8, (n >> 16) as u8, seq]);
        out.extend_from_slice(&rest[..n]);
        rest = &rest[n..];
        seq = seq.wrapping_add(1);
        if n < MAX_PACKET_PAYLOAD {
            return (out, seq);
        }
    }
}

/// Consecutive logical packets with consecutive sequence ids, starting at `first_seq`.
pub fn packets(first_seq: u8, payloads: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut seq = first_seq;
    for p in payloads {
        let (bytes, next) = split_packet(seq, p);
        out.extend(bytes);
        seq = next;
    }
    out
}

pub fn lenenc_int(n: u64) -> Vec<u8> {
    match n {
        0..=0xFA => vec![n as u8],
        0xFB..=0xFFFF => vec![0xFC, n as u8, (n >> 8) as u8],
        0x1_0000..=0xFF_FFFF => vec![0xFD, n as u8, (n >> 8) as u8, (n >> 16) as u8],
        _ => {
            let mut v = vec![0xFE];
            v.extend_from_slice(&n.to_le_bytes());
            v
        }
    }
}

pub fn lenenc_str(s: &[u8]) -> Vec<u8> {
    let mut v = lenenc_int(s.len() as u64);
    v.extend_from_slice(s);
    v
}

/// Initial Handshake v10. A server that clears bit 0 (MariaDB) gets its high 32 capability
/// bits written to the last 4 of the 10 reserved bytes.
pub fn greeting(version: &str, caps: u64, plugin: &str) -> Vec<u8> {
    let mut p = vec![10];
    p.extend_from_slice(version.as_bytes());
    p.push(0);
    p.extend_from_slice(&42u32.to_le_bytes()); // connection id
    p.extend_from_slice(b"abcdefgh"); // scramble part 1
    p.push(0); // filler
    p.extend_from_slice(&(caps as u16).to_le_bytes());
    p.push(45); // utf8mb4_general_ci
    p.extend_from_slice(&SERVER_STATUS_AUTOCOMMIT.to_le_bytes());
    p.extend_from_slice(&((caps >> 16) as u16).to_le_bytes());
    p.push(21); // auth plugin data length
    p.extend_from_slice(&[0; 6]);
    if caps & CLIENT_MYSQL == 0 {
        p.extend_from_slice(&((caps >> 32) as u32).to_le_bytes());
    } else {
        p.extend_from_slice(&[0; 4]);
    }
    p.extend_from_slice(b"ijklmnopqrst\0"); // scramble part 2 (12 bytes + NUL)
    p.extend_from_slice(plugin.as_bytes());
    p.push(0);
    p
}

pub fn mysql8_greeting() -> Vec<u8> {
    greeting("8.0.36", MYSQL8_SERVER_CAPS, "caching_sha2_password")
}

pub fn mariadb_greeting() -> Vec<u8> {
    greeting(
        "5.5.5-10.11.6-MariaDB-log",
        MARIADB_SERVER_CAPS,
        "mysql_native_password",
    )
}

/// Fields of a HandshakeResponse41 besides the capabilities.
pub struct Hello<'a> {
    pub user: &'a str,
    pub auth: &'a [u8],
    pub db: &'a str,
    pub plugin: &'a str,
    pub attrs: &'a [(&'a str, &'a str)],
}

pub const HELLO: Hello<'static> = Hello {
    user: "app",
    auth: &[0x5A; 20],
    db: "shop",
    plugin: "mysql_native_password",
    attrs: &[("_client_name", "libmariadb"), ("_pid", "4242")],
};

/// The 32 bytes SSLRequest and HandshakeResponse41 begin with.
fn hello_prefix(caps: u64) -> Vec<u8> {
    let mut p = Vec::with_capacity(64);
    p.extend_from_slice(&(caps as u32).to_le_bytes());
    p.extend_from_slice(&(16u32 << 20).to_le_bytes()); // max packet size 16 MiB
    p.push(45);
    p.extend_from_slice(&[0; 19]);
    if caps & CLIENT_MYSQL == 0 {
        p.extend_from_slice(&((caps >> 32) as u32).to_le_bytes());
    } else {
        p.extend_from_slice(&[0; 4]);
    }
    p
}

pub fn ssl_request(caps: u64) -> Vec<u8> {
    hello_prefix(caps | CLIENT_SSL)
}

/// HandshakeResponse41; fields appear as the capabilities say.
pub fn handshake_response(caps: u64, h: &Hello<'_>) -> Vec<u8> {
    let mut p = hello_prefix(caps);
    p.extend_from_slice(h.user.as_bytes());
    p.push(0);
    if caps & CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA != 0 {
        p.extend(lenenc_str(h.auth));
    } else if caps & CLIENT_SECURE_CONNECTION != 0 {
        p.push(h.auth.len() as u8);
        p.extend_from_slice(h.auth);
    } else {
        p.extend_from_slice(h.auth);
        p.push(0);
    }
    if caps & CLIENT_CONNECT_WITH_DB != 0 {
        p.extend_from_slice(h.db.as_bytes());
        p.push(0);
    }
    if caps & CLIENT_PLUGIN_AUTH != 0 {
        p.extend_from_slice(h.plugin.as_bytes());
        p.push(0);
    }
    if caps & CLIENT_CONNECT_ATTRS != 0 {
        p.extend(lenenc_str(&connect_attrs(h.attrs)));
    }
    p
}

pub fn connect_attrs(attrs: &[(&str, &str)]) -> Vec<u8> {
    let mut a = Vec::new();
    for (k, v) in attrs {
        a.extend(lenenc_str(k.as_bytes()));
        a.extend(lenenc_str(v.as_bytes()));
    }
    a
}

/// AuthSwitchRequest: 0xFE, plugin name, plugin data.
pub fn auth_switch(plugin: &str, data: &[u8]) -> Vec<u8> {
    let mut p = vec![0xFE];
    p.extend_from_slice(plugin.as_bytes());
    p.push(0);
    p.extend_from_slice(data);
    p
}

/// OK packet with a 0x00 header.
pub fn ok(affected_rows: u64, status: u16) -> Vec<u8> {
    let mut p = vec![0x00];
    p.extend(lenenc_int(affected_rows));
    p.push(0); // last insert id
    p.extend_from_slice(&status.to_le_bytes());
    p.extend_from_slice(&0u16.to_le_bytes()); // warnings
    p
}

/// OK packet with a 0xFE header: ends rows under CLIENT_DEPRECATE_EOF.
pub fn ok_fe(status: u16) -> Vec<u8> {
    let mut p = ok(0, status);
    p[0] = 0xFE;
    p
}

pub fn eof(status: u16) -> Vec<u8> {
    let mut p = vec![0xFE, 0, 0];
    p.extend_from_slice(&status.to_le_bytes());
    p
}

pub fn err(code: u16, message: &str) -> Vec<u8> {
    let mut p = vec![0xFF];
    p.extend_from_slice(&code.to_le_bytes());
    p.extend_from_slice(b"#HY000");
    p.extend_from_slice(message.as_bytes());
    p
}

/// MariaDB progress report: an ERR packet with code 0xFFFF.
pub fn progress_report(stage: u8, max_stage: u8, permille: u32) -> Vec<u8> {
    let mut p = vec![0xFF, 0xFF, 0xFF, 1, stage, max_stage];
    p.extend_from_slice(&(permille * 100).to_le_bytes()[..3]);
    p.extend(lenenc_str(b"copy to tmp table"));
    p
}

pub fn column_def(name: &str) -> Vec<u8> {
    let mut p = Vec::new();
    for s in [
        &b"def"[..],
        b"shop",
        b"t",
        b"t",
        name.as_bytes(),
        name.as_bytes(),
    ] {
        p.extend(lenenc_str(s));
    }
    p.push(0x0C);
    p.extend_from_slice(&45u16.to_le_bytes());
    p.extend_from_slice(&1024u32.to_le_bytes());
    p.push(0xFD); // VAR_STRING
    p.extend_from_slice(&0u16.to_le_bytes());
    p.extend_from_slice(&[0, 0, 0]);
    p
}

pub fn text_row(values: &[Option<&[u8]>]) -> Vec<u8> {
    let mut p = Vec::new();
    for v in values {
        match v {
            Some(v) => p.extend(lenenc_str(v)),
            None => p.push(0xFB),
        }
    }
    p
}

/// Binary protocol row of VAR_STRING columns: 0x00, NULL bitmap (offset 2), values.
pub fn binary_row(values: &[Option<&[u8]>]) -> Vec<u8> {
    let mut bitmap = vec![0u8; (values.len() + 9) / 8];
    let mut data = Vec::new();
    for (i, v) in values.iter().enumerate() {
        match v {
            Some(v) => data.extend(lenenc_str(v)),
            None => bitmap[(i + 2) / 8] |= 1 << ((i + 2) % 8),
        }
    }
    let mut p = vec![0x00];
    p.extend(bitmap);
    p.extend(data);
    p
}

/// Column count packet, with the "metadata follows" byte when the connection has one.
pub fn column_count(n: u64, metadata_flag: Option<bool>) -> Vec<u8> {
    let mut p = lenenc_int(n);
    if let Some(follows) = metadata_flag {
        p.push(u8::from(follows));
    }
    p
}

/// COM_STMT_PREPARE response header.
pub fn prepare_ok(id: u32, columns: u16, params: u16) -> Vec<u8> {
    let mut p = vec![0x00];
    p.extend_from_slice(&id.to_le_bytes());
    p.extend_from_slice(&columns.to_le_bytes());
    p.extend_from_slice(&params.to_le_bytes());
    p.push(0);
    p.extend_from_slice(&0u16.to_le_bytes());
    p
}

/// How result sets look on a connection: EOF packets or not, "metadata follows" byte or not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Flavor {
    pub deprecate_eof: bool,
    pub metadata_flag: bool,
}

impl Flavor {
    pub fn end_rows(self, status: u16) -> Vec<u8> {
        if self.deprecate_eof {
            ok_fe(status)
        } else {
            eof(status)
        }
    }

    /// Payloads of one result set: count, definitions, EOF unless DEPRECATE_EOF, rows, end.
    pub fn result_set(self, columns: &[&str], rows: &[Vec<u8>], end_status: u16) -> Vec<Vec<u8>> {
        let flag = self.metadata_flag.then_some(true);
        let mut out = vec![column_count(columns.len() as u64, flag)];
        out.extend(columns.iter().map(|c| column_def(c)));
        self.rows_part(&mut out, rows, end_status);
        out
    }

    /// A result set whose column count says "metadata skipped" (MariaDB metadata caching).
    pub fn cached_result_set(
        self,
        columns: u64,
        rows: &[Vec<u8>],
        end_status: u16,
    ) -> Vec<Vec<u8>> {
        assert!(self.metadata_flag);
        let mut out = vec![column_count(columns, Some(false))];
        self.rows_part(&mut out, rows, end_status);
        out
    }

    fn rows_part(self, out: &mut Vec<Vec<u8>>, rows: &[Vec<u8>], end_status: u16) {
        if !self.deprecate_eof {
            out.push(eof(SERVER_STATUS_AUTOCOMMIT));
        }
        out.extend(rows.iter().cloned());
        out.push(self.end_rows(end_status));
    }

    /// Full COM_STMT_PREPARE response: header, parameter and column definitions.
    pub fn prepare_response(self, id: u32, columns: &[&str], params: u16) -> Vec<Vec<u8>> {
        let mut out = vec![prepare_ok(id, columns.len() as u16, params)];
        let names: Vec<&str> = (0..params).map(|_| "?").collect();
        for defs in [&names[..], columns] {
            if defs.is_empty() {
                continue;
            }
            out.extend(defs.iter().map(|c| column_def(c)));
            if !self.deprecate_eof {
                out.push(eof(SERVER_STATUS_AUTOCOMMIT));
            }
        }
        out
    }
}

/// A command payload: command byte and body.
pub fn command(byte: u8, body: &[u8]) -> Vec<u8> {
    let mut p = vec![byte];
    p.extend_from_slice(body);
    p
}

pub fn com_query(sql: &str) -> Vec<u8> {
    command(0x03, sql.as_bytes())
}

/// COM_STMT_EXECUTE with one VAR_STRING parameter bound.
pub fn com_stmt_execute(id: u32, flags: u8) -> Vec<u8> {
    let mut body = id.to_le_bytes().to_vec();
    body.push(flags);
    body.extend_from_slice(&1u32.to_le_bytes()); // iteration count
    body.push(0); // NULL bitmap
    body.push(1); // new params bound
    body.extend_from_slice(&[0xFD, 0x00]);
    body.extend(lenenc_str(b"42"));
    command(0x17, &body)
}

/// A command that only names a statement id (CLOSE, RESET) plus an optional tail.
pub fn com_stmt(byte: u8, id: u32, tail: &[u8]) -> Vec<u8> {
    let mut body = id.to_le_bytes().to_vec();
    body.extend_from_slice(tail);
    command(byte, &body)
}

/// Who sends the bytes of a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    Client,
    Server,
}

pub type Step = (Dir, Vec<u8>);

pub fn c(bytes: Vec<u8>) -> Step {
    (Dir::Client, bytes)
}

pub fn s(bytes: Vec<u8>) -> Step {
    (Dir::Server, bytes)
}

/// A command (seq 0) and its response (seq 1 on).
pub fn exchange(cmd: &[u8], response: &[Vec<u8>]) -> [Step; 2] {
    [c(packet(0, cmd)), s(packets(1, response))]
}

/// Greeting, HandshakeResponse41 and the OK that ends authentication.
pub fn login(greeting: Vec<u8>, client_caps: u64) -> Vec<Step> {
    vec![
        s(packet(0, &greeting)),
        c(packet(1, &handshake_response(client_caps, &HELLO))),
        s(packet(2, &ok(0, SERVER_STATUS_AUTOCOMMIT))),
    ]
}

/// A MySQL 8 connection, logged in.
pub fn mysql(deprecate_eof: bool) -> (Vec<Step>, Flavor) {
    let caps = BASE_CLIENT_CAPS
        | if deprecate_eof {
            CLIENT_DEPRECATE_EOF
        } else {
            0
        };
    let flavor = Flavor {
        deprecate_eof,
        metadata_flag: false,
    };
    (login(mysql8_greeting(), caps), flavor)
}

/// A MariaDB 10.11 connection with metadata caching, progress reports and bulk operations.
pub fn mariadb(deprecate_eof: bool) -> (Vec<Step>, Flavor) {
    let caps = MARIADB_CLIENT_CAPS
        | if deprecate_eof {
            CLIENT_DEPRECATE_EOF
        } else {
            0
        };
    let flavor = Flavor {
        deprecate_eof,
        metadata_flag: true,
    };
    (login(mariadb_greeting(), caps), flavor)
}

pub fn ping() -> Vec<u8> {
    command(0x0e, b"")
}

pub fn prepare(sql: &str) -> Vec<u8> {
    command(0x16, sql.as_bytes())
}

/// A one-column text row.
pub fn row(v: &str) -> Vec<u8> {
    text_row(&[Some(v.as_bytes())])
}

/// COM_QUERY and its response.
pub fn query(sql: &str, response: &[Vec<u8>]) -> [Step; 2] {
    exchange(&com_query(sql), response)
}

impl Flavor {
    /// COM_STMT_PREPARE and its full response.
    pub fn prep(self, sql: &str, id: u32, columns: &[&str], params: u16) -> [Step; 2] {
        exchange(&prepare(sql), &self.prepare_response(id, columns, params))
    }
}
