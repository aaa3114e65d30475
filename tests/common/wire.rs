//! The MySQL protocol at the byte level, for tests that must control exactly what goes on
//! the wire (pipelining, silent or trickling clients): packets, a greeting's scramble, a
//! mysql_native_password login.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use sha1::{Digest, Sha1};

/// Capabilities of [`login`]: 4.1 protocol, secure connection, plugin auth, multi results,
/// a default database; no CLIENT_DEPRECATE_EOF (result sets end with EOF packets).
pub const LOGIN_CAPS: u32 = 1 // LONG_PASSWORD
    | (1 << 3) // CONNECT_WITH_DB
    | (1 << 9) // PROTOCOL_41
    | (1 << 13) // TRANSACTIONS
    | (1 << 15) // SECURE_CONNECTION
    | (1 << 17) // MULTI_RESULTS
    | (1 << 19); // PLUGIN_AUTH

/// CLIENT_SSL: the client asks for TLS before its login.
pub const CLIENT_SSL: u32 = 1 << 11;

/// An SSLRequest (sequence id 1) with `caps` and CLIENT_SSL: what a client sends after the
/// greeting when it wants TLS; the TLS handshake follows, then the login as packet 2.
pub fn ssl_request(caps: u32) -> Vec<u8> {
    let mut body = (caps | CLIENT_SSL).to_le_bytes().to_vec();
    body.extend_from_slice(&(16u32 << 20).to_le_bytes());
    body.push(33); // utf8mb3_general_ci
    body.extend_from_slice(&[0; 23]);
    packet(1, &body)
}

/// Reads one packet; returns (sequence id, payload).
pub fn read_packet_seq(s: &mut impl Read) -> std::io::Result<(u8, Vec<u8>)> {
    let mut h = [0u8; 4];
    s.read_exact(&mut h)?;
    let len = usize::from(h[0]) | usize::from(h[1]) << 8 | usize::from(h[2]) << 16;
    let mut p = vec![0; len];
    s.read_exact(&mut p)?;
    Ok((h[3], p))
}

/// Reads one packet's payload.
pub fn read_packet(s: &mut impl Read) -> Vec<u8> {
    read_packet_seq(s).expect("read a packet").1
}

pub fn packet(seq: u8, payload: &[u8]) -> Vec<u8> {
    let n = payload.len();
    let mut out = vec![n as u8, (n >> 8) as u8, (n >> 16) as u8, seq];
    out.extend_from_slice(payload);
    out
}

/// mysql_native_password: SHA1(pw) XOR SHA1(scramble + SHA1(SHA1(pw))).
pub fn native_password(scramble: &[u8], password: &str) -> Vec<u8> {
    let h1 = Sha1::digest(password.as_bytes());
    let h2 = Sha1::digest(h1);
    let mut hasher = Sha1::new();
    hasher.update(scramble);
    hasher.update(h2);
    let h3 = hasher.finalize();
    h1.iter().zip(h3.iter()).map(|(a, b)| a ^ b).collect()
}

/// The 20-byte scramble of a protocol-10 greeting payload.
pub fn scramble(greeting: &[u8]) -> Vec<u8> {
    // protocol(1) version\0 id(4) scramble1(8) filler(1) caps(2) charset(1) status(2)
    // caps_hi(2) auth_len(1) reserved(10) scramble2(12)\0 plugin\0
    let v_end = greeting[1..]
        .iter()
        .position(|&b| b == 0)
        .expect("server version")
        + 1;
    let mut at = v_end + 1 + 4;
    let mut out = greeting[at..at + 8].to_vec();
    at += 8 + 1 + 2 + 1 + 2 + 2 + 1 + 10;
    out.extend_from_slice(&greeting[at..at + 12]);
    out
}

/// The handshake response of `user` to `greeting`, with `caps`, as packet 1.
pub fn handshake_response(
    greeting: &[u8],
    caps: u32,
    user: &str,
    password: &str,
    db: &str,
) -> Vec<u8> {
    let mut hello = caps.to_le_bytes().to_vec();
    hello.extend_from_slice(&(64u32 << 20).to_le_bytes());
    hello.push(33);
    hello.extend_from_slice(&[0; 23]);
    hello.extend_from_slice(user.as_bytes());
    hello.push(0);
    let auth = native_password(&scramble(greeting), password);
    hello.push(auth.len() as u8);
    hello.extend_from_slice(&auth);
    hello.extend_from_slice(db.as_bytes());
    hello.push(0);
    hello.extend_from_slice(b"mysql_native_password\0");
    packet(1, &hello)
}

/// Connects and logs in with [`LOGIN_CAPS`]; panics with the server's answer when refused.
pub fn login(addr: &str, user: &str, password: &str, db: &str) -> TcpStream {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(30)))
        .expect("read timeout");
    let g = read_packet(&mut s);
    assert_eq!(g.first(), Some(&10), "not a greeting: {g:?}");
    s.write_all(&handshake_response(&g, LOGIN_CAPS, user, password, db))
        .expect("send handshake response");
    let ok = read_packet(&mut s);
    assert_eq!(
        ok.first(),
        Some(&0),
        "login refused: {:?}",
        String::from_utf8_lossy(&ok)
    );
    s
}

/// An ERR payload's code, SQL state and message.
pub fn parse_err(payload: &[u8]) -> Option<(u16, String, String)> {
    if payload.first() != Some(&0xFF) || payload.len() < 9 || payload[3] != b'#' {
        return None;
    }
    let code = u16::from_le_bytes([payload[1], payload[2]]);
    let state = String::from_utf8_lossy(&payload[4..9]).into_owned();
    let message = String::from_utf8_lossy(&payload[9..]).into_owned();
    Some((code, state, message))
}
