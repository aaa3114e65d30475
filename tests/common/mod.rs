//! Shared integration-test harness. Each test binary (`tests/*.rs`, `tests/<binary>/main.rs`)
//! declares `mod common;` and uses only the parts it needs, hence the allow below.
#![allow(dead_code)]

pub mod certs;
pub mod cli;
pub mod controller;
pub mod counting_client;
pub mod datadir;
pub mod digest_text;
pub mod faulty_link;
pub mod mariadb;
pub mod netns;
pub mod observed;
pub mod page_layout;
pub mod probe;
pub mod procfs;
pub mod prom;
pub mod prometheus;
pub mod restart;
pub mod server;
pub mod signalled;
pub mod sysbench;
pub mod wire;
