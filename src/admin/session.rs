//! What one admin connection knows about itself: who logged in, from where, and the current
//! database (`USE psprobe`), read by `DATABASE()`, `USER()`, `CONNECTION_ID()`.

use std::sync::RwLock;

use super::error::AdminError;

/// The only database.
pub(crate) const DATABASE: &str = "psprobe";

#[derive(Debug)]
pub(crate) struct SessionInfo {
    pub user: String,
    pub host: String,
    pub connection_id: u32,
    database: RwLock<Option<String>>,
}

impl SessionInfo {
    pub(crate) fn new(user: &str, host: &str, connection_id: u32) -> Self {
        SessionInfo {
            user: user.to_string(),
            host: host.to_string(),
            connection_id,
            database: RwLock::new(None),
        }
    }

    pub(crate) fn database(&self) -> Option<String> {
        self.database
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// `USE name` and the database of the handshake: only `psprobe` exists.
    pub(crate) fn use_database(&self, name: &str) -> Result<(), AdminError> {
        let name = name.trim().trim_end_matches(';').trim().trim_matches('`');
        if !name.eq_ignore_ascii_case(DATABASE) {
            return Err(AdminError::unknown_database(name));
        }
        *self.database.write().unwrap_or_else(|e| e.into_inner()) = Some(DATABASE.to_string());
        Ok(())
    }

    /// `user@host`, as `USER()` shows it.
    pub(crate) fn user_at_host(&self) -> String {
        format!("{}@{}", self.user, self.host)
    }
}
