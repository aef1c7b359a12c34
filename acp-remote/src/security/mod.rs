//! Security: who may call ([`Authenticator`], [`BearerToken`], [`BearerTokens`] for several
//! named identities), from which browser origins,
//! and how much ([`Limits`]). The server is secure by default: every request on `/acp` needs
//! a credential, cross-origin browser requests are refused unless their origin is listed, and
//! every resource a remote peer can make the server hold has a bound.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, RwLock};

use hyper::HeaderMap;
use hyper::header::AUTHORIZATION;

mod limits;

pub use limits::Limits;
pub(crate) use limits::RateBucket;

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
mod tests;
