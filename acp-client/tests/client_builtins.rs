//! `SandboxedFs` and `Terminals` used inside a `Client` impl, driven over the wire by a raw
//! agent connection: results and sandbox errors travel as ACP responses. The impl only hands
//! the two building blocks to the trait (`file_system`, `terminals`): the defaults do the rest.

mod common;

use acp_client::fs::SandboxedFs;
use acp_client::terminal::{TerminalDecision, TerminalRequest, Terminals};
use acp_client::{Client, ErrorCode, async_trait};
use serde_json::{Value, json};

struct Builtins {
    fs: SandboxedFs,
    terminals: Terminals,
}

#[async_trait]
impl Client for Builtins {
    /// Allows what runs inside the workspace, and nothing else.
    async fn approve_terminal(&self, r: &TerminalRequest) -> TerminalDecision {
        if r.cwd_inside_roots {
            TerminalDecision::Allow
        } else {
            TerminalDecision::deny("outside the workspace")
        }
    }
    // Every fs and terminal method is served by the trait's defaults, from these two.
    fn file_system(&self) -> Option<&SandboxedFs> {
        Some(&self.fs)
    }
    fn terminals(&self) -> Option<&Terminals> {
        Some(&self.terminals)
    }
}

#[tokio::test]
async fn an_agent_reads_writes_and_runs_commands_through_the_builtins() {
    let root = std::env::temp_dir().join(format!("acp-client-builtins-{}", std::process::id()));
    std::fs::create_dir_all(&root).unwrap();
    let root = std::fs::canonicalize(&root).unwrap();
    let terminals = Terminals::new().with_workspace(&root);
    let client = Builtins {
        fs: SandboxedFs::new([&root]).unwrap(),
        terminals: terminals.clone(),
    };
    let (_conn, agent) = common::pair(client, ());
    let peer = agent.peer();
    let file = root.join("notes.txt").to_string_lossy().into_owned();

    let r: Value = peer
        .request(
            "fs/write_text_file",
            &json!({"sessionId": "s1", "path": file, "content": "a\nb\nc\n"}),
        )
        .await
        .unwrap();
    assert_eq!(r, json!({}));
    let r: Value = peer
        .request(
            "fs/read_text_file",
            &json!({"sessionId": "s1", "path": file, "line": 2, "limit": 1}),
        )
        .await
        .unwrap();
    assert_eq!(r, json!({"content": "b\n"}));
    let err = peer
        .request::<_, Value>(
            "fs/read_text_file",
            &json!({"sessionId": "s1", "path": "/etc/passwd"}),
        )
        .await
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::INVALID_PARAMS);
    assert_eq!(err.data.unwrap()["path"], "/etc/passwd");

    let r: Value = peer
        .request(
            "terminal/create",
            &json!({"sessionId": "s1", "command": "cat", "args": [file], "outputByteLimit": 4}),
        )
        .await
        .unwrap();
    let id = r["terminalId"].clone();
    let r: Value = peer
        .request(
            "terminal/wait_for_exit",
            &json!({"sessionId": "s1", "terminalId": id}),
        )
        .await
        .unwrap();
    assert_eq!(r, json!({"exitCode": 0}));
    let r: Value = peer
        .request(
            "terminal/output",
            &json!({"sessionId": "s1", "terminalId": id}),
        )
        .await
        .unwrap();
    assert_eq!(
        r,
        json!({"output": "b\nc\n", "truncated": true, "exitStatus": {"exitCode": 0}})
    );
    let r: Value = peer
        .request(
            "terminal/release",
            &json!({"sessionId": "s1", "terminalId": id}),
        )
        .await
        .unwrap();
    assert_eq!(r, json!({}));
    assert!(terminals.is_empty());
    std::fs::remove_dir_all(&root).unwrap();
}
