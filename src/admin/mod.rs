//! The admin interface: a MySQL-protocol server (opensrv-mysql) inside psprobe that answers SQL
//! about what psprobe measured, with an embedded SQLite engine (as ProxySQL's admin does):
//!
//! ```text
//! mariadb -h 127.0.0.1 -P 6034 -u admin -p -e \
//!   'SELECT digest_text, sum(count) FROM digests GROUP BY digest_text ORDER BY 2 DESC LIMIT 5'
//! ```
//!
//! - [`tables`]: the tables (`digests`, `commands`, `phases`, `overhead`, `connections`,
//!   `scenarios`, `status`), their columns, and [`ObserverData`] which fills them from the live
//!   statistics;
//! - [`dialect`]: what MySQL clients send (`@@variables`, `SHOW ...`, `DESCRIBE`, `SET`, `USE`)
//!   turned into engine queries;
//! - [`engine`]: the SQLite database of one admin connection: read-only, one consistent
//!   snapshot per query, bounded in time, rows and memory;
//! - [`server`]: the listener and the protocol shim; queries run on blocking threads, and
//!   [`spawn_dedicated`] puts the whole interface on a low-priority thread of its own;
//! - [`wire`], [`auth`]: byte-level fixes around opensrv-mysql and `mysql_native_password`;
//! - [`budget`]: the memory all admin results held at once may take;
//! - [`login_limit`]: password checks per peer are limited, refusals logged at a bounded rate.
//!
//! Must not: change what psprobe measures or the server's settings; it reads snapshots of the
//! live statistics, and a slow admin query never blocks the relay.

pub mod auth;
pub mod budget;
pub(crate) mod config;
pub mod dialect;
pub mod engine;
pub mod error;
pub mod login_limit;
pub mod pacing;
pub mod server;
pub mod session;
pub mod tables;
pub mod variables;
pub mod wire;

pub use auth::{AdminAuth, DEFAULT_USER};
pub use engine::Limits;
pub use error::AdminError;
pub use login_limit::{LoginLimiter, LoginLimits};
pub use server::{serve, serve_with, spawn_dedicated, AdminHandle};
pub use tables::{
    AdminData, AttributionRow, Column, ColumnKind, ObserverData, OverheadRow, Row, Table, Value,
};
