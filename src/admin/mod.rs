//! The admin interface: a MySQL-protocol server (opensrv-mysql) inside psprobe that answers SQL
//! about what psprobe measured, with an embedded SQLite engine (as ProxySQL's admin does):
//!
//! ```text
//! mariadb -h 127.0.0.1 -P 6034 -u admin -p -e \
//!   'SELECT digest_text, sum(count) FROM digests GROUP BY digest_text ORDER BY 2 DESC LIMIT 5'
//! ```
//!
//! - [`tables`]: the tables (`digests`, `commands`, `phases`, `overhead`, `attribution`,
//!   `connections`, `scenarios`, `setting_changes`, `status`), their columns and rows, and
//!   [`ObserverData`] which fills them from the live statistics;
//! - [`limits`]: the bounds on one query and on logins;
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

pub(crate) mod auth;
pub(crate) mod budget;
pub(crate) mod config;
pub(crate) mod dialect;
pub(crate) mod engine;
pub(crate) mod error;
pub(crate) mod limits;
pub(crate) mod login_limit;
pub(crate) mod pacing;
pub(crate) mod server;
pub(crate) mod session;
pub(crate) mod tables;
pub(crate) mod variables;
pub(crate) mod wire;

pub(crate) use auth::{AdminAuth, DEFAULT_USER};
pub(crate) use limits::Limits;
pub(crate) use server::{spawn_dedicated, AdminHandle};
pub(crate) use tables::{AttributionRow, ObserverData, OverheadRow};
