//! `acp conduct -- PROXY... -- AGENT` and `acp tag-proxy`: proxy chains from the command
//! line (docs/PROXY_CHAINS.md).
//!
//! `acp conduct` is a stdio agent for any client: it spawns each component of the chain as a
//! child process (its stdin and stdout the component's connection, its stderr ours) and runs
//! acp-agent's conductor between the client and them. When the client leaves or a component
//! exits, every child is killed and reaped. `acp tag-proxy` is a small proxy to put in a
//! chain: it forwards everything and prefixes the agent's message text, so a chain is seen to
//! work.

use std::ffi::OsString;
use std::time::Duration;

use acp_agent::conductor::{Component, conduct_stdio};
use acp_agent::proxy::{Message, NotificationStep, Proxy, ProxyContext, serve_proxy_stdio};
use acp_client::process::{AgentCommand, ProcessChain};
use clap::Args;
use serde_json::Value;

/// `acp conduct`'s arguments.
#[derive(Args, Debug)]
pub struct ConductArgs {
    /// The chain after `--`: each component's command line, separated by `--`, the last
    /// one the agent (`acp conduct -- acp tag-proxy -- acp agent`).
    #[arg(last = true, required = true)]
    pub chain: Vec<OsString>,
}

/// `acp tag-proxy`'s arguments.
#[derive(Args, Debug)]
pub struct TagProxyArgs {
    /// What to put before each piece of the agent's message text.
    #[arg(long, default_value = "[proxy] ")]
    pub prefix: String,
}

/// How long a component has to exit after SIGTERM at the end of the chain.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// Splits the words after the first `--` into command lines at each further `--`.
fn components(words: &[OsString]) -> Result<Vec<Vec<OsString>>, String> {
    let chain: Vec<Vec<OsString>> = words
        .split(|w| w == "--")
        .map(<[OsString]>::to_vec)
        .collect();
    if chain.iter().any(Vec::is_empty) {
        return Err("every component of the chain needs a command (`-- PROXY -- AGENT`)".into());
    }
    Ok(chain)
}

/// Runs `acp conduct`: 0 when the client ended the session, 1 when the chain could not
/// start or a component exited first.
pub async fn run(args: ConductArgs) -> i32 {
    let chain = match components(&args.chain) {
        Ok(chain) => chain,
        Err(e) => {
            eprintln!("acp conduct: {e}");
            return 1;
        }
    };
    let commands: Vec<AgentCommand> = chain
        .iter()
        .map(|words| AgentCommand::new(&words[0]).args(&words[1..]))
        .collect();
    // acp-client's process handling: each its own process group, a bounded stderr tail, and
    // SIGTERM, a grace, then SIGKILL for every group at the end.
    let (children, members) = match ProcessChain::spawn(&commands) {
        Ok(started) => started,
        Err(e) => {
            eprintln!("acp conduct: {e}");
            return 1;
        }
    };
    let parts = members
        .into_iter()
        .map(|m| Component {
            name: format!("`{}`", m.command),
            reader: Box::new(m.stdout),
            writer: Box::new(m.stdin),
        })
        .collect();
    let conductor = match conduct_stdio(parts) {
        Ok(conductor) => conductor,
        Err(e) => {
            eprintln!("acp conduct: {}", e.message);
            return 1;
        }
    };
    // A component that ended first failed the chain (how it exited, with its stderr tail, is
    // said); once the client has left, components ending on their closed input are normal.
    let ended = conductor.closed().await.component();
    for exited in children.shutdown(ended, SHUTDOWN_GRACE).await {
        eprintln!("acp conduct: {exited}");
    }
    i32::from(ended.is_some())
}

/// The demo proxy: prefixes the text of every `agent_message_chunk` going to the client.
struct Tag {
    prefix: String,
}

#[acp_agent::async_trait]
impl Proxy for Tag {
    async fn notification_from_successor(
        &self,
        _cx: &ProxyContext,
        notification: Message,
    ) -> NotificationStep {
        let Some(params) = notification.params.as_deref() else {
            return NotificationStep::Forward(notification);
        };
        let Ok(mut value) = serde_json::from_str::<Value>(params.get()) else {
            return NotificationStep::Forward(notification);
        };
        let chunk =
            value.pointer("/update/sessionUpdate") == Some(&Value::from("agent_message_chunk"));
        match value.pointer_mut("/update/content/text") {
            Some(Value::String(text)) if chunk => *text = format!("{}{text}", self.prefix),
            _ => return NotificationStep::Forward(notification),
        }
        match Message::new(notification.method.clone(), &value) {
            Ok(changed) => NotificationStep::Forward(changed),
            Err(_) => NotificationStep::Forward(notification),
        }
    }
}

/// Runs `acp tag-proxy` on stdin and stdout until its conductor leaves.
pub async fn tag_proxy(args: TagProxyArgs) -> i32 {
    let conn = serve_proxy_stdio(Tag {
        prefix: args.prefix,
    });
    conn.finished().await;
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_chain_is_split_at_each_double_dash_and_an_empty_component_is_refused() {
        let words = |s: &str| s.split(' ').map(OsString::from).collect::<Vec<_>>();
        let chain = components(&words("p1 -x -- p2 -- agent a")).unwrap();
        assert_eq!(chain, vec![words("p1 -x"), words("p2"), words("agent a")]);
        assert!(components(&words("p1 -- -- agent")).is_err());
    }
}
