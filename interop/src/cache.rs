//! The install cache of the non-Rust peers, outside the source tree:
//! `${ACP_INTEROP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/acp-rs-interop}`.
//!
//! - `npm/`: `package.json` and `package-lock.json` copied from `peers/ts/`, then `npm ci`
//!   (so the exact versions of the committed lock file are installed: the official SDK, and
//!   ajv for schema validation).
//! - `venv/`: a Python virtualenv with `peers/py/requirements.txt` installed (every version
//!   pinned); a copy of the requirements marks what is installed.
//!
//! An install is redone only when the committed files changed. node, npm and python3 must be
//! on `PATH`; nothing is installed globally.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Where the cache lives.
pub fn dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("ACP_INTEROP_CACHE").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir);
    base.join("acp-rs-interop")
}

/// The source directory of the non-Rust peers (`interop/peers`).
pub fn peers_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("peers")
}

/// The installed tools of a cache.
#[derive(Clone, Debug)]
pub struct Installed {
    /// The npm prefix (`<cache>/npm`, holding `node_modules`).
    pub npm: PathBuf,
    /// The virtualenv's python.
    pub python: PathBuf,
}

impl Installed {
    /// The paths inside `cache` (whether or not they exist).
    pub fn at(cache: &Path) -> Installed {
        Installed {
            npm: cache.join("npm"),
            python: cache.join("venv").join("bin").join("python"),
        }
    }

    /// Whether both installs are complete.
    pub fn is_complete(&self) -> bool {
        self.npm
            .join("node_modules/@agentclientprotocol/sdk/package.json")
            .is_file()
            && self.npm.join("node_modules/ajv/package.json").is_file()
            && self.python.is_file()
    }
}

/// Runs a command, failing with its name and status.
fn run(cmd: &mut Command, what: &str) -> Result<(), String> {
    let status = cmd
        .status()
        .map_err(|e| format!("{what}: cannot run {:?}: {e}", cmd.get_program()))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{what} failed ({status})"))
    }
}

/// The first line of `<tool> --version`, or an error saying it is needed.
pub fn tool_version(tool: &str) -> Result<String, String> {
    let out = Command::new(tool).arg("--version").output().map_err(|e| {
        format!("`{tool}` is needed for the interop matrix but cannot be run ({e}); install it (node 18+ with npm, python 3.10+ with venv) and retry")
    })?;
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    Ok(text.lines().next().unwrap_or_default().trim().to_owned())
}

fn same_file(a: &Path, b: &Path) -> bool {
    matches!((std::fs::read(a), std::fs::read(b)), (Ok(x), Ok(y)) if x == y)
}

/// Installs what is missing or stale into `cache`; prints what it does.
pub fn install(cache: &Path) -> Result<Installed, String> {
    let peers = peers_dir();
    let installed = Installed::at(cache);
    for tool in ["node", "npm", "python3"] {
        println!("interop: {tool} {}", tool_version(tool)?);
    }

    let lock = peers.join("ts/package-lock.json");
    let cached_lock = installed.npm.join("package-lock.json");
    let has_modules = installed
        .npm
        .join("node_modules/.package-lock.json")
        .is_file();
    if same_file(&lock, &cached_lock) && has_modules {
        println!(
            "interop: npm packages up to date in {}",
            installed.npm.display()
        );
    } else {
        println!("interop: npm ci into {}", installed.npm.display());
        std::fs::create_dir_all(&installed.npm)
            .map_err(|e| format!("creating {}: {e}", installed.npm.display()))?;
        for file in ["package.json", "package-lock.json"] {
            std::fs::copy(peers.join("ts").join(file), installed.npm.join(file))
                .map_err(|e| format!("copying {file} into the cache: {e}"))?;
        }
        run(
            Command::new("npm")
                .args(["ci", "--no-audit", "--no-fund", "--loglevel=error"])
                .current_dir(&installed.npm),
            "npm ci",
        )?;
    }

    let venv = cache.join("venv");
    let requirements = peers.join("py/requirements.txt");
    let stamp = venv.join("interop-requirements.txt");
    if installed.python.is_file() && same_file(&requirements, &stamp) {
        println!("interop: python packages up to date in {}", venv.display());
    } else {
        if !installed.python.is_file() {
            println!("interop: python3 -m venv {}", venv.display());
            run(
                Command::new("python3").arg("-m").arg("venv").arg(&venv),
                "python3 -m venv",
            )?;
        }
        println!("interop: pip install -r {}", requirements.display());
        run(
            Command::new(&installed.python)
                .args([
                    "-m",
                    "pip",
                    "install",
                    "--disable-pip-version-check",
                    "--quiet",
                    "-r",
                ])
                .arg(&requirements),
            "pip install",
        )?;
        std::fs::copy(&requirements, &stamp)
            .map_err(|e| format!("writing {}: {e}", stamp.display()))?;
    }
    Ok(installed)
}
