//! What `benches/` and the white-box tests in `tests/` reach inside the crate for; not an API.
//! Everything else in the crate is private to it: a name added here is one more thing the
//! compiler cannot report as dead, so add only what a bench or test uses.
//!
//! Must not: be used by psprobe itself.

mod replay;

pub use replay::{relay_recording, Recording};

pub use crate::metrics::{DigestCollector, ProxyMetrics, DEFAULT_TOP_DIGESTS};
pub use crate::observe::{ConnectionRecorder, Observer};
pub use crate::phase_log::{Aggregate, PhaseRecord};
pub use crate::stats::digest_stats::Totals;
pub use crate::stats::scenario::Scenarios;
pub use crate::stats::store::{DigestStore, DEFAULT_MAX_DIGESTS};

/// The admin interface's server and tables, for tests/through_proxy/admin_interface.rs.
pub mod admin {
    pub use crate::admin::auth::AdminAuth;
    pub use crate::admin::limits::Limits;
    pub use crate::admin::server::serve_with;
    pub use crate::admin::tables::{
        overhead_row, status_row, AdminData, ObserverData, OverheadRow, Row, Table, Value,
    };
}

/// The controller's library API (connect, snapshot, apply, verify, restore), for the test that
/// drives it without the command line (tests/ps_cli.rs).
pub mod controller {
    pub use crate::controller::client::dsn::ControllerDsn;
    pub use crate::controller::client::server::Controller;
    pub use crate::controller::model::catalog::Catalog;
    pub use crate::controller::model::snapshot::Snapshot;
}
