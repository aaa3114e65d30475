//! The host's MariaDB 10.11 without TLS: the server most tests were written for, kept under
//! its old name. It is a [`Server`] of flavor [`Flavor::MariaDb1011`] (every method of
//! `Server` works on it, and a `&MariaDb` goes wherever a `&Server` is asked for); suites that
//! run on every server use [`Server::start`] with a flavor instead.

use std::ops::{Deref, DerefMut};
use std::sync::Arc;

use super::netns::Netns;
pub use super::server::{Flavor, Options, Server};

pub struct MariaDb(Server);

impl MariaDb {
    pub fn start_default() -> Self {
        Self::start(Options::default())
    }

    pub fn start(opts: Options) -> Self {
        MariaDb(Server::start_with(Flavor::MariaDb1011, None, opts, false))
    }

    /// A server on another host (see [`Server::start_in`]).
    pub fn start_in(netns: Arc<Netns>, opts: Options) -> Self {
        MariaDb(Server::start_with(
            Flavor::MariaDb1011,
            Some(netns),
            opts,
            false,
        ))
    }
}

impl Deref for MariaDb {
    type Target = Server;

    fn deref(&self) -> &Server {
        &self.0
    }
}

impl DerefMut for MariaDb {
    fn deref_mut(&mut self) -> &mut Server {
        &mut self.0
    }
}
