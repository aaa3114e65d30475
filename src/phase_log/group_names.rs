//! Scenario names of an attribution run. Each design point is named by the instrument groups it
//! turns on: `g:` and the groups joined by `+` (`g:statements+stages`), `g:base` for the point
//! with every group off (global and thread instrumentation on, nothing else). The point with
//! nothing instrumented at all is the seed study's `pfson_conoff_insoff`; beside it, in pairs,
//! runs `base_check` (the settings of `g:base` under a name of its own, so the design point's
//! slot is not pooled with these). The confirmation of a recommended configuration is
//! `advice:` and its groups.
//!
//! The analysis reads the design from these names alone, so any phase log of the run (a
//! follower's, or several probes' merged) can be attributed without the controller's state.

/// Prefix of a design point's name.
pub(crate) const POINT_PREFIX: &str = "g:";
/// The design point with no group on.
pub(crate) const BASE_POINT: &str = "g:base";
/// The point with nothing instrumented (global and thread instrumentation off too).
pub(crate) const NONE_POINT: &str = "pfson_conoff_insoff";
/// Global and thread instrumentation only, run in pairs with [`NONE_POINT`] to measure the
/// base every configuration with a group pays.
pub(crate) const BASE_CHECK: &str = "base_check";
/// Prefix of the scenario that confirms a recommendation.
pub(crate) const ADVICE_PREFIX: &str = "advice:";
/// Joins group names in a point's name.
pub(crate) const JOIN: char = '+';
/// Names a group may not take (they would read as something else).
pub(crate) const RESERVED: [&str; 2] = ["base", "none"];

/// A group name fits into point names: letters, digits, `_`, `-`, `.`, and not reserved.
pub(crate) fn valid_group_name(name: &str) -> bool {
    !name.is_empty()
        && !RESERVED.contains(&name)
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c))
}

fn joined<S: AsRef<str>>(groups: &[S]) -> String {
    groups
        .iter()
        .map(AsRef::as_ref)
        .collect::<Vec<_>>()
        .join(&JOIN.to_string())
}

/// The design point that turns on `groups` (in the order given).
pub(crate) fn point_name<S: AsRef<str>>(groups: &[S]) -> String {
    if groups.is_empty() {
        return BASE_POINT.to_string();
    }
    format!("{POINT_PREFIX}{}", joined(groups))
}

/// The groups a design point turns on (empty for `g:base`); `None` if `name` is not a point.
pub(crate) fn point_groups(name: &str) -> Option<Vec<&str>> {
    if name == BASE_POINT {
        return Some(Vec::new());
    }
    let rest = name.strip_prefix(POINT_PREFIX)?;
    let groups: Vec<&str> = rest.split(JOIN).collect();
    groups.iter().all(|g| valid_group_name(g)).then_some(groups)
}

/// The scenario that confirms `groups` as a recommendation.
pub(crate) fn advice_name<S: AsRef<str>>(groups: &[S]) -> String {
    if groups.is_empty() {
        return format!("{ADVICE_PREFIX}base");
    }
    format!("{ADVICE_PREFIX}{}", joined(groups))
}

/// The groups of an `advice:` scenario; `None` for any other name.
pub(crate) fn advice_groups(name: &str) -> Option<Vec<&str>> {
    let rest = name.strip_prefix(ADVICE_PREFIX)?;
    if rest == "base" {
        return Some(Vec::new());
    }
    let groups: Vec<&str> = rest.split(JOIN).collect();
    groups.iter().all(|g| valid_group_name(g)).then_some(groups)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        assert_eq!(point_name::<&str>(&[]), "g:base");
        assert_eq!(point_groups("g:base"), Some(vec![]));
        let name = point_name(&["statements", "stages"]);
        assert_eq!(name, "g:statements+stages");
        assert_eq!(point_groups(&name), Some(vec!["statements", "stages"]));
        assert_eq!(point_groups("pfson_conoff_insoff"), None);
        assert_eq!(point_groups("g:"), None);
        assert_eq!(point_groups("g:a++b"), None);
        assert_eq!(point_groups("g:none"), None);
        let advice = advice_name(&["memory"]);
        assert_eq!(advice_groups(&advice), Some(vec!["memory"]));
        assert_eq!(advice_groups("g:memory"), None);
    }

    #[test]
    fn group_names_are_checked() {
        assert!(valid_group_name("sync_waits"));
        assert!(valid_group_name("my-group.2"));
        for bad in ["", "base", "none", "a+b", "a b", "g:x"] {
            assert!(!valid_group_name(bad), "{bad}");
        }
    }
}
