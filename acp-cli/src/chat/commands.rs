//! The chat's own slash commands (`/mode`, `/model`, `/title`): a listing is shown at once;
//! a change is a request to the agent, run as a task so that the loop keeps reading the
//! session meanwhile, whose [`Apply`] the loop then runs on its state and view.

use std::future::Future;
use std::pin::Pin;

use acp_client::AgentHandle;
use acp_types::v1::*;

use super::state::SessionState;
use crate::offers::ModelChoice;
use crate::proto;
use crate::view::View;

/// A finished request's effect on the session's state and the view.
pub(super) type Apply = Box<dyn FnOnce(&mut SessionState, &dyn View) + Send>;

/// A request in flight.
pub(super) type Pending = Pin<Box<dyn Future<Output = Apply> + Send>>;

/// The CLI's commands, for completion and for telling them from prompts.
pub const LOCAL_COMMANDS: [(&str, &str); 4] = [
    ("mode", "list or switch the agent's modes"),
    ("model", "list or switch the agent's models"),
    ("title", "show or set the session's title"),
    ("quit", "leave acp"),
];

/// What runs a command: the agent, the session, and whether clients may set titles.
pub(super) struct Target<'a> {
    pub(super) agent: &'a AgentHandle,
    pub(super) session: &'a SessionId,
    pub(super) titles_settable: bool,
}

/// `/mode [id]`: lists the modes or switches to one.
pub(super) fn mode(
    arg: &str,
    state: &SessionState,
    target: &Target<'_>,
    view: &dyn View,
) -> Option<Pending> {
    if state.modes.is_empty() {
        view.info("this agent offers no modes");
        return None;
    }
    if arg.is_empty() {
        for (id, name) in &state.modes {
            let mark = if state.mode.as_deref() == Some(id.as_str()) {
                "*"
            } else {
                " "
            };
            view.info(&format!("{mark} {id}  {name}"));
        }
        return None;
    }
    let agent = target.agent.clone();
    let request = proto::set_mode(target.session, arg);
    let arg = arg.to_owned();
    Some(Box::pin(async move {
        let result = agent.set_session_mode(request).await;
        Box::new(
            move |state: &mut SessionState, view: &dyn View| match result {
                Ok(_) => {
                    state.mode = Some(arg.clone());
                    view.info(&format!("mode set to {arg}"));
                }
                Err(e) => view.error(&format!("mode not changed: {}", e.message)),
            },
        ) as Apply
    }))
}

/// `/model [id]`: lists the models or switches to one, through `session/set_model` when
/// the agent listed `models`, else through its config option of category `model`.
pub(super) fn model(
    arg: &str,
    state: &SessionState,
    target: &Target<'_>,
    view: &dyn View,
) -> Option<Pending> {
    let choice = state.model_choice();
    let nothing = match choice {
        ModelChoice::None => Some("this agent offers no model choice"),
        ModelChoice::NotAList => Some("the agent's model option is not a list to pick from"),
        _ => None,
    };
    if let Some(nothing) = nothing {
        view.info(nothing);
        return None;
    }
    if arg.is_empty() {
        for line in choice.listing() {
            view.info(&line);
        }
        return None;
    }
    let shown = crate::sanitize::terminal_safe(arg);
    let agent = target.agent.clone();
    let session = target.session.clone();
    let arg = arg.to_owned();
    match choice {
        ModelChoice::None | ModelChoice::NotAList => None,
        ModelChoice::Models(_) => Some(Box::pin(async move {
            let result = agent
                .set_session_model(SetSessionModelRequest::new(session, arg.as_str()))
                .await;
            Box::new(
                move |state: &mut SessionState, view: &dyn View| match result {
                    Ok(_) => {
                        if let Some(models) = &mut state.models {
                            models.current_model_id = ModelId(arg);
                        }
                        view.info(&format!("model set to {shown}"));
                    }
                    Err(e) => view.error(&format!("model not changed: {}", e.message)),
                },
            ) as Apply
        })),
        ModelChoice::ConfigOption { id, .. } => Some(Box::pin(async move {
            let request = proto::set_config_value(&session, &id.0, &arg);
            let result = agent.set_session_config_option(request).await;
            Box::new(
                move |state: &mut SessionState, view: &dyn View| match result {
                    Ok(response) => {
                        state.config = response.config_options;
                        view.info(&format!("model set to {shown}"));
                    }
                    Err(e) => view.error(&format!("model not changed: {}", e.message)),
                },
            ) as Apply
        })),
    }
}

/// `/title [text]`: shows the session's title or, where the agent lets clients set it
/// (`sessionCapabilities.title`), renames the session with `session/set_title`.
pub(super) fn title(
    arg: &str,
    state: &SessionState,
    target: &Target<'_>,
    view: &dyn View,
) -> Option<Pending> {
    if arg.is_empty() {
        match &state.title {
            Some(title) => view.info(&format!("title: {}", crate::offers::title_text(title))),
            None => view.info("the agent has not titled this session"),
        }
        return None;
    }
    if !target.titles_settable {
        view.info("this agent does not let clients set titles (no sessionCapabilities.title)");
        return None;
    }
    let agent = target.agent.clone();
    let request = SetSessionTitleRequest::new(target.session.clone(), arg);
    Some(Box::pin(async move {
        let result = agent.set_session_title(request).await;
        Box::new(
            move |state: &mut SessionState, view: &dyn View| match result {
                Ok(response) => {
                    let shown = crate::offers::title_text(&response.title);
                    state.title = Some(response.title);
                    view.info(&format!("title set to {shown}"));
                }
                Err(e) => view.error(&format!("title not changed: {}", e.message)),
            },
        ) as Apply
    }))
}
