//! The well-known errors and `Display` for the protocol's error object and codes (`new` and
//! the `data` builder are generated).

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

impl Error {
    /// `-32601`: the method does not exist or is not served here.
    pub fn method_not_found(method: &str) -> Self {
        Self::new(
            ErrorCode::METHOD_NOT_FOUND,
            format!("method not found: {method}"),
        )
        .data(serde_json::json!({ "method": method }))
    }

    /// `-32602`: the params do not match the method's schema.
    pub fn invalid_params(detail: impl Into<String>) -> Self {
        Self::new(ErrorCode::INVALID_PARAMS, detail)
    }

    /// `-32603`: the handler failed for a reason of its own.
    pub fn internal_error(detail: impl Into<String>) -> Self {
        Self::new(ErrorCode::INTERNAL_ERROR, detail)
    }

    /// `-32000`: the agent needs `authenticate` first.
    pub fn auth_required() -> Self {
        Self::new(ErrorCode::AUTH_REQUIRED, "authentication required")
    }

    /// `-32002`: the named resource (a session, a file, a terminal) does not exist.
    pub fn resource_not_found(what: impl Into<String>) -> Self {
        Self::new(ErrorCode::RESOURCE_NOT_FOUND, what)
    }

    /// `-32800`: the request was cancelled before it finished.
    pub fn request_cancelled() -> Self {
        Self::new(ErrorCode::REQUEST_CANCELLED, "request cancelled")
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
        let e = Error::method_not_found("foo/bar");
        assert_eq!(
            e.to_string(),
            r#"-32601 (method not found): method not found: foo/bar ({"method":"foo/bar"})"#
        );
        assert_eq!(Error::request_cancelled().code, ErrorCode(-32800));
    }
}
