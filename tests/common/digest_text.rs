//! Statement texts compared across psprobe's and the server's normalizations.

/// The server quotes identifiers, spaces out operators, writes value lists as `(...)` and
/// DISTINCT as its synonym DISTINCTROW; psprobe keeps the client's spacing and words and writes
/// `(?+)`. Both sides mapped through this compare equal for the same statement shape.
pub fn comparable(text: &str) -> String {
    text.to_lowercase()
        .replace('`', "")
        .replace("distinctrow", "distinct")
        .replace("(?+)", "(...)")
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect()
}
