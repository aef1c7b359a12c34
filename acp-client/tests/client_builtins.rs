//! `SandboxedFs` and `Terminals` used inside a `Client` impl, driven over the wire by a raw
//! agent connection: results and sandbox errors travel as ACP responses.

mod common;

use acp_client::fs::SandboxedFs;
use acp_client::terminal::{TerminalDecision, TerminalRequest, Terminals};
use acp_client::{Client, ErrorCode, async_trait};
use acp_rpc::Error;
use acp_types::v1::*;
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
    async fn read_text_file(&self, p: ReadTextFileRequest) -> Result<ReadTextFileResponse, Error> {
        self.fs.read_text_file(p).await
    }
    async fn write_text_file(
        &self,
        p: WriteTextFileRequest,
    ) -> Result<WriteTextFileResponse, Error> {
        self.fs.write_text_file(p).await
    }
    async fn create_terminal(
        &self,
        p: CreateTerminalRequest,
    ) -> Result<CreateTerminalResponse, Error> {
        self.terminals.create(p, self).await
    }
    async fn terminal_output(
        &self,
        p: TerminalOutputRequest,
    ) -> Result<TerminalOutputResponse, Error> {
        self.terminals.output(p).await
    }
    async fn wait_for_terminal_exit(
        &self,
        p: WaitForTerminalExitRequest,
    ) -> Result<WaitForTerminalExitResponse, Error> {
        self.terminals.wait_for_exit(p).await
    }
    async fn kill_terminal(&self, p: KillTerminalRequest) -> Result<KillTerminalResponse, Error> {
        self.terminals.kill(p).await
    }
    async fn release_terminal(
        &self,
        p: ReleaseTerminalRequest,
    ) -> Result<ReleaseTerminalResponse, Error> {
        self.terminals.release(p).await
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
