//! What an agent offers beyond the basics, and how the chat shows and uses it: the session's
//! models (a config option of category `model`, or gemini-cli's `models` switched with
//! `session/set_model`), the session's title, and the token usage of a turn. The unstable
//! items are typed (acp-cli turns on acp-client's `unstable_session_model`,
//! `unstable_session_set_title` and `unstable_end_turn_token_usage`).

use acp_types::v1::*;

use crate::sanitize::terminal_safe;

/// How the session's model is chosen, as far as the agent said.
#[derive(Clone, Debug, PartialEq)]
pub enum ModelChoice {
    /// The agent listed `models` on `session/new` / `session/load`: switched with
    /// `session/set_model`. Preferred when an agent offers both (agents that do keep them in
    /// step): it is the request made for exactly this.
    Models(SessionModelState),
    /// A select config option of category `model`: switched with `session/set_config_option`.
    ConfigOption {
        /// The option's id.
        id: SessionConfigId,
        /// The value in effect.
        current: String,
        /// Value and name of each choice.
        values: Vec<(String, String)>,
    },
    /// A config option of category `model` that is not a list to pick from.
    NotAList,
    /// No model choice at all.
    None,
}

impl ModelChoice {
    /// What the agent offers: its `models`, else its model config option.
    pub fn of(models: Option<&SessionModelState>, config: &[SessionConfigOption]) -> ModelChoice {
        if let Some(models) = models {
            return ModelChoice::Models(models.clone());
        }
        let Some(option) = config
            .iter()
            .find(|o| matches!(o.category, Some(SessionConfigOptionCategory::Model)))
        else {
            return ModelChoice::None;
        };
        let SessionConfigKind::Select(select) = &option.kind else {
            return ModelChoice::NotAList;
        };
        let values = match &select.options {
            SessionConfigSelectOptions::Ungrouped(list) => list
                .iter()
                .map(|o| (o.value.0.clone(), o.name.clone()))
                .collect(),
            SessionConfigSelectOptions::Grouped(groups) => groups
                .iter()
                .flat_map(|g| {
                    g.options
                        .iter()
                        .map(|o| (o.value.0.clone(), o.name.clone()))
                })
                .collect(),
        };
        ModelChoice::ConfigOption {
            id: option.id.clone(),
            current: select.current_value.0.clone(),
            values,
        }
    }

    /// Id and name of every model on offer (raw: sanitise before showing).
    pub fn values(&self) -> Vec<(String, String)> {
        match self {
            ModelChoice::Models(models) => models
                .available_models
                .iter()
                .map(|m| (m.model_id.0.clone(), m.name.clone()))
                .collect(),
            ModelChoice::ConfigOption { values, .. } => values.clone(),
            ModelChoice::NotAList | ModelChoice::None => Vec::new(),
        }
    }

    /// The model in effect, if known.
    pub fn current(&self) -> Option<&str> {
        match self {
            ModelChoice::Models(models) => Some(&models.current_model_id.0),
            ModelChoice::ConfigOption { current, .. } => Some(current),
            ModelChoice::NotAList | ModelChoice::None => None,
        }
    }

    /// The `/model` listing: one line per model, `*` marking the current one.
    pub fn listing(&self) -> Vec<String> {
        let current = self.current();
        self.values()
            .iter()
            .map(|(id, name)| {
                let mark = if current == Some(id.as_str()) {
                    "*"
                } else {
                    " "
                };
                format!("{mark} {}  {}", terminal_safe(id), terminal_safe(name))
            })
            .collect()
    }
}

/// `models: a (current), b` when the session offers models (in `models` or as a config
/// option of category `model`); `model: x` when it names only the current one; `None` when
/// it offers no list.
pub fn models_line(choice: &ModelChoice) -> Option<String> {
    let current = choice.current()?;
    let names: Vec<String> = choice
        .values()
        .iter()
        .map(|(value, _)| {
            let id = terminal_safe(value);
            if value == current {
                format!("{id} (current)")
            } else {
                id
            }
        })
        .collect();
    Some(if names.is_empty() {
        format!("model: {}", terminal_safe(current))
    } else {
        format!("models: {}", names.join(", "))
    })
}

/// `tokens: 1500 (in 1200, out 300)` for the turn's reported usage.
pub fn usage_line(usage: &Usage) -> String {
    format!(
        "tokens: {} (in {}, out {})",
        usage.total_tokens, usage.input_tokens, usage.output_tokens
    )
}

/// A title as shown on one line: no control characters, no line breaks, at most 80 columns'
/// worth of characters.
pub fn title_text(title: &str) -> String {
    let flat = terminal_safe(title).replace(['\n', '\t'], " ");
    let flat = flat.trim();
    match flat.char_indices().nth(80) {
        Some((cut, _)) => format!("{}…", &flat[..cut]),
        None => flat.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gemini_models() -> SessionModelState {
        SessionModelState::new(
            [
                ModelInfo::new("pro", "Pro"),
                ModelInfo::new("flash\u{1b}[2J", "Flash"),
            ],
            "pro",
        )
    }

    #[test]
    fn models_and_usage_lines_are_terminal_safe() {
        // Control characters a hostile agent sends never reach the terminal.
        let gemini = ModelChoice::Models(gemini_models());
        assert_eq!(
            models_line(&gemini).as_deref(),
            Some("models: pro (current), flash")
        );
        let solo = ModelChoice::Models(SessionModelState::new([], "solo"));
        assert_eq!(models_line(&solo).as_deref(), Some("model: solo"));
        let option = ModelChoice::of(None, &[model_option("slow")]);
        assert_eq!(
            models_line(&option).as_deref(),
            Some("models: fast, slow (current)")
        );
        assert_eq!(models_line(&ModelChoice::None), None);
        assert_eq!(
            usage_line(&Usage::new(15, 10, 5)),
            "tokens: 15 (in 10, out 5)"
        );
    }

    fn model_option(current: &str) -> SessionConfigOption {
        crate::proto::model_option(current, &[("fast", "Fast"), ("slow", "Slow")])
    }

    #[test]
    fn the_model_list_comes_from_models_first_then_the_config_option() {
        let both = ModelChoice::of(Some(&gemini_models()), &[model_option("slow")]);
        assert!(matches!(both, ModelChoice::Models(_)), "{both:?}");
        assert_eq!(both.current(), Some("pro"));
        assert_eq!(both.listing(), ["* pro  Pro", "  flash  Flash"]);

        let option = ModelChoice::of(None, &[model_option("slow")]);
        assert_eq!(
            option,
            ModelChoice::ConfigOption {
                id: SessionConfigId("model".into()),
                current: "slow".into(),
                values: vec![
                    ("fast".into(), "Fast".into()),
                    ("slow".into(), "Slow".into())
                ],
            }
        );
        assert_eq!(option.listing(), ["  fast  Fast", "* slow  Slow"]);

        assert_eq!(ModelChoice::of(None, &[]), ModelChoice::None);
        assert!(ModelChoice::of(None, &[]).values().is_empty());
        let boolean = SessionConfigOption::new(
            SessionConfigId("model".into()),
            "Model",
            SessionConfigKind::Boolean(SessionConfigBoolean::new(true)),
        )
        .category(SessionConfigOptionCategory::Model);
        assert_eq!(ModelChoice::of(None, &[boolean]), ModelChoice::NotAList);
    }

    #[test]
    fn titles_are_one_safe_line_of_bounded_length() {
        assert_eq!(
            title_text(" Fix\nthe \u{1b}]0;x\u{7}build "),
            "Fix the build"
        );
        let long = "a".repeat(200);
        assert_eq!(title_text(&long), format!("{}…", "a".repeat(80)));
    }
}
