//! What an agent offers beyond stable v1, shown when present: the models of the session
//! (gemini-cli's `models` on `session/new` / `session/load`) and the token usage of a turn
//! (`usage` on the `session/prompt` result). Read from the values' unknown-field maps, so it
//! works with no unstable feature turned on.

use acp_types::Extra;
use serde::Deserialize;

use crate::sanitize::terminal_safe;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Models {
    current_model_id: String,
    #[serde(default)]
    available_models: Vec<Model>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Model {
    model_id: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Usage {
    total_tokens: u64,
    input_tokens: u64,
    output_tokens: u64,
}

/// `models: a (current), b` when the session's answer lists models.
pub fn models_line(extra: &Extra) -> Option<String> {
    let models: Models = extra.parse("models")?.ok()?;
    let names: Vec<String> = models
        .available_models
        .iter()
        .map(|m| {
            let id = terminal_safe(&m.model_id);
            if m.model_id == models.current_model_id {
                format!("{id} (current)")
            } else {
                id
            }
        })
        .collect();
    Some(if names.is_empty() {
        format!("model: {}", terminal_safe(&models.current_model_id))
    } else {
        format!("models: {}", names.join(", "))
    })
}

/// `tokens: 1500 (in 1200, out 300)` when the turn's answer reports usage.
pub fn usage_line(extra: &Extra) -> Option<String> {
    let usage: Usage = extra.parse("usage")?.ok()?;
    Some(format!(
        "tokens: {} (in {}, out {})",
        usage.total_tokens, usage.input_tokens, usage.output_tokens
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn models_and_usage_are_shown_when_offered_and_only_then() {
        let extra = Extra::from_iter([(
            "models",
            json!({"currentModelId": "pro", "availableModels": [{"modelId": "pro", "name": "Pro"}, {"modelId": "flash\u{1b}[2J", "name": "F"}]}),
        )]);
        // Control characters a hostile agent sends never reach the terminal.
        assert_eq!(
            models_line(&extra).as_deref(),
            Some("models: pro (current), flash")
        );
        assert_eq!(models_line(&Extra::new()), None);
        let usage = Extra::from_iter([(
            "usage",
            json!({"totalTokens": 15, "inputTokens": 10, "outputTokens": 5}),
        )]);
        assert_eq!(
            usage_line(&usage).as_deref(),
            Some("tokens: 15 (in 10, out 5)")
        );
        assert_eq!(
            usage_line(&Extra::from_iter([("usage", json!("lots"))])),
            None
        );
    }
}
