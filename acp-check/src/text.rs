//! Text kept as evidence: cut to a length, whole characters only.

/// The first `max` characters of `s` (with `…` when cut).
pub(crate) fn cut(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_owned(),
    }
}
