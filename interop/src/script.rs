//! The script every interop peer follows, read from `peers/script.json` (the TypeScript and
//! Python peers read the same file at run time).

use std::sync::OnceLock;

use serde::Deserialize;
use serde_json::Value;

/// The script's text, compiled in.
pub const SCRIPT_JSON: &str = include_str!("../peers/script.json");

/// Files in the cell's workspace.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Workspace {
    /// The file the agent reads (relative to the session's cwd).
    pub read_file: String,
    /// Its content (written by the matrix before the cell runs).
    pub read_content: String,
    /// The file the agent writes.
    pub write_file: String,
    /// What the agent writes: this prefix followed by what it read.
    pub write_prefix: String,
}

/// The three prompt texts; agents choose what to do by them.
#[derive(Debug, Deserialize)]
pub struct Prompts {
    /// Turn 1: the full script.
    pub work: String,
    /// Turn 2: the client cancels it with `session/cancel`.
    pub cancel: String,
    /// Turn 3: the client withdraws it with `$/cancel_request`.
    pub hold: String,
}

/// The image block of the first prompt.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Image {
    /// Its MIME type.
    pub mime_type: String,
    /// Base64 data.
    pub data: String,
}

/// The terminal command agents run when the client offers terminals.
#[derive(Debug, Deserialize)]
pub struct Terminal {
    /// The program.
    pub command: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// What its output contains.
    pub expect: String,
}

/// The whole script.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Script {
    /// Workspace files.
    pub workspace: Workspace,
    /// Prompt texts.
    pub prompts: Prompts,
    /// The image block.
    pub image: Image,
    /// The embedded resource's URI.
    pub resource_uri: String,
    /// The embedded resource's text.
    pub resource_text: String,
    /// The message an agent sends when it starts holding turn 3.
    pub holding_message: String,
    /// How long an agent that cannot see `$/cancel_request` holds turn 3.
    pub hold_fallback_ms: u64,
    /// How long an agent waits for `session/cancel` (and holds turn 3 at most).
    pub cancel_wait_ms: u64,
    /// The method nobody serves (the `-32601` bad call).
    pub unknown_method: String,
    /// The options of every permission request.
    pub permission_options: Vec<Value>,
    /// The terminal command.
    pub terminal: Terminal,
    /// The session modes of `session/new`.
    pub modes: Value,
    /// One `session/update` of every v1 kind, sent in turn 1.
    pub updates: Vec<Value>,
    /// What `session/load` replays.
    pub history: Vec<Value>,
}

impl Script {
    /// The `sessionUpdate` kinds of [`Script::updates`], in order.
    pub fn update_kinds(&self) -> Vec<&str> {
        self.updates
            .iter()
            .filter_map(|u| u["sessionUpdate"].as_str())
            .collect()
    }
}

/// The parsed script.
pub fn script() -> &'static Script {
    static SCRIPT: OnceLock<Script> = OnceLock::new();
    SCRIPT.get_or_init(|| serde_json::from_str(SCRIPT_JSON).expect("peers/script.json is valid"))
}

/// The v2 script's text (`peers/script.v2.json`), compiled in.
pub const SCRIPT_V2_JSON: &str = include_str!("../peers/script.v2.json");

/// The script of the v2 cells: one turn (see the file's `_comment`).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScriptV2 {
    /// The prompt's text.
    pub prompt: String,
    /// The id of the inserted user message (the prompt's answer and the `user_message`
    /// update's `messageId`).
    pub user_message_id: String,
    /// The updates before the permission request (the `user_message` goes after the first).
    pub before: Vec<Value>,
    /// `session/request_permission`'s params without `sessionId`.
    pub permission: Value,
    /// The option the clients select.
    pub allow_option: String,
    /// The updates after the permission request, the last the idle `state_update`.
    pub after: Vec<Value>,
}

impl ScriptV2 {
    /// The `sessionUpdate` kinds an agent sends in the turn, in order (`user_message` after
    /// the first).
    pub fn update_kinds(&self) -> Vec<&str> {
        let mut kinds: Vec<&str> = self
            .before
            .iter()
            .chain(&self.after)
            .filter_map(|u| u["sessionUpdate"].as_str())
            .collect();
        kinds.insert(1.min(kinds.len()), "user_message");
        kinds
    }
}

/// The parsed v2 script.
pub fn script_v2() -> &'static ScriptV2 {
    static SCRIPT: OnceLock<ScriptV2> = OnceLock::new();
    SCRIPT.get_or_init(|| {
        serde_json::from_str(SCRIPT_V2_JSON).expect("peers/script.v2.json is valid")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_script_parses_and_has_every_v1_update_kind_once() {
        let kinds = script().update_kinds();
        let mut unique = kinds.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), kinds.len(), "duplicate kinds: {kinds:?}");
        assert_eq!(kinds.len(), 14, "the v1 schema has 14 session/update kinds");
    }

    #[test]
    fn every_v2_script_update_reads_as_our_v2_type_and_back_unchanged() {
        let sc = script_v2();
        for update in sc.before.iter().chain(&sc.after) {
            let parsed: acp_types::v2::SessionUpdate =
                serde_json::from_value(update.clone()).expect("reads");
            assert_eq!(&serde_json::to_value(&parsed).expect("writes"), update);
        }
        let mut permission = sc.permission.clone();
        permission["sessionId"] = "s".into();
        let parsed: acp_types::v2::RequestPermissionRequest =
            serde_json::from_value(permission.clone()).expect("reads");
        assert_eq!(serde_json::to_value(&parsed).expect("writes"), permission);
        assert_eq!(sc.update_kinds()[1], "user_message");
        assert_eq!(sc.after.last().unwrap()["state"], "idle");
    }

    #[test]
    fn every_script_update_reads_as_our_v1_type() {
        for update in &script().updates {
            let parsed: acp_types::v1::SessionUpdate =
                serde_json::from_value(update.clone()).expect("reads");
            let back = serde_json::to_value(&parsed).expect("writes");
            assert_eq!(back["sessionUpdate"], update["sessionUpdate"]);
            assert!(
                !format!("{parsed:?}").starts_with("Unknown"),
                "{update} is not a known kind"
            );
        }
    }
}
