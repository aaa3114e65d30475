//! Prometheus metrics: the registry with pre-resolved series, the per-digest collector, and the
//! HTTP endpoint that exposes it.
//!
//! Must not: block or allocate per command on the relay's path (series are resolved once per
//! connection and scenario), or let a slow scrape hold a lock the relay needs.

pub(crate) mod config;
mod digest_collector;
pub mod http;
pub mod load;
mod registry;
pub mod transport;

pub use digest_collector::{DigestCollector, DEFAULT_TOP_DIGESTS, DIGEST_TEXT_LABEL_CHARS};
pub use load::{LoadMetrics, Refusal};
pub use registry::{duration_buckets, Direction, ProxyMetrics};
pub use transport::{TlsCarriage, TransportMetrics};
