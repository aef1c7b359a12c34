//! Security: who may call ([`Authenticator`], [`BearerToken`], [`BearerTokens`] for several
//! named identities), from which browser origins,
//! and how much ([`Limits`]). The server is secure by default: every request on `/acp` needs
//! a credential, cross-origin browser requests are refused unless their origin is listed, and
//! every resource a remote peer can make the server hold has a bound.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use hyper::HeaderMap;
use hyper::header::AUTHORIZATION;

/// Who a request comes from, as an [`Authenticator`] names it.
///
/// A connection belongs to the identity that created it: a request naming the connection
/// with another identity is answered 404, as if the connection did not exist.
///
/// An in-process agent is told the identity ([`acp_agent::AgentContext::identity`], through
/// [`Identity::session_owner`]), and with a session store each identity reaches only its own
/// sessions. The unnamed identities ([`Identity::UNNAMED`] of a token without a name,
/// [`Identity::ANONYMOUS`] of a server without credentials) own the sessions with no owner.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Identity(pub String);

impl Identity {
    /// The identity's name as one directory name (for a root per identity), or `None` when
    /// it cannot be one safely: empty, over 128 bytes, starting with `.`, or holding anything
    /// but ASCII letters, digits, `.`, `_` and `-`.
    pub fn dir_name(&self) -> Option<&str> {
        let name = &self.0;
        let safe = !name.is_empty()
            && name.len() <= 128
            && !name.starts_with('.')
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
        safe.then_some(name.as_str())
    }

    /// The identity of a bearer token without a name ([`BearerToken`], a token file's line
    /// without `NAME:`): every holder of it is this one identity.
    pub const UNNAMED: &'static str = "bearer";
    /// The identity of every caller of a server without credentials ([`NoAuth`]).
    pub const ANONYMOUS: &'static str = "anonymous";

    /// The owner of the sessions this identity creates, as an agent and its session store
    /// know it: its name, or `None` for [`Identity::UNNAMED`] and [`Identity::ANONYMOUS`]
    /// (the sessions with no owner: those of a local agent, and those recorded before
    /// owners existed).
    pub fn session_owner(&self) -> Option<&str> {
        match self.0.as_str() {
            Self::UNNAMED | Self::ANONYMOUS => None,
            name => Some(name),
        }
    }
}

/// Decides whether a request may reach the agent, from its headers.
///
/// Implement it for anything the bearer token does not cover (mTLS identities forwarded by a
/// proxy, signed cookies, an SSO header). It runs on every request to `/acp` (POST, GET, the
/// WebSocket upgrade and DELETE); `None` answers 401.
pub trait Authenticator: Send + Sync + 'static {
    /// The caller's identity, or `None` to refuse the request (401).
    fn authenticate(&self, headers: &HeaderMap) -> Option<Identity>;
}

/// The default authenticator: one shared secret sent as `Authorization: Bearer <token>`.
///
/// Compared in constant time. Every holder of the token is the same [`Identity`]
/// ([`Identity::UNNAMED`]): they share its sessions in a session store, and one who learns
/// another's connection id may end it. Give different users different tokens with
/// [`BearerTokens`], or their own credentials with your own [`Authenticator`].
#[derive(Clone)]
pub struct BearerToken {
    token: Arc<str>,
}

impl BearerToken {
    /// A bearer token authenticator. Surrounding whitespace (a token file's trailing newline)
    /// is trimmed. Fails on an empty token, which would let everyone in.
    pub fn new(token: impl AsRef<str>) -> Result<Self, crate::Error> {
        let token = token.as_ref().trim();
        if token.is_empty() {
            return Err(crate::Error::Config("the bearer token is empty".into()));
        }
        Ok(BearerToken {
            token: token.into(),
        })
    }
}

impl fmt::Debug for BearerToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("BearerToken(<redacted>)")
    }
}

impl Authenticator for BearerToken {
    fn authenticate(&self, headers: &HeaderMap) -> Option<Identity> {
        let value = headers.get(AUTHORIZATION)?.as_bytes();
        let presented = value
            .strip_prefix(b"Bearer ")
            .or_else(|| value.strip_prefix(b"bearer "))?;
        constant_time_eq(presented, self.token.as_bytes())
            .then(|| Identity(Identity::UNNAMED.into()))
    }
}

/// No credential at all: allowed only on a loopback address (the server refuses to start
/// otherwise), for local development and tests.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoAuth;

impl Authenticator for NoAuth {
    fn authenticate(&self, _headers: &HeaderMap) -> Option<Identity> {
        Some(Identity(Identity::ANONYMOUS.into()))
    }
}

/// Several bearer tokens, each naming its own [`Identity`]: the text of a token file, one
/// `NAME:TOKEN` a line (`acp serve --token-file`).
///
/// * `NAME:TOKEN`: the identity `NAME` (letters, digits, `.`, `_`, `-`), holding `TOKEN`
///   (surrounding whitespace trimmed). The name is split at the first `:`, so a token may
///   hold colons.
/// * A line without a colon is the one unnamed token ([`Identity::UNNAMED`], what
///   [`BearerToken`] gives; a file of one such line is the token file of before names).
/// * Blank lines and lines starting with `#` are skipped.
///
/// A malformed line (an empty name or token, a name with another character, a name or a
/// token given twice, a second line without a name, the reserved names `bearer` and
/// `anonymous`) is an error naming its line number and never the token. A presented token is
/// compared in constant time with every token of the set.
///
/// Clones share the set: [`BearerTokens::reload`] on one (on `SIGHUP`, say) changes what
/// every clone accepts, for the next request; connections already open keep their identity.
#[derive(Clone)]
pub struct BearerTokens {
    set: Arc<RwLock<Arc<[TokenEntry]>>>,
}

/// One token of a [`BearerTokens`] set and whom it names.
struct TokenEntry {
    token: Box<[u8]>,
    identity: Identity,
}

impl BearerTokens {
    /// The set of a token file's text; an error names the first malformed line.
    pub fn parse(text: &str) -> Result<Self, crate::Error> {
        Ok(BearerTokens {
            set: Arc::new(RwLock::new(parse_token_lines(text)?)),
        })
    }

    /// One unnamed token (as [`BearerToken::new`]: trimmed, not empty).
    pub fn single(token: impl AsRef<str>) -> Result<Self, crate::Error> {
        let token = token.as_ref().trim();
        if token.is_empty() {
            return Err(crate::Error::Config("the bearer token is empty".into()));
        }
        let entry = TokenEntry {
            token: token.as_bytes().into(),
            identity: Identity(Identity::UNNAMED.into()),
        };
        Ok(BearerTokens {
            set: Arc::new(RwLock::new(Arc::from(vec![entry]))),
        })
    }

    /// Replaces the set with that of `text`, for the requests that come after. Text that
    /// does not parse changes nothing (the old set stays) and is the error.
    pub fn reload(&self, text: &str) -> Result<(), crate::Error> {
        let fresh = parse_token_lines(text)?;
        *self.set.write().unwrap_or_else(|p| p.into_inner()) = fresh;
        Ok(())
    }

    /// The names of the set's named identities, in the file's order (never a token).
    pub fn names(&self) -> Vec<String> {
        self.current()
            .iter()
            .filter_map(|e| e.identity.session_owner().map(str::to_owned))
            .collect()
    }

    /// How many tokens the set holds.
    pub fn len(&self) -> usize {
        self.current().len()
    }

    /// Whether the set holds no token (never, for a set that parsed).
    pub fn is_empty(&self) -> bool {
        self.current().is_empty()
    }

    fn current(&self) -> Arc<[TokenEntry]> {
        self.set.read().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

impl fmt::Debug for BearerTokens {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BearerTokens")
            .field("names", &self.names())
            .field("tokens", &"<redacted>")
            .finish()
    }
}

impl Authenticator for BearerTokens {
    fn authenticate(&self, headers: &HeaderMap) -> Option<Identity> {
        let value = headers.get(AUTHORIZATION)?.as_bytes();
        let presented = value
            .strip_prefix(b"Bearer ")
            .or_else(|| value.strip_prefix(b"bearer "))?;
        // Every token is compared, the match or not: the time says nothing of which one.
        let set = self.current();
        let mut found = None;
        for entry in set.iter() {
            if constant_time_eq(presented, &entry.token) {
                found = Some(&entry.identity);
            }
        }
        found.cloned()
    }
}

/// Whether `name` is a valid identity name: `[A-Za-z0-9._-]+`.
fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

fn parse_token_lines(text: &str) -> Result<Arc<[TokenEntry]>, crate::Error> {
    let bad = |line: usize, why: &str| crate::Error::Config(format!("line {line}: {why}"));
    let mut entries = Vec::new();
    // Name or token -> the line that gave it, for the duplicate errors.
    let mut names: HashMap<String, usize> = HashMap::new();
    let mut tokens: HashMap<Vec<u8>, usize> = HashMap::new();
    let mut unnamed: Option<usize> = None;
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (identity, token) = match line.split_once(':') {
            None => {
                if let Some(first) = unnamed {
                    return Err(bad(
                        n,
                        &format!(
                            "a second token without a name (the first is on line {first});                              write further tokens as NAME:TOKEN"
                        ),
                    ));
                }
                unnamed = Some(n);
                (Identity(Identity::UNNAMED.into()), line)
            }
            Some((name, token)) => {
                if name.is_empty() {
                    return Err(bad(n, "the name before `:` is empty (expected NAME:TOKEN)"));
                }
                // The name is never echoed: a line that is all token may have a colon in it.
                if !valid_name(name) {
                    return Err(bad(
                        n,
                        "the name before `:` has a character other than A-Z, a-z, 0-9, `.`, `_`                          and `-`",
                    ));
                }
                if name == Identity::UNNAMED || name == Identity::ANONYMOUS {
                    return Err(bad(
                        n,
                        &format!(
                            "the name `{name}` is reserved (it is the identity of a token                              without a name)"
                        ),
                    ));
                }
                if let Some(first) = names.insert(name.to_owned(), n) {
                    return Err(bad(
                        n,
                        &format!("the name `{name}` is given twice (also on line {first})"),
                    ));
                }
                let token = token.trim();
                if token.is_empty() {
                    return Err(bad(n, &format!("the token of `{name}` is empty")));
                }
                (Identity(name.to_owned()), token)
            }
        };
        if let Some(first) = tokens.insert(token.as_bytes().to_vec(), n) {
            return Err(bad(
                n,
                &format!("the same token as on line {first}: each identity needs its own"),
            ));
        }
        entries.push(TokenEntry {
            token: token.as_bytes().into(),
            identity,
        });
    }
    if entries.is_empty() {
        return Err(crate::Error::Config(
            "no token in it: it is empty or only comments (expected one NAME:TOKEN a line, \
             or a single TOKEN)"
                .into(),
        ));
    }
    Ok(Arc::from(entries))
}

/// Equal lengths and equal bytes, in a time that depends only on the lengths.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The bounds on what one remote peer, and all of them, can make the server hold.
///
/// Each bound, when hit, gets a clear answer: an HTTP status (413, 503, 408), a JSON-RPC
/// error on the connection's stream, or a WebSocket close code. Nothing is dropped silently.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Limits {
    /// Largest POST body or WebSocket message, in bytes (413 over HTTP, close code 1009 over
    /// WebSocket). Also the longest line an agent may write: a longer one ends the connection
    /// (each of the client's requests waiting for an answer gets a JSON-RPC error `-32000`
    /// naming the limit, and the agent is ended), since the answer it carried is lost.
    pub max_message_bytes: usize,
    /// ACP connections open at once, over both profiles (503 for the next `initialize` or
    /// upgrade).
    pub max_connections: usize,
    /// Sessions one connection may create or load (a JSON-RPC error `-32000` answers the
    /// next `session/new`, `session/load` or `session/resume`).
    pub max_sessions_per_connection: usize,
    /// A connection with no request and no open stream for this long is closed (its agent
    /// ended).
    pub idle_timeout: Duration,
    /// Bytes of agent output one connection may hold for its client. At it the server stops
    /// reading the agent's output until the client takes some (backpressure: the agent's
    /// writes wait, nothing is dropped and the connection stays).
    pub max_buffered_bytes: usize,
    /// How long a connection held at [`Limits::max_buffered_bytes`] waits for its client to
    /// take any output: a client that takes none for this long has stopped reading (or never
    /// opened the stream the output is for), and its connection is closed.
    pub max_output_stall: Duration,
    /// TCP connections open at once; past it new sockets are closed at once.
    pub max_sockets: usize,
    /// Time a client has to send a request's headers (slow-loris guard).
    pub header_timeout: Duration,
    /// Time a client has to send a POST body once its headers arrived (408 after).
    pub body_timeout: Duration,
    /// Time the agent has to answer `initialize` (504 after, the connection is dropped).
    pub initialize_timeout: Duration,
    /// Over WebSocket: after this long without a frame from the client the server sends a
    /// ping, and a client that sends nothing (not even the pong every WebSocket library
    /// answers with) for another such interval is gone: its connection is closed (1001) and
    /// its agent ended, instead of a half-open TCP connection holding them until the idle
    /// timeout.
    pub websocket_ping_interval: Duration,
    /// Requests and notifications one connection may send per second, with bursts of up to
    /// as many: past it a POST is answered `429` (with `Retry-After`) and a WebSocket
    /// message with a JSON-RPC error, and the message is not forwarded, so one client cannot
    /// flood its agent (or a gateway's child) faster than it can work. Answers to the
    /// agent's requests are never held back.
    pub max_messages_per_second: u32,
    /// How long one write to a client's socket may wait (its kernel buffers full: a client
    /// that stopped reading its WebSocket or SSE stream). Past it the socket is closed, and
    /// the task and memory writing to it released: a WebSocket's connection ends (its agent
    /// with it); an SSE stream ends, and its connection stays for the client to reopen it
    /// (within [`Limits::max_output_stall`] if output is waiting for it). The clock runs only
    /// while a write waits, so a slow but steady reader is never cut off.
    pub write_timeout: Duration,
    /// Bytes of a connection's messages waiting for its agent to read them (the queue between
    /// the client's requests and the agent's input). A message that does not fit while others
    /// wait is refused: a request or notification with `429` (and `Retry-After: 1`) over
    /// HTTP, or a JSON-RPC error `-32000` over WebSocket, and not forwarded; an answer to the
    /// agent's own request waits for room instead (the agent is waiting for it). One message
    /// always fits in an empty queue, whatever its size (up to
    /// [`Limits::max_message_bytes`]).
    pub max_inbound_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_message_bytes: 4 * 1024 * 1024,
            max_connections: 256,
            max_sessions_per_connection: 64,
            idle_timeout: Duration::from_secs(600),
            max_buffered_bytes: 16 * 1024 * 1024,
            max_output_stall: Duration::from_secs(60),
            max_sockets: 1024,
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(30),
            initialize_timeout: Duration::from_secs(30),
            websocket_ping_interval: Duration::from_secs(30),
            max_messages_per_second: 1000,
            write_timeout: Duration::from_secs(30),
            max_inbound_bytes: 8 * 1024 * 1024,
        }
    }
}

impl Limits {
    /// The defaults: 4 MiB messages, 256 connections, 64 sessions per connection, 10 minutes
    /// idle, 16 MiB buffered per connection (then the agent waits, for up to 60 s of a
    /// client taking nothing), 1024 sockets, 10 s for headers, 30 s for a body
    /// and for `initialize`, a WebSocket ping after 30 s of silence, 1000 messages a second
    /// per connection, 30 s for a write to a client's socket, 8 MiB of a connection's messages
    /// waiting for its agent.
    pub fn new() -> Self {
        Self::default()
    }
}

/// A token bucket: `rate` tokens a second, at most `rate` held (a second's burst).
#[derive(Debug)]
pub(crate) struct RateBucket {
    rate: f64,
    tokens: f64,
    last: std::time::Instant,
}

impl RateBucket {
    pub(crate) fn new(per_second: u32) -> Self {
        let rate = f64::from(per_second.max(1));
        RateBucket {
            rate,
            tokens: rate,
            last: std::time::Instant::now(),
        }
    }

    /// Takes one token if there is one.
    pub(crate) fn take(&mut self) -> bool {
        let now = std::time::Instant::now();
        let refill = now.duration_since(self.last).as_secs_f64() * self.rate;
        self.tokens = (self.tokens + refill).min(self.rate);
        self.last = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

/// The browser origins allowed to call (CORS). Empty: any request carrying an `Origin`
/// header is refused with 403, so a web page the user visits cannot drive their agent.
#[derive(Clone, Debug, Default)]
pub(crate) struct Origins(pub(crate) Vec<String>);

impl Origins {
    /// Whether a request with these headers may go on: no `Origin` (not a browser, or a
    /// same-origin navigation), or a listed one.
    pub(crate) fn allows(&self, headers: &HeaderMap) -> Result<Option<String>, ()> {
        let Some(origin) = headers.get(hyper::header::ORIGIN) else {
            return Ok(None);
        };
        let origin = origin.to_str().map_err(|_| ())?;
        if self.0.iter().any(|o| o == origin) {
            Ok(Some(origin.to_owned()))
        } else {
            Err(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hyper::header::HeaderValue;

    fn with_auth(value: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(AUTHORIZATION, HeaderValue::from_str(value).unwrap());
        h
    }

    #[test]
    fn bearer_token_accepts_only_the_exact_token() {
        let auth = BearerToken::new("s3cret\n").unwrap();
        assert!(auth.authenticate(&with_auth("Bearer s3cret")).is_some());
        assert!(auth.authenticate(&with_auth("Bearer s3cre")).is_none());
        assert!(auth.authenticate(&with_auth("Bearer s3cret2")).is_none());
        assert!(auth.authenticate(&with_auth("Basic s3cret")).is_none());
        assert!(auth.authenticate(&HeaderMap::new()).is_none());
    }

    #[test]
    fn an_empty_token_is_refused() {
        assert!(BearerToken::new("  \n").is_err());
    }

    fn who(auth: &BearerTokens, token: &str) -> Option<String> {
        auth.authenticate(&with_auth(&format!("Bearer {token}")))
            .map(|i| i.0)
    }

    fn error(text: &str) -> String {
        match BearerTokens::parse(text) {
            Ok(set) => panic!("{text:?} parsed: {set:?}"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn a_token_file_names_an_identity_per_line() {
        let text = "# the team\n\nalice:tok-a\n  bob:tok:b  \nshared-one\n\n# end\n";
        let auth = BearerTokens::parse(text).unwrap();
        assert_eq!(who(&auth, "tok-a").as_deref(), Some("alice"));
        // Split at the first colon: a token may hold colons.
        assert_eq!(who(&auth, "tok:b").as_deref(), Some("bob"));
        assert_eq!(who(&auth, "shared-one").as_deref(), Some(Identity::UNNAMED));
        for wrong in ["tok", "tok-a2", "alice:tok-a", "alice", "", "# the team"] {
            assert_eq!(who(&auth, wrong), None, "{wrong:?}");
        }
        assert!(auth.authenticate(&with_auth("Basic tok-a")).is_none());
        assert_eq!(auth.names(), ["alice", "bob"]);
        assert_eq!(auth.len(), 3);
    }

    #[test]
    fn a_file_of_one_bare_token_is_the_unnamed_identity_as_before() {
        let auth = BearerTokens::parse("s3cret\n").unwrap();
        assert_eq!(who(&auth, "s3cret").as_deref(), Some(Identity::UNNAMED));
        assert!(auth.names().is_empty());
        let single = BearerTokens::single(" s3cret\n").unwrap();
        assert_eq!(who(&single, "s3cret").as_deref(), Some(Identity::UNNAMED));
        assert!(BearerTokens::single(" \n").is_err());
    }

    #[test]
    fn malformed_lines_are_named_by_number_without_the_token() {
        let cases = [
            (
                "alice:a\n:secret-x\n",
                "line 2:",
                "name before `:` is empty",
            ),
            ("alice:\n", "line 1:", "token of `alice` is empty"),
            ("alice:   \n", "line 1:", "token of `alice` is empty"),
            ("# c\nal ice:secret-x\n", "line 2:", "character other than"),
            ("al/ice:secret-x\n", "line 1:", "character other than"),
            ("élise:secret-x\n", "line 1:", "character other than"),
            (
                "alice:a\nbob:b\nalice:secret-x\n",
                "line 3:",
                "`alice` is given twice (also on line 1)",
            ),
            (
                "alice:secret-x\n\nbob:secret-x\n",
                "line 3:",
                "same token as on line 1",
            ),
            (
                "secret-x\nbob:secret-x\n",
                "line 2:",
                "same token as on line 1",
            ),
            (
                "secret-x\nsecret-y\n",
                "line 2:",
                "second token without a name (the first is on line 1)",
            ),
            ("bearer:secret-x\n", "line 1:", "`bearer` is reserved"),
            ("anonymous:secret-x\n", "line 1:", "`anonymous` is reserved"),
        ];
        for (text, line, why) in cases {
            let e = error(text);
            assert!(e.starts_with(line), "{text:?}: {e}");
            assert!(e.contains(why), "{text:?}: {e}");
            assert!(!e.contains("secret"), "{text:?}: the token is echoed: {e}");
        }
        for empty in ["", "\n\n", "# only comments\n  # and more\n"] {
            assert!(error(empty).contains("no token"), "{empty:?}");
        }
    }

    #[test]
    fn a_reload_takes_effect_for_the_next_request_and_a_bad_one_keeps_the_old_set() {
        let auth = BearerTokens::parse("alice:tok-a\n").unwrap();
        let shared = auth.clone();
        auth.reload("alice:tok-a2\ncarol:tok-c\n").unwrap();
        assert_eq!(who(&shared, "tok-a"), None);
        assert_eq!(who(&shared, "tok-a2").as_deref(), Some("alice"));
        assert_eq!(who(&shared, "tok-c").as_deref(), Some("carol"));
        let e = auth.reload("alice:tok-a3\nalice:tok-x\n").unwrap_err();
        assert!(e.to_string().starts_with("line 2:"), "{e}");
        assert_eq!(who(&shared, "tok-a2").as_deref(), Some("alice"));
        assert_eq!(who(&shared, "tok-a3"), None);
    }

    #[test]
    fn the_unnamed_identities_own_the_sessions_with_no_owner() {
        assert_eq!(Identity(Identity::UNNAMED.into()).session_owner(), None);
        assert_eq!(Identity(Identity::ANONYMOUS.into()).session_owner(), None);
        assert_eq!(Identity("alice".into()).session_owner(), Some("alice"));
    }

    #[test]
    fn the_token_is_not_printed() {
        let tokens = BearerTokens::parse("alice:s3cret\n").unwrap();
        let shown = format!("{tokens:?}");
        assert!(
            !shown.contains("s3cret") && shown.contains("alice"),
            "{shown}"
        );
        let auth = BearerToken::new("s3cret").unwrap();
        assert!(!format!("{auth:?}").contains("s3cret"));
    }
}
