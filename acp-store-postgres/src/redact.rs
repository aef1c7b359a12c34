//! Passwords out of sight: [`redact`] is the one function every message that may show a
//! connection string goes through (the store's own errors, and `acp`'s messages naming its
//! `--store`).

/// What a hidden password is shown as.
pub const HIDDEN: &str = "***";

/// `text` with every database password in it hidden, in each form a libpq user writes one:
///
/// * the user information of a URL: `postgres://user:pass@host/db` → `postgres://user:***@host/db`
///   (everything up to the last `@` of the authority, so a password with a raw `@` or `/`
///   is hidden whole);
/// * a URL's query parameter: `?password=...` or `&password=...` → `password=***`;
/// * the key-value form: `password=...` or `password='quoted \' value'` → `password=***`;
/// * the value of the `PGPASSWORD` environment variable, wherever it appears.
///
/// Text that holds none of these comes back unchanged. Meant for messages (logs and
/// errors), not for connecting: the result is not the same connection string.
pub fn redact(text: &str) -> String {
    let pg_password = std::env::var("PGPASSWORD").ok();
    redact_with(text, pg_password.as_deref())
}

/// [`redact`], also hiding each occurrence of `known` (a password the caller holds, from
/// the environment or the parsed configuration).
pub(crate) fn redact_with(text: &str, known: Option<&str>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    // URLs first (their query has its own syntax), the key-value form in between them.
    while let Some(start) = find_url(rest) {
        out.push_str(&redact_key_values(&rest[..start]));
        let len = rest[start..]
            .find(char::is_whitespace)
            .unwrap_or(rest.len() - start);
        out.push_str(&redact_url(&rest[start..start + len]));
        rest = &rest[start + len..];
    }
    out.push_str(&redact_key_values(rest));
    match known {
        Some(secret) if !secret.is_empty() => out.replace(secret, HIDDEN),
        _ => out,
    }
}

/// Where the next `postgres://` or `postgresql://` URL starts.
fn find_url(text: &str) -> Option<usize> {
    let lower = text.to_ascii_lowercase();
    ["postgres://", "postgresql://"]
        .iter()
        .filter_map(|scheme| lower.find(scheme))
        .min()
}

/// One URL (no whitespace in it) with its password hidden.
fn redact_url(url: &str) -> String {
    let scheme_end = url.find("://").map(|i| i + 3).unwrap_or(0);
    let (scheme, rest) = url.split_at(scheme_end);
    // The user information ends at the first `@` for tokio-postgres; hide up to the last
    // `@` before the query, so that a password with a raw `@` is hidden whole.
    let mut shown = String::from(scheme);
    let mut after_creds = rest;
    if let Some(first_at) = rest.find('@') {
        let query = rest[first_at..]
            .find('?')
            .map(|q| first_at + q)
            .unwrap_or(rest.len());
        let last_at = rest[..query].rfind('@').unwrap_or(first_at);
        let creds = &rest[..first_at];
        match creds.find(':') {
            Some(colon) => {
                shown.push_str(&creds[..colon]);
                shown.push(':');
                shown.push_str(HIDDEN);
            }
            None => shown.push_str(&rest[..last_at]),
        }
        shown.push('@');
        after_creds = &rest[last_at + 1..];
    }
    match after_creds.split_once('?') {
        Some((path, query)) => {
            shown.push_str(path);
            shown.push('?');
            let params: Vec<String> = query
                .split('&')
                .map(|param| match param.split_once('=') {
                    Some((key, _)) if is_password_key(&percent_decode(key)) => {
                        format!("{key}={HIDDEN}")
                    }
                    _ => param.to_owned(),
                })
                .collect();
            shown.push_str(&params.join("&"));
        }
        None => shown.push_str(after_creds),
    }
    shown
}

/// `password`, and `PGPASSWORD` as an environment assignment shows it.
fn is_password_key(key: &str) -> bool {
    key.eq_ignore_ascii_case("password") || key.eq_ignore_ascii_case("pgpassword")
}

/// `text` with its `%XX` escapes decoded (invalid ones kept as they are).
pub(crate) fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(byte) = text
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        {
            out.push(byte);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Text outside URLs with the value of every `password = value` (the key-value form, or an
/// environment assignment `PGPASSWORD=value`) hidden.
fn redact_key_values(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    loop {
        let Some((key_start, value_start)) = next_password_key(rest) else {
            out.push_str(rest);
            return out;
        };
        out.push_str(&rest[..key_start]);
        // The keyword as written; its `=` (and white space around it) as `=`.
        let key = rest[key_start..value_start].trim_end();
        out.push_str(key.strip_suffix('=').unwrap_or(key).trim_end());
        out.push('=');
        out.push_str(HIDDEN);
        let value = &rest[value_start..];
        rest = &value[value_len(value)..];
    }
}

/// The next `password` (or `pgpassword`) keyword followed by `=`: where the keyword starts
/// and where its value starts (after the `=` and any white space).
fn next_password_key(text: &str) -> Option<(usize, usize)> {
    let lower = text.to_ascii_lowercase();
    let mut from = 0;
    while let Some(found) = lower[from..].find("password") {
        let at = from + found;
        from = at + "password".len();
        let key_start = if lower[..at].ends_with("pg") {
            at - 2
        } else {
            at
        };
        let boundary = lower[..key_start]
            .chars()
            .next_back()
            .is_none_or(|c| !(c.is_ascii_alphanumeric() || c == '_'));
        if !boundary {
            continue;
        }
        let after = &text[from..];
        let trimmed = after.trim_start();
        let Some(value) = trimmed.strip_prefix('=') else {
            continue;
        };
        let value_start = text.len() - value.trim_start().len();
        // The key ends with the keyword; the `=` and white space are rewritten.
        return Some((key_start, value_start));
    }
    None
}

/// The length of a key-value value at the start of `text`: a quoted one up to its closing
/// quote (backslash escapes), else up to white space. An unterminated quote runs to the
/// end (hidden whole).
fn value_len(text: &str) -> usize {
    let mut chars = text.char_indices();
    if text.starts_with('\'') {
        chars.next();
        while let Some((i, c)) = chars.next() {
            match c {
                '\\' => {
                    chars.next();
                }
                '\'' => return i + 1,
                _ => {}
            }
        }
        return text.len();
    }
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' => {
                chars.next();
            }
            c if c.is_whitespace() => return i,
            _ => {}
        }
    }
    text.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hidden(text: &str) -> String {
        redact_with(text, None)
    }

    #[test]
    fn the_password_of_a_url_is_hidden() {
        assert_eq!(
            hidden("postgres://acp:s3cret@127.0.0.1:5432/acp"),
            "postgres://acp:***@127.0.0.1:5432/acp"
        );
        assert_eq!(
            hidden("postgresql://me:p%40ss@db.example/acp?sslmode=verify-full"),
            "postgresql://me:***@db.example/acp?sslmode=verify-full"
        );
        // A raw `@` or `/` in the password: hidden whole.
        let shown = hidden("postgres://me:p@ss/w@db.example/acp");
        assert_eq!(shown, "postgres://me:***@db.example/acp");
        // No password, no change.
        for plain in [
            "postgres://acp@127.0.0.1/acp",
            "postgres://127.0.0.1/acp",
            "/var/lib/acp",
        ] {
            assert_eq!(hidden(plain), plain);
        }
    }

    #[test]
    fn a_password_query_parameter_is_hidden() {
        assert_eq!(
            hidden("postgres://db.example/acp?password=s3cret"),
            "postgres://db.example/acp?password=***"
        );
        assert_eq!(
            hidden("postgres://db.example/acp?user=me&password=s3cret&sslmode=require"),
            "postgres://db.example/acp?user=me&password=***&sslmode=require"
        );
        assert_eq!(
            hidden("postgres://db.example/acp?pass%77ord=s3cret"),
            "postgres://db.example/acp?pass%77ord=***"
        );
        // Inside a message, the URL ends at white space.
        assert_eq!(
            hidden("the store postgres://u:a@h/d?password=b: refused"),
            "the store postgres://u:***@h/d?password=*** refused"
        );
    }

    #[test]
    fn a_key_value_password_is_hidden() {
        assert_eq!(
            hidden("host=db.example user=me password=s3cret dbname=acp"),
            "host=db.example user=me password=*** dbname=acp"
        );
        assert_eq!(
            hidden("host=db password = 's3 \\' cret' dbname=acp"),
            "host=db password=*** dbname=acp"
        );
        assert_eq!(hidden("password=a\\ b"), "password=***");
        // An unterminated quote: everything after it is hidden.
        assert_eq!(hidden("user=me password='s3cret"), "user=me password=***");
        // Words that only contain the keyword are left alone.
        assert_eq!(
            hidden("mypassword=x passwords are fine"),
            "mypassword=x passwords are fine"
        );
        assert_eq!(hidden("PGPASSWORD=s3cret psql"), "PGPASSWORD=*** psql");
    }

    #[test]
    fn a_known_password_is_hidden_wherever_it_appears() {
        assert_eq!(
            redact_with("auth failed with hunter2 for acp", Some("hunter2")),
            "auth failed with *** for acp"
        );
        assert_eq!(redact_with("nothing here", Some("")), "nothing here");
    }

    /// PGPASSWORD's value, read from the environment by [`redact`] itself (this test
    /// process's environment is its own).
    #[test]
    fn the_value_of_pgpassword_is_hidden() {
        // SAFETY: no other test of this crate reads or writes PGPASSWORD at the same time
        // (this is the only one that sets it).
        unsafe { std::env::set_var("PGPASSWORD", "env-s3cret") };
        let shown = redact("connecting with env-s3cret as acp");
        unsafe { std::env::remove_var("PGPASSWORD") };
        assert_eq!(shown, "connecting with *** as acp");
    }
}
