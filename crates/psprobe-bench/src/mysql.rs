//! Just enough of the MySQL client protocol for connections the benchmark opens by the
//! thousand or abuses on purpose: the handshake with `mysql_native_password` (and an auth
//! switch to it), a text query whose result is read whole, COM_QUIT. No TLS, no compression,
//! no prepared statements; a std TcpStream per connection and no runtime, so 10,000 idle
//! connections cost 10,000 sockets and nothing else.

use std::fmt;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use sha1::{Digest, Sha1};

const CLIENT_LONG_PASSWORD: u32 = 1;
const CLIENT_PROTOCOL_41: u32 = 1 << 9;
const CLIENT_TRANSACTIONS: u32 = 1 << 13;
const CLIENT_SECURE_CONNECTION: u32 = 1 << 15;
const CLIENT_MULTI_RESULTS: u32 = 1 << 17;
const CLIENT_PLUGIN_AUTH: u32 = 1 << 19;
/// utf8mb4_general_ci.
const CHARSET: u8 = 45;
/// A payload this long continues in the next packet.
const MAX_PAYLOAD: usize = 0xFF_FFFF;

/// Why a connection or query failed, with the error code a MySQL client library would report
/// (the server's, or 2003 / 2013 / 2027 for the client's own).
#[derive(Debug)]
pub enum ClientError {
    /// The TCP connection could not be made (CR_CONN_HOST_ERROR, 2003).
    Connect(io::Error),
    /// The connection failed or closed midway (CR_SERVER_LOST, 2013).
    Io(io::Error),
    /// The server sent something this client does not understand (CR_MALFORMED_PACKET, 2027).
    Protocol(String),
    /// The server answered with an ERR packet.
    Server { code: u16, message: String },
}

impl ClientError {
    /// The error code a client library would report.
    pub fn code(&self) -> u16 {
        match self {
            ClientError::Connect(_) => 2003,
            ClientError::Io(_) => 2013,
            ClientError::Protocol(_) => 2027,
            ClientError::Server { code, .. } => *code,
        }
    }
}

impl fmt::Display for ClientError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClientError::Connect(e) => write!(f, "cannot connect: {e}"),
            ClientError::Io(e) => write!(f, "connection lost: {e}"),
            ClientError::Protocol(what) => write!(f, "unexpected packet: {what}"),
            ClientError::Server { code, message } => write!(f, "ERROR {code}: {message}"),
        }
    }
}

impl std::error::Error for ClientError {}

impl From<io::Error> for ClientError {
    fn from(e: io::Error) -> Self {
        ClientError::Io(e)
    }
}

/// A logged-in connection.
pub struct Conn {
    stream: TcpStream,
}

/// One value of a text result row (`None` is SQL NULL).
pub type Value = Option<Vec<u8>>;

impl Conn {
    /// Connects and logs in; `timeout` bounds the TCP connect and every read and write of the
    /// handshake (the connection then blocks without a limit).
    pub fn connect(
        addr: SocketAddr,
        user: &str,
        password: &str,
        timeout: Duration,
    ) -> Result<Conn, ClientError> {
        let stream = TcpStream::connect_timeout(&addr, timeout).map_err(ClientError::Connect)?;
        stream.set_read_timeout(Some(timeout))?;
        stream.set_write_timeout(Some(timeout))?;
        let mut conn = Conn { stream };
        conn.handshake(user, password)?;
        conn.stream.set_read_timeout(None)?;
        conn.stream.set_write_timeout(None)?;
        Ok(conn)
    }

    fn handshake(&mut self, user: &str, password: &str) -> Result<(), ClientError> {
        let (seq, greeting) = self.read_packet()?;
        let salt = parse_greeting(&greeting)?;
        let caps = CLIENT_LONG_PASSWORD
            | CLIENT_PROTOCOL_41
            | CLIENT_TRANSACTIONS
            | CLIENT_SECURE_CONNECTION
            | CLIENT_MULTI_RESULTS
            | CLIENT_PLUGIN_AUTH;
        let token = native_password(password, &salt);
        let mut payload = Vec::with_capacity(64 + user.len());
        payload.extend_from_slice(&caps.to_le_bytes());
        payload.extend_from_slice(&(16u32 << 20).to_le_bytes());
        payload.push(CHARSET);
        payload.extend_from_slice(&[0; 23]);
        payload.extend_from_slice(user.as_bytes());
        payload.push(0);
        payload.push(token.len() as u8);
        payload.extend_from_slice(&token);
        payload.extend_from_slice(b"mysql_native_password\0");
        self.send_packet(seq.wrapping_add(1), &payload)?;
        let (mut seq, mut reply) = self.read_packet()?;
        if reply.first() == Some(&0xFE) {
            // Auth switch request: plugin name, then the new salt (NUL-terminated).
            let rest = &reply[1..];
            let end = rest.iter().position(|b| *b == 0).unwrap_or(rest.len());
            let salt = rest.get(end + 1..).unwrap_or_default();
            let salt = salt.strip_suffix(&[0]).unwrap_or(salt);
            self.send_packet(seq.wrapping_add(1), &native_password(password, salt))?;
            (seq, reply) = self.read_packet()?;
        }
        let _ = seq;
        match reply.first() {
            Some(0x00) => Ok(()),
            Some(0xFF) => Err(parse_err(&reply)),
            _ => Err(ClientError::Protocol(
                "neither OK nor ERR after the login".into(),
            )),
        }
    }

    /// Runs a text query and reads its whole answer: the rows of a result set (none for an OK).
    pub fn query(&mut self, sql: &str) -> Result<Vec<Vec<Value>>, ClientError> {
        let mut payload = Vec::with_capacity(1 + sql.len());
        payload.push(0x03); // COM_QUERY
        payload.extend_from_slice(sql.as_bytes());
        self.send_packet(0, &payload)?;
        let (_, first) = self.read_packet()?;
        let columns = match first.first() {
            Some(0x00) => return Ok(Vec::new()),
            Some(0xFF) => return Err(parse_err(&first)),
            Some(0xFB) => return Err(ClientError::Protocol("LOCAL INFILE request".into())),
            _ => lenenc_int(&first, &mut 0)
                .ok_or_else(|| ClientError::Protocol("column count".into()))?,
        };
        for _ in 0..columns {
            self.read_packet()?;
        }
        let (_, eof) = self.read_packet()?;
        if !is_eof(&eof) {
            return Err(ClientError::Protocol(
                "no EOF after the column definitions".into(),
            ));
        }
        let mut rows = Vec::new();
        loop {
            let (_, p) = self.read_packet()?;
            if is_eof(&p) {
                return Ok(rows);
            }
            if p.first() == Some(&0xFF) {
                return Err(parse_err(&p));
            }
            rows.push(text_row(&p, columns).ok_or_else(|| ClientError::Protocol("a row".into()))?);
        }
    }

    /// Sends COM_QUIT and closes, ignoring errors (the peer may be gone already).
    pub fn quit(mut self) {
        let _ = self.send_packet(0, &[0x01]);
    }

    fn read_packet(&mut self) -> Result<(u8, Vec<u8>), ClientError> {
        let mut payload = Vec::new();
        loop {
            let mut header = [0u8; 4];
            self.stream.read_exact(&mut header)?;
            let len = u32::from_le_bytes([header[0], header[1], header[2], 0]) as usize;
            let start = payload.len();
            payload.resize(start + len, 0);
            self.stream.read_exact(&mut payload[start..])?;
            if len < MAX_PAYLOAD {
                return Ok((header[3], payload));
            }
        }
    }

    fn send_packet(&mut self, mut seq: u8, payload: &[u8]) -> Result<(), ClientError> {
        // A payload of exactly a multiple of MAX_PAYLOAD ends with an empty packet.
        let mut chunks: Vec<&[u8]> = payload.chunks(MAX_PAYLOAD).collect();
        if payload.len() % MAX_PAYLOAD == 0 {
            chunks.push(&[]);
        }
        let mut buf = Vec::with_capacity(payload.len() + 4 * chunks.len());
        for chunk in chunks {
            buf.extend_from_slice(&(chunk.len() as u32).to_le_bytes()[..3]);
            buf.push(seq);
            buf.extend_from_slice(chunk);
            seq = seq.wrapping_add(1);
        }
        self.stream.write_all(&buf)?;
        Ok(())
    }
}

/// The 20-byte salt of an initial handshake packet (protocol 10).
fn parse_greeting(p: &[u8]) -> Result<Vec<u8>, ClientError> {
    if p.first() == Some(&0xFF) {
        return Err(parse_err(p));
    }
    let bad = || ClientError::Protocol("greeting too short".into());
    let version_end = p.iter().skip(1).position(|b| *b == 0).ok_or_else(bad)? + 1;
    let mut i = version_end + 1 + 4; // the version's NUL, the connection id
    let salt1 = p.get(i..i + 8).ok_or_else(bad)?;
    i += 8 + 1 + 2 + 1 + 2 + 2; // salt, filler, caps low, charset, status, caps high
    let auth_len = *p.get(i).ok_or_else(bad)? as usize;
    i += 1 + 10;
    let salt2_len = auth_len.saturating_sub(8).max(13);
    let salt2 = p.get(i..(i + salt2_len).min(p.len())).ok_or_else(bad)?;
    let mut salt = salt1.to_vec();
    salt.extend_from_slice(&salt2[..salt2.len().min(12)]);
    Ok(salt)
}

/// SHA1(password) XOR SHA1(salt + SHA1(SHA1(password))); empty for an empty password.
pub fn native_password(password: &str, salt: &[u8]) -> Vec<u8> {
    if password.is_empty() {
        return Vec::new();
    }
    let h1 = Sha1::digest(password.as_bytes());
    let h2 = Sha1::digest(h1);
    let mut hasher = Sha1::new();
    hasher.update(salt);
    hasher.update(h2);
    let h3 = hasher.finalize();
    h1.iter().zip(h3.iter()).map(|(a, b)| a ^ b).collect()
}

/// An ERR packet: 0xFF, code, then "#" and a 5-byte SQL state (absent before the login).
fn parse_err(p: &[u8]) -> ClientError {
    let code = match p.get(1..3) {
        Some(c) => u16::from_le_bytes([c[0], c[1]]),
        None => return ClientError::Protocol("short ERR packet".into()),
    };
    let message = if p.get(3) == Some(&b'#') {
        p.get(9..).unwrap_or_default()
    } else {
        &p[3..]
    };
    ClientError::Server {
        code,
        message: String::from_utf8_lossy(message).into_owned(),
    }
}

/// An EOF packet (0xFE, shorter than 9 bytes; a row may start with 0xFE when it is longer).
fn is_eof(p: &[u8]) -> bool {
    p.first() == Some(&0xFE) && p.len() < 9
}

fn lenenc_int(p: &[u8], i: &mut usize) -> Option<u64> {
    let first = *p.get(*i)?;
    let (len, value) = match first {
        0..=0xFA => (0, first as u64),
        0xFC => (2, 0),
        0xFD => (3, 0),
        0xFE => (8, 0),
        _ => return None,
    };
    *i += 1;
    if len == 0 {
        return Some(value);
    }
    let bytes = p.get(*i..*i + len)?;
    *i += len;
    let mut le = [0u8; 8];
    le[..len].copy_from_slice(bytes);
    Some(u64::from_le_bytes(le))
}

/// A text row: `columns` length-encoded strings, 0xFB for NULL.
fn text_row(p: &[u8], columns: u64) -> Option<Vec<Value>> {
    let mut i = 0;
    let mut row = Vec::new();
    for _ in 0..columns {
        if p.get(i) == Some(&0xFB) {
            i += 1;
            row.push(None);
            continue;
        }
        let len = lenenc_int(p, &mut i)? as usize;
        row.push(Some(p.get(i..i + len)?.to_vec()));
        i += len;
    }
    Some(row)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn native_password_matches_the_known_vector() {
        // mysql_native_password of "secret" with a salt of twenty 'a': computed with Python's
        // hashlib as the script this replaces did.
        let token = native_password("secret", &[b'a'; 20]);
        let hex: String = token.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex, "512ae2a4d1572c011140a7362190e07e79eb03d2");
        assert!(native_password("", b"salt").is_empty());
    }

    #[test]
    fn greeting_salt_is_both_halves() {
        // MariaDB 10.11's greeting: protocol 10, version, id, salt 1, filler, caps, charset,
        // status, caps high, auth data length 21, 10 reserved, salt 2 + NUL, plugin name.
        let mut p = vec![10];
        p.extend_from_slice(b"5.5.5-10.11.19-MariaDB\0");
        p.extend_from_slice(&7u32.to_le_bytes());
        p.extend_from_slice(b"ABCDEFGH");
        p.push(0);
        p.extend_from_slice(&[0xFE, 0xF7, 45, 2, 0, 0xFF, 0x81, 21]);
        p.extend_from_slice(&[0; 10]);
        p.extend_from_slice(b"IJKLMNOPQRST\0mysql_native_password\0");
        assert_eq!(parse_greeting(&p).unwrap(), b"ABCDEFGHIJKLMNOPQRST");
        assert!(matches!(
            parse_greeting(&p[..20]),
            Err(ClientError::Protocol(_))
        ));
    }

    #[test]
    fn err_packets_with_and_without_sql_state() {
        let with_state = b"\xff\x15\x04#28000Access denied";
        match parse_err(with_state) {
            ClientError::Server { code, message } => {
                assert_eq!((code, message.as_str()), (1045, "Access denied"))
            }
            other => panic!("{other:?}"),
        }
        let bare = b"\xff\x69\x04Host blocked";
        assert_eq!(parse_err(bare).code(), 1129);
        assert_eq!(parse_err(b"\xff").code(), 2027);
    }

    #[test]
    fn rows_and_length_encoded_integers() {
        let row = [5, b'a', b'f', b't', b'e', b'r', 0xFB, 0];
        assert_eq!(
            text_row(&row, 3).unwrap(),
            [Some(b"after".to_vec()), None, Some(Vec::new())]
        );
        assert_eq!(text_row(&row, 4), None);
        let mut i = 0;
        assert_eq!(lenenc_int(&[0xFC, 0x10, 0x27], &mut i), Some(10_000));
        assert_eq!(i, 3);
        assert!(is_eof(&[0xFE, 0, 0, 2, 0]));
        assert!(!is_eof(&[0xFE, 1, 2, 3, 4, 5, 6, 7, 8, 9]));
    }
}
