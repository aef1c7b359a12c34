//! What a remote client may ask a hosted agent to start or reach: the MCP servers of its
//! `session/new`, `session/load` and `session/resume` ([`McpPolicy`]).
//!
//! An editor on the same machine as its agent names MCP servers the user configured; a
//! remote client of a hosted agent is someone else, and each server it names is a command
//! the host would run or an address the host would connect to. So, by default:
//!
//! - **stdio servers** are refused unless their `command` is exactly one the operator
//!   allowed ([`McpPolicy::allow_command`]); the arguments are the client's, and so is the
//!   environment, except the dynamic loader's variables (`LD_*`, `DYLD_*`) and the start-up
//!   variables of common interpreters ([`REFUSED_ENV`]), which would run other code in an
//!   allowed program.
//! - **http and sse servers** are refused when their address is loopback, link-local,
//!   private, shared (CGNAT), unspecified, multicast or reserved ([`refused_address`]), in
//!   any spelling (`http://2130706433/`, `http://0x7f.1/`, `http://[::ffff:127.0.0.1]/`), or
//!   when their host name resolves to such an address or to nothing, unless their URL is under
//!   a prefix the operator allowed ([`McpPolicy::allow_url`]). Prefixes are compared on the
//!   parsed URL (scheme, host, port, then path segments), so `http://good.example@evil/` is
//!   `evil`. Only `http://` and `https://` are taken.
//! - **acp servers** (MCP over ACP) pass: they are served by the client itself over its own
//!   connection.
//! - Any other entry (an unknown `type`, a malformed server) is refused.
//! - At most [`McpPolicy::max_servers`] servers per request ([`DEFAULT_MAX_SERVERS`]).
//!
//! The operator's own servers ([`McpPolicy::host_server`]) are not subject to the policy:
//! the host adds them to every session itself.
//!
//! A refusal is a [`PolicyError`] whose message names the server and the `acp serve` flag
//! that would allow it; [`PolicyError::to_error`] makes it the JSON-RPC error `-32602`.
//!
//! Checking the request is not enough where the agent connects later: a name may resolve
//! elsewhere by then (DNS rebinding), and a server may redirect. The connector's HTTP client
//! (feature `mcp-http`) given the policy in [`McpConfig::policy`](super::McpConfig::policy)
//! checks every address it connects to and every redirect against it.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::PathBuf;
use std::time::Duration;

use url::{Host, Url};

use crate::types::McpServer;

/// The servers one request may name by default (the operator's own not counted).
pub const DEFAULT_MAX_SERVERS: usize = 8;

/// How long resolving one server's host name may take before it counts as unresolvable.
pub const RESOLVE_TIMEOUT: Duration = Duration::from_secs(5);

/// Environment variables a remote client may not set for a stdio server: they make an
/// allowed program load or run other code (besides every `LD_*` and `DYLD_*`).
pub const REFUSED_ENV: &[&str] = &[
    "BASH_ENV",
    "ENV",
    "NODE_OPTIONS",
    "NODE_PATH",
    "PERL5LIB",
    "PERL5OPT",
    "PERLLIB",
    "PYTHONHOME",
    "PYTHONPATH",
    "PYTHONSTARTUP",
    "PYTHONINSPECT",
    "RUBYLIB",
    "RUBYOPT",
    "JAVA_TOOL_OPTIONS",
    "_JAVA_OPTIONS",
    "GIT_CONFIG_GLOBAL",
    "GIT_EXEC_PATH",
    "PATH",
];

/// Why a request's MCP servers were refused (see the [module docs](self)).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PolicyError {
    /// One server is not allowed; the message names it and the flag that would allow it.
    #[error("{0}")]
    Refused(String),
    /// More servers than [`McpPolicy::max_servers`].
    #[error(
        "{given} MCP servers in one request; this host takes at most {max} per session \
         (acp serve --mcp-max-servers)"
    )]
    TooMany {
        /// How many the request named.
        given: usize,
        /// The bound.
        max: usize,
    },
    /// An operator's setting is unusable (an `allow_url` prefix that is not a URL).
    #[error("{0}")]
    Config(String),
}

impl PolicyError {
    /// The JSON-RPC error a refused request gets: `-32602` (invalid params) with this
    /// message.
    pub fn to_error(&self) -> crate::Error {
        crate::Error::invalid_params(self.to_string())
    }
}

/// Which MCP servers a remote client may have a hosted agent start or reach (see the
/// [module docs](self)). [`McpPolicy::default`] is the policy for remote clients: no stdio
/// server, no non-public address.
#[derive(Clone, Debug)]
pub struct McpPolicy {
    commands: Vec<PathBuf>,
    prefixes: Vec<UrlPrefix>,
    host_servers: Vec<McpServer>,
    max_servers: usize,
}

impl Default for McpPolicy {
    fn default() -> Self {
        Self {
            commands: Vec::new(),
            prefixes: Vec::new(),
            host_servers: Vec::new(),
            max_servers: DEFAULT_MAX_SERVERS,
        }
    }
}

impl McpPolicy {
    /// The default policy (same as [`McpPolicy::default`]).
    pub fn new() -> Self {
        Self::default()
    }

    /// Allows stdio servers whose `command` is exactly `path` (give the absolute path of
    /// the program; the arguments are the client's). Allow an MCP server, never a shell or
    /// an interpreter: its arguments would be a program of the client's.
    pub fn allow_command(mut self, path: impl Into<PathBuf>) -> Self {
        self.commands.push(path.into());
        self
    }

    /// Allows http and sse servers whose URL is under `prefix` (`https://mcp.example.com/`,
    /// `http://127.0.0.1:9000/mcp`), whatever address it has. `Err` when `prefix` is not an
    /// `http://` or `https://` URL, or has a user, query or fragment.
    pub fn allow_url(mut self, prefix: &str) -> Result<Self, PolicyError> {
        self.prefixes.push(UrlPrefix::parse(prefix)?);
        Ok(self)
    }

    /// Adds a server of the operator's to every session; it is not checked.
    pub fn host_server(mut self, server: McpServer) -> Self {
        self.host_servers.push(server);
        self
    }

    /// Sets how many servers one request may name ([`DEFAULT_MAX_SERVERS`]); the host's
    /// own servers are not counted.
    pub fn max_servers(mut self, max: usize) -> Self {
        self.max_servers = max;
        self
    }

    /// The operator's servers, added to every session.
    pub fn host_servers(&self) -> &[McpServer] {
        &self.host_servers
    }

    /// Checks a request's servers, resolving the host names of http and sse servers (each
    /// within [`RESOLVE_TIMEOUT`]). Needs a tokio runtime.
    pub async fn check(&self, servers: &[McpServer]) -> Result<(), PolicyError> {
        if servers.len() > self.max_servers {
            return Err(PolicyError::TooMany {
                given: servers.len(),
                max: self.max_servers,
            });
        }
        for server in servers {
            self.check_server(server).await?;
        }
        Ok(())
    }

    /// Checks a request's servers as JSON (what a transport reads off the wire, in either
    /// spelling a client may send), as [`McpPolicy::check`] does; an entry that does not
    /// read as an MCP server is refused.
    pub async fn check_json(&self, servers: &serde_json::Value) -> Result<(), PolicyError> {
        let Some(list) = servers.as_array() else {
            return Err(PolicyError::Refused(
                "mcpServers is not a list of MCP servers".into(),
            ));
        };
        // The bound first: its error does not depend on what the entries hold.
        if list.len() > self.max_servers {
            return Err(PolicyError::TooMany {
                given: list.len(),
                max: self.max_servers,
            });
        }
        let mut read = Vec::with_capacity(list.len());
        for entry in list {
            match serde_json::from_value::<McpServer>(entry.clone()) {
                Ok(server) => {
                    ambiguous(entry, &server)?;
                    read.push(server);
                }
                Err(e) => {
                    let name = entry.get("name").and_then(|n| n.as_str()).unwrap_or("?");
                    return Err(PolicyError::Refused(format!(
                        "MCP server {name:?} is not a valid MCP server entry: {e}"
                    )));
                }
            }
        }
        self.check(&read).await
    }

    async fn check_server(&self, server: &McpServer) -> Result<(), PolicyError> {
        match server {
            McpServer::Stdio(s) => self.check_command(&s.name, &s.command, &s.env),
            McpServer::Http(s) => self.check_url(&s.name, &s.url).await,
            McpServer::Sse(s) => self.check_url(&s.name, &s.url).await,
            McpServer::Unknown(v) if v.get("type").and_then(|t| t.as_str()) == Some("acp") => {
                Ok(())
            }
            McpServer::Unknown(v) => {
                let name = v.get("name").and_then(|n| n.as_str()).unwrap_or("?");
                Err(PolicyError::Refused(format!(
                    "MCP server {name:?} is not a server this host knows how to check; refused"
                )))
            }
            // `acp` servers (MCP over ACP, when acp-types has the variant) are the client's own.
            #[allow(unreachable_patterns)]
            _ => Ok(()),
        }
    }

    fn check_command(
        &self,
        name: &str,
        command: &str,
        env: &[crate::types::EnvVariable],
    ) -> Result<(), PolicyError> {
        if !self.commands.iter().any(|c| c.as_os_str() == command) {
            return Err(PolicyError::Refused(format!(
                "MCP server {name:?}: a remote client's stdio servers are refused (command \
                 {command:?}); the host allows this program with --mcp-allow-command {command}"
            )));
        }
        for var in env {
            if refused_env(&var.name) {
                return Err(PolicyError::Refused(format!(
                    "MCP server {name:?}: the environment variable {} would run other code in \
                     {command:?}; refused",
                    var.name
                )));
            }
        }
        Ok(())
    }

    async fn check_url(&self, name: &str, url: &str) -> Result<(), PolicyError> {
        let parsed = self
            .check_url_now(url)
            .map_err(|why| refused_url(name, url, &why))?;
        let Some(Host::Domain(host)) = parsed.host() else {
            return Ok(());
        };
        if self.allowed(&parsed) {
            return Ok(());
        }
        let port = parsed.port_or_known_default().unwrap_or(80);
        let host = host.trim_end_matches('.').to_owned();
        match resolve(&host, port).await {
            Err(why) => Err(refused_url(name, url, &why)),
            Ok(addrs) => match addrs.iter().find_map(|a| Some((a, refused_address(*a)?))) {
                Some((addr, kind)) => Err(refused_url(
                    name,
                    url,
                    &format!("{host} resolves to {addr}, a {kind} address"),
                )),
                None => Ok(()),
            },
        }
    }

    /// Checks `url` without resolving it: `Ok` with the parsed URL when it is allowed by a
    /// prefix or a host server, or is `http(s)://` to a host name (left to
    /// [`McpPolicy::connect_allowed`] at connect time) or to a public address; `Err` says
    /// why not. This is what a redirect is held to.
    pub fn check_url_now(&self, url: &str) -> Result<Url, String> {
        let parsed = Url::parse(url).map_err(|e| format!("not a URL ({e})"))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(format!(
                "the scheme {:?} is not http or https",
                parsed.scheme()
            ));
        }
        if self.allowed(&parsed) {
            return Ok(parsed);
        }
        let refused = match parsed.host() {
            None => Some("no host".to_owned()),
            Some(Host::Ipv4(ip)) => {
                refused_address(IpAddr::V4(ip)).map(|k| format!("a {k} address"))
            }
            Some(Host::Ipv6(ip)) => {
                refused_address(IpAddr::V6(ip)).map(|k| format!("a {k} address"))
            }
            Some(Host::Domain(d)) => {
                let d = d.trim_end_matches('.');
                (d == "localhost" || d.ends_with(".localhost") || d.is_empty())
                    .then(|| "a loopback name".to_owned())
            }
        };
        match refused {
            Some(why) => Err(why),
            None => Ok(parsed),
        }
    }

    /// Whether `url` is under an allowed prefix or is a host server's.
    pub fn allowed(&self, url: &Url) -> bool {
        self.prefixes.iter().any(|p| p.matches(url))
            || self.host_servers.iter().any(|s| {
                let own = match s {
                    McpServer::Http(h) => &h.url,
                    McpServer::Sse(h) => &h.url,
                    _ => return false,
                };
                Url::parse(own).is_ok_and(|own| UrlPrefix::exact(&own).matches(url))
            })
    }

    /// Whether the host may connect to `addr` for the host name `host`: any address when an
    /// allowed prefix or a host server names that host, else only public ones. For an HTTP
    /// client's resolver, so what a name resolves to at connect time is checked too.
    pub fn connect_allowed(&self, host: &str, addr: IpAddr) -> bool {
        let host = host.trim_end_matches('.');
        let named = |url: &Url| {
            url.host_str()
                .is_some_and(|h| h.trim_end_matches('.').eq_ignore_ascii_case(host))
        };
        let trusted = self.prefixes.iter().any(|p| named(&p.url))
            || self.host_servers.iter().any(|s| match s {
                McpServer::Http(h) => Url::parse(&h.url).is_ok_and(|u| named(&u)),
                McpServer::Sse(h) => Url::parse(&h.url).is_ok_and(|u| named(&u)),
                _ => false,
            });
        trusted || refused_address(addr).is_none()
    }
}

/// An entry another reader could take for another transport than this one does (a
/// `command` on an http server, a `url` on a stdio one, either on an `acp` one): an agent
/// behind a gateway reads the entry with its own parser, which must not find a command or an
/// address the check never saw.
fn ambiguous(entry: &serde_json::Value, server: &McpServer) -> Result<(), PolicyError> {
    let has = |key: &str| entry.get(key).is_some();
    let stdio = matches!(server, McpServer::Stdio(_));
    let web = matches!(server, McpServer::Http(_) | McpServer::Sse(_));
    if (has("command") && !stdio) || (has("url") && !web) {
        let name = entry.get("name").and_then(|n| n.as_str()).unwrap_or("?");
        return Err(PolicyError::Refused(format!(
            "MCP server {name:?} names both a command and a URL, or either with another \
             transport; refused"
        )));
    }
    Ok(())
}

fn refused_url(name: &str, url: &str, why: &str) -> PolicyError {
    PolicyError::Refused(format!(
        "MCP server {name:?}: {url} is refused ({why}); the host allows it with \
         --mcp-allow-url {url}"
    ))
}

fn refused_env(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    upper.starts_with("LD_") || upper.starts_with("DYLD_") || REFUSED_ENV.contains(&upper.as_str())
}

/// The addresses `host` resolves to, within [`RESOLVE_TIMEOUT`]; `Err` when none.
async fn resolve(host: &str, port: u16) -> Result<Vec<IpAddr>, String> {
    let lookup = tokio::net::lookup_host((host, port));
    match tokio::time::timeout(RESOLVE_TIMEOUT, lookup).await {
        Err(_) => Err(format!("{host} did not resolve within {RESOLVE_TIMEOUT:?}")),
        Ok(Err(e)) => Err(format!("{host} does not resolve: {e}")),
        Ok(Ok(addrs)) => {
            let addrs: Vec<IpAddr> = addrs.map(|a| a.ip()).collect();
            if addrs.is_empty() {
                return Err(format!("{host} resolves to no address"));
            }
            Ok(addrs)
        }
    }
}

/// What kind of address `ip` is when a remote client may not make the host reach it:
/// `loopback`, `link-local`, `private`, `shared (CGNAT)`, `unspecified`, `multicast`,
/// `broadcast` or `reserved`; `None` for a public address. IPv6 forms carrying an IPv4
/// address (mapped `::ffff:a.b.c.d`, compatible `::a.b.c.d`, NAT64 `64:ff9b::/96`, 6to4
/// `2002::/16`) are judged by that address.
pub fn refused_address(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => refused_v4(v4),
        IpAddr::V6(v6) => refused_v6(v6),
    }
}

fn refused_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, ..] = ip.octets();
    Some(match (a, b) {
        (0, _) => "unspecified",
        (127, _) => "loopback",
        (10, _) | (192, 168) => "private",
        (172, b) if (16..32).contains(&b) => "private",
        (169, 254) => "link-local",
        (100, b) if (64..128).contains(&b) => "shared (CGNAT)",
        (224..=239, _) => "multicast",
        (255, 255) if ip == Ipv4Addr::BROADCAST => "broadcast",
        (240..=255, _) => "reserved",
        _ => return None,
    })
}

fn refused_v6(ip: Ipv6Addr) -> Option<&'static str> {
    let s = ip.segments();
    if ip.is_unspecified() {
        return Some("unspecified");
    }
    if ip.is_loopback() {
        return Some("loopback");
    }
    let embedded =
        |hi: u16, lo: u16| Ipv4Addr::new((hi >> 8) as u8, hi as u8, (lo >> 8) as u8, lo as u8);
    // ::ffff:a.b.c.d (mapped) and ::a.b.c.d (compatible).
    if s[..5] == [0; 5] && (s[5] == 0xffff || s[5] == 0) {
        return refused_v4(embedded(s[6], s[7]));
    }
    // NAT64's well-known prefix.
    if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return refused_v4(embedded(s[6], s[7]));
    }
    // 6to4.
    if s[0] == 0x2002 {
        return refused_v4(embedded(s[1], s[2]));
    }
    Some(match s[0] {
        x if x & 0xffc0 == 0xfe80 => "link-local",
        x if x & 0xffc0 == 0xfec0 => "private",
        x if x & 0xfe00 == 0xfc00 => "private",
        x if x & 0xff00 == 0xff00 => "multicast",
        _ => return None,
    })
}

/// An allowed URL prefix, kept parsed.
#[derive(Clone, Debug)]
struct UrlPrefix {
    url: Url,
    /// Only this very URL (a host server's), not what lies under it.
    exact: bool,
}

impl UrlPrefix {
    fn parse(prefix: &str) -> Result<UrlPrefix, PolicyError> {
        let bad = |why: &str| PolicyError::Config(format!("--mcp-allow-url {prefix}: {why}"));
        let url = Url::parse(prefix).map_err(|e| bad(&format!("not a URL ({e})")))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(bad("only http:// and https:// URLs are MCP servers"));
        }
        if url.host().is_none() {
            return Err(bad("no host"));
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(bad("a prefix names no user"));
        }
        if url.query().is_some() || url.fragment().is_some() {
            return Err(bad("a prefix has no query or fragment"));
        }
        Ok(UrlPrefix { url, exact: false })
    }

    fn exact(url: &Url) -> UrlPrefix {
        UrlPrefix {
            url: url.clone(),
            exact: true,
        }
    }

    /// Same scheme, host (a trailing dot aside) and port, and a path under the prefix's
    /// path, by whole segments (`/mcp` takes `/mcp` and `/mcp/x`, not `/mcpx`).
    fn matches(&self, url: &Url) -> bool {
        let host = |u: &Url| {
            u.host_str()
                .map(|h| h.trim_end_matches('.').to_ascii_lowercase())
        };
        if url.scheme() != self.url.scheme()
            || host(url) != host(&self.url)
            || url.port_or_known_default() != self.url.port_or_known_default()
        {
            return false;
        }
        let (have, want) = (url.path(), self.url.path());
        if self.exact {
            return have == want && url.query() == self.url.query();
        }
        if want.ends_with('/') {
            return have.starts_with(want);
        }
        have == want
            || have
                .strip_prefix(want)
                .is_some_and(|rest| rest.starts_with('/'))
    }
}

#[cfg(test)]
mod tests;
