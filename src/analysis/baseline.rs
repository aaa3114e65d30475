//! Which scheduled scenario the others are compared with.
//!
//! 1. `pfsoff` when it was scheduled: with performance_schema off nothing is instrumented, so
//!    it is the cost-free reference every overhead is measured from;
//! 2. otherwise the scenario named by `--baseline`;
//! 3. otherwise the least-instrumented scheduled scenario of the seed study's ladder
//!    ([`LEAST_INSTRUMENTED`]);
//! 4. otherwise the first scenario scheduled (first to appear in the log).
//!
//! A `--baseline` naming a scenario that is not in the log is an error (a typo should not
//! silently compare against something else), even when `pfsoff` takes precedence.

use serde::Serialize;

use super::error::AnalysisError;

/// The seed study's scenarios with performance_schema ON, least instrumented first.
pub(crate) const LEAST_INSTRUMENTED: [&str; 5] = [
    "pfson_conoff_insoff",
    "pfson_conon_insoff",
    "pfson_conon_ins_sqlon",
    "pfson_conoff_inson",
    "pfson_conon_inson",
];

/// The scenario with performance_schema OFF.
pub(crate) const PFSOFF: &str = "pfsoff";

/// Why the baseline is the one it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum BaselineRule {
    Pfsoff,
    Requested,
    LeastInstrumented,
    FirstScheduled,
}

/// Picks the baseline among `scheduled` (in order of first appearance).
pub(crate) fn select(
    scheduled: &[String],
    requested: Option<&str>,
) -> Result<(String, BaselineRule), AnalysisError> {
    let has = |name: &str| scheduled.iter().any(|s| s == name);
    if let Some(name) = requested.filter(|n| !has(n)) {
        return Err(AnalysisError::BaselineNotScheduled {
            name: name.to_string(),
            scheduled: scheduled.to_vec(),
        });
    }
    if has(PFSOFF) {
        return Ok((PFSOFF.to_string(), BaselineRule::Pfsoff));
    }
    if let Some(name) = requested {
        return Ok((name.to_string(), BaselineRule::Requested));
    }
    if let Some(name) = LEAST_INSTRUMENTED.iter().find(|n| has(n)) {
        return Ok((name.to_string(), BaselineRule::LeastInstrumented));
    }
    scheduled
        .first()
        .map(|s| (s.clone(), BaselineRule::FirstScheduled))
        .ok_or(AnalysisError::NoPhases)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn selection_rules_in_order() {
        let all = names(&["pfson_conon_inson", "pfsoff", "pfson_conoff_insoff"]);
        assert_eq!(
            select(&all, None).unwrap(),
            ("pfsoff".into(), BaselineRule::Pfsoff)
        );
        assert_eq!(
            select(&all, Some("pfson_conon_inson")).unwrap(),
            ("pfsoff".into(), BaselineRule::Pfsoff),
            "pfsoff takes precedence"
        );
        let on = names(&[
            "pfson_conon_inson",
            "pfson_conoff_inson",
            "pfson_conon_insoff",
        ]);
        assert_eq!(
            select(&on, Some("pfson_conoff_inson")).unwrap(),
            ("pfson_conoff_inson".into(), BaselineRule::Requested)
        );
        assert_eq!(
            select(&on, None).unwrap(),
            ("pfson_conon_insoff".into(), BaselineRule::LeastInstrumented)
        );
        let ladder = names(&[
            "pfson_conon_inson",
            "pfson_conoff_inson",
            "pfson_conon_ins_sqlon",
        ]);
        assert_eq!(select(&ladder, None).unwrap().0, "pfson_conon_ins_sqlon");
        let custom = names(&["mine", "theirs"]);
        assert_eq!(
            select(&custom, None).unwrap(),
            ("mine".into(), BaselineRule::FirstScheduled)
        );
    }

    #[test]
    fn unknown_or_nothing_is_an_error() {
        let all = names(&["pfsoff", "pfson_conon_inson"]);
        let err = select(&all, Some("pfson_typo")).unwrap_err();
        assert!(
            matches!(err, AnalysisError::BaselineNotScheduled { ref name, .. } if name == "pfson_typo")
        );
        assert!(matches!(select(&[], None), Err(AnalysisError::NoPhases)));
    }
}
