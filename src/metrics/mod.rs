//! Prometheus metrics: the registry with pre-resolved series, the event sink that feeds it, and
//! the HTTP endpoint that exposes it.

pub mod http;
mod registry;
mod sink;

pub use registry::{duration_buckets, Direction, ProxyMetrics};
pub use sink::MetricsSink;
