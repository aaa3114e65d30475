//! Client commands (the first byte of a command-phase packet) and the parts of their payloads
//! psprobe reads: statement text, statement id, cursor flags.

use nom::bytes::complete::take;
use nom::number::complete::{le_u16, le_u32, u8 as byte};
use nom::IResult;

use super::codec::{lenenc_bytes, lenenc_int};

macro_rules! command_kinds {
    ($($variant:ident = $byte:literal => $label:literal,)*) => {
        /// A command byte psprobe knows, or `Other` for the rest.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum CommandKind {
            $(#[doc = concat!("`", $label, "`")] $variant,)*
            /// Any other command byte (relayed, counted, timed as best it can be).
            Other,
        }

        impl CommandKind {
            /// Every kind, in a fixed order (used to pre-register metric series).
            pub const ALL: &'static [CommandKind] = &[$(CommandKind::$variant,)* CommandKind::Other];

            /// The kind of a command-phase packet from its first byte.
            pub fn from_byte(b: u8) -> CommandKind {
                match b {
                    $($byte => CommandKind::$variant,)*
                    _ => CommandKind::Other,
                }
            }

            /// Stable, bounded label for metrics and logs.
            pub fn label(self) -> &'static str {
                match self {
                    $(CommandKind::$variant => $label,)*
                    CommandKind::Other => "other",
                }
            }

            /// Position in [`CommandKind::ALL`].
            pub fn index(self) -> usize {
                self as usize
            }

            /// The kind a [`CommandKind::label`] names (`None` for a label no kind has).
            pub fn from_label(label: &str) -> Option<CommandKind> {
                match label {
                    $($label => Some(CommandKind::$variant),)*
                    "other" => Some(CommandKind::Other),
                    _ => None,
                }
            }
        }
    };
}

command_kinds! {
    Sleep = 0x00 => "sleep",
    Quit = 0x01 => "quit",
    InitDb = 0x02 => "init_db",
    Query = 0x03 => "query",
    FieldList = 0x04 => "field_list",
    CreateDb = 0x05 => "create_db",
    DropDb = 0x06 => "drop_db",
    Refresh = 0x07 => "refresh",
    Shutdown = 0x08 => "shutdown",
    Statistics = 0x09 => "statistics",
    ProcessInfo = 0x0a => "process_info",
    ProcessKill = 0x0c => "process_kill",
    Debug = 0x0d => "debug",
    Ping = 0x0e => "ping",
    ChangeUser = 0x11 => "change_user",
    BinlogDump = 0x12 => "binlog_dump",
    RegisterSlave = 0x15 => "register_slave",
    StmtPrepare = 0x16 => "stmt_prepare",
    StmtExecute = 0x17 => "stmt_execute",
    StmtSendLongData = 0x18 => "stmt_send_long_data",
    StmtClose = 0x19 => "stmt_close",
    StmtReset = 0x1a => "stmt_reset",
    SetOption = 0x1b => "set_option",
    StmtFetch = 0x1c => "stmt_fetch",
    BinlogDumpGtid = 0x1e => "binlog_dump_gtid",
    ResetConnection = 0x1f => "reset_connection",
    StmtBulkExecute = 0xfa => "stmt_bulk_execute",
}

/// How the server answers a command; decides how the session reads the response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResponseShape {
    /// No response at all (COM_STMT_CLOSE, COM_STMT_SEND_LONG_DATA, COM_QUIT).
    None,
    /// A single OK, ERR or EOF packet.
    Simple,
    /// A single packet of human-readable text (COM_STATISTICS).
    Text,
    /// OK, ERR, LOCAL INFILE request or result sets, possibly several (COM_QUERY, EXECUTE).
    Query,
    /// Prepare-OK followed by parameter and column definitions.
    Prepare,
    /// Rows of an open cursor, then EOF.
    Fetch,
    /// Column definitions, then EOF (COM_FIELD_LIST).
    FieldList,
    /// An authentication exchange that ends with OK or ERR (COM_CHANGE_USER).
    Auth,
    /// A stream of events until EOF or ERR (binlog dump): counted, not timed.
    Stream,
}

impl CommandKind {
    /// The commands that carry the workload's SQL: the "statements" every statement count,
    /// rate and comparison of psprobe is about (the recorder's latency bins, the analysis, the
    /// report, the admin tables). Prepares, pings and other connection chatter are not.
    pub fn is_statement(self) -> bool {
        matches!(
            self,
            CommandKind::Query | CommandKind::StmtExecute | CommandKind::StmtBulkExecute
        )
    }

    /// [`CommandKind::is_statement`] for a command as phase logs and metrics label it.
    pub fn is_statement_label(label: &str) -> bool {
        CommandKind::from_label(label).is_some_and(CommandKind::is_statement)
    }

    /// What the server answers this command with, so the session knows when it is done.
    pub fn response_shape(self) -> ResponseShape {
        use CommandKind::*;
        match self {
            Quit | StmtClose | StmtSendLongData => ResponseShape::None,
            Statistics => ResponseShape::Text,
            Query | StmtExecute | StmtBulkExecute | ProcessInfo => ResponseShape::Query,
            StmtPrepare => ResponseShape::Prepare,
            StmtFetch => ResponseShape::Fetch,
            FieldList => ResponseShape::FieldList,
            ChangeUser => ResponseShape::Auth,
            BinlogDump | BinlogDumpGtid => ResponseShape::Stream,
            _ => ResponseShape::Simple,
        }
    }
}

/// COM_STMT_EXECUTE cursor flags: any of these opens a cursor.
// Only the tests build cursor executes: the session learns of a cursor from the server's
// status (SERVER_STATUS_CURSOR_EXISTS), not from the client's flag.
#[cfg(test)]
pub const CURSOR_TYPE_READ_ONLY: u8 = 0x01;

/// The statement text of COM_QUERY (payload after the command byte). With
/// CLIENT_QUERY_ATTRIBUTES (MySQL 8.0.23+) the text follows the attribute block.
pub fn query_text(body: &[u8], query_attributes: bool) -> IResult<&[u8], &[u8]> {
    if !query_attributes {
        return Ok((&body[body.len()..], body));
    }
    let (rest, param_count) = lenenc_int(body)?;
    let (rest, _param_set_count) = lenenc_int(rest)?;
    if param_count == 0 {
        return Ok((&rest[rest.len()..], rest));
    }
    let count = usize::try_from(param_count).map_err(|_| verify_error(body))?;
    if count > 65_535 {
        return Err(verify_error(body));
    }
    let (rest, null_bitmap) = take(count.div_ceil(8))(rest)?;
    let (mut rest, new_params_bound) = byte(rest)?;
    if new_params_bound != 1 {
        // The text protocol always binds types; without them the values cannot be skipped.
        return Err(verify_error(body));
    }
    // Types come first, then names; values follow for every non-NULL parameter.
    let types_start = rest;
    for _ in 0..count {
        let (r, _type_and_flag) = le_u16(rest)?;
        let (r, _name) = lenenc_bytes(r)?;
        rest = r;
    }
    let mut types = types_start;
    for i in 0..count {
        let (r, type_and_flag) = le_u16(types)?;
        let (r, _name) = lenenc_bytes(r)?;
        types = r;
        if null_bitmap[i / 8] & (1 << (i % 8)) != 0 {
            continue;
        }
        let (r, _value) = binary_value(rest, (type_and_flag & 0xFF) as u8)?;
        rest = r;
    }
    Ok((&rest[rest.len()..], rest))
}

/// Skips one value in the binary protocol encoding of the given column type.
pub fn binary_value(input: &[u8], column_type: u8) -> IResult<&[u8], &[u8]> {
    let fixed: usize = match column_type {
        0x01 => 1,               // TINY
        0x02 | 0x0d => 2,        // SHORT, YEAR
        0x03 | 0x09 | 0x04 => 4, // LONG, INT24, FLOAT
        0x05 | 0x08 => 8,        // DOUBLE, LONGLONG
        0x06 => 0,               // NULL
        0x07 | 0x0a | 0x0b | 0x0c => {
            // TIMESTAMP, DATE, TIME, DATETIME: one length byte, then that many bytes.
            let (rest, len) = byte(input)?;
            let (rest, _) = take(len)(rest)?;
            let used = input.len() - rest.len();
            return Ok((rest, &input[..used]));
        }
        _ => return lenenc_bytes(input),
    };
    take(fixed)(input)
}

/// Statement id and flags at the start of COM_STMT_EXECUTE (after the command byte).
pub fn execute_header(body: &[u8]) -> IResult<&[u8], (u32, u8)> {
    let (rest, id) = le_u32(body)?;
    let (rest, flags) = byte(rest)?;
    Ok((rest, (id, flags)))
}

/// The statement id that COM_STMT_CLOSE / RESET / FETCH / SEND_LONG_DATA / BULK_EXECUTE name.
pub fn statement_id(body: &[u8]) -> IResult<&[u8], u32> {
    le_u32(body)
}

fn verify_error(input: &[u8]) -> nom::Err<nom::error::Error<&[u8]>> {
    nom::Err::Error(nom::error::Error::new(input, nom::error::ErrorKind::Verify))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_round_trip_and_labels_are_unique() {
        let mut labels: Vec<_> = CommandKind::ALL.iter().map(|k| k.label()).collect();
        labels.sort();
        labels.dedup();
        assert_eq!(labels.len(), CommandKind::ALL.len());
        for (i, k) in CommandKind::ALL.iter().enumerate() {
            assert_eq!(k.index(), i);
        }
        assert_eq!(CommandKind::from_byte(0x03), CommandKind::Query);
        assert_eq!(CommandKind::from_byte(0xfa), CommandKind::StmtBulkExecute);
        assert_eq!(CommandKind::from_byte(0x99), CommandKind::Other);
        for k in CommandKind::ALL {
            assert_eq!(CommandKind::from_label(k.label()), Some(*k));
        }
        assert_eq!(CommandKind::from_label("nonsense"), None);
    }

    #[test]
    fn statements_are_the_commands_that_carry_sql() {
        let statements: Vec<&str> = CommandKind::ALL
            .iter()
            .filter(|k| k.is_statement())
            .map(|k| k.label())
            .collect();
        assert_eq!(statements, ["query", "stmt_execute", "stmt_bulk_execute"]);
        assert!(CommandKind::is_statement_label("stmt_bulk_execute"));
        assert!(!CommandKind::is_statement_label("stmt_prepare"));
        assert!(!CommandKind::is_statement_label("nonsense"));
    }

    #[test]
    fn plain_query_text() {
        assert_eq!(query_text(b"select 1", false).unwrap().1, b"select 1");
    }

    #[test]
    fn query_attributes_without_parameters() {
        assert_eq!(
            query_text(b"\x00\x01select 1", true).unwrap().1,
            b"select 1"
        );
    }

    #[test]
    fn query_attributes_with_parameters() {
        // 3 attributes: a string, a NULL long, a longlong.
        let mut body = vec![0x03, 0x01];
        body.push(0b0000_0010); // null bitmap: second is NULL
        body.push(1); // new params bound
        body.extend_from_slice(&[0xfe, 0x00, 0x02, b'i', b'd']); // VAR_STRING "id"
        body.extend_from_slice(&[0x03, 0x00, 0x01, b'n']); // LONG "n"
        body.extend_from_slice(&[0x08, 0x80, 0x01, b'x']); // LONGLONG unsigned "x"
        body.extend_from_slice(&[0x03, b'a', b'b', b'c']); // value of id
        body.extend_from_slice(&7u64.to_le_bytes()); // value of x
        body.extend_from_slice(b"select * from t");
        assert_eq!(query_text(&body, true).unwrap().1, b"select * from t");
    }

    #[test]
    fn query_attributes_truncated_is_an_error() {
        assert!(query_text(b"\x02\x01\x00\x01\x08", true).is_err());
    }

    #[test]
    fn binary_values() {
        assert_eq!(binary_value(&[1, 2, 3], 0x01).unwrap().0, &[2, 3]);
        assert_eq!(binary_value(&[4, 1, 2, 3, 4, 9], 0x0c).unwrap().0, &[9]);
        assert_eq!(binary_value(&[2, b'h', b'i', 9], 0xfd).unwrap().0, &[9]);
        assert!(binary_value(&[1], 0x08).is_err());
    }

    #[test]
    fn execute_header_reads_id_and_cursor_flag() {
        let body = [7, 0, 0, 0, CURSOR_TYPE_READ_ONLY, 1, 0, 0, 0];
        assert_eq!(execute_header(&body).unwrap().1, (7, 1));
    }
}
