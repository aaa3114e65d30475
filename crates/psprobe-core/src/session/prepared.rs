//! Statement texts of a connection's prepared statements, by statement id.

use rustc_hash::FxHashMap;

/// Bounded like the server's own `max_prepared_stmt_count` (default 16382): past the cap new
/// statements are still measured, only without their text.
pub const MAX_PREPARED_STATEMENTS: usize = 16_384;

/// MariaDB: COM_STMT_EXECUTE with this id means "the statement prepared last" (pipelining).
pub const LAST_PREPARED_ID: u32 = 0xFFFF_FFFF;

/// The texts of a connection's prepared statements, bounded in count.
#[derive(Debug, Default)]
pub struct PreparedStatements {
    /// Fx: ids are the server's small sequential numbers, and this is looked up per execute.
    texts: FxHashMap<u32, Box<[u8]>>,
    last_id: Option<u32>,
}

impl PreparedStatements {
    /// Records statement `id` prepared from `sql` (kept while under the count bound).
    pub fn insert(&mut self, id: u32, sql: Box<[u8]>) {
        self.last_id = Some(id);
        if self.texts.len() < MAX_PREPARED_STATEMENTS || self.texts.contains_key(&id) {
            self.texts.insert(id, sql);
        }
    }

    /// A statement was prepared whose text psprobe did not keep (too long to capture).
    pub fn insert_without_text(&mut self, id: u32) {
        self.last_id = Some(id);
        self.texts.remove(&id);
    }

    /// Resolves MariaDB's "last prepared" id to the real one.
    pub fn resolve(&self, id: u32) -> u32 {
        match (id, self.last_id) {
            (LAST_PREPARED_ID, Some(last)) => last,
            _ => id,
        }
    }

    /// The text statement `id` was prepared from, when kept.
    pub fn get(&self, id: u32) -> Option<&[u8]> {
        self.texts.get(&id).map(|b| &b[..])
    }

    /// Forgets statement `id` (COM_STMT_CLOSE).
    pub fn remove(&mut self, id: u32) {
        self.texts.remove(&id);
    }

    /// COM_RESET_CONNECTION and COM_CHANGE_USER drop every statement on the server.
    pub fn clear(&mut self) {
        self.texts.clear();
        self.last_id = None;
    }

    /// Statements whose text is kept.
    pub fn len(&self) -> usize {
        self.texts.len()
    }

    /// Whether no text is kept.
    pub fn is_empty(&self) -> bool {
        self.texts.is_empty()
    }
}
