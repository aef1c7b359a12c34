//! What a run offers the agent, how long each check may take, which checks run and which
//! prompts drive the agent.

use std::path::Path;
use std::time::Duration;

use serde::Deserialize;

use crate::trace::TraceSink;

/// What the kit's client advertises in `initialize` (`clientCapabilities`). Anything the
/// agent calls that is not offered fails `capabilities.offered_only`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Offer {
    /// `fs.readTextFile`.
    pub read: bool,
    /// `fs.writeTextFile`.
    pub write: bool,
    /// `terminal` (commands run in the kit's scratch workspace).
    pub terminal: bool,
}

impl Default for Offer {
    /// File reading and writing, no terminal: a grading run executes no command an agent
    /// asks for unless told to.
    fn default() -> Self {
        Offer {
            read: true,
            write: true,
            terminal: false,
        }
    }
}

impl Offer {
    /// Parses a comma-separated list of `read`, `write`, `terminal` (`fs` means read and
    /// write; `none` or an empty string offers nothing).
    pub fn parse(list: &str) -> Result<Offer, String> {
        let mut offer = Offer {
            read: false,
            write: false,
            terminal: false,
        };
        for item in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            match item {
                "read" => offer.read = true,
                "write" => offer.write = true,
                "fs" => (offer.read, offer.write) = (true, true),
                "terminal" => offer.terminal = true,
                "none" => {}
                other => {
                    return Err(format!(
                        "unknown capability `{other}` (use read, write, fs, terminal or none)"
                    ));
                }
            }
        }
        Ok(offer)
    }
}

/// Time bounds. The timing defaults are the table of the OpenCode/Zed message-flow notes
/// (handshake and session creation under 2 s, a round trip under 500 ms, a 1 MB file read
/// under 1 s and a write under 2 s); `check` bounds every other step.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bounds {
    /// The most any one step of a check may wait for the agent (default 10 s). A hung agent
    /// costs this once: the next check starts a fresh agent.
    pub check: Duration,
    /// The most a prompt turn may take (default 30 s; an agent behind a model may need
    /// more).
    pub turn: Duration,
    /// `session/cancel` to the `cancelled` answer (default 5 s).
    pub cancel: Duration,
    /// `initialize` (default 2 s).
    pub handshake: Duration,
    /// `session/new` (default 2 s).
    pub session_new: Duration,
    /// A request the agent can answer at once (default 500 ms).
    pub round_trip: Duration,
    /// A 1 MB `fs/read_text_file` as the agent takes it in (default 1 s).
    pub file_read: Duration,
    /// A 1 MB `fs/write_text_file` as the agent hands it over (default 2 s).
    pub file_write: Duration,
}

impl Default for Bounds {
    fn default() -> Self {
        Bounds {
            check: Duration::from_secs(10),
            turn: Duration::from_secs(30),
            cancel: Duration::from_secs(5),
            handshake: Duration::from_secs(2),
            session_new: Duration::from_secs(2),
            round_trip: Duration::from_millis(500),
            file_read: Duration::from_secs(1),
            file_write: Duration::from_secs(2),
        }
    }
}

/// The prompts that drive the agent. An agent that needs particular words to use its tools
/// (or to hold a turn open long enough to be cancelled) is given them here; the defaults
/// suit an agent that does something with any text.
///
/// As JSON (`acp check --prompt-script FILE`), every field optional:
/// `{"prompts": ["read hello.txt and copy it"], "cancel": "start something long",
///   "hold": "wait for the cancel request", "write": "write hello to notes.txt"}`
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PromptScript {
    /// The turns of the prompt-turn checks, sent in order in one session (at least one).
    pub prompts: Vec<String>,
    /// The turn `cancel.session_cancel` starts and then cancels.
    pub cancel: String,
    /// The turn `cancel.cancel_request` starts and then cancels with `$/cancel_request`.
    pub hold: String,
    /// The file (in the session's directory) the kit fills with 1 MB of text, for agents
    /// that read it (`timing.fs_read_1mb`).
    pub file: String,
    /// The turn `capabilities.offered_only` sends to an agent it offered no file writing:
    /// words that make the agent write a file. An agent that asks the client to write
    /// anyway fails the check. Empty: no such turn.
    pub write: String,
}

impl Default for PromptScript {
    fn default() -> Self {
        PromptScript {
            prompts: vec!["Hello from acp check: please read hello.txt and answer briefly.".into()],
            cancel: "acp check: start a long task (it will be cancelled)".into(),
            hold: "acp check: start a long task (its request will be cancelled)".into(),
            file: "hello.txt".into(),
            write: "acp check: please write the word hello to notes.txt".into(),
        }
    }
}

impl PromptScript {
    /// Reads a script from a JSON file.
    pub fn from_file(path: &Path) -> Result<PromptScript, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let script: PromptScript = serde_json::from_str(&text)
            .map_err(|e| format!("{} is not a prompt script: {e}", path.display()))?;
        if script.prompts.is_empty() {
            return Err(format!(
                "{}: `prompts` must hold at least one prompt",
                path.display()
            ));
        }
        if script.file.is_empty() || script.file.contains('/') {
            return Err(format!(
                "{}: `file` must be a plain file name",
                path.display()
            ));
        }
        Ok(script)
    }
}

/// Everything about a run.
#[derive(Clone, Default)]
pub struct Options {
    /// What the client offers.
    pub offer: Offer,
    /// Time bounds.
    pub bounds: Bounds,
    /// The prompts.
    pub script: PromptScript,
    /// Run only these checks (names, or groups: any leading part of a name up to a dot);
    /// empty means all. A run whose version leaves none of them fails with a `setup`
    /// pseudo-check saying so.
    pub only: Vec<String>,
    /// Skip these checks (names or group names).
    pub skip: Vec<String>,
    /// Receives every line that crosses the wire (for `--trace`).
    pub trace: Option<TraceSink>,
    /// The MCP servers passed in every `session/new` of the run (`acp check --mcp-config`):
    /// stdio ones always, `http` and `sse` ones only when the agent advertises them in
    /// `mcpCapabilities`, other kinds never.
    pub mcp_servers: Vec<acp_types::v1::McpServer>,
    /// The protocol version to grade (`acp check --protocol`): `Some(1)` grades v1,
    /// `Some(2)` grades v2 (an agent that answers v2's `initialize` with 1 is refused, the
    /// report naming both versions), `None` (the default) offers v2 and grades v1 when the
    /// agent answers 1 (or refuses the v2 offer), as `acp chat` negotiates. The report says
    /// which version it graded ([`crate::Report::protocol`]).
    pub protocol: Option<u16>,
}

impl std::fmt::Debug for Options {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Options")
            .field("offer", &self.offer)
            .field("bounds", &self.bounds)
            .field("script", &self.script)
            .field("only", &self.only)
            .field("skip", &self.skip)
            .field("trace", &self.trace.is_some())
            .field("protocol", &self.protocol)
            .finish()
    }
}

impl Options {
    /// Whether the check named `name` is selected.
    pub fn selected(&self, name: &str) -> bool {
        (self.only.is_empty() || self.only.iter().any(|o| matches(o, name)))
            && !self.skip.iter().any(|s| matches(s, name))
    }
}

/// `pattern` is the check's full name or a group it is in: any leading part of the name that
/// ends at a dot (`robustness` for `robustness.malformed_line`; `v2` and `v2.handshake` for
/// `v2.handshake.initialize`).
pub(crate) fn matches(pattern: &str, name: &str) -> bool {
    name.strip_prefix(pattern)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('.'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offers_parse_and_unknown_words_are_refused() {
        assert_eq!(
            Offer::parse("fs,terminal"),
            Ok(Offer {
                read: true,
                write: true,
                terminal: true
            })
        );
        assert_eq!(
            Offer::parse("none"),
            Ok(Offer {
                read: false,
                write: false,
                terminal: false
            })
        );
        assert!(Offer::parse("read,disk").unwrap_err().contains("disk"));
    }

    #[test]
    fn only_and_skip_take_names_and_groups() {
        let options = Options {
            only: vec!["robustness".into(), "timing.handshake".into()],
            skip: vec!["robustness.malformed_line".into()],
            ..Options::default()
        };
        assert!(options.validate().is_ok());
        assert!(options.selected("robustness.unknown_method"));
        assert!(options.selected("timing.handshake"));
        assert!(!options.selected("robustness.malformed_line"));
        assert!(!options.selected("timing.session_new"));
        let v2 = Options {
            only: vec!["v2.handshake".into()],
            ..Options::default()
        };
        assert!(v2.selected("v2.handshake.initialize"));
        assert!(!v2.selected("v2.handshake_extra"));
        assert!(!v2.selected("handshake.initialize"));
        assert!(!v2.selected("v2.cancel.session_cancel"));
        let bad = Options {
            skip: vec!["robust".into()],
            ..Options::default()
        };
        assert!(bad.validate().unwrap_err().contains("`robust`"));
    }
}
