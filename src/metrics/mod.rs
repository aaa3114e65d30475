//! Prometheus metrics: the registry with pre-resolved series, the per-digest collector, and the
//! HTTP endpoint that exposes it.
//!
//! Must not: block or allocate per command on the relay's path (series are resolved once per
//! connection and scenario), or let a slow scrape hold a lock the relay needs.

pub(crate) mod config;
mod digest_collector;
pub(crate) mod http;
pub(crate) mod load;
mod registry;
pub(crate) mod transport;

pub use digest_collector::{DigestCollector, DEFAULT_TOP_DIGESTS};
pub(crate) use load::{LoadMetrics, Refusal};
pub(crate) use registry::Direction;
pub use registry::ProxyMetrics;
pub(crate) use transport::{TlsCarriage, TransportMetrics};
