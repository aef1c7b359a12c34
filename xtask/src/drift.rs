//! `cargo xtask drift [--latest]`: what the official ACP releases have that our schemas lack.
//!
//! Pinned (the default, offline, what CI runs): the official schema JSON of the npm package
//! `@agentclientprotocol/sdk` at the version `interop/peers/ts/package.json` pins, from the
//! interop cache that `cargo xtask interop` fills, and the `unstable_*` features of the Rust
//! schema crate `agent-client-protocol-schema` at the version `differential/Cargo.toml` pins
//! (the newest acp-rs is tested against; the workspace's lock holds 1.17.0 for 5.2.0),
//! from cargo's registry sources. Every difference must be explained in
//! `acp-schema/drift-allow.txt`; an unexplained difference or a stale entry fails.
//!
//! `--latest` asks the registries (`npm view`/`npm pack`, `cargo info`) for the newest
//! releases and prints what they bring; it informs, it does not fail on differences.
//! The comparison itself is `acp_codegen::drift`.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use acp_codegen::drift::{self, AllowList, Finding};

const NPM_PACKAGE: &str = "@agentclientprotocol/sdk";
const SCHEMA_CRATE: &str = "agent-client-protocol-schema";

/// The entry point: `latest` selects the registries' newest releases over the pins.
pub fn run(root: &Path, latest: bool) -> ExitCode {
    match collect(root, latest) {
        Ok((sources, findings)) => report(root, &sources, findings, latest),
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn read(path: &Path) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))
}

/// The version in `"<name>": "<version>"` (package.json) or `<name> = { version = "=<v>"`.
fn pinned(text: &str, name: &str) -> Option<String> {
    let line = text.lines().find(|l| {
        let l = l.trim_start();
        l.starts_with(&format!("\"{name}\"")) || l.starts_with(&format!("{name} ="))
    })?;
    let after = line.split_once(name)?.1;
    let after = after.split_once("version").map_or(after, |(_, a)| a);
    let start = after.find(|c: char| c.is_ascii_digit())?;
    let rest = &after[start..];
    let end = rest
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(rest.len());
    Some(rest[..end].to_string())
}

fn interop_cache() -> PathBuf {
    if let Some(dir) = std::env::var_os("ACP_INTEROP_CACHE") {
        return dir.into();
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cache")))
        .unwrap_or_else(|| PathBuf::from(".cache"));
    base.join("acp-rs-interop")
}

/// The unpacked sources of a registry crate, `$CARGO_HOME/registry/src/*/<name>-<version>`.
fn registry_crate(name: &str, version: &str) -> Option<PathBuf> {
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cargo")))?;
    let dirs = std::fs::read_dir(home.join("registry/src")).ok()?;
    dirs.flatten()
        .map(|d| d.path().join(format!("{name}-{version}")))
        .find(|p| p.join("Cargo.toml").is_file())
}

fn output(cmd: &mut Command) -> Result<String, String> {
    let out = cmd
        .output()
        .map_err(|e| format!("cannot run {cmd:?}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{cmd:?} failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The official schema JSON of the npm package at `version`: v1's stable and unstable
/// documents and v2's stable one. From the interop cache when it holds that version, else
/// (`latest` only) from `npm pack`.
fn npm_schemas(version: &str, latest: bool) -> Result<(String, String, String), String> {
    let cached = interop_cache().join("npm/node_modules").join(NPM_PACKAGE);
    let cached_version = read(&cached.join("package.json"))
        .ok()
        .and_then(|t| pinned(&t, "version"));
    let dir = if cached_version.as_deref() == Some(version) {
        cached.join("schema")
    } else if latest {
        let tmp = std::env::temp_dir().join(format!("acp-drift-npm-{version}"));
        std::fs::create_dir_all(&tmp).map_err(|e| e.to_string())?;
        let spec = format!("{NPM_PACKAGE}@{version}");
        let tgz = output(
            Command::new("npm")
                .args(["pack", "--silent", &spec])
                .current_dir(&tmp),
        )?;
        output(
            Command::new("tar")
                .args(["xzf", tgz.trim()])
                .current_dir(&tmp),
        )?;
        tmp.join("package/schema")
    } else {
        return Err(format!(
            "the interop cache ({}) does not hold {NPM_PACKAGE} {version}: run `cargo xtask interop` first",
            cached.display()
        ));
    };
    Ok((
        read(&dir.join("v1/schema.json"))?,
        read(&dir.join("v1/schema.unstable.json"))?,
        read(&dir.join("v2/schema.json"))?,
    ))
}

/// The official crate's `unstable_*` features: pinned from its registry sources, latest from
/// `cargo info`. Returns the version too.
fn crate_features(root: &Path, latest: bool) -> Result<(String, Vec<String>), String> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    if latest {
        let info = output(
            Command::new(&cargo)
                .args(["info", SCHEMA_CRATE])
                .current_dir(std::env::temp_dir()),
        )?;
        let version = info
            .lines()
            .find_map(|l| l.strip_prefix("version: "))
            .and_then(|v| v.split_whitespace().next())
            .ok_or("no version in `cargo info`")?
            .to_string();
        return Ok((version, drift::cargo_info_features(&info)));
    }
    // The newest schema crate acp-rs is tested against: the differential crate's pin (outside
    // the workspace, whose lock holds the =1.17.0 that agent-client-protocol 5.2.0 needs).
    let differential = root.join("differential");
    let toml = read(&differential.join("Cargo.toml"))?;
    let version =
        pinned(&toml, SCHEMA_CRATE).ok_or("differential/ does not pin the schema crate")?;
    if registry_crate(SCHEMA_CRATE, &version).is_none() {
        // Its lock file names it; fetch it if this machine never built the tests.
        output(
            Command::new(&cargo)
                .args(["fetch", "--locked"])
                .current_dir(&differential),
        )?;
    }
    let dir = registry_crate(SCHEMA_CRATE, &version).ok_or(format!(
        "{SCHEMA_CRATE} {version} is not in cargo's registry sources"
    ))?;
    Ok((
        version,
        drift::cargo_toml_features(&read(&dir.join("Cargo.toml"))?),
    ))
}

/// Which releases were compared, and every difference found.
fn collect(root: &Path, latest: bool) -> Result<(String, Vec<Finding>), String> {
    let npm_version = if latest {
        output(Command::new("npm").args(["view", NPM_PACKAGE, "version"]))?
            .trim()
            .to_string()
    } else {
        let pkg = read(&root.join("interop/peers/ts/package.json"))?;
        pinned(&pkg, NPM_PACKAGE).ok_or("interop/peers/ts/package.json does not pin the SDK")?
    };
    let (stable, unstable, official_v2) = npm_schemas(&npm_version, latest)?;
    let v1 = read(&root.join("acp-schema/schemas/v1.json"))?;
    let overlay = read(&root.join("acp-schema/schemas/v1-unstable.json"))?;
    let mut findings = drift::compare_schemas(&stable, &unstable, &v1, &overlay)?;
    let v2 = read(&root.join("acp-schema/schemas/v2.json"))?;
    findings.extend(drift::compare_v2(&official_v2, &v2)?);
    let (crate_version, official) = crate_features(root, latest)?;
    let ours = drift::cargo_toml_features(&read(&root.join("acp-types/Cargo.toml"))?);
    findings.extend(drift::compare_features(&official, &ours));
    let sources = format!(
        "{NPM_PACKAGE} {npm_version} (schema JSON), {SCHEMA_CRATE} {crate_version} (features)"
    );
    Ok((sources, findings))
}

fn report(root: &Path, sources: &str, findings: Vec<Finding>, latest: bool) -> ExitCode {
    let allow_path = root.join("acp-schema/drift-allow.txt");
    let allow = match read(&allow_path).and_then(|t| AllowList::parse(&t)) {
        Ok(allow) => allow,
        Err(e) => {
            eprintln!("error: {}: {e}", allow_path.display());
            return ExitCode::FAILURE;
        }
    };
    let verdict = drift::judge(findings, &allow);
    println!("compared with {sources}");
    for (f, reason) in &verdict.allowed {
        println!("  allowed  {}: {reason}", f.key);
    }
    for f in &verdict.unexplained {
        println!("  MISSING  {}: {}", f.key, f.detail);
    }
    for key in &verdict.stale {
        println!("  STALE    {key}: on the allow-list, but no longer a difference");
    }
    println!(
        "{} allowed, {} unexplained, {} stale",
        verdict.allowed.len(),
        verdict.unexplained.len(),
        verdict.stale.len()
    );
    if latest || verdict.clean() {
        return ExitCode::SUCCESS;
    }
    eprintln!(
        "error: model each difference in acp-schema (CONTRIBUTING.md) or explain it in {}",
        allow_path.display()
    );
    ExitCode::FAILURE
}

#[cfg(test)]
mod tests {
    use super::pinned;

    #[test]
    fn pins_are_read_from_package_json_and_cargo_toml() {
        let pkg = "{\n  \"dependencies\": {\n    \"@agentclientprotocol/sdk\": \"2.4.0\",\n";
        assert_eq!(
            pinned(pkg, "@agentclientprotocol/sdk").as_deref(),
            Some("2.4.0")
        );
        let toml =
            "agent-client-protocol-schema = { version = \"=1.17.0\", default-features = false }";
        assert_eq!(
            pinned(toml, "agent-client-protocol-schema").as_deref(),
            Some("1.17.0")
        );
        assert_eq!(
            pinned("\"version\": \"2.4.0\",", "version").as_deref(),
            Some("2.4.0")
        );
    }
}
