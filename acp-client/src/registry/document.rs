//! The registry document: `registry.json` as the registry's `registry.schema.json` and
//! `agent.schema.json` (v1) describe it, parsed and checked.
//!
//! Checked here: the document is JSON, an object with a `version` of major 1 and an `agents`
//! array; every entry has the required fields, an `id` of the schema's pattern
//! (`^[a-z][a-z0-9-]*$`, it names cache folders), a distribution of at least one kind,
//! binary targets of the schema's platform names, each with an `archive` URL and a `cmd`
//! that is a relative path without `..`. Fields this crate does not know are ignored, so a
//! later minor version of the schema still reads.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::RegistryError;

/// The largest registry document read (the official one is about 13 KB).
pub const MAX_DOCUMENT_BYTES: usize = 8 << 20;

/// The binary target names of the schema (`binaryDistribution.propertyNames`).
pub const PLATFORMS: [&str; 6] = [
    "darwin-aarch64",
    "darwin-x86_64",
    "linux-aarch64",
    "linux-x86_64",
    "windows-aarch64",
    "windows-x86_64",
];

/// The registry's target name for the platform this program was built for (`linux-x86_64`,
/// `darwin-aarch64`, ...), or `None` on one the registry has no name for.
pub fn current_platform() -> Option<&'static str> {
    let os = match std::env::consts::OS {
        "linux" => "linux",
        "macos" => "darwin",
        "windows" => "windows",
        _ => return None,
    };
    let name = format!("{os}-{}", std::env::consts::ARCH);
    PLATFORMS.into_iter().find(|p| *p == name)
}

/// A registry document: the agents (and extensions) it lists.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Registry {
    /// The registry schema's version (`1.0.0`).
    pub version: String,
    /// The agents.
    pub agents: Vec<AgentEntry>,
    /// The extensions (same shape as agents; `acp` does not run them).
    #[serde(default)]
    pub extensions: Vec<AgentEntry>,
}

/// One agent of the registry.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct AgentEntry {
    /// The unique id (`^[a-z][a-z0-9-]*$`), what `acp chat --agent ID` takes.
    pub id: String,
    /// The display name.
    pub name: String,
    /// The agent's release (semantic version).
    pub version: String,
    /// A line about the agent.
    pub description: String,
    /// Its source repository.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repository: Option<String>,
    /// Its authors.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub authors: Vec<String>,
    /// SPDX identifier or `proprietary`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub license: Option<String>,
    /// Its icon's URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icon: Option<String>,
    /// How to get and run it.
    pub distribution: Distribution,
}

/// The ways an agent is distributed; at least one is present.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Distribution {
    /// Archives per platform (`linux-x86_64` ...).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub binary: BTreeMap<String, BinaryTarget>,
    /// An npm package run with `npx`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub npx: Option<PackageDistribution>,
    /// A PyPI package run with `uvx`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uvx: Option<PackageDistribution>,
}

/// One platform's archive and the command inside it.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct BinaryTarget {
    /// Where the archive is (`.tar.gz`, `.tgz` or `.zip`).
    pub archive: String,
    /// The program to run, relative to the unpacked archive (`./codex-acp`).
    pub cmd: String,
    /// Its arguments.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// Environment variables to set for it.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// The archive's SHA-256 (hex), checked on download when present. The v1 schema has no
    /// checksum field yet; a registry (a private one, or a later schema) that carries one
    /// under this name gets it checked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
}

/// An `npx` or `uvx` package and how to run it.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct PackageDistribution {
    /// The package, with an optional version (`@google/gemini-cli@0.27.3`).
    pub package: String,
    /// Its arguments.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// Environment variables to set for it.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
}

impl Registry {
    /// Parses and checks a registry document. `Err` says whether it is not JSON, not a
    /// registry document (another schema), or which entry breaks which rule.
    pub fn from_json(bytes: &[u8]) -> Result<Registry, RegistryError> {
        if bytes.len() > MAX_DOCUMENT_BYTES {
            return Err(RegistryError::Document(format!(
                "the document is {} bytes, over the {MAX_DOCUMENT_BYTES} this client reads",
                bytes.len()
            )));
        }
        let value: serde_json::Value = serde_json::from_slice(bytes)
            .map_err(|e| RegistryError::Document(format!("not JSON: {e}")))?;
        let object = value.as_object().ok_or_else(|| {
            RegistryError::Document(
                "not an ACP agent registry: the document is not an object".into(),
            )
        })?;
        if !object.get("agents").is_some_and(|a| a.is_array()) {
            return Err(RegistryError::Document(
                "not an ACP agent registry: no `agents` array (registry schema v1)".into(),
            ));
        }
        let version = object.get("version").and_then(|v| v.as_str());
        let Some(version) = version else {
            return Err(RegistryError::Document(
                "not an ACP agent registry: no string `version` (registry schema v1)".into(),
            ));
        };
        if version.split('.').next() != Some("1") || !semver_like(version) {
            return Err(RegistryError::Document(format!(
                "registry schema version {version:?}: this client reads version 1.x.y"
            )));
        }
        let registry: Registry = serde_json::from_value(value)
            .map_err(|e| RegistryError::Document(format!("not of the registry schema v1: {e}")))?;
        let mut seen = std::collections::BTreeSet::new();
        for agent in &registry.agents {
            agent.check()?;
            if !seen.insert(agent.id.as_str()) {
                return Err(RegistryError::Document(format!(
                    "agent id `{}` is listed twice",
                    agent.id
                )));
            }
        }
        Ok(registry)
    }

    /// The agent with this id.
    pub fn agent(&self, id: &str) -> Option<&AgentEntry> {
        self.agents.iter().find(|a| a.id == id)
    }
}

/// `MAJOR.MINOR.PATCH` at the start, as the schema's `^[0-9]+\.[0-9]+\.[0-9]+` pattern.
fn semver_like(version: &str) -> bool {
    let mut parts = version.splitn(3, '.');
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let (Some(major), Some(minor), Some(rest)) = (parts.next(), parts.next(), parts.next()) else {
        return false;
    };
    let patch: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits(major) && digits(minor) && !patch.is_empty()
}

/// The schema's id pattern, `^[a-z][a-z0-9-]*$`.
pub(super) fn valid_id(id: &str) -> bool {
    let mut bytes = id.bytes();
    bytes.next().is_some_and(|b| b.is_ascii_lowercase())
        && bytes.all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

impl AgentEntry {
    fn check(&self) -> Result<(), RegistryError> {
        let bad = |why: String| {
            Err(RegistryError::Document(format!(
                "agent `{}`: {why}",
                self.id
            )))
        };
        if !valid_id(&self.id) || self.id.len() > 128 {
            return bad("the id is not of the pattern ^[a-z][a-z0-9-]*$".into());
        }
        if self.name.is_empty() {
            return bad("empty name".into());
        }
        if !semver_like(&self.version) {
            return bad(format!(
                "version {:?} is not MAJOR.MINOR.PATCH",
                self.version
            ));
        }
        let d = &self.distribution;
        if d.binary.is_empty() && d.npx.is_none() && d.uvx.is_none() {
            return bad("no distribution (binary, npx or uvx)".into());
        }
        for (platform, target) in &d.binary {
            if !PLATFORMS.contains(&platform.as_str()) {
                return bad(format!("unknown binary platform {platform:?}"));
            }
            if let Err(why) = command_path(&target.cmd) {
                return bad(format!("{platform}: cmd {:?}: {why}", target.cmd));
            }
            if target.archive.is_empty() {
                return bad(format!("{platform}: empty archive URL"));
            }
            if let Some(sum) = &target.sha256
                && !(sum.len() == 64 && sum.bytes().all(|b| b.is_ascii_hexdigit()))
            {
                return bad(format!("{platform}: sha256 is not 64 hex digits"));
            }
        }
        for (kind, package) in [("npx", &d.npx), ("uvx", &d.uvx)] {
            if let Some(p) = package
                && (p.package.is_empty() || p.package.starts_with('-'))
            {
                return bad(format!(
                    "{kind}: package {:?} is not a package name",
                    p.package
                ));
            }
        }
        Ok(())
    }
}

/// A binary target's `cmd` as a relative path inside the unpacked archive: `./x`, `bin/x`;
/// never absolute, never through `..`.
pub(super) fn command_path(cmd: &str) -> Result<std::path::PathBuf, &'static str> {
    use std::path::{Component, Path};
    let path = Path::new(cmd);
    let mut out = std::path::PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::Normal(part) => out.push(part),
            Component::ParentDir => return Err("goes out of the archive through `..`"),
            Component::RootDir | Component::Prefix(_) => return Err("is an absolute path"),
        }
    }
    if out.as_os_str().is_empty() {
        return Err("names no file");
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(agents: &str) -> String {
        format!(r#"{{"version": "1.0.0", "agents": [{agents}], "extensions": []}}"#)
    }

    const NPX: &str = r#"{"id": "gem", "name": "Gem", "version": "0.27.3", "description": "d",
        "distribution": {"npx": {"package": "@google/gemini-cli@0.27.3", "args": ["--experimental-acp"]}}}"#;

    #[test]
    fn a_registry_document_parses_with_its_entries() {
        let registry = Registry::from_json(doc(NPX).as_bytes()).unwrap();
        let gem = registry.agent("gem").unwrap();
        assert_eq!(
            gem.distribution.npx.as_ref().unwrap().args,
            ["--experimental-acp"]
        );
        assert!(registry.agent("other").is_none());
    }

    #[test]
    fn not_json_and_other_schemas_are_named_as_such() {
        let e = Registry::from_json(b"<html>oops</html>")
            .unwrap_err()
            .to_string();
        assert!(e.contains("not JSON"), "{e}");
        let e = Registry::from_json(br#"{"name": "x", "version": "1.0"}"#)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("not an ACP agent registry") || e.contains("1.x.y"),
            "{e}"
        );
        let e = Registry::from_json(br#"{"version": "2.0.0", "agents": []}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("1.x.y"), "{e}");
        let e = Registry::from_json(br#"{"version": "1.0.0", "servers": []}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("no `agents` array"), "{e}");
        let e = Registry::from_json(doc(r#"{"id": "x"}"#).as_bytes())
            .unwrap_err()
            .to_string();
        assert!(e.contains("not of the registry schema v1"), "{e}");
    }

    #[test]
    fn entries_that_would_escape_the_cache_are_refused() {
        let entry = |id: &str, cmd: &str| {
            doc(&format!(
                r#"{{"id": "{id}", "name": "A", "version": "1.0.0", "description": "d",
                "distribution": {{"binary": {{"linux-x86_64": {{"archive": "https://x/a.tar.gz", "cmd": "{cmd}"}}}}}}}}"#
            ))
        };
        assert!(Registry::from_json(entry("ok", "./bin/a").as_bytes()).is_ok());
        for (id, cmd, why) in [
            ("../up", "./a", "pattern"),
            ("Upper", "./a", "pattern"),
            ("a", "../a", "`..`"),
            ("a", "/bin/sh", "absolute"),
            ("a", ".", "names no file"),
        ] {
            let e = Registry::from_json(entry(id, cmd).as_bytes())
                .unwrap_err()
                .to_string();
            assert!(e.contains(why), "{id} {cmd}: {e}");
        }
    }

    #[test]
    fn a_duplicate_id_and_an_empty_distribution_are_refused() {
        let e = Registry::from_json(doc(&format!("{NPX},{NPX}")).as_bytes()).unwrap_err();
        assert!(e.to_string().contains("twice"), "{e}");
        let empty = r#"{"id": "e", "name": "E", "version": "1.0.0", "description": "d", "distribution": {}}"#;
        let e = Registry::from_json(doc(empty).as_bytes()).unwrap_err();
        assert!(e.to_string().contains("no distribution"), "{e}");
    }

    #[test]
    fn this_platform_has_a_registry_name_on_the_usual_targets() {
        if cfg!(all(target_os = "linux", target_arch = "x86_64")) {
            assert_eq!(current_platform(), Some("linux-x86_64"));
        }
    }
}
