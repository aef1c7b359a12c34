//! `acp agents`: the ACP agent registry on the command line (acp-client's `registry`
//! module), and `--agent ID` for `acp chat`, `check`, `trace` and `serve`.
//!
//! The registry read is the one `acp agents update` fetched into the user's cache, else the
//! snapshot shipped in this binary (`data/registry/`, with its source and date), so listing
//! and resolving work offline. Nothing is downloaded or run without saying what and from
//! where first; a terminal is asked to confirm, scripts pass `--yes`.

use std::ffi::OsString;
use std::io::{BufRead, IsTerminal, Write};

use acp_client::registry::{
    AgentEntry, Cache, Fetcher, Launch, OFFICIAL_URL, Registry, current_platform, find_on_path,
};
use clap::{Args, Subcommand};

/// The registry document shipped with `acp` (built by the registry's own script).
const SNAPSHOT: &str = include_str!("../data/registry/registry.json");
/// Where and when the snapshot was taken.
const SNAPSHOT_SOURCE: &str = include_str!("../data/registry/source.json");

/// `acp agents --help`, after the options.
const AGENTS_AFTER: &str = "\
The registry is the ACP project's list of agents (github.com/agentclientprotocol/registry).
`acp agents` reads the copy `acp agents update` fetched into the cache ($ACP_CACHE_DIR, else
$XDG_CACHE_HOME/acp, else ~/.cache/acp), else the snapshot shipped with acp. An agent runs
from this platform's archive (downloaded once into the cache, its SHA-256 recorded: a changed
archive at the same URL is refused), else with your own npx or uvx.";

/// `acp agents`: list, fetch, install.
#[derive(Args, Debug)]
#[command(after_help = AGENTS_AFTER)]
pub struct AgentsArgs {
    #[command(subcommand)]
    command: Option<AgentsCommand>,
}

#[derive(Subcommand, Debug)]
enum AgentsCommand {
    /// Fetch the current registry into the cache (checked to be a registry document first).
    Update {
        /// The registry to fetch: an https:// URL (http:// only to a loopback address) or a
        /// file. Default: the official registry.
        #[arg(long, value_name = "URL|FILE", default_value = OFFICIAL_URL)]
        registry: String,
    },
    /// Download an agent's archive into the cache without running it (npx/uvx agents need
    /// no install).
    Install {
        /// The agent's id (`acp agents` lists them).
        id: String,
        /// Download without asking.
        #[arg(long)]
        yes: bool,
    },
}

/// `--agent ID`: run an agent of the registry by its id.
#[derive(Args, Debug, Default)]
pub struct ById {
    /// Run the registry's agent with this id (`acp agents` lists them) instead of a command
    /// after `--`: its archive for this platform (downloaded into the cache after asking),
    /// else `npx`/`uvx`.
    #[arg(
        long = "agent",
        id = "agent_id",
        value_name = "ID",
        conflicts_with = "agent"
    )]
    pub agent: Option<String>,
}

/// `--agent ID` with `--yes`, for the commands that have no `--yes` of their own.
#[derive(Args, Debug, Default)]
pub struct ByIdConfirmed {
    #[command(flatten)]
    pub by_id: ById,
    /// With --agent: download or run it without asking.
    #[arg(long, requires = "agent_id")]
    pub yes: bool,
}

/// `acp agents ...`.
pub async fn run(args: AgentsArgs) -> i32 {
    let result = match args.command {
        None => list(),
        Some(AgentsCommand::Update { registry }) => update(&registry).await,
        Some(AgentsCommand::Install { id, yes }) => prepare(&id, yes).await.map(|_| ()),
    };
    match result {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("acp agents: {e}");
            1
        }
    }
}

fn cache() -> Result<Cache, String> {
    Cache::user().ok_or_else(|| "no cache directory: set ACP_CACHE_DIR (or HOME)".to_owned())
}

/// The registry to use and a line saying where it comes from.
fn load(cache: &Cache) -> (Registry, String) {
    match cache.registry() {
        Ok(Some((registry, source))) => {
            let when = if source.fetched == 0 {
                "at an unknown time".to_owned()
            } else {
                format!("on {} UTC", utc_date(source.fetched))
            };
            let origin = format!(
                "fetched from {} at {when}, cached in {}",
                source.url,
                cache.root().join("registry.json").display()
            );
            return (registry, origin);
        }
        Ok(None) => {}
        Err(e) => eprintln!("acp: the cached registry is unusable ({e}); using the snapshot"),
    }
    let registry =
        Registry::from_json(SNAPSHOT.as_bytes()).expect("the snapshot is checked by a test");
    let source: serde_json::Value = serde_json::from_str(SNAPSHOT_SOURCE).expect("valid JSON");
    let origin = format!(
        "the snapshot shipped with acp ({} as of {}); `acp agents update` fetches the current one",
        source["url"].as_str().unwrap_or("?"),
        source["date"].as_str().unwrap_or("?")
    );
    (registry, origin)
}

fn list() -> Result<(), String> {
    let cache = cache()?;
    let (registry, origin) = load(&cache);
    let platform = current_platform();
    println!("registry: {origin}");
    println!(
        "platform: {}, cache: {}",
        platform.unwrap_or("(not one the registry names)"),
        cache.root().display()
    );
    println!(
        "{:<20} {:<22} {:<10} {:<52} INSTALLED",
        "ID", "NAME", "VERSION", "RUNS HERE"
    );
    for agent in &registry.agents {
        let (how, installed) = how_it_runs(agent, platform, &cache);
        println!(
            "{:<20} {:<22} {:<10} {:<52} {installed}",
            agent.id, agent.name, agent.version, how
        );
    }
    Ok(())
}

/// "RUNS HERE" and "INSTALLED" for one agent.
fn how_it_runs(agent: &AgentEntry, platform: Option<&str>, cache: &Cache) -> (String, String) {
    let launch = platform.and_then(|p| agent.launch(p));
    match launch {
        None => (
            format!("not here (archives for: {})", agent.binary_platforms()),
            "-".into(),
        ),
        Some(Launch::Binary(target)) => {
            let file = target.archive.rsplit('/').next().unwrap_or("");
            let installed = match cache.installed(&agent.id, &target) {
                Some(i) => format!("yes (archive SHA-256 {})", &i.sha256[..16]),
                None => "no".into(),
            };
            (format!("binary {file}"), installed)
        }
        Some(Launch::Npx(p)) => (format!("npx {}", p.package), launcher("npx")),
        Some(Launch::Uvx(p)) => (format!("uvx {}", p.package), launcher("uvx")),
    }
}

fn launcher(program: &str) -> String {
    match find_on_path(program) {
        Some(_) => format!("{program} found (fetches on first run)"),
        None => format!("{program} missing"),
    }
}

async fn update(registry: &str) -> Result<(), String> {
    let cache = cache()?;
    let is_url = registry.contains("://");
    let bytes = if is_url {
        eprintln!("acp: fetching the registry from {registry}");
        let fetcher = Fetcher::new().map_err(|e| e.to_string())?;
        fetcher
            .document(registry)
            .await
            .map_err(|e| e.to_string())?
    } else {
        std::fs::read(registry).map_err(|e| format!("{registry}: {e}"))?
    };
    let parsed = Registry::from_json(&bytes).map_err(|e| format!("{registry}: {e}"))?;
    let source = if is_url {
        registry.to_owned()
    } else {
        std::fs::canonicalize(registry)
            .map_or_else(|_| registry.to_owned(), |p| p.display().to_string())
    };
    cache
        .store_registry(&bytes, &source)
        .map_err(|e| e.to_string())?;
    println!(
        "{} agents (registry schema {}) from {source}, stored in {}",
        parsed.agents.len(),
        parsed.version,
        cache.root().join("registry.json").display()
    );
    Ok(())
}

/// `YYYY-MM-DD` of a Unix time (days to civil date, as in H. Hinnant's `civil_from_days`).
fn utc_date(secs: u64) -> String {
    let z = (secs / 86_400) as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}

/// Asks on the terminal whether to go ahead, or takes `--yes`; without a terminal and
/// without `--yes`, refuses.
fn confirm(what: &str, yes: bool) -> Result<(), String> {
    if yes {
        eprintln!("acp: {what} (--yes)");
        return Ok(());
    }
    if !std::io::stdin().is_terminal() {
        return Err(format!("{what}: not confirmed; pass --yes to allow it"));
    }
    eprint!("acp: {what}\nacp: go ahead? [y/N] ");
    let _ = std::io::stderr().flush();
    let mut answer = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut answer)
        .map_err(|e| format!("reading the answer: {e}"))?;
    match answer.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" => Ok(()),
        _ => Err("not confirmed; nothing was downloaded or run".into()),
    }
}

/// Installs (after asking) what agent `id` needs here, and returns its command line.
async fn prepare(id: &str, yes: bool) -> Result<Vec<OsString>, String> {
    let cache = cache()?;
    let (registry, origin) = load(&cache);
    let agent = registry.agent(id).ok_or_else(|| {
        format!("no agent `{id}` in the registry ({origin}); `acp agents` lists them")
    })?;
    let platform = current_platform().ok_or("this platform has no name in the registry")?;
    let launch = agent.launch(platform).ok_or_else(|| {
        format!(
            "agent `{id}` has nothing for {platform}: archives only for {}",
            agent.binary_platforms()
        )
    })?;
    let label = format!("agent `{id}` ({} {})", agent.name, agent.version);
    match &launch {
        Launch::Binary(target) => match cache.installed(id, target) {
            Some(installed) => eprintln!(
                "acp: {label} is installed in {} (from {}, archive SHA-256 {})",
                installed.dir.display(),
                installed.archive,
                installed.sha256
            ),
            None => {
                confirm(&format!("{label}: {}", launch.describe(agent, &cache)), yes)?;
                let fetcher = Fetcher::new().map_err(|e| e.to_string())?;
                let installed = cache
                    .install(&fetcher, id, &agent.version, target)
                    .await
                    .map_err(|e| format!("{label}: {e}"))?;
                eprintln!(
                    "acp: installed {label}: {} bytes, archive SHA-256 {} (recorded: a different archive at this URL will be refused)",
                    installed.size, installed.sha256
                );
            }
        },
        Launch::Npx(_) | Launch::Uvx(_) => {
            // A missing launcher is said before anything is asked.
            launch.command(agent, &cache).map_err(|e| e.to_string())?;
            confirm(&format!("{label}: {}", launch.describe(agent, &cache)), yes)?;
        }
    }
    let command = launch.command(agent, &cache).map_err(|e| e.to_string())?;
    let argv = command.argv();
    let shown: Vec<String> = argv
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    eprintln!("acp: running {label}: {}", shown.join(" "));
    Ok(argv)
}

/// The command line of agent `id`, after installing it (asking first, unless `yes`).
pub async fn command(id: &str, yes: bool) -> Result<Vec<OsString>, String> {
    prepare(id, yes).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fetch_times_are_shown_as_dates() {
        assert_eq!(utc_date(0), "1970-01-01");
        assert_eq!(utc_date(951_782_400), "2000-02-29");
        assert_eq!(utc_date(1_795_937_015), "2026-11-29");
    }

    #[test]
    fn the_shipped_snapshot_is_a_registry_with_its_source() {
        let registry = Registry::from_json(SNAPSHOT.as_bytes()).unwrap();
        assert!(registry.agent("codex-acp").is_some());
        assert!(registry.agent("gemini").is_some());
        let source: serde_json::Value = serde_json::from_str(SNAPSHOT_SOURCE).unwrap();
        assert_eq!(source["url"], OFFICIAL_URL);
        assert!(source["date"].as_str().unwrap().starts_with("20"));
    }
}
