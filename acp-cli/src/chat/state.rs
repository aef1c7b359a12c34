//! What the chat knows of its session ([`SessionState`]), kept by the chat's loop alone from
//! the session's updates and the answers to its own requests, and the copy of it the line
//! editor completes from ([`Completions`]).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use acp_types::v1::*;

use crate::input::{ArgumentChoices, CommandList};
use crate::offers::ModelChoice;
use crate::sanitize::terminal_safe;

/// The session as its updates left it.
#[derive(Default)]
pub(super) struct SessionState {
    /// The current mode id.
    pub(super) mode: Option<String>,
    /// The modes on offer: id and name.
    pub(super) modes: Vec<(String, String)>,
    /// The configuration options (models among them).
    pub(super) config: Vec<SessionConfigOption>,
    /// The models the agent listed in `models` (unstable; gemini-cli), if it did.
    pub(super) models: Option<SessionModelState>,
    /// The session's title, as the agent last reported it.
    pub(super) title: Option<String>,
    /// The agent's slash commands: name and description (terminal-safe).
    pub(super) commands: Vec<(String, String)>,
    /// Tool call id -> title, to name the call a permission request is about.
    pub(super) tool_titles: HashMap<String, String>,
}

impl SessionState {
    /// How the model is chosen in this session.
    pub(super) fn model_choice(&self) -> ModelChoice {
        ModelChoice::of(self.models.as_ref(), &self.config)
    }

    /// The modes of a `session/new` or `session/load` answer.
    pub(super) fn set_modes(&mut self, modes: Option<SessionModeState>) {
        if let Some(modes) = modes {
            self.mode = Some(modes.current_mode_id.0.clone());
            self.modes = modes
                .available_modes
                .iter()
                .map(|m| (m.id.0.clone(), terminal_safe(&m.name)))
                .collect();
        }
    }

    /// Takes in what an update says about the session.
    pub(super) fn apply(&mut self, update: &SessionUpdate) {
        match update {
            SessionUpdate::ToolCall(call) => {
                self.tool_titles
                    .insert(call.tool_call_id.0.clone(), call.title.clone());
            }
            SessionUpdate::AvailableCommandsUpdate(c) => {
                self.commands = c
                    .available_commands
                    .iter()
                    .map(|c| (terminal_safe(&c.name), terminal_safe(&c.description)))
                    .collect();
            }
            SessionUpdate::CurrentModeUpdate(m) => self.mode = Some(m.current_mode_id.0.clone()),
            SessionUpdate::ConfigOptionUpdate(c) => self.config = c.config_options.clone(),
            SessionUpdate::SessionInfoUpdate(info) => {
                if let Some(title) = &info.title {
                    self.title = title.clone();
                }
            }
            _ => {}
        }
    }
}

/// The ids each of the CLI's commands takes (`mode`, `model`), with their names.
type Choices = HashMap<&'static str, Vec<(String, String)>>;

/// What the line editor (on its own thread) completes from: the loop writes a copy after
/// every change, the editor reads it at each Tab.
#[derive(Clone, Default)]
pub(super) struct Completions {
    /// The agent's slash commands.
    pub(super) commands: CommandList,
    /// `/mode` and `/model` ids with their names.
    choices: Arc<Mutex<Choices>>,
}

impl Completions {
    /// The choices, for [`crate::input::Keyboard::start`].
    pub(super) fn choices(&self) -> ArgumentChoices {
        let choices = self.choices.clone();
        Arc::new(move |command: &str| {
            choices
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .get(command)
                .cloned()
                .unwrap_or_default()
        })
    }

    /// Copies what the editor completes from `state`.
    pub(super) fn publish(&self, state: &SessionState) {
        *self.commands.lock().unwrap_or_else(|p| p.into_inner()) = state.commands.clone();
        let mut choices = self.choices.lock().unwrap_or_else(|p| p.into_inner());
        choices.insert("mode", state.modes.clone());
        choices.insert("model", state.model_choice().values());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn updates_keep_the_state_and_the_editor_completes_from_its_copy() {
        let mut state = SessionState::default();
        state.set_modes(Some(crate::proto::mode_state(
            "ask",
            vec![crate::proto::mode("ask", "Ask\x1b[2J", "")],
        )));
        state.apply(&SessionUpdate::AvailableCommandsUpdate(
            crate::proto::commands_update(vec![crate::proto::command("echo", "Echo", None)]),
        ));
        state.apply(&crate::proto::title_update("Plans"));
        state.apply(&SessionUpdate::ToolCall(Box::new(ToolCall::new(
            "t1", "Read",
        ))));
        assert_eq!(state.title.as_deref(), Some("Plans"));
        assert_eq!(state.tool_titles["t1"], "Read");
        let completions = Completions::default();
        completions.publish(&state);
        assert_eq!(
            *completions.commands.lock().unwrap(),
            [("echo".to_owned(), "Echo".to_owned())]
        );
        assert_eq!(
            (completions.choices())("mode"),
            [("ask".to_owned(), "Ask".to_owned())]
        );
        assert!((completions.choices())("other").is_empty());
    }
}
