//! Connection phase: the server greeting, the client's SSLRequest / HandshakeResponse41, and the
//! COM_CHANGE_USER payload (a re-authentication inside the command phase).

use nom::bytes::complete::take;
use nom::number::complete::{le_u16, le_u32, u8 as byte};
use nom::IResult;

use super::capabilities::*;
use super::codec::{lenenc_bytes, nul_terminated};

/// What psprobe needs from the server's Initial Handshake packet (protocol version 10).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Greeting<'a> {
    /// The server's version string (`10.11.19-MariaDB-...`).
    pub server_version: &'a [u8],
    /// The server's id for this connection (what `KILL` takes).
    pub connection_id: u32,
    /// Base capabilities in the low 32 bits, MariaDB extended ones in the high 32 bits.
    pub capabilities: u64,
    /// The authentication plugin the server proposes, when it names one.
    pub auth_plugin: Option<&'a [u8]>,
}

/// Parses the Initial Handshake packet's payload (protocol version 10 only).
pub fn parse_greeting(payload: &[u8]) -> IResult<&[u8], Greeting<'_>> {
    let (rest, _protocol_version) = nom::bytes::complete::tag(&[10u8][..])(payload)?;
    let (rest, server_version) = nul_terminated(rest)?;
    let (rest, connection_id) = le_u32(rest)?;
    let (rest, _scramble_1) = take(8usize)(rest)?;
    let (rest, _filler) = byte(rest)?;
    let (rest, caps_low) = le_u16(rest)?;
    let mut greeting = Greeting {
        server_version,
        connection_id,
        capabilities: u64::from(caps_low),
        auth_plugin: None,
    };
    if rest.is_empty() {
        return Ok((rest, greeting));
    }
    let (rest, _charset) = byte(rest)?;
    let (rest, _status) = le_u16(rest)?;
    let (rest, caps_high) = le_u16(rest)?;
    let (rest, scramble_len) = byte(rest)?;
    let (rest, _reserved) = take(6usize)(rest)?;
    let (rest, mariadb_caps) = le_u32(rest)?;
    let mut caps = u64::from(caps_low) | u64::from(caps_high) << 16;
    if caps & CLIENT_MYSQL == 0 {
        caps |= u64::from(mariadb_caps) << 32;
    }
    greeting.capabilities = caps;
    if caps & CLIENT_SECURE_CONNECTION == 0 {
        return Ok((rest, greeting));
    }
    let part2_len = usize::from(scramble_len).saturating_sub(8).max(13);
    let (rest, _scramble_2) = take(part2_len.min(rest.len()))(rest)?;
    if caps & CLIENT_PLUGIN_AUTH != 0 && !rest.is_empty() {
        // Some servers omit the trailing NUL of the plugin name.
        let end = rest.iter().position(|&b| b == 0).unwrap_or(rest.len());
        greeting.auth_plugin = Some(&rest[..end]);
        return Ok((&rest[(end + 1).min(rest.len())..], greeting));
    }
    Ok((rest, greeting))
}

/// The client's first packet: a request to switch to TLS, or its credentials.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientHello<'a> {
    /// The client asks for TLS; its real response follows inside the TLS session.
    SslRequest {
        /// What the client announced (the same as in its response after TLS).
        capabilities: u64,
    },
    /// The client's HandshakeResponse41.
    Response(HandshakeResponse<'a>),
}

/// The client's credentials and choices (HandshakeResponse41).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HandshakeResponse<'a> {
    /// What the client announced; the connection's capabilities are these and the server's.
    pub capabilities: u64,
    /// The largest packet the client will send.
    pub max_packet_size: u32,
    /// The user name.
    pub username: &'a [u8],
    /// The authentication data (scrambled password or plugin data): never logged.
    pub auth_response: &'a [u8],
    /// The default database, with `CLIENT_CONNECT_WITH_DB`.
    pub database: Option<&'a [u8]>,
    /// The authentication plugin the client used, with `CLIENT_PLUGIN_AUTH`.
    pub auth_plugin: Option<&'a [u8]>,
    /// Raw connect attributes (a sequence of lenenc key/value pairs).
    pub connect_attrs: Option<&'a [u8]>,
}

/// Parses SSLRequest or HandshakeResponse41. Protocol 3.20 clients (no CLIENT_PROTOCOL_41) are
/// rejected with a parse error: psprobe leaves such connections unobserved.
pub fn parse_client_hello(payload: &[u8]) -> IResult<&[u8], ClientHello<'_>> {
    let (rest, caps) = le_u32(payload)?;
    let mut caps = u64::from(caps);
    if caps & CLIENT_PROTOCOL_41 == 0 {
        return Err(nom::Err::Error(nom::error::Error::new(
            payload,
            nom::error::ErrorKind::Verify,
        )));
    }
    let (rest, max_packet_size) = le_u32(rest)?;
    let (rest, _charset) = byte(rest)?;
    let (rest, _filler) = take(19usize)(rest)?;
    let (rest, mariadb_caps) = le_u32(rest)?;
    if caps & CLIENT_MYSQL == 0 {
        caps |= u64::from(mariadb_caps) << 32;
    }
    if rest.is_empty() && caps & CLIENT_SSL != 0 {
        return Ok((rest, ClientHello::SslRequest { capabilities: caps }));
    }
    let (rest, username) = nul_terminated(rest)?;
    let (rest, auth_response) = auth_response(rest, caps)?;
    let (rest, database) = optional_nul_string(rest, caps & CLIENT_CONNECT_WITH_DB != 0)?;
    let (rest, auth_plugin) = optional_nul_string(rest, caps & CLIENT_PLUGIN_AUTH != 0)?;
    let (rest, connect_attrs) = if caps & CLIENT_CONNECT_ATTRS != 0 && !rest.is_empty() {
        let (r, attrs) = lenenc_bytes(rest)?;
        (r, Some(attrs))
    } else {
        (rest, None)
    };
    Ok((
        rest,
        ClientHello::Response(HandshakeResponse {
            capabilities: caps,
            max_packet_size,
            username,
            auth_response,
            database,
            auth_plugin,
            connect_attrs,
        }),
    ))
}

fn auth_response(input: &[u8], caps: u64) -> IResult<&[u8], &[u8]> {
    if caps & CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA != 0 {
        lenenc_bytes(input)
    } else if caps & CLIENT_SECURE_CONNECTION != 0 {
        let (rest, len) = byte(input)?;
        take(len)(rest)
    } else {
        nul_terminated(input)
    }
}

/// A NUL-terminated field that is present only under a capability; tolerant of a missing
/// trailing NUL at the very end of the packet, as some connectors send.
fn optional_nul_string(input: &[u8], present: bool) -> IResult<&[u8], Option<&[u8]>> {
    if !present || input.is_empty() {
        return Ok((input, None));
    }
    match nul_terminated(input) {
        Ok((rest, s)) => Ok((rest, Some(s))),
        Err(_) => Ok((&input[input.len()..], Some(input))),
    }
}

/// The fields of COM_CHANGE_USER (after the command byte).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangeUser<'a> {
    /// The new user name.
    pub username: &'a [u8],
    /// The new default database (empty for none).
    pub database: &'a [u8],
    /// The authentication plugin named, with `CLIENT_PLUGIN_AUTH`.
    pub auth_plugin: Option<&'a [u8]>,
}

/// Parses COM_CHANGE_USER's body under the connection's capabilities `caps`.
pub fn parse_change_user(body: &[u8], caps: u64) -> IResult<&[u8], ChangeUser<'_>> {
    let (rest, username) = nul_terminated(body)?;
    let (rest, _auth) = if caps & CLIENT_SECURE_CONNECTION != 0 {
        let (r, len) = byte(rest)?;
        take(len)(r)?
    } else {
        nul_terminated(rest)?
    };
    let (rest, database) = nul_terminated(rest)?;
    let mut out = ChangeUser {
        username,
        database,
        auth_plugin: None,
    };
    if rest.len() < 2 {
        return Ok((rest, out));
    }
    let (rest, _charset) = le_u16(rest)?;
    let (rest, plugin) = optional_nul_string(rest, caps & CLIENT_PLUGIN_AUTH != 0)?;
    out.auth_plugin = plugin;
    let rest = if caps & CLIENT_CONNECT_ATTRS != 0 && !rest.is_empty() {
        lenenc_bytes(rest)?.0
    } else {
        rest
    };
    Ok((rest, out))
}

/// Connect attributes that are not a sequence of length-encoded key/value pairs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("malformed connect attributes")]
pub struct MalformedAttrs;

/// Number of key/value pairs in raw connect attributes.
pub fn count_connect_attrs(mut attrs: &[u8]) -> Result<usize, MalformedAttrs> {
    let mut n = 0;
    while !attrs.is_empty() {
        let (rest, _key) = lenenc_bytes(attrs).map_err(|_| MalformedAttrs)?;
        let (rest, _value) = lenenc_bytes(rest).map_err(|_| MalformedAttrs)?;
        attrs = rest;
        n += 1;
    }
    Ok(n)
}
