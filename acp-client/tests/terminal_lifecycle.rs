//! `Terminals`: output capture with end-keeping truncation at a UTF-8 boundary, env/cwd,
//! exit codes and signals, kill keeps the output, release frees the terminal.

use std::time::Duration;

use acp_client::terminal::{TerminalConfig, TerminalDecision, TerminalRequest, Terminals};
use acp_client::{Client, Error, ErrorCode, async_trait};
use acp_types::v1::*;

/// A client that allows every command (the policy itself is tested in `terminal_policy.rs`).
struct Allow;

#[async_trait]
impl Client for Allow {
    async fn approve_terminal(&self, _: &TerminalRequest) -> TerminalDecision {
        TerminalDecision::Allow
    }
}

/// Terminals over the temp dir, with env and any cwd allowed (tested here for their effect).
fn terminals() -> Terminals {
    Terminals::new()
        .with_workspace(std::env::temp_dir())
        .with_config(
            TerminalConfig::default()
                .with_env_allowed(true)
                .with_cwd_outside_roots_allowed(true),
        )
}

/// `create` with the allowing client.
trait Run {
    async fn run(&self, req: CreateTerminalRequest) -> Result<CreateTerminalResponse, Error>;
}

impl Run for Terminals {
    async fn run(&self, req: CreateTerminalRequest) -> Result<CreateTerminalResponse, Error> {
        self.create(req, &Allow).await
    }
}

fn create(command: &str, args: &[&str], limit: Option<u64>) -> CreateTerminalRequest {
    let r = CreateTerminalRequest::new("s1", command).args(args.iter().copied());
    match limit {
        Some(limit) => r.output_byte_limit(limit),
        None => r,
    }
}

macro_rules! req {
    ($ty:ident, $id:expr) => {
        $ty::new("s1", $id.clone())
    };
}

async fn run_to_end(
    t: &Terminals,
    id: &TerminalId,
) -> (WaitForTerminalExitResponse, TerminalOutputResponse) {
    let exit = tokio::time::timeout(
        Duration::from_secs(10),
        t.wait_for_exit(req!(WaitForTerminalExitRequest, id)),
    )
    .await
    .expect("command exits")
    .unwrap();
    let out = t.output(req!(TerminalOutputRequest, id)).await.unwrap();
    (exit, out)
}

#[tokio::test]
async fn output_under_the_limit_is_complete_with_exit_code() {
    let t = terminals();
    let id = t
        .run(create(
            "sh",
            &["-c", "echo out; echo err >&2; exit 3"],
            None,
        ))
        .await
        .unwrap()
        .terminal_id;
    let (exit, out) = run_to_end(&t, &id).await;
    assert_eq!(exit.exit_code, Some(3));
    assert_eq!(exit.signal, None);
    assert!(!out.truncated);
    assert!(
        out.output.contains("out\n") && out.output.contains("err\n"),
        "{:?}",
        out.output
    );
    let status = out.exit_status.unwrap();
    assert_eq!(status.exit_code, Some(3));
}

#[tokio::test]
async fn truncation_keeps_the_end_and_cuts_at_a_character_boundary() {
    let t = terminals();
    // Ten bytes of two-byte characters; keeping 5 bytes would start mid-character.
    let id = t
        .run(create("printf", &["ééééé"], Some(5)))
        .await
        .unwrap()
        .terminal_id;
    let (exit, out) = run_to_end(&t, &id).await;
    assert_eq!(exit.exit_code, Some(0));
    assert!(out.truncated);
    assert_eq!(out.output, "éé");
    assert!(out.output.len() <= 5);

    let id = t
        .run(create(
            "sh",
            &["-c", "for i in 1 2 3 4 5 6 7 8 9; do echo line$i; done"],
            Some(11),
        ))
        .await
        .unwrap()
        .terminal_id;
    let (_, out) = run_to_end(&t, &id).await;
    assert!(out.truncated);
    assert_eq!(out.output, "ine8\nline9\n");
}

#[tokio::test]
async fn env_and_cwd_are_applied() {
    let t = terminals();
    let req = create("sh", &["-c", "echo $ACP_TEST_VAR; pwd"], None)
        .env([EnvVariable::new("ACP_TEST_VAR", "bar")])
        .cwd("/");
    let id = t.run(req).await.unwrap().terminal_id;
    let (_, out) = run_to_end(&t, &id).await;
    assert_eq!(out.output, "bar\n/\n");

    let req = create("pwd", &[], None).cwd("relative/dir");
    let err = t.run(req).await.unwrap_err();
    assert_eq!(err.code, ErrorCode::INVALID_PARAMS);
}

#[tokio::test]
async fn kill_reports_the_signal_and_keeps_the_output_until_release() {
    let t = terminals();
    let id = t
        .run(create("sh", &["-c", "echo started; exec sleep 30"], None))
        .await
        .unwrap()
        .terminal_id;
    // Wait until the command has printed.
    for _ in 0..200 {
        if t.output(req!(TerminalOutputRequest, id))
            .await
            .unwrap()
            .output
            == "started\n"
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let out = t.output(req!(TerminalOutputRequest, id)).await.unwrap();
    assert!(out.exit_status.is_none());
    t.kill(req!(KillTerminalRequest, id)).await.unwrap();
    let (exit, out) = run_to_end(&t, &id).await;
    assert_eq!(exit.signal.as_deref(), Some("SIGKILL"));
    assert_eq!(exit.exit_code, None);
    assert_eq!(out.output, "started\n");
    assert_eq!(t.len(), 1);
    t.release(req!(ReleaseTerminalRequest, id)).await.unwrap();
    assert!(t.is_empty());
    let err = t.output(req!(TerminalOutputRequest, id)).await.unwrap_err();
    assert_eq!(err.code, ErrorCode::RESOURCE_NOT_FOUND);
}

#[tokio::test]
async fn release_of_a_running_command_kills_it_and_pending_waits_end() {
    let t = terminals();
    let id = t
        .run(create("sleep", &["30"], None))
        .await
        .unwrap()
        .terminal_id;
    let t2 = t.clone();
    let id2 = id.clone();
    let waiter = tokio::spawn(async move {
        t2.wait_for_exit(req!(WaitForTerminalExitRequest, id2))
            .await
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    t.release(req!(ReleaseTerminalRequest, id)).await.unwrap();
    let r = tokio::time::timeout(Duration::from_secs(5), waiter)
        .await
        .expect("wait ends")
        .unwrap();
    // Either it saw the kill's exit status or learnt the terminal was released.
    match r {
        Ok(exit) => assert_eq!(exit.signal.as_deref(), Some("SIGKILL")),
        Err(e) => assert_eq!(e.code, ErrorCode::RESOURCE_NOT_FOUND),
    }
}

#[tokio::test]
async fn unknown_terminals_and_other_sessions_get_not_found_and_bad_commands_fail() {
    let t = terminals();
    let err = t
        .output(req!(TerminalOutputRequest, TerminalId::from("nope")))
        .await
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::RESOURCE_NOT_FOUND);
    assert_eq!(err.data.unwrap()["terminalId"], "nope");
    let id = t.run(create("true", &[], None)).await.unwrap().terminal_id;
    let other = TerminalOutputRequest::new("s2", id);
    assert_eq!(
        t.output(other).await.unwrap_err().code,
        ErrorCode::RESOURCE_NOT_FOUND
    );
    let err = t
        .run(create("/definitely/not/a/program", &[], None))
        .await
        .unwrap_err();
    assert!(
        err.message.contains("/definitely/not/a/program"),
        "{}",
        err.message
    );
}
