//! `Display` for the protocol's error object and codes (`new` and the `data` builder are
//! generated).
//!
//! Which error type is which: [`Error`] here is the error object as the schema defines it,
//! data inside a message (it keeps unknown fields in `extra`). The error every API of
//! acp-rs returns and every handler answers with is `acp_rpc::Error` (re-exported as
//! `acp_agent::Error` and `acp_client::Error`), which has the constructors for the
//! well-known codes and the local ones (`-32099` connection closed, `-32098` timed out:
//! never sent by a peer). The two convert into each other with `From`.

use std::fmt;

use super::{Error, ErrorCode};

impl fmt::Display for ErrorCode {
    /// `-32601 (method not found)` for known codes, the bare number otherwise.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.known_name() {
            Some(name) => write!(f, "{} ({})", self.0, name.to_lowercase().replace('_', " ")),
            None => write!(f, "{}", self.0),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code, self.message)?;
        if let Some(data) = &self.data {
            write!(f, " ({data})")?;
        }
        Ok(())
    }
}

impl std::error::Error for Error {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_display_names_known_codes_and_shows_data() {
        assert_eq!(
            ErrorCode::METHOD_NOT_FOUND.to_string(),
            "-32601 (method not found)"
        );
        assert_eq!(ErrorCode(-1).to_string(), "-1");
        let e = Error::new(ErrorCode::METHOD_NOT_FOUND, "method not found: foo/bar")
            .data(serde_json::json!({ "method": "foo/bar" }));
        assert_eq!(
            e.to_string(),
            r#"-32601 (method not found): method not found: foo/bar ({"method":"foo/bar"})"#
        );
    }
}
