//! Shared integration-test harness. Each `tests/*.rs` binary declares
//! `mod common;` and uses only the parts it needs, hence the allow below.
#![allow(dead_code)]

pub mod child;
pub mod cli;
pub mod controller;
pub mod datadir;
pub mod mariadb;
pub mod observed;
pub mod probe;
pub mod prom;
pub mod prometheus;
pub mod sysbench;
pub mod tls_server;
