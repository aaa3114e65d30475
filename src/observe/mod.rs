//! The observation path: what a client command goes through between the bytes the proxy
//! relays and the statistics. Per connection, a [`Watch`](watch::Watch) counts each chunk and
//! feeds it to the core's session machine (`psprobe_core::session`), whose events go to the
//! live connection entry ([`connections`]) and the [`ConnectionRecorder`] (digests, per-scenario
//! series); all connections record into one [`Observer`].
//!
//! ```text
//! proxy (sockets, TLS, relay) -> Watch -> Session -> Tracked -> ConnectionRecorder -> stats, metrics
//! ```
//!
//! This is the one module that drives the core's session (`tests/checks/module_graph.rs`
//! checks): the proxy asks the watch what the session parsed of the handshake instead of
//! parsing it again, and acts on it.
//!
//! Must not: do I/O, block, wait on a scrape, or allocate per packet once a connection's
//! series exist; decide anything about the traffic (forwarding is the proxy's).

pub(crate) mod config;
pub(crate) mod connections;
mod controller_handle;
mod recorder;
pub(crate) mod setting_changes;
pub(crate) mod watch;

use std::sync::Arc;

use psprobe_core::digest::FingerprintOptions;

use crate::metrics::http::Exposition;
use crate::metrics::ProxyMetrics;
use crate::stats::scenario::Scenarios;
use crate::stats::store::DigestStore;

pub(crate) use connections::ConnectionTable;
pub(crate) use controller_handle::ControllerHandle;
pub use recorder::ConnectionRecorder;
pub(crate) use setting_changes::{SettingChange, SettingChanges};

/// Everything a connection records into, shared by all connections.
pub struct Observer {
    pub metrics: ProxyMetrics,
    pub digests: Arc<DigestStore>,
    pub scenarios: Arc<Scenarios>,
    pub fingerprint: FingerprintOptions,
    /// Live connections, for the admin interface's `connections` table.
    pub connections: ConnectionTable,
    /// Settings someone else changed during a run, for the admin's `setting_changes` table.
    pub setting_changes: SettingChanges,
}

impl Observer {
    /// psprobe's controller restarts the upstream server on purpose now: a client it cannot
    /// connect meanwhile is expected (the proxy logs it at debug).
    pub(crate) fn upstream_restarting(&self) -> bool {
        self.scenarios.restarting()
    }
}

#[cfg(test)]
impl Observer {
    /// A fresh observer (100 digests at most) for unit tests.
    pub(crate) fn for_tests() -> Observer {
        let scenarios: Arc<Scenarios> = Arc::default();
        Observer {
            metrics: ProxyMetrics::new(Arc::clone(&scenarios)).expect("metrics register"),
            digests: Arc::new(DigestStore::new(100)),
            scenarios,
            fingerprint: Default::default(),
            connections: Default::default(),
            setting_changes: Default::default(),
        }
    }
}

impl Exposition for Observer {
    fn render(&self) -> String {
        self.metrics.render()
    }
}
