//! The agent under test: a command to spawn (as an editor would) or an agent run in process
//! (for `cargo test`). Each fresh connection starts a new one.

use std::ffi::OsString;
use std::pin::Pin;
use std::sync::Arc;

use acp_client::process::{AgentCommand, AgentProcess};
use tokio::io::{AsyncRead, AsyncWrite, DuplexStream};

/// Starts an in-process agent: it gets the pipe it reads (its "stdin") and the pipe it writes
/// (its "stdout"), and must serve them until they close.
pub type InProcess = Arc<dyn Fn(DuplexStream, DuplexStream) + Send + Sync>;

/// The agent to grade.
#[derive(Clone)]
pub enum Target {
    /// A command line, spawned with piped stdio in its own process group (killed with its
    /// group when its connection ends).
    Command(Vec<OsString>),
    /// An agent in this process, started by the function once per connection.
    InProcess(InProcess),
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe())
    }
}

impl Target {
    /// A command line (`program` and its arguments).
    pub fn command<I, S>(argv: I) -> Target
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        Target::Command(argv.into_iter().map(Into::into).collect())
    }

    /// An in-process agent: `start(agent_stdin, agent_stdout)` must spawn a task serving
    /// the agent over them, e.g.
    /// `Target::in_process(|r, w| { acp_agent::Builder::new(MyAgent::default()).io(r, w); })`.
    pub fn in_process(
        start: impl Fn(DuplexStream, DuplexStream) + Send + Sync + 'static,
    ) -> Target {
        Target::InProcess(Arc::new(start))
    }

    /// The agent in words (its command line).
    pub fn describe(&self) -> String {
        match self {
            Target::Command(argv) => argv
                .iter()
                .map(|a| a.to_string_lossy())
                .collect::<Vec<_>>()
                .join(" "),
            Target::InProcess(_) => "in-process agent".into(),
        }
    }

    /// The command line for a trace's `start` record.
    pub(crate) fn argv(&self) -> Vec<String> {
        match self {
            Target::Command(argv) => argv
                .iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect(),
            Target::InProcess(_) => vec!["in-process".into()],
        }
    }

    /// Starts one agent.
    pub(crate) fn start(&self) -> Result<Started, String> {
        match self {
            Target::Command(argv) => {
                let Some((program, args)) = argv.split_first() else {
                    return Err("no agent command given".into());
                };
                let mut process = AgentProcess::spawn(&AgentCommand::new(program).args(args))
                    .map_err(|e| e.to_string())?;
                let (stdout, stdin) = process.take_stdio().ok_or("the agent's stdio is gone")?;
                Ok(Started {
                    from_agent: Box::pin(stdout),
                    to_agent: Box::pin(stdin),
                    process: Some(process),
                })
            }
            Target::InProcess(start) => {
                let (agent_stdin, to_agent) = tokio::io::duplex(1 << 20);
                let (from_agent, agent_stdout) = tokio::io::duplex(1 << 20);
                start(agent_stdin, agent_stdout);
                Ok(Started {
                    from_agent: Box::pin(from_agent),
                    to_agent: Box::pin(to_agent),
                    process: None,
                })
            }
        }
    }
}

/// A started agent's pipes (and process, when it is one).
pub(crate) struct Started {
    pub from_agent: Pin<Box<dyn AsyncRead + Send>>,
    pub to_agent: Pin<Box<dyn AsyncWrite + Send>>,
    pub process: Option<AgentProcess>,
}
