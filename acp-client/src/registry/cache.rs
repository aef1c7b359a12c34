//! The cache directory: the fetched registry document, installed binary agents, and the
//! digests of every archive downloaded.
//!
//! ```text
//! CACHE/registry.json             the last fetched document (`acp agents update`)
//! CACHE/registry.source.json      where and when it was fetched
//! CACHE/agents/archives.json      archive URL -> SHA-256 of its first download
//! CACHE/agents/ID/KEY/            one install (KEY: the archive URL's hash)
//!                     install.json   what was installed, from where, its digest
//!                     files/         the unpacked archive
//! CACHE/agents/.partial-*         an install under way
//! ```
//!
//! An install is unpacked beside its final place and renamed into it only once the
//! download is complete, its checksum matches and the command is found in it, so a
//! download that stops halfway leaves nothing runnable.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use super::fetch::{Fetcher, sha256_hex};
use super::{BinaryTarget, Registry, RegistryError, command_path, unpack};

/// The cache directory of the registry's documents and agents.
#[derive(Clone, Debug)]
pub struct Cache {
    root: PathBuf,
}

/// Where and when the cached registry document was fetched.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Source {
    /// Its URL, or the file it was read from.
    pub url: String,
    /// When, in seconds since the Unix epoch.
    pub fetched: u64,
}

/// An installed binary agent, as `install.json` records it.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Installed {
    /// The agent's id.
    pub id: String,
    /// The agent's version at install time.
    pub version: String,
    /// The archive's URL.
    pub archive: String,
    /// The archive's SHA-256 (hex), as downloaded.
    pub sha256: String,
    /// The archive's size in bytes.
    pub size: u64,
    /// When, in seconds since the Unix epoch.
    pub installed: u64,
    /// The unpacked archive's directory.
    #[serde(skip)]
    pub dir: PathBuf,
}

impl Installed {
    /// The program of `target` inside this install, checked to be a file that stays inside
    /// the install once links are resolved.
    pub fn program(&self, target: &BinaryTarget) -> Result<PathBuf, RegistryError> {
        let rel = command_path(&target.cmd)
            .map_err(|why| RegistryError::Document(format!("cmd {:?} {why}", target.cmd)))?;
        let root =
            std::fs::canonicalize(&self.dir).map_err(|e| RegistryError::Io(e.to_string()))?;
        let program = std::fs::canonicalize(root.join(&rel)).map_err(|_| {
            RegistryError::Unpack(format!(
                "the archive has no {:?} (the registry's cmd)",
                target.cmd
            ))
        })?;
        if !program.starts_with(&root) {
            return Err(RegistryError::Unpack(format!(
                "{:?} leads out of the install through a link",
                target.cmd
            )));
        }
        if !program.is_file() {
            return Err(RegistryError::Unpack(format!(
                "{:?} is not a file",
                target.cmd
            )));
        }
        Ok(program)
    }
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn io(what: &str, path: &Path, e: std::io::Error) -> RegistryError {
    RegistryError::Io(format!("{what} {}: {e}", path.display()))
}

/// Writes `bytes` to `path` through a temporary file and a rename.
fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), RegistryError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| io("creating", dir, e))?;
    let tmp = dir.join(format!(
        ".{}.{}.tmp",
        path.file_name().and_then(|n| n.to_str()).unwrap_or("file"),
        std::process::id()
    ));
    std::fs::write(&tmp, bytes).map_err(|e| io("writing", &tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| io("renaming", &tmp, e))
}

/// Removes a directory on drop unless kept: an install that fails leaves nothing.
struct Partial(Option<PathBuf>);

impl Drop for Partial {
    fn drop(&mut self) {
        if let Some(dir) = self.0.take() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

impl Cache {
    /// A cache at `root` (created when first written).
    pub fn new(root: impl Into<PathBuf>) -> Cache {
        Cache { root: root.into() }
    }

    /// The user's cache: `$ACP_CACHE_DIR`, else `$XDG_CACHE_HOME/acp`, else
    /// `~/.cache/acp` (`%LOCALAPPDATA%\acp` on Windows).
    pub fn user() -> Option<Cache> {
        let var = |name| {
            std::env::var_os(name)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        if let Some(dir) = var("ACP_CACHE_DIR") {
            return Some(Cache::new(dir));
        }
        if let Some(dir) = var("XDG_CACHE_HOME") {
            return Some(Cache::new(dir.join("acp")));
        }
        if cfg!(windows) {
            return var("LOCALAPPDATA").map(|d| Cache::new(d.join("acp")));
        }
        var("HOME").map(|home| Cache::new(home.join(".cache").join("acp")))
    }

    /// The cache's directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn agents(&self) -> PathBuf {
        self.root.join("agents")
    }

    /// Stores a registry document (already checked with [`Registry::from_json`]) and its
    /// source as the cached one.
    pub fn store_registry(&self, bytes: &[u8], url: &str) -> Result<Source, RegistryError> {
        Registry::from_json(bytes)?;
        let source = Source {
            url: url.to_owned(),
            fetched: now(),
        };
        let meta = serde_json::to_vec_pretty(&source).expect("plain data serialises");
        write_atomic(&self.root.join("registry.source.json"), &meta)?;
        write_atomic(&self.root.join("registry.json"), bytes)?;
        Ok(source)
    }

    /// The cached registry document and its source, if one was stored; `Err` when it is
    /// there but unreadable.
    pub fn registry(&self) -> Result<Option<(Registry, Source)>, RegistryError> {
        let path = self.root.join("registry.json");
        let bytes = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(io("reading", &path, e)),
        };
        let registry = Registry::from_json(&bytes)
            .map_err(|e| RegistryError::Document(format!("{}: {e}", path.display())))?;
        let source = std::fs::read(self.root.join("registry.source.json"))
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or(Source {
                url: "(unknown)".into(),
                fetched: 0,
            });
        Ok(Some((registry, source)))
    }

    /// Where the archive at `archive` is installed for agent `id`.
    pub fn install_dir(&self, id: &str, archive: &str) -> PathBuf {
        self.agents()
            .join(id)
            .join(&sha256_hex(archive.as_bytes())[..16])
    }

    /// The install of `target` for agent `id`, if complete.
    pub fn installed(&self, id: &str, target: &BinaryTarget) -> Option<Installed> {
        let dir = self.install_dir(id, &target.archive);
        let bytes = std::fs::read(dir.join("install.json")).ok()?;
        let mut installed: Installed = serde_json::from_slice(&bytes).ok()?;
        installed.dir = dir.join("files");
        Some(installed)
    }

    /// The SHA-256 recorded at the first download of `archive`, if any.
    pub fn recorded_digest(&self, archive: &str) -> Option<String> {
        self.digests().remove(archive)
    }

    fn digests(&self) -> BTreeMap<String, String> {
        std::fs::read(self.agents().join("archives.json"))
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default()
    }

    /// Downloads `target`'s archive for agent `id` (version `version`), checks it (the
    /// entry's `sha256` when present; the digest recorded by an earlier download of the same
    /// URL, so a changed archive is refused) and unpacks it. On any error nothing is
    /// installed.
    pub async fn install(
        &self,
        fetcher: &Fetcher,
        id: &str,
        version: &str,
        target: &BinaryTarget,
    ) -> Result<Installed, RegistryError> {
        if !super::document::valid_id(id) {
            return Err(RegistryError::Document(format!(
                "agent id {id:?} is not valid"
            )));
        }
        let agents = self.agents();
        std::fs::create_dir_all(&agents).map_err(|e| io("creating", &agents, e))?;
        let staging = agents.join(format!(
            ".partial-{id}-{}-{}",
            std::process::id(),
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.subsec_nanos())
        ));
        std::fs::create_dir(&staging).map_err(|e| io("creating", &staging, e))?;
        let mut partial = Partial(Some(staging.clone()));
        let archive_path = staging.join("archive");
        let mut file = tokio::fs::File::create(&archive_path)
            .await
            .map_err(|e| io("creating", &archive_path, e))?;
        let (size, sha256) = fetcher.to_file(&target.archive, &mut file).await?;
        drop(file);
        if let Some(expected) = &target.sha256
            && !expected.eq_ignore_ascii_case(&sha256)
        {
            return Err(RegistryError::Checksum {
                url: target.archive.clone(),
                expected: expected.to_ascii_lowercase(),
                actual: sha256,
            });
        }
        if let Some(recorded) = self.recorded_digest(&target.archive)
            && recorded != sha256
        {
            return Err(RegistryError::ArchiveChanged {
                url: target.archive.clone(),
                recorded,
                actual: sha256,
            });
        }
        let files = staging.join("files");
        std::fs::create_dir(&files).map_err(|e| io("creating", &files, e))?;
        let (from, into) = (archive_path.clone(), files.clone());
        tokio::task::spawn_blocking(move || unpack::unpack(&from, &into))
            .await
            .map_err(|e| RegistryError::Unpack(format!("unpacking stopped: {e}")))??;
        let _ = std::fs::remove_file(&archive_path);
        let mut installed = Installed {
            id: id.to_owned(),
            version: version.to_owned(),
            archive: target.archive.clone(),
            sha256: sha256.clone(),
            size,
            installed: now(),
            dir: files,
        };
        installed.program(target)?;
        let record = serde_json::to_vec_pretty(&installed).expect("plain data serialises");
        std::fs::write(staging.join("install.json"), record)
            .map_err(|e| io("writing", &staging, e))?;
        let dir = self.install_dir(id, &target.archive);
        if dir.exists() {
            std::fs::remove_dir_all(&dir).map_err(|e| io("replacing", &dir, e))?;
        }
        let parent = dir.parent().expect("install dirs have a parent");
        std::fs::create_dir_all(parent).map_err(|e| io("creating", parent, e))?;
        std::fs::rename(&staging, &dir).map_err(|e| io("installing into", &dir, e))?;
        partial.0 = None;
        let mut digests = self.digests();
        digests.insert(target.archive.clone(), sha256);
        let ledger = serde_json::to_vec_pretty(&digests).expect("plain data serialises");
        write_atomic(&agents.join("archives.json"), &ledger)?;
        installed.dir = dir.join("files");
        Ok(installed)
    }

    /// Removes agent `id`'s installs (every version); the recorded digests stay, so a
    /// changed archive is still noticed when it is downloaded again.
    pub fn remove(&self, id: &str) -> Result<bool, RegistryError> {
        if !super::document::valid_id(id) {
            return Ok(false);
        }
        let dir = self.agents().join(id);
        match std::fs::remove_dir_all(&dir) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(io("removing", &dir, e)),
        }
    }
}
