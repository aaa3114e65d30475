//! Capability and status flags (MySQL `CLIENT_*` / `SERVER_*`, MariaDB extended capabilities).
//!
//! MariaDB's extended capabilities travel in bytes the MySQL layout reserves; we keep them in
//! the upper 32 bits of one `u64` so a single mask answers "was this negotiated".

// The table is the protocol's, complete: flags psprobe passes through unread are named only by
// the tests' handshakes (or by nothing yet), and are not dead code to delete.
#![allow(dead_code)]

/// The client uses the newer password hashing (long ids).
pub const CLIENT_LONG_PASSWORD: u64 = 1;
/// MariaDB: a server that clears this bit (its "CLIENT_MYSQL") sends extended capabilities.
pub const CLIENT_MYSQL: u64 = CLIENT_LONG_PASSWORD;
/// The handshake response names a default database.
pub const CLIENT_CONNECT_WITH_DB: u64 = 1 << 3;
/// The compressed protocol (zlib) after the handshake.
pub const CLIENT_COMPRESS: u64 = 1 << 5;
/// `LOAD DATA LOCAL INFILE` may be used.
pub const CLIENT_LOCAL_FILES: u64 = 1 << 7;
/// The 4.1 protocol: SQL states in ERR packets, 2-byte status in OK/EOF.
pub const CLIENT_PROTOCOL_41: u64 = 1 << 9;
/// TLS: the client sends an SSLRequest and upgrades before its response.
pub const CLIENT_SSL: u64 = 1 << 11;
/// The auth response is length-prefixed (4.1 authentication).
pub const CLIENT_SECURE_CONNECTION: u64 = 1 << 15;
/// Several statements in one COM_QUERY.
pub const CLIENT_MULTI_STATEMENTS: u64 = 1 << 16;
/// Several result sets for one command.
pub const CLIENT_MULTI_RESULTS: u64 = 1 << 17;
/// Pluggable authentication: plugin names in the handshake.
pub const CLIENT_PLUGIN_AUTH: u64 = 1 << 19;
/// The handshake response carries connection attributes.
pub const CLIENT_CONNECT_ATTRS: u64 = 1 << 20;
/// The auth response is a length-encoded string.
pub const CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA: u64 = 1 << 21;
/// OK packets may carry session state changes.
pub const CLIENT_SESSION_TRACK: u64 = 1 << 23;
/// OK packets replace EOF packets after result sets.
pub const CLIENT_DEPRECATE_EOF: u64 = 1 << 24;
/// Result sets may omit column definitions (metadata flag byte).
pub const CLIENT_OPTIONAL_RESULTSET_METADATA: u64 = 1 << 25;
/// The compressed protocol with zstd (MySQL 8.0.18+).
pub const CLIENT_ZSTD_COMPRESSION: u64 = 1 << 26;
/// COM_QUERY and COM_STMT_EXECUTE carry query attributes.
pub const CLIENT_QUERY_ATTRIBUTES: u64 = 1 << 27;

/// MariaDB: progress reports (0xFF packets with code 0xFFFF) during long commands.
pub const MARIADB_CLIENT_PROGRESS: u64 = 1 << 32;
/// MariaDB: COM_STMT_BULK_EXECUTE.
pub const MARIADB_CLIENT_STMT_BULK_OPERATIONS: u64 = 1 << 34;
/// MariaDB: result sets may skip metadata the client has cached.
pub const MARIADB_CLIENT_CACHE_METADATA: u64 = 1 << 36;

/// Status: a cursor was opened for the statement (rows come with COM_STMT_FETCH).
pub const SERVER_STATUS_CURSOR_EXISTS: u16 = 0x0040;
/// Status: another result set follows.
pub const SERVER_MORE_RESULTS_EXISTS: u16 = 0x0008;
/// Status: the cursor's last row has been sent.
pub const SERVER_STATUS_LAST_ROW_SENT: u16 = 0x0080;
/// Status: this result set holds a procedure's OUT parameters.
pub const SERVER_PS_OUT_PARAMS: u16 = 0x1000;

/// Capabilities in effect on a connection: what both sides announced.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Capabilities(pub u64);

impl Capabilities {
    /// Whether every bit of `flag` was negotiated.
    pub fn has(self, flag: u64) -> bool {
        self.0 & flag == flag
    }

    /// A result set's column-count packet carries a "metadata follows" byte.
    pub fn has_metadata_flag(self) -> bool {
        self.0 & (CLIENT_OPTIONAL_RESULTSET_METADATA | MARIADB_CLIENT_CACHE_METADATA) != 0
    }
}
