//! Generic server responses: OK, ERR and EOF packets, and how to tell them from rows.

use nom::number::complete::{le_u16, u8 as byte};
use nom::IResult;

use super::codec::lenenc_int;
use super::frame::{PacketView, MAX_PACKET_PAYLOAD};

/// First byte of an OK packet.
pub const OK_HEADER: u8 = 0x00;
/// First byte of an EOF packet (and of an OK that ends rows under CLIENT_DEPRECATE_EOF).
pub const EOF_HEADER: u8 = 0xFE;
/// First byte of an ERR packet.
pub const ERR_HEADER: u8 = 0xFF;
/// First byte of a LOCAL INFILE request (the server asks the client for a file).
pub const LOCAL_INFILE_HEADER: u8 = 0xFB;
/// MariaDB sends progress reports as ERR packets with this code; they are not an end.
pub const PROGRESS_REPORT_CODE: u16 = 0xFFFF;

/// The parts of an OK packet psprobe uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OkPacket {
    /// Rows changed (or matched) by the statement.
    pub affected_rows: u64,
    /// The AUTO_INCREMENT value generated, if any.
    pub last_insert_id: u64,
    /// Server status flags (`SERVER_*`).
    pub status: u16,
    /// Warnings the statement raised.
    pub warnings: u16,
}

/// OK packet (header 0x00, or 0xFE when it ends rows under CLIENT_DEPRECATE_EOF).
pub fn parse_ok(payload: &[u8]) -> IResult<&[u8], OkPacket> {
    let (rest, _header) = byte(payload)?;
    let (rest, affected_rows) = lenenc_int(rest)?;
    let (rest, last_insert_id) = lenenc_int(rest)?;
    let (rest, status) = le_u16(rest)?;
    let (rest, warnings) = le_u16(rest)?;
    Ok((
        rest,
        OkPacket {
            affected_rows,
            last_insert_id,
            status,
            warnings,
        },
    ))
}

/// The error code of an ERR packet.
pub fn parse_err_code(payload: &[u8]) -> IResult<&[u8], u16> {
    let (rest, _header) = byte(payload)?;
    le_u16(rest)
}

/// Status flags of an EOF packet (header 0xFE, payload shorter than 9 bytes).
pub fn parse_eof_status(payload: &[u8]) -> IResult<&[u8], u16> {
    let (rest, _header) = byte(payload)?;
    let (rest, _warnings) = le_u16(rest)?;
    le_u16(rest)
}

/// An EOF packet, as opposed to a row or AuthSwitchRequest that also starts with 0xFE.
pub fn is_eof(p: &PacketView<'_>) -> bool {
    p.first_byte() == Some(EOF_HEADER) && p.len < 9
}

/// The packet that ends rows: EOF, or with CLIENT_DEPRECATE_EOF an OK with a 0xFE header.
/// A text row may also start with 0xFE (a value of 16 MiB or more), but is then longer.
pub fn is_rows_terminator(p: &PacketView<'_>, deprecate_eof: bool) -> bool {
    p.first_byte() == Some(EOF_HEADER)
        && if deprecate_eof {
            p.len < MAX_PACKET_PAYLOAD
        } else {
            p.len < 9
        }
}

/// Whether a packet with this first byte, read among a result set's rows, is a row and nothing
/// else (neither a terminator nor an error) whatever its length and the capabilities: the rows
/// a fast path may count without reading. A 0xFE row (a very long first column) is not one of
/// them; it is read the slow way.
pub fn is_plain_row_start(first: u8) -> bool {
    first != EOF_HEADER && first != ERR_HEADER
}

/// Status flags of a terminator packet: EOF layout or OK layout by negotiated mode.
pub fn terminator_status(payload: &[u8], deprecate_eof: bool) -> Option<u16> {
    if deprecate_eof {
        parse_ok(payload).ok().map(|(_, ok)| ok.status)
    } else {
        parse_eof_status(payload).ok().map(|(_, s)| s)
    }
}

/// Encodes an ERR packet (protocol 4.1 layout with SQL state), payload only.
pub fn encode_err(code: u16, sql_state: &[u8; 5], message: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(9 + message.len());
    out.push(ERR_HEADER);
    out.extend_from_slice(&code.to_le_bytes());
    out.push(b'#');
    out.extend_from_slice(sql_state);
    out.extend_from_slice(message.as_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(payload: &[u8]) -> PacketView<'_> {
        PacketView {
            seq: 1,
            len: payload.len(),
            head: payload,
        }
    }

    #[test]
    fn ok_packet_fields() {
        let ok = parse_ok(&[0x00, 0x03, 0xFC, 0x00, 0x01, 0x02, 0x00, 0x01, 0x00])
            .unwrap()
            .1;
        assert_eq!(
            ok,
            OkPacket {
                affected_rows: 3,
                last_insert_id: 256,
                status: 2,
                warnings: 1
            }
        );
    }

    #[test]
    fn err_code() {
        let err = encode_err(1064, b"42000", "syntax");
        assert_eq!(parse_err_code(&err).unwrap().1, 1064);
        assert_eq!(&err[3..9], b"#42000");
    }

    #[test]
    fn eof_vs_long_row_starting_with_fe() {
        let eof = [0xFE, 0, 0, 0x22, 0];
        assert!(is_eof(&view(&eof)));
        assert!(is_rows_terminator(&view(&eof), false));
        assert_eq!(parse_eof_status(&eof).unwrap().1, 0x22);
        // A row whose first value has an 8-byte length: 0xFE, and far longer than 9 bytes.
        let row = PacketView {
            seq: 2,
            len: MAX_PACKET_PAYLOAD + 20,
            head: &[0xFE, 1, 2, 3],
        };
        assert!(!is_rows_terminator(&row, true));
        assert!(!is_rows_terminator(&row, false));
    }

    #[test]
    fn deprecate_eof_terminator_is_ok_with_fe_header() {
        let ok = [0xFE, 0x00, 0x00, 0x0A, 0x00, 0x00, 0x00];
        assert!(is_rows_terminator(&view(&ok), true));
        assert!(!is_eof(&view(&[0xFE; 12])));
        assert_eq!(terminator_status(&ok, true), Some(0x000A));
        assert_eq!(
            terminator_status(&[0xFE, 0, 0, 0x08, 0], false),
            Some(0x0008)
        );
    }
}
