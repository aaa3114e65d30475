//! What psprobe's demo (`psprobe demo`, `psprobe experiment`), its integration tests and its
//! benchmark share to drive real components: a free loopback port, whether this process runs
//! as root (mariadbd then needs `--user=root`), the servers tested on (MariaDB 10.11 and 11.8,
//! MySQL 9.7) and what differs between them, a throwaway server's files and command lines,
//! the `mariadb` CLI as root against a port, helper processes that die with their parent, and
//! sysbench's connection arguments and final summary.
//!
//! Must not: depend on psprobe, on a runtime, or on anything but std and libc; hold policy (timeouts,
//! retries, which workload): each caller keeps its own.

#![deny(missing_docs)]

pub mod child;
pub mod flavor;
pub mod mariadb;
pub mod ports;
pub mod server;
pub mod sysbench;
