//! What a gateway child of `acp serve` gets: an environment of its own ([`EnvPolicy`]: an
//! explicit allow-list, `--pass-env`, never `ACP_TOKEN` or `ACP_STORE`) and, with
//! `--sandbox`, a bubblewrap sandbox ([`SandboxPlan`]): the whole file system read-only,
//! writable only under the served root and a fresh tmpfs `/tmp`, credentials, the token file
//! and the store's directory masked, a PID namespace of its own, no controlling terminal,
//! the network kept.
//!
//! Bubblewrap rather than Landlock: it works on every kernel with user namespaces (or as
//! root), masks paths (the agent sees an empty directory or an unreadable file, not a denial
//! it can probe around) and gives a PID namespace with its own `/proc`; Landlock only denies
//! access, cannot hide other processes and needs ABI checks per kernel (5.13 and later).

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::time::Duration;

use acp_client::process::AgentCommand;
use acp_remote::Identity;
use clap::Args;

/// Variables a gateway child gets from `acp serve`'s environment when they are set: what a
/// program needs to find programs (`PATH`), its user and home (`HOME`, `USER`, `LOGNAME`,
/// `SHELL`), text encoding and language (`LANG`, `LANGUAGE`, `LC_*`), the terminal type and
/// time zone (`TERM`, `TZ`), and where to put temporary and per-user files (`TMPDIR`,
/// `XDG_*`), and where to send traces ([`crate::telemetry::PASSED_TO_AGENTS`]: the OTLP
/// endpoint, protocol, timeout and batching, so a gateway agent exports into the same trace;
/// not `OTEL_SERVICE_NAME`, nor the exporter's headers, which may hold an API key). None of
/// them carries a secret; API keys, proxies (whose URLs may hold a password) and database
/// settings pass only when named with `--pass-env`.
pub const DEFAULT_PASS: &[&str] = &[
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "LC_*", "TERM", "TZ", "TMPDIR",
    "XDG_*",
];

/// Variables a gateway child never gets, whatever `--pass-env` says: the server's bearer
/// token and its session store (which may be a database URL with a password).
pub const NEVER_PASS: &[&str] = &[crate::secret_env::TOKEN_ENV, crate::secret_env::STORE_ENV];

/// The private scratch directory inside the sandbox: a fresh tmpfs per connection.
pub const SCRATCH: &str = "/tmp";

/// How long the start-up check of bubblewrap (its preflight) may take.
const PREFLIGHT_TIMEOUT: Duration = Duration::from_secs(10);

/// `acp serve`'s flags for gateway children.
#[derive(Args, Debug, Clone, Default)]
pub struct GatewayArgs {
    /// Run each connection's agent in a bubblewrap sandbox (Linux, `bwrap` on PATH): it can
    /// write only under the served root (the current directory) and a private /tmp, cannot
    /// read the token file, the store's directory or the usual credentials (~/.ssh, ~/.aws,
    /// ~/.config/gcloud, ~/.netrc, ~/.pgpass, ~/.docker, ~/.kube, ...) and sees none of this
    /// host's other processes; the network stays. See docs/DEPLOYMENT.md.
    #[arg(long)]
    pub sandbox: bool,
    /// Also give the agent this variable of the server's environment (repeatable; `NAME*`
    /// for every name starting with NAME). By default it gets only PATH, HOME, USER, LOGNAME,
    /// SHELL, LANG, LANGUAGE, LC_*, TERM, TZ, TMPDIR and XDG_*, plus ACP_IDENTITY (the
    /// connection's identity); never ACP_TOKEN or ACP_STORE.
    #[arg(long = "pass-env", value_name = "NAME")]
    pub pass_env: Vec<String>,
}

impl GatewayArgs {
    /// Whether any of these flags was given (they are for an agent command only).
    pub fn any(&self) -> bool {
        self.sandbox || !self.pass_env.is_empty()
    }
}

/// One name or `PREFIX*` of an allow-list.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Pattern {
    Exact(String),
    Prefix(String),
}

impl Pattern {
    fn matches(&self, name: &str) -> bool {
        match self {
            Pattern::Exact(exact) => name == exact,
            Pattern::Prefix(prefix) => name.starts_with(prefix.as_str()),
        }
    }
}

/// Which of the server's environment variables a gateway child gets: [`DEFAULT_PASS`] and
/// the `--pass-env` names, never [`NEVER_PASS`].
#[derive(Clone, Debug)]
pub struct EnvPolicy {
    patterns: Vec<Pattern>,
}

impl EnvPolicy {
    /// The default allow-list plus `pass` (`NAME` or `NAME*`). A name that is not one
    /// (empty, a `*` alone or inside, `=` or a NUL) or that names a variable in
    /// [`NEVER_PASS`] is an error: the operator asked for something this will not do.
    pub fn new(pass: &[String]) -> Result<EnvPolicy, String> {
        let mut patterns: Vec<Pattern> = DEFAULT_PASS
            .iter()
            .chain(crate::telemetry::PASSED_TO_AGENTS)
            .map(|p| parse(p))
            .collect();
        for name in pass {
            let valid = !name.is_empty()
                && name != "*"
                && !name.contains(['=', '\0'])
                && !name.trim_end_matches('*').contains('*')
                && name.matches('*').count() <= 1;
            if !valid {
                return Err(format!(
                    "--pass-env {name:?}: give a variable name, or NAME* for the names \
                     starting with NAME"
                ));
            }
            if NEVER_PASS.contains(&name.as_str()) {
                return Err(format!(
                    "--pass-env {name}: the server's secrets never reach the agent"
                ));
            }
            patterns.push(parse(name));
        }
        Ok(EnvPolicy { patterns })
    }

    /// Whether the variable `name` passes.
    pub fn allows(&self, name: &OsStr) -> bool {
        let Some(name) = name.to_str() else {
            return false;
        };
        !NEVER_PASS.contains(&name) && self.patterns.iter().any(|p| p.matches(name))
    }

    /// The variables of `vars` (this process's environment, say) that pass, in order.
    pub fn filter(
        &self,
        vars: impl IntoIterator<Item = (OsString, OsString)>,
    ) -> Vec<(OsString, OsString)> {
        vars.into_iter().filter(|(k, _)| self.allows(k)).collect()
    }
}

fn parse(name: &str) -> Pattern {
    match name.strip_suffix('*') {
        Some(prefix) => Pattern::Prefix(prefix.to_owned()),
        None => Pattern::Exact(name.to_owned()),
    }
}

/// Paths under the home directory that hold credentials: masked in the sandbox.
const HOME_CREDENTIALS: &[&str] = &[
    ".ssh",
    ".gnupg",
    ".aws",
    ".azure",
    ".config/gcloud",
    ".config/gh",
    ".kube",
    ".docker",
    ".netrc",
    ".pgpass",
    ".git-credentials",
    ".npmrc",
    ".pypirc",
    ".cargo/credentials",
    ".cargo/credentials.toml",
];

/// Host-wide secrets: password hashes and the sockets of container engines (which are root
/// on the host to whoever can connect).
const HOST_SECRETS: &[&str] = &[
    "/etc/shadow",
    "/etc/gshadow",
    "/run/docker.sock",
    "/run/containerd/containerd.sock",
    "/run/podman/podman.sock",
];

/// The paths masked by default: [`HOME_CREDENTIALS`] under `home`, [`HOST_SECRETS`] and the
/// host's SSH private keys (`/etc/ssh/ssh_host_*_key`). Those that do not exist are left to
/// [`SandboxPlan::new`] to drop.
pub fn default_hidden(home: Option<&Path>) -> Vec<PathBuf> {
    let mut hidden: Vec<PathBuf> = home
        .into_iter()
        .flat_map(|home| HOME_CREDENTIALS.iter().map(move |p| home.join(p)))
        .collect();
    hidden.extend(HOST_SECRETS.iter().map(PathBuf::from));
    if let Ok(entries) = std::fs::read_dir("/etc/ssh") {
        for entry in entries.flatten() {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if name.starts_with("ssh_host_") && name.ends_with("_key") {
                hidden.push(entry.path());
            }
        }
    }
    hidden
}

/// A path hidden from the agent, as it is masked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Masked {
    /// A directory: an empty read-only tmpfs over it.
    Dir(PathBuf),
    /// Anything else (a file, a socket): `/dev/null` bound over it, which the agent cannot
    /// open (bubblewrap binds without device access).
    File(PathBuf),
}

/// The bubblewrap sandbox of a gateway child: what is writable, what is hidden, and the
/// `bwrap` command line that makes it ([`SandboxPlan::argv`]).
#[derive(Clone, Debug)]
pub struct SandboxPlan {
    /// The `bwrap` program.
    pub bwrap: PathBuf,
    /// The served root: writable, and the agent's working directory (canonical).
    pub root: PathBuf,
    /// The private scratch directory: a fresh tmpfs ([`SCRATCH`]).
    pub scratch: PathBuf,
    /// What is masked, canonical, each existing when the plan was made.
    pub hidden: Vec<Masked>,
}

impl SandboxPlan {
    /// A plan writing under `root` only (and the scratch tmpfs), hiding those of `hidden`
    /// that exist. Refused: a root that is not a directory, `/` itself (everything would be
    /// writable), or a root inside a hidden path.
    pub fn new(bwrap: PathBuf, root: &Path, hidden: &[PathBuf]) -> Result<SandboxPlan, String> {
        let root = std::fs::canonicalize(root)
            .map_err(|e| format!("the served root {}: {e}", root.display()))?;
        if !root.is_dir() {
            return Err(format!(
                "the served root {} is not a directory",
                root.display()
            ));
        }
        if root == Path::new("/") {
            return Err(
                "--sandbox with the served root / would let the agent write everywhere: \
                 serve from a project directory"
                    .into(),
            );
        }
        let scratch = PathBuf::from(SCRATCH);
        let mut masked = Vec::new();
        for path in hidden {
            // A path that does not exist has nothing to hide (bubblewrap cannot mount over
            // it on a read-only file system either).
            let Ok(real) = std::fs::canonicalize(path) else {
                continue;
            };
            if root.starts_with(&real) {
                return Err(format!(
                    "the served root {} is inside {}, which the sandbox hides",
                    root.display(),
                    real.display()
                ));
            }
            // The scratch tmpfs hides what is under it already, unless the root brings it
            // back.
            if real.starts_with(&scratch) && !real.starts_with(&root) {
                continue;
            }
            let entry = if real.is_dir() {
                Masked::Dir(real)
            } else {
                Masked::File(real)
            };
            if !masked.contains(&entry) {
                masked.push(entry);
            }
        }
        Ok(SandboxPlan {
            bwrap,
            root,
            scratch,
            hidden: masked,
        })
    }

    /// `bwrap`'s arguments running `program` with `args` in the sandbox. The order matters:
    /// later mounts go over earlier ones (the root over the read-only host and the scratch
    /// tmpfs, the masks over the root).
    pub fn argv(&self, program: &OsStr, args: &[OsString]) -> Vec<OsString> {
        let mut argv: Vec<OsString> = Vec::new();
        let mut push = |items: &[&OsStr]| argv.extend(items.iter().map(|s| s.to_os_string()));
        let (root, scratch) = (self.root.as_os_str(), self.scratch.as_os_str());
        push(&["--ro-bind".as_ref(), "/".as_ref(), "/".as_ref()]);
        push(&["--dev".as_ref(), "/dev".as_ref()]);
        push(&["--proc".as_ref(), "/proc".as_ref()]);
        push(&["--tmpfs".as_ref(), scratch]);
        // An agent installed under the scratch directory stays runnable (read-only).
        let program_path = Path::new(program);
        if program_path.is_absolute()
            && program_path.starts_with(&self.scratch)
            && !program_path.starts_with(&self.root)
        {
            push(&["--ro-bind".as_ref(), program, program]);
        }
        push(&["--bind".as_ref(), root, root]);
        for masked in &self.hidden {
            match masked {
                Masked::Dir(dir) => push(&[
                    "--tmpfs".as_ref(),
                    dir.as_os_str(),
                    "--remount-ro".as_ref(),
                    dir.as_os_str(),
                ]),
                Masked::File(file) => {
                    push(&["--ro-bind".as_ref(), "/dev/null".as_ref(), file.as_os_str()])
                }
            }
        }
        // No `--new-session`: [`SandboxPlan::wrap`] starts bwrap itself in a session of its
        // own, which keeps the sandbox's processes in bwrap's process group (see there).
        push(&[
            "--unshare-pid".as_ref(),
            "--unshare-ipc".as_ref(),
            "--die-with-parent".as_ref(),
        ]);
        push(&["--setenv".as_ref(), "TMPDIR".as_ref(), scratch]);
        push(&["--chdir".as_ref(), root, "--".as_ref(), program]);
        argv.extend(args.iter().cloned());
        argv
    }

    /// `agent` run in the sandbox: `bwrap` with [`SandboxPlan::argv`], the same environment,
    /// in a session of its own (no controlling terminal: nothing in the sandbox can push
    /// input into the terminal `acp serve` runs in). A program given as a relative path is
    /// made absolute first (against this process's directory: the sandbox starts in the
    /// root).
    ///
    /// The session is made here rather than with bwrap's `--new-session`, which makes the
    /// sandbox's init the leader of a session and group of its own: bwrap exits without
    /// waiting for that init, which then exits as an orphan of `acp serve` (a subreaper)
    /// that the orphan reaper cannot tell from a child of ours, and stays a zombie: one per
    /// connection. In bwrap's group it is reaped, and a shutdown's SIGTERM to the group
    /// reaches the agent inside too.
    pub fn wrap(&self, agent: &AgentCommand) -> AgentCommand {
        let program = Path::new(&agent.program);
        let program = if program.components().count() > 1 && program.is_relative() {
            std::path::absolute(program)
                .map(PathBuf::into_os_string)
                .unwrap_or_else(|_| agent.program.clone())
        } else {
            agent.program.clone()
        };
        AgentCommand {
            program: self.bwrap.clone().into_os_string(),
            args: self.argv(&program, &agent.args),
            env: agent.env.clone(),
            env_clear: agent.env_clear,
            new_session: true,
            cwd: None,
        }
    }

    /// Runs `true` in this sandbox with the environment `env`: a clear error at start when
    /// bubblewrap cannot make its namespaces or mounts here (a container without user
    /// namespaces, say), instead of a failed agent on every connection.
    pub async fn preflight(&self, env: &[(OsString, OsString)]) -> Result<(), String> {
        let mut command = tokio::process::Command::new(&self.bwrap);
        command
            .args(self.argv("true".as_ref(), &[]))
            .env_clear()
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true);
        let run = command.output();
        let output = match tokio::time::timeout(PREFLIGHT_TIMEOUT, run).await {
            Err(_) => {
                return Err(format!(
                    "--sandbox: `{}` did not finish a trivial command in {} s",
                    self.bwrap.display(),
                    PREFLIGHT_TIMEOUT.as_secs()
                ));
            }
            Ok(Err(e)) => return Err(format!("--sandbox: {}: {e}", self.bwrap.display())),
            Ok(Ok(output)) => output,
        };
        if output.status.success() {
            return Ok(());
        }
        let said = String::from_utf8_lossy(&output.stderr);
        Err(format!(
            "--sandbox: bubblewrap cannot make its sandbox here ({}): {}; it needs user \
             namespaces (sysctl kernel.unprivileged_userns_clone=1, or a container allowed to \
             make them) or root",
            output.status,
            said.trim()
        ))
    }
}

/// `program` on `PATH`, if it is there and executable.
fn on_path(program: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| {
            std::fs::metadata(candidate)
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// What a gateway needs beyond the agent command.
#[derive(Debug)]
pub struct Gateway<'a> {
    /// The flags.
    pub args: &'a GatewayArgs,
    /// The served root (for the sandbox).
    pub root: PathBuf,
    /// Each identity's agent writes under `root/NAME` instead (`--root-per-identity`).
    pub root_per_identity: bool,
    /// The token file, hidden in the sandbox.
    pub token_file: Option<&'a Path>,
    /// The session store named in this process's environment or flags, hidden in the
    /// sandbox when it is a directory.
    pub store: Option<OsString>,
}

/// The command of each connection's agent: `agent` with the environment [`EnvPolicy`]
/// lets through, in a [`SandboxPlan`] with `--sandbox` (checked here once: a missing or
/// unusable `bwrap` is an error at start).
pub async fn gateway_command(
    agent: &[OsString],
    gateway: Gateway<'_>,
) -> Result<impl Fn(&Identity) -> AgentCommand + Send + Sync + 'static, String> {
    let Some((program, rest)) = agent.split_first() else {
        return Err("no agent command".into());
    };
    let policy = EnvPolicy::new(&gateway.args.pass_env)?;
    let mut command = AgentCommand::new(program).args(rest).env_clear();
    command.env = policy.filter(std::env::vars_os());
    let sandbox = if gateway.args.sandbox {
        let bwrap = on_path("bwrap").ok_or(
            "--sandbox needs bubblewrap: `bwrap` is not on PATH (Debian and Ubuntu: apt-get \
             install bubblewrap)",
        )?;
        let mut hidden = default_hidden(std::env::var_os("HOME").as_deref().map(Path::new));
        hidden.extend(gateway.token_file.map(Path::to_path_buf));
        let store = gateway.store.filter(|s| {
            let text = s.to_string_lossy();
            !(text.starts_with("postgres://") || text.starts_with("postgresql://"))
        });
        hidden.extend(store.map(PathBuf::from));
        let plan = SandboxPlan::new(bwrap, &gateway.root, &hidden)?;
        plan.preflight(&command.env).await?;
        Some(Sandbox {
            plan,
            hidden,
            per_identity: gateway.root_per_identity,
        })
    } else {
        None
    };
    Ok(move |who: &Identity| match &sandbox {
        Some(sandbox) => sandbox.wrap(&command, who),
        None => command.clone(),
    })
}

/// The sandbox of every connection's agent: one plan, or one per identity under the root.
struct Sandbox {
    plan: SandboxPlan,
    hidden: Vec<PathBuf>,
    per_identity: bool,
}

impl Sandbox {
    /// `command` in the plan for `who`: with a root per identity, writable only under
    /// `ROOT/NAME` (created here). An identity whose name cannot be a directory, or whose
    /// directory cannot be made, gets a command that cannot start: the connection is refused
    /// (`502`) and the reason is logged, rather than the agent getting the whole root.
    fn wrap(&self, command: &AgentCommand, who: &Identity) -> AgentCommand {
        if !self.per_identity {
            return self.plan.wrap(command);
        }
        match self.plan_for(who) {
            Ok(plan) => plan.wrap(command),
            Err(e) => {
                tracing::error!(identity = %who.0, "no sandbox for this identity: {e}");
                AgentCommand::new("/nonexistent/acp-serve: no sandbox for this identity")
            }
        }
    }

    fn plan_for(&self, who: &Identity) -> Result<SandboxPlan, String> {
        let name = who
            .dir_name()
            .ok_or_else(|| format!("{:?} is not a usable directory name", who.0))?;
        let root = self.plan.root.join(name);
        std::fs::create_dir_all(&root).map_err(|e| format!("{}: {e}", root.display()))?;
        SandboxPlan::new(self.plan.bwrap.clone(), &root, &self.hidden)
    }
}

#[cfg(test)]
mod tests;
