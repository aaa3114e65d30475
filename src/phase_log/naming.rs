//! Scenario names as the log records them: `NAME@startup` is the startup twin of runtime
//! scenario `NAME` (see `controller::model::startup` for what it sets).

/// The suffix that names the startup variant of a runtime scenario.
pub(crate) const SUFFIX: &str = "@startup";

/// `NAME@startup` → `NAME`.
pub(crate) fn twin_name(name: &str) -> Option<&str> {
    name.strip_suffix(SUFFIX).filter(|n| !n.is_empty())
}
