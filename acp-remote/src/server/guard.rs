//! The session guard: what a remote client's `session/new`, `session/load` and
//! `session/resume` (and `session/fork`, and the legacy dialects' `newSession` and
//! `loadSession`) may ask of the host, checked on the request's way to the agent, in process
//! or behind a gateway alike, before the agent sees it.
//!
//! - **MCP servers** (`mcpServers`, or `mcp_servers` as the crow dialect spells it) are held
//!   to an [`McpPolicy`] (on by default with [`McpPolicy::default`]: no stdio server, no
//!   address that is not public; see [`acp_agent::mcp::policy`]); the policy's host servers
//!   are then added to the request.
//! - **Directories**: with a served root ([`ServerBuilder::root`]), the `cwd` and every
//!   `additionalDirectories` entry must be an absolute path under it with no `..`
//!   component (compared as written, lexically: a symbolic link inside the root is the
//!   agent's to follow). With [`ServerBuilder::root_per_identity`], under
//!   `ROOT/<identity name>`, created on first use.
//!
//! A refused request is answered with the JSON-RPC error `-32602` saying why, and is not
//! forwarded; the connection goes on.

use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use acp_agent::mcp::McpPolicy;
use bytes::Bytes;
use serde_json::Value;

use super::ServerBuilder;
use crate::Error;
use crate::security::Identity;

/// The JSON-RPC code of a refused session request: invalid params.
pub(crate) const REFUSED_CODE: i64 = -32602;

/// The requests the guard reads.
const GUARDED: [&str; 6] = [
    "session/new",
    "session/load",
    "session/resume",
    "session/fork",
    "newSession",
    "loadSession",
];

/// What the builder was told (checked at `bind`).
#[derive(Debug)]
pub(crate) struct Settings {
    mcp: Option<McpPolicy>,
    root: Option<PathBuf>,
    per_identity: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            mcp: Some(McpPolicy::default()),
            root: None,
            per_identity: false,
        }
    }
}

impl Settings {
    /// The guard, or `None` when there is nothing to check; `Err` for a root that is not a
    /// directory.
    pub(crate) fn build(self) -> Result<Option<Arc<SessionGuard>>, Error> {
        if self.per_identity && self.root.is_none() {
            return Err(Error::Config(
                "a root per identity needs a served root".into(),
            ));
        }
        let root = match self.root {
            None => None,
            Some(dir) => {
                let canonical = std::fs::canonicalize(&dir)
                    .map_err(|e| Error::Config(format!("the root {}: {e}", dir.display())))?;
                if !canonical.is_dir() {
                    return Err(Error::Config(format!(
                        "the root {} is not a directory",
                        dir.display()
                    )));
                }
                let dir = std::path::absolute(&dir).unwrap_or_else(|_| canonical.clone());
                Some(Root {
                    dir,
                    canonical,
                    per_identity: self.per_identity,
                })
            }
        };
        if self.mcp.is_none() && root.is_none() {
            return Ok(None);
        }
        Ok(Some(Arc::new(SessionGuard {
            mcp: self.mcp,
            root,
        })))
    }
}

impl ServerBuilder {
    /// Holds the MCP servers of every session request of a remote client to `policy`
    /// (replacing the default, [`McpPolicy::default`]: no stdio server, no address that is
    /// not public), and adds the policy's host servers to each. See the
    /// [`acp_agent::mcp::policy`] module.
    pub fn mcp_policy(mut self, policy: McpPolicy) -> Self {
        self.guard.mcp = Some(policy);
        self
    }

    /// Passes remote clients' MCP servers to the agent unchecked: only for an agent that
    /// starts none, or clients as trusted as the host's own user.
    pub fn unchecked_mcp_servers(mut self) -> Self {
        self.guard.mcp = None;
        self
    }

    /// Refuses (`-32602`) a session request whose `cwd` or an `additionalDirectories`
    /// entry is not an absolute path under `dir` (with no `..` component). None by default.
    /// `bind` fails when `dir` is not a directory.
    pub fn root(mut self, dir: impl Into<PathBuf>) -> Self {
        self.guard.root = Some(dir.into());
        self
    }

    /// With [`ServerBuilder::root`]: each identity's sessions lie under `ROOT/<identity
    /// name>` instead, created on first use; an identity whose name is not a plain file name
    /// (letters, digits, `.`, `_`, `-`, not starting with `.`) is refused.
    pub fn root_per_identity(mut self) -> Self {
        self.guard.per_identity = true;
        self
    }
}

#[derive(Debug)]
struct Root {
    /// As given, made absolute.
    dir: PathBuf,
    /// With symbolic links resolved (a client may name either).
    canonical: PathBuf,
    per_identity: bool,
}

/// The checks of one server, shared by its connections.
#[derive(Debug)]
pub(crate) struct SessionGuard {
    mcp: Option<McpPolicy>,
    root: Option<Root>,
}

impl SessionGuard {
    /// Whether `method` is one the guard reads.
    pub(crate) fn guards(method: &str) -> bool {
        GUARDED.contains(&method)
    }

    /// Checks a session request of `who` and adds the host's MCP servers to it; `Err` is the
    /// refusal's message.
    pub(crate) async fn admit(&self, message: &mut Value, who: &Identity) -> Result<(), String> {
        let Some(params) = message.get_mut("params").and_then(Value::as_object_mut) else {
            // Nothing asked for: the agent answers the malformed request itself.
            return Ok(());
        };
        if let Some(root) = &self.root {
            let (dir, canonical) = root.of(who)?;
            if let Some(cwd) = params.get("cwd") {
                check_dir("cwd", cwd, &dir, &canonical)?;
            }
            for key in ["additionalDirectories", "additional_directories"] {
                match params.get(key) {
                    None | Some(Value::Null) => {}
                    Some(Value::Array(dirs)) => {
                        for d in dirs {
                            check_dir(key, d, &dir, &canonical)?;
                        }
                    }
                    Some(_) => return Err(format!("{key} is not a list of directories")),
                }
            }
        }
        if let Some(policy) = &self.mcp {
            let keys = ["mcpServers", "mcp_servers"];
            for key in keys {
                if let Some(servers) = params.get(key).filter(|v| !v.is_null()) {
                    policy
                        .check_json(servers)
                        .await
                        .map_err(|e| e.to_string())?;
                }
            }
            let added = policy.host_servers();
            if !added.is_empty() {
                let added: Vec<Value> = added
                    .iter()
                    .filter_map(|s| serde_json::to_value(s).ok())
                    .collect();
                let present: Vec<&str> = keys
                    .into_iter()
                    .filter(|k| params.get(*k).is_some_and(Value::is_array))
                    .collect();
                let targets = if present.is_empty() {
                    vec!["mcpServers"]
                } else {
                    present
                };
                for key in targets {
                    let list = params
                        .entry(key)
                        .or_insert_with(|| Value::Array(Vec::new()));
                    if let Value::Array(list) = list {
                        list.extend(added.iter().cloned());
                    }
                }
            }
        }
        Ok(())
    }
}

impl Root {
    /// The directory `who`'s sessions must lie in (as given and canonical), created on
    /// first use when per identity.
    fn of(&self, who: &Identity) -> Result<(PathBuf, PathBuf), String> {
        if !self.per_identity {
            return Ok((self.dir.clone(), self.canonical.clone()));
        }
        let Some(name) = who.dir_name() else {
            return Err(format!(
                "the identity {:?} is not a usable directory name under the served root {}",
                who.0,
                self.dir.display()
            ));
        };
        let canonical = self.canonical.join(name);
        std::fs::create_dir_all(&canonical).map_err(|e| {
            tracing::warn!(dir = %canonical.display(), %e, "cannot create an identity's root");
            format!("the served root of {name:?} cannot be created")
        })?;
        Ok((self.dir.join(name), canonical))
    }
}

/// `value` (the request's `key`) is an absolute path under `dir` or `canonical`, with no
/// `..` component.
fn check_dir(key: &str, value: &Value, dir: &Path, canonical: &Path) -> Result<(), String> {
    let Some(text) = value.as_str() else {
        return Err(format!("{key} is not a path"));
    };
    let path = Path::new(text);
    let outside = || {
        format!(
            "{key} {text} is not under the served root {} (acp serve --root)",
            dir.display()
        )
    };
    if !path.is_absolute() {
        return Err(format!(
            "{key} {text:?} is not an absolute path under the served root {}",
            dir.display()
        ));
    }
    if path.components().any(|c| c == Component::ParentDir) {
        return Err(outside());
    }
    if path.starts_with(dir) || path.starts_with(canonical) {
        Ok(())
    } else {
        Err(outside())
    }
}

/// The JSON-RPC error answering a refused session request `id`.
pub(crate) fn refusal(id: &Value, message: &str) -> Bytes {
    let error = serde_json::json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {"code": REFUSED_CODE, "message": message},
    });
    Bytes::from(error.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn guard(root: &Path, per_identity: bool) -> SessionGuard {
        let settings = Settings {
            mcp: Some(McpPolicy::default()),
            root: Some(root.to_owned()),
            per_identity,
        };
        Arc::into_inner(settings.build().unwrap().unwrap()).unwrap()
    }

    /// A directory under the system's temporary directory, removed when dropped.
    struct Scratch(PathBuf);

    impl std::ops::Deref for Scratch {
        type Target = Path;
        fn deref(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn scratch(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("acp-guard-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(std::fs::canonicalize(dir).unwrap())
    }

    async fn admit(guard: &SessionGuard, params: Value, who: &str) -> Result<Value, String> {
        let mut message =
            json!({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": params});
        guard.admit(&mut message, &Identity(who.into())).await?;
        Ok(message["params"].take())
    }

    #[tokio::test]
    async fn directories_must_lie_under_the_root() {
        let root = scratch("root");
        let g = guard(&root, false);
        let r = root.display();
        let ok = json!({"cwd": format!("{r}/project"), "mcpServers": [],
            "additionalDirectories": [format!("{r}/lib")]});
        admit(&g, ok, "a").await.unwrap();
        admit(&g, json!({"cwd": r.to_string()}), "a").await.unwrap();
        for (params, needle) in [
            (json!({"cwd": "/etc"}), "not under the served root"),
            (json!({"cwd": format!("{r}/../x")}), "not under"),
            (json!({"cwd": format!("{r}x")}), "not under"),
            (json!({"cwd": "project"}), "not an absolute path"),
            (json!({"cwd": 7}), "not a path"),
            (
                json!({"cwd": r.to_string(), "additionalDirectories": ["/tmp"]}),
                "additionalDirectories /tmp",
            ),
            (
                json!({"cwd": r.to_string(), "additional_directories": ["/"]}),
                "not under",
            ),
            (
                json!({"cwd": r.to_string(), "additionalDirectories": "/"}),
                "not a list",
            ),
        ] {
            let err = admit(&g, params.clone(), "a").await.unwrap_err();
            assert!(err.contains(needle), "{params}: {err}");
            assert!(
                err.contains(&r.to_string()) || needle.starts_with("not a"),
                "{err}"
            );
        }
    }

    #[tokio::test]
    async fn each_identity_has_its_own_root() {
        let root = scratch("per-identity");
        let g = guard(&root, true);
        let r = root.display();
        admit(&g, json!({"cwd": format!("{r}/alice/p")}), "alice")
            .await
            .unwrap();
        assert!(root.join("alice").is_dir());
        let err = admit(&g, json!({"cwd": format!("{r}/alice/p")}), "bob")
            .await
            .unwrap_err();
        assert!(err.contains("bob"), "{err}");
        for bad in ["", "..", ".hidden", "a/b", "a b"] {
            let err = admit(&g, json!({"cwd": format!("{r}/{bad}")}), bad)
                .await
                .unwrap_err();
            assert!(
                err.contains("not a usable directory name"),
                "{bad:?}: {err}"
            );
        }
    }

    #[tokio::test]
    async fn mcp_servers_are_checked_and_the_hosts_added() {
        let own = acp_agent::types::McpServer::Http(acp_agent::types::McpServerHttp::new(
            "own",
            "http://127.0.0.1:1/",
            [],
        ));
        let g = SessionGuard {
            mcp: Some(McpPolicy::default().host_server(own)),
            root: None,
        };
        let stdio = json!({"name": "x", "command": "/bin/sh", "args": [], "env": []});
        let err = admit(&g, json!({"cwd": "/", "mcpServers": [stdio.clone()]}), "a")
            .await
            .unwrap_err();
        assert!(err.contains("--mcp-allow-command"), "{err}");
        let err = admit(&g, json!({"cwd": "/", "mcp_servers": [stdio]}), "a")
            .await
            .unwrap_err();
        assert!(err.contains("--mcp-allow-command"), "{err}");
        let params = admit(&g, json!({"cwd": "/", "mcpServers": []}), "a")
            .await
            .unwrap();
        assert_eq!(params["mcpServers"][0]["name"], "own");
    }

    #[test]
    fn a_root_that_is_not_there_is_refused_at_bind() {
        let settings = Settings {
            mcp: None,
            root: Some("/no/such/root/here".into()),
            per_identity: false,
        };
        let err = settings.build().unwrap_err().to_string();
        assert!(err.contains("/no/such/root/here"), "{err}");
    }
}
