//! The environment variables that hold `acp serve`'s secrets, named once: `serve` reads the
//! bearer token from one and `store` the session store (maybe a database URL with a
//! password) from the other, and `sandbox` keeps both from every gateway child.

/// The environment variable holding the bearer token when no `--token-file` is given.
pub const TOKEN_ENV: &str = "ACP_TOKEN";

/// The store named when no `--store` is given.
pub const STORE_ENV: &str = "ACP_STORE";
