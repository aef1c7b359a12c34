//! The ACP agent registry (feature `registry`): from an agent's id to a command that runs it
//! on this machine.
//!
//! The ACP project keeps a registry of agents (github.com/agentclientprotocol/registry, RFD
//! "acp-agent-registry"), published as one JSON document at [`OFFICIAL_URL`]. Each entry
//! has an id, a name, a version and one or more distributions: an npm package run with
//! `npx`, a PyPI package run with `uvx`, or per-platform archives (tar.gz or zip) with the
//! command to run inside.
//!
//! * [`Registry::from_json`] parses and checks a document (not JSON, another schema, an
//!   entry that breaks the schema: each a clear [`RegistryError`]).
//! * [`AgentEntry::launch`] picks how the agent runs here: this platform's archive first,
//!   then `npx`, then `uvx` ([`Launch`]).
//! * [`Cache`] keeps the fetched document and the installed archives; [`Cache::install`]
//!   downloads over HTTPS ([`Fetcher`]; plain HTTP only to a loopback address), checks the
//!   entry's `sha256` where it has one, records the archive's own SHA-256 and refuses a
//!   later download of the same URL whose digest differs, and unpacks without path traversal
//!   or links out of the cache (`unpack`). A download that stops halfway leaves nothing.
//! * [`Launch::command`] turns the choice into an [`AgentCommand`] (program, arguments,
//!   environment) for [`process::AgentProcess`](crate::process::AgentProcess); for `npx` and
//!   `uvx` it finds the user's own launcher on `PATH`, or says it is missing.
//!
//! Nothing here asks the user: an editor shows [`Launch::describe`] (what would be
//! downloaded or run, and from where) and calls [`Cache::install`] only once the user agrees.
//!
//! ```no_run
//! use acp_client::registry::{Cache, Fetcher, Launch, OFFICIAL_URL, Registry, current_platform};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let fetcher = Fetcher::new()?;
//! let registry = Registry::from_json(&fetcher.document(OFFICIAL_URL).await?)?;
//! let cache = Cache::user().ok_or("no cache directory")?;
//! let agent = registry.agent("codex-acp").ok_or("no such agent")?;
//! let platform = current_platform().ok_or("platform unknown to the registry")?;
//! let launch = agent.launch(platform).ok_or("nothing for this platform")?;
//! if let Launch::Binary(target) = &launch {
//!     if cache.installed(&agent.id, target).is_none() {
//!         // Ask the user first: "download {archive} into {dir}?"
//!         println!("{}", launch.describe(agent, &cache));
//!         let installed = cache.install(&fetcher, &agent.id, &agent.version, target).await?;
//!         println!("archive sha256 {}", installed.sha256);
//!     }
//! }
//! let command = launch.command(agent, &cache)?;
//! let mut process = tokio::process::Command::new(&command.program);
//! process.args(&command.args).envs(&command.env);
//! # Ok(()) }
//! ```

mod cache;
mod document;
mod fetch;
pub mod unpack;

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

pub use cache::{Cache, Installed, Source};
use document::command_path;
pub use document::{
    AgentEntry, BinaryTarget, Distribution, MAX_DOCUMENT_BYTES, PLATFORMS, PackageDistribution,
    Registry, current_platform,
};
pub use fetch::{Fetcher, MAX_ARCHIVE_BYTES, check_url};

/// Where the ACP project publishes the registry document.
pub const OFFICIAL_URL: &str =
    "https://cdn.agentclientprotocol.com/registry/v1/latest/registry.json";

/// What went wrong reading the registry or installing an agent.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    /// The document is not JSON, not a registry, or an entry breaks the schema.
    #[error("registry document: {0}")]
    Document(String),
    /// A URL that is not fetched (not https, not loopback http).
    #[error("{0}")]
    Url(String),
    /// The download failed or stopped.
    #[error("download: {0}")]
    Http(String),
    /// The archive's SHA-256 is not the registry entry's.
    #[error(
        "{url}: the archive's SHA-256 is {actual}, the registry says {expected}; nothing was installed"
    )]
    Checksum {
        /// The archive.
        url: String,
        /// The registry's checksum.
        expected: String,
        /// The downloaded archive's.
        actual: String,
    },
    /// The archive at this URL is not the one downloaded before.
    #[error(
        "{url}: the archive changed since its first download (SHA-256 then {recorded}, now {actual}); nothing was installed"
    )]
    ArchiveChanged {
        /// The archive.
        url: String,
        /// The digest of the first download.
        recorded: String,
        /// This download's.
        actual: String,
    },
    /// The archive is damaged or has an entry that would reach outside the cache.
    #[error("unpacking: {0}")]
    Unpack(String),
    /// A file in the cache could not be read or written.
    #[error("cache: {0}")]
    Io(String),
    /// The agent's `npx` or `uvx` is not on `PATH`.
    #[error("agent `{id}` runs with `{program}` ({package}), which is not on PATH; install {hint}")]
    MissingLauncher {
        /// The agent.
        id: String,
        /// `npx` or `uvx`.
        program: &'static str,
        /// The package it would run.
        package: String,
        /// Where the launcher comes from.
        hint: &'static str,
    },
    /// A binary agent that is not installed yet.
    #[error("agent `{0}` is not installed (its archive is not in the cache)")]
    NotInstalled(String),
}

/// How an agent runs on a platform: one of its distributions.
#[derive(Clone, Debug, PartialEq)]
pub enum Launch {
    /// This platform's archive, downloaded into the cache.
    Binary(BinaryTarget),
    /// `npx --yes PACKAGE ARGS...`
    Npx(PackageDistribution),
    /// `uvx PACKAGE ARGS...`
    Uvx(PackageDistribution),
}

/// A command line ready to spawn.
#[derive(Clone, Debug, PartialEq)]
pub struct AgentCommand {
    /// The program (a path in the cache, or the launcher found on `PATH`).
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<String>,
    /// Variables to add to its environment.
    pub env: BTreeMap<String, String>,
}

impl AgentCommand {
    /// The command as one argument vector, the environment put in front through `env`
    /// (`env K=V program args...`) when there is one.
    pub fn argv(&self) -> Vec<OsString> {
        let mut argv = Vec::new();
        if !self.env.is_empty() {
            argv.push(OsString::from("env"));
            argv.extend(
                self.env
                    .iter()
                    .map(|(k, v)| OsString::from(format!("{k}={v}"))),
            );
        }
        argv.push(self.program.clone().into_os_string());
        argv.extend(self.args.iter().map(OsString::from));
        argv
    }
}

impl AgentEntry {
    /// How this agent runs on `platform` (a [`PLATFORMS`] name): its archive for that
    /// platform, else `npx`, else `uvx`; `None` when it has none of them.
    pub fn launch(&self, platform: &str) -> Option<Launch> {
        let d = &self.distribution;
        if let Some(target) = d.binary.get(platform) {
            return Some(Launch::Binary(target.clone()));
        }
        if let Some(npx) = &d.npx {
            return Some(Launch::Npx(npx.clone()));
        }
        d.uvx.clone().map(Launch::Uvx)
    }

    /// The platforms it has archives for, comma-separated (for "not for this platform").
    pub fn binary_platforms(&self) -> String {
        let names: Vec<&str> = self
            .distribution
            .binary
            .keys()
            .map(String::as_str)
            .collect();
        names.join(", ")
    }
}

impl Launch {
    /// The distribution's kind: `binary`, `npx` or `uvx`.
    pub fn kind(&self) -> &'static str {
        match self {
            Launch::Binary(_) => "binary",
            Launch::Npx(_) => "npx",
            Launch::Uvx(_) => "uvx",
        }
    }

    /// One line saying what would be downloaded or run, and from where.
    pub fn describe(&self, agent: &AgentEntry, cache: &Cache) -> String {
        match self {
            Launch::Binary(target) => {
                let dir = cache.install_dir(&agent.id, &target.archive);
                let sum = match &target.sha256 {
                    Some(sum) => format!("SHA-256 {sum} per the registry"),
                    None => "no checksum in the registry; its SHA-256 is recorded".into(),
                };
                format!(
                    "download {} ({sum}) into {}, and run {} {}",
                    target.archive,
                    dir.display(),
                    target.cmd,
                    target.args.join(" ")
                )
            }
            Launch::Npx(p) => format!(
                "run `npx --yes {} {}` (npx fetches the package from the npm registry)",
                p.package,
                p.args.join(" ")
            ),
            Launch::Uvx(p) => format!(
                "run `uvx {} {}` (uvx fetches the package from PyPI)",
                p.package,
                p.args.join(" ")
            ),
        }
    }

    /// The command that runs `agent` this way: the installed program for an archive
    /// ([`RegistryError::NotInstalled`] before [`Cache::install`]), the user's `npx` or
    /// `uvx` for a package ([`RegistryError::MissingLauncher`] when not on `PATH`).
    pub fn command(
        &self,
        agent: &AgentEntry,
        cache: &Cache,
    ) -> Result<AgentCommand, RegistryError> {
        match self {
            Launch::Binary(target) => {
                let installed = cache
                    .installed(&agent.id, target)
                    .ok_or_else(|| RegistryError::NotInstalled(agent.id.clone()))?;
                Ok(AgentCommand {
                    program: installed.program(target)?,
                    args: target.args.clone(),
                    env: target.env.clone(),
                })
            }
            Launch::Npx(p) => {
                let program = launcher(agent, "npx", p, "Node.js (https://nodejs.org)")?;
                let mut args = vec!["--yes".to_owned(), p.package.clone()];
                args.extend(p.args.iter().cloned());
                Ok(AgentCommand {
                    program,
                    args,
                    env: p.env.clone(),
                })
            }
            Launch::Uvx(p) => {
                let program = launcher(agent, "uvx", p, "uv (https://docs.astral.sh/uv)")?;
                let mut args = vec![p.package.clone()];
                args.extend(p.args.iter().cloned());
                Ok(AgentCommand {
                    program,
                    args,
                    env: p.env.clone(),
                })
            }
        }
    }
}

fn launcher(
    agent: &AgentEntry,
    program: &'static str,
    package: &PackageDistribution,
    hint: &'static str,
) -> Result<PathBuf, RegistryError> {
    find_on_path(program).ok_or_else(|| RegistryError::MissingLauncher {
        id: agent.id.clone(),
        program,
        package: package.package.clone(),
        hint,
    })
}

/// The first executable file named `program` in the directories of `PATH`.
pub fn find_on_path(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| is_executable(candidate))
}

fn is_executable(path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    }
    #[cfg(not(unix))]
    {
        path.is_file()
            || path.with_extension("cmd").is_file()
            || path.with_extension("exe").is_file()
    }
}

#[cfg(test)]
mod tests;
