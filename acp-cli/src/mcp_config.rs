//! `--mcp-config FILE`: the `{"mcpServers": {NAME: {command, args, env} | {url, headers}}}`
//! file MCP users already have, read into the ACP shape of `session/new`'s `mcpServers`.

use std::path::Path;

use acp_agent::types::{
    EnvVariable, HttpHeader, McpCapabilities, McpServer, McpServerHttp, McpServerStdio,
};
use serde::Deserialize;

#[derive(Deserialize)]
struct File {
    #[serde(rename = "mcpServers")]
    servers: serde_json::Map<String, serde_json::Value>,
}

#[derive(Deserialize)]
struct Entry {
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: std::collections::BTreeMap<String, String>,
    url: Option<String>,
    #[serde(default)]
    headers: std::collections::BTreeMap<String, String>,
}

/// The servers of an MCP config file, in the file's order (by name).
pub fn read(path: &Path) -> Result<Vec<McpServer>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let file: File = serde_json::from_str(&text).map_err(|e| {
        format!(
            "{} is not an MCP config ({{\"mcpServers\": {{...}}}}): {e}",
            path.display()
        )
    })?;
    let mut servers = Vec::new();
    for (name, value) in file.servers {
        let entry: Entry = serde_json::from_value(value)
            .map_err(|e| format!("{}: server {name:?}: {e}", path.display()))?;
        let env = entry.env.into_iter().map(|(k, v)| EnvVariable::new(k, v));
        let server = match (entry.command, entry.url) {
            (Some(command), None) => {
                McpServer::Stdio(McpServerStdio::new(name, command, entry.args, env))
            }
            (None, Some(url)) => {
                let headers = entry
                    .headers
                    .into_iter()
                    .map(|(k, v)| HttpHeader::new(k, v));
                McpServer::Http(McpServerHttp::new(name, url, headers))
            }
            _ => {
                return Err(format!(
                    "{}: server {name:?} needs either `command` or `url`",
                    path.display()
                ));
            }
        };
        servers.push(server);
    }
    Ok(servers)
}

/// The servers the agent can take (stdio always, http when it advertises it) and a warning
/// naming the others.
pub fn supported(
    servers: Vec<McpServer>,
    caps: &McpCapabilities,
) -> (Vec<McpServer>, Option<String>) {
    let mut refused = Vec::new();
    let kept = servers
        .into_iter()
        .filter(|s| match s {
            McpServer::Stdio(_) => true,
            McpServer::Http(_) if caps.http => true,
            McpServer::Http(h) => {
                refused.push(h.name.clone());
                false
            }
            _ => false,
        })
        .collect();
    let warning = (!refused.is_empty()).then(|| {
        format!(
            "the agent does not take http MCP servers (no mcpCapabilities.http); not passed: {}",
            refused.join(", ")
        )
    });
    (kept, warning)
}
