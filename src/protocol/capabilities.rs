//! Capability and status flags (MySQL `CLIENT_*` / `SERVER_*`, MariaDB extended capabilities).
//!
//! MariaDB's extended capabilities travel in bytes the MySQL layout reserves; we keep them in
//! the upper 32 bits of one `u64` so a single mask answers "was this negotiated".

pub const CLIENT_LONG_PASSWORD: u64 = 1;
/// MariaDB: a server that clears this bit (its "CLIENT_MYSQL") sends extended capabilities.
pub const CLIENT_MYSQL: u64 = CLIENT_LONG_PASSWORD;
pub const CLIENT_CONNECT_WITH_DB: u64 = 1 << 3;
pub const CLIENT_COMPRESS: u64 = 1 << 5;
pub const CLIENT_LOCAL_FILES: u64 = 1 << 7;
pub const CLIENT_PROTOCOL_41: u64 = 1 << 9;
pub const CLIENT_SSL: u64 = 1 << 11;
pub const CLIENT_SECURE_CONNECTION: u64 = 1 << 15;
pub const CLIENT_MULTI_STATEMENTS: u64 = 1 << 16;
pub const CLIENT_MULTI_RESULTS: u64 = 1 << 17;
pub const CLIENT_PLUGIN_AUTH: u64 = 1 << 19;
pub const CLIENT_CONNECT_ATTRS: u64 = 1 << 20;
pub const CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA: u64 = 1 << 21;
pub const CLIENT_SESSION_TRACK: u64 = 1 << 23;
pub const CLIENT_DEPRECATE_EOF: u64 = 1 << 24;
pub const CLIENT_OPTIONAL_RESULTSET_METADATA: u64 = 1 << 25;
pub const CLIENT_ZSTD_COMPRESSION: u64 = 1 << 26;
pub const CLIENT_QUERY_ATTRIBUTES: u64 = 1 << 27;

pub const MARIADB_CLIENT_PROGRESS: u64 = 1 << 32;
pub const MARIADB_CLIENT_STMT_BULK_OPERATIONS: u64 = 1 << 34;
pub const MARIADB_CLIENT_CACHE_METADATA: u64 = 1 << 36;

pub const SERVER_STATUS_CURSOR_EXISTS: u16 = 0x0040;
pub const SERVER_MORE_RESULTS_EXISTS: u16 = 0x0008;
pub const SERVER_STATUS_LAST_ROW_SENT: u16 = 0x0080;
pub const SERVER_PS_OUT_PARAMS: u16 = 0x1000;

/// Capabilities in effect on a connection: what both sides announced.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Capabilities(pub u64);

impl Capabilities {
    pub fn has(self, flag: u64) -> bool {
        self.0 & flag == flag
    }

    /// A result set's column-count packet carries a "metadata follows" byte.
    pub fn has_metadata_flag(self) -> bool {
        self.0 & (CLIENT_OPTIONAL_RESULTSET_METADATA | MARIADB_CLIENT_CACHE_METADATA) != 0
    }
}
