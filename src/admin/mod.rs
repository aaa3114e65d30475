//! The admin interface: a small MySQL-protocol server (opensrv-mysql) inside psprobe that any
//! MySQL client can query for what psprobe measured.
//!
//! ```text
//! mariadb -h 127.0.0.1 -P 6034 -u admin -p -e 'SELECT * FROM digests ORDER BY count DESC LIMIT 5'
//! ```
//!
//! Tables: `digests` (per scenario and digest), `phases` (the controller's finished phases),
//! `overhead` (the analysis), and `SHOW STATUS`. See [`query`] for the SQL subset; anything else
//! gets an ERR naming what is supported. Login is `mysql_native_password` against a configured
//! secret; a wrong password gets ERR 1045.
//!
//! Wiring: bind a [`tokio::net::TcpListener`], build an [`ObserverData`] (or any [`AdminData`])
//! and spawn [`serve`].

pub mod answer;
pub mod auth;
pub mod query;
pub mod server;
pub mod tables;
pub mod wire;

pub use auth::{AdminAuth, DEFAULT_USER};
pub use server::serve;
pub use tables::{AdminData, Column, ColumnKind, ObserverData, OverheadRow, Table, Value};
