//! The built-in agent's demo turn: a thought, a plan checked off, an edit that waits for
//! permission, a terminal command, and a reply streamed word by word, each step ending early
//! when the turn is cancelled.

use std::time::Duration;

use acp_agent::types::*;
use acp_agent::{Error, PromptContext, SessionHandle, ToolCallHandle};

use super::{BuiltinAgent, MODELS, SessionState};
use crate::proto;

/// How one step of a turn ended.
pub(super) enum Step {
    Continue,
    Cancelled,
}

impl BuiltinAgent {
    pub(super) fn word_delay(state: &SessionState) -> Duration {
        let ms = MODELS
            .iter()
            .find(|(v, _, _)| *v == state.model)
            .map_or(25, |(_, _, ms)| *ms);
        Duration::from_millis(ms)
    }

    /// Streams `text` word by word; `Cancelled` as soon as the turn is cancelled.
    pub(super) async fn stream(
        cx: &PromptContext,
        s: &SessionHandle,
        text: &str,
        delay: Duration,
    ) -> Result<Step, Error> {
        let mut first = true;
        for word in text.split(' ') {
            tokio::select! {
                _ = cx.cancelled() => return Ok(Step::Cancelled),
                _ = tokio::time::sleep(delay) => {}
            }
            let chunk = if first {
                word.to_owned()
            } else {
                format!(" {word}")
            };
            first = false;
            s.message_chunk(chunk).await?;
        }
        Ok(Step::Continue)
    }

    /// The edit: a diff that needs permission in `ask` mode.
    pub(super) async fn propose_edit(
        cx: &PromptContext,
        s: &SessionHandle,
        state: &SessionState,
        turn: usize,
    ) -> Result<Step, Error> {
        let path = format!("{}/NOTES.md", state.cwd.trim_end_matches('/'));
        let call = ToolCall::new(format!("edit-{turn}"), "Edit NOTES.md")
            .kind(ToolKind::Edit)
            .locations([proto::location(&path, 1)])
            .content([proto::diff_content(
                &path,
                Some("# Notes\nTry acp.\n"),
                &format!("# Notes\nTry acp.\nTurn {turn}: talked to the built-in agent.\n"),
            )]);
        let tool = s.start_tool_call(call).await?;
        if state.mode == "ask" {
            let options = vec![
                proto::permission_option("allow", "Allow", PermissionOptionKind::AllowOnce),
                proto::permission_option(
                    "allow-always",
                    "Always allow",
                    PermissionOptionKind::AllowAlways,
                ),
                proto::permission_option("reject", "Reject", PermissionOptionKind::RejectOnce),
            ];
            let outcome = s.request_permission(tool.blank(), options).await?;
            match outcome {
                RequestPermissionOutcome::Cancelled => return Ok(Step::Cancelled),
                RequestPermissionOutcome::Selected(sel) if sel.option_id.0.starts_with("allow") => {
                }
                _ => {
                    tool.fail(vec![proto::text_content("rejected by the user")])
                        .await?;
                    return Ok(Step::Continue);
                }
            }
        }
        tool.status(ToolCallStatus::InProgress).await?;
        tokio::select! {
            _ = cx.cancelled() => return Ok(Step::Cancelled),
            _ = tokio::time::sleep(Duration::from_millis(100)) => {}
        }
        tool.complete(vec![proto::text_content(
            "applied (a demo: no file was written)",
        )])
        .await?;
        Ok(Step::Continue)
    }

    /// The check: `echo` in a terminal the client runs (if it offers terminals and agrees).
    pub(super) async fn run_check(
        cx: &PromptContext,
        s: &SessionHandle,
        turn: usize,
    ) -> Result<Step, Error> {
        if !cx.client_capabilities().is_some_and(|c| c.terminal) {
            s.message_chunk("(the client offers no terminals; skipping the check)\n")
                .await?;
            return Ok(Step::Continue);
        }
        let call = ToolCall::new(format!("check-{turn}"), "Run echo").kind(ToolKind::Execute);
        let tool = s.start_tool_call(call).await?;
        let client = cx.client();
        let created = client
            .create_terminal(proto::create_terminal(
                s.id(),
                "echo",
                &["hello from the built-in agent"],
            ))
            .await;
        let terminal = match created {
            Ok(created) => created.terminal_id,
            Err(e) => {
                tool.fail(vec![proto::text_content(format!(
                    "the client did not run it: {}",
                    e.message
                ))])
                .await?;
                return Ok(Step::Continue);
            }
        };
        tool_with_terminal(&tool, &terminal).await?;
        let exit = tokio::select! {
            r = client.wait_for_terminal_exit(proto::wait_for_terminal(s.id(), &terminal)) => Some(r),
            _ = cx.cancelled() => None,
        };
        let Some(exit) = exit else {
            let _ = client
                .kill_terminal(proto::kill_terminal(s.id(), &terminal))
                .await;
            let _ = client
                .release_terminal(proto::release_terminal(s.id(), &terminal))
                .await;
            return Ok(Step::Cancelled);
        };
        let output = client
            .terminal_output(proto::terminal_output(s.id(), &terminal))
            .await;
        let _ = client
            .release_terminal(proto::release_terminal(s.id(), &terminal))
            .await;
        match (exit, output) {
            (Ok(exit), Ok(_)) if exit.exit_code == Some(0) => {
                tool.status(ToolCallStatus::Completed).await?
            }
            (Ok(exit), _) => {
                tool.fail(vec![proto::text_content(format!(
                    "exit code {:?}",
                    exit.exit_code
                ))])
                .await?
            }
            (Err(e), _) => tool.fail(vec![proto::text_content(e.message)]).await?,
        }
        Ok(Step::Continue)
    }

    pub(super) async fn demo_turn(
        &self,
        p: &PromptRequest,
        cx: &PromptContext,
        state: &SessionState,
        turn: usize,
    ) -> Result<StopReason, Error> {
        let s = cx.session();
        let delay = Self::word_delay(state);
        let (text, attachments) = describe_prompt(&p.prompt);
        s.thought_chunk(format!(
            "The user wrote {} words and attached {} file(s). I will show what a turn can hold.",
            text.split_whitespace().count(),
            attachments.len()
        ))
        .await?;
        let plan = |done: usize| {
            let steps = ["Read the prompt", "Edit NOTES.md", "Run a check", "Reply"];
            steps
                .iter()
                .enumerate()
                .map(|(i, step)| {
                    let status = match i.cmp(&done) {
                        std::cmp::Ordering::Less => PlanEntryStatus::Completed,
                        std::cmp::Ordering::Equal => PlanEntryStatus::InProgress,
                        std::cmp::Ordering::Greater => PlanEntryStatus::Pending,
                    };
                    proto::plan_entry(step, status)
                })
                .collect::<Vec<_>>()
        };
        s.plan(plan(1)).await?;
        if let Step::Cancelled = Self::propose_edit(cx, s, state, turn).await? {
            return Ok(StopReason::Cancelled);
        }
        s.plan(plan(2)).await?;
        if let Step::Cancelled = Self::run_check(cx, s, turn).await? {
            return Ok(StopReason::Cancelled);
        }
        s.plan(plan(3)).await?;
        let mut reply = format!("You said: {text}");
        for name in &attachments {
            reply.push_str(&format!(" [attached: {name}]"));
        }
        if let Step::Cancelled = Self::stream(cx, s, &reply, delay).await? {
            return Ok(StopReason::Cancelled);
        }
        s.message_chunk("\n").await?;
        s.plan(plan(4)).await?;
        Ok(StopReason::EndTurn)
    }
}

pub(super) async fn tool_with_terminal(
    tool: &ToolCallHandle,
    terminal: &TerminalId,
) -> Result<(), Error> {
    let update = tool
        .blank()
        .status(ToolCallStatus::InProgress)
        .content([proto::terminal_content(terminal.clone())]);
    tool.update(update).await
}

/// The prompt's text and the names of its attachments.
pub(super) fn describe_prompt(prompt: &[ContentBlock]) -> (String, Vec<String>) {
    let mut text = Vec::new();
    let mut attachments = Vec::new();
    for block in prompt {
        match block {
            ContentBlock::Text(t) => text.push(t.text.trim().to_owned()),
            ContentBlock::Resource(r) => match &r.resource {
                EmbeddedResourceResource::TextResourceContents(t) => attachments.push(format!(
                    "{} ({} lines, embedded)",
                    t.uri,
                    t.text.lines().count()
                )),
                EmbeddedResourceResource::BlobResourceContents(b) => {
                    attachments.push(format!("{} (binary, embedded)", b.uri))
                }
            },
            ContentBlock::ResourceLink(l) => attachments.push(format!("{} (link)", l.uri)),
            _ => attachments.push("(unsupported block)".to_owned()),
        }
    }
    (text.join(" "), attachments)
}
