//! Conversions between the 0.0.9 dialect's tool-call vocabulary and v1's.
//!
//! Both legacy adapters (the agent side serving a 0.0.9 editor, the client side driving a
//! 0.0.9 agent) use these, so a tool call that crosses both comes back as it went in as far
//! as the two vocabularies allow. Where 0.0.9 has less to say than v1 (one content item, no
//! `pending` status, no permission option ids) the mapping says what it keeps.
//!
//! | v1 | 0.0.9 |
//! | --- | --- |
//! | `ToolKind` `read` / `edit`, `delete` / `move` / `search` / `execute` / `think` / `fetch` / others | `Icon` `fileSearch` / `pencil` / `folder` / `regex` / `terminal` / `lightBulb` / `globe` / `hammer` |
//! | `ToolCallStatus` `pending`, `in_progress` / `completed` / `failed` | `running` / `finished` / `error` |
//! | content: one diff | `diff` |
//! | content: anything else | one `markdown` item: text blocks and resource links as written, diffs and terminals named |
//! | permission option kinds `allow_once` / `allow_always` / `reject_once` / `reject_always` | outcomes `allow` / `alwaysAllow*` / `reject`; a cancelled request is `cancel` |

use super::*;
use crate::v1;

/// The icon a 0.0.9 editor shows for a v1 tool kind.
pub fn icon_for_kind(kind: &v1::ToolKind) -> Icon {
    use v1::ToolKind as K;
    match kind {
        K::Read => Icon::FileSearch,
        K::Edit | K::Delete => Icon::Pencil,
        K::Move => Icon::Folder,
        K::Search => Icon::Regex,
        K::Execute => Icon::Terminal,
        K::Think => Icon::LightBulb,
        K::Fetch => Icon::Globe,
        K::SwitchMode | K::Other | K::Unknown(_) => Icon::Hammer,
    }
}

/// The v1 tool kind a 0.0.9 icon stands for.
pub fn kind_for_icon(icon: &Icon) -> v1::ToolKind {
    use v1::ToolKind as K;
    match icon {
        Icon::FileSearch => K::Read,
        Icon::Pencil => K::Edit,
        Icon::Folder | Icon::Regex => K::Search,
        Icon::Terminal => K::Execute,
        Icon::LightBulb => K::Think,
        Icon::Globe => K::Fetch,
        Icon::Hammer | Icon::Unknown(_) => K::Other,
    }
}

/// A v1 status in 0.0.9 terms: 0.0.9 has no `pending`, so a call not yet finished is
/// `running`.
pub fn status_from_v1(status: &v1::ToolCallStatus) -> ToolCallStatus {
    use v1::ToolCallStatus as S;
    match status {
        S::Pending | S::InProgress | S::Unknown(_) => ToolCallStatus::Running,
        S::Completed => ToolCallStatus::Finished,
        S::Failed => ToolCallStatus::Error,
    }
}

/// A 0.0.9 status in v1 terms.
pub fn status_to_v1(status: &ToolCallStatus) -> v1::ToolCallStatus {
    match status {
        ToolCallStatus::Running | ToolCallStatus::Unknown(_) => v1::ToolCallStatus::InProgress,
        ToolCallStatus::Finished => v1::ToolCallStatus::Completed,
        ToolCallStatus::Error => v1::ToolCallStatus::Failed,
    }
}

/// v1 tool-call content as the single item 0.0.9 can show: a lone diff stays a diff;
/// anything else becomes one Markdown text (text and resource links as written, other
/// items named). `None` when there is nothing to show.
pub fn content_from_v1(content: &[v1::ToolCallContent]) -> Option<ToolCallContent> {
    if let [v1::ToolCallContent::Diff(diff)] = content {
        return Some(ToolCallContent::Diff(DiffContent {
            path: diff.path.clone(),
            old_text: diff.old_text.clone(),
            new_text: diff.new_text.clone(),
            extra: Default::default(),
        }));
    }
    let parts: Vec<String> = content
        .iter()
        .filter_map(|item| match item {
            v1::ToolCallContent::Content(c) => block_as_markdown(&c.content),
            v1::ToolCallContent::Diff(diff) => Some(format!("Edited `{}`", diff.path)),
            v1::ToolCallContent::Terminal(t) => Some(format!("Terminal `{}`", t.terminal_id.0)),
            v1::ToolCallContent::Unknown(_) => None,
        })
        .collect();
    (!parts.is_empty()).then(|| {
        ToolCallContent::Markdown(MarkdownContent {
            markdown: parts.join("\n\n"),
            extra: Default::default(),
        })
    })
}

/// A content block as Markdown, when it has a textual form.
fn block_as_markdown(block: &v1::ContentBlock) -> Option<String> {
    match block {
        v1::ContentBlock::Text(text) => Some(text.text.clone()),
        v1::ContentBlock::ResourceLink(link) => Some(format!("[{}]({})", link.name, link.uri)),
        v1::ContentBlock::Resource(embedded) => match &embedded.resource {
            v1::EmbeddedResourceResource::TextResourceContents(text) => Some(text.text.clone()),
            v1::EmbeddedResourceResource::BlobResourceContents(blob) => {
                Some(format!("<{}>", blob.uri))
            }
        },
        v1::ContentBlock::Image(_) => Some("(image)".to_string()),
        v1::ContentBlock::Audio(_) => Some("(audio)".to_string()),
        v1::ContentBlock::Unknown(_) => None,
    }
}

/// 0.0.9 tool-call content in v1 terms (an unknown kind of content is left out).
pub fn content_to_v1(content: &ToolCallContent) -> Vec<v1::ToolCallContent> {
    match content {
        ToolCallContent::Markdown(md) => vec![v1::ToolCallContent::Content(v1::Content {
            content: v1::ContentBlock::text(md.markdown.clone()),
            meta: None,
            extra: Default::default(),
        })],
        ToolCallContent::Diff(diff) => vec![v1::ToolCallContent::Diff(v1::Diff {
            path: diff.path.clone(),
            old_text: diff.old_text.clone(),
            new_text: diff.new_text.clone(),
            meta: None,
            extra: Default::default(),
        })],
        ToolCallContent::Unknown(_) => Vec::new(),
    }
}

/// A v1 location in 0.0.9 terms.
pub fn location_from_v1(location: &v1::ToolCallLocation) -> ToolCallLocation {
    ToolCallLocation {
        path: location.path.clone(),
        line: location.line,
        extra: Default::default(),
    }
}

/// A 0.0.9 location in v1 terms.
pub fn location_to_v1(location: &ToolCallLocation) -> v1::ToolCallLocation {
    v1::ToolCallLocation {
        path: location.path.clone(),
        line: location.line,
        meta: None,
        extra: Default::default(),
    }
}

/// The confirmation a 0.0.9 editor is asked for, derived from the v1 tool call's kind:
/// edits, deletes and moves are `edit`; `execute` carries the command (from `rawInput.command`,
/// else the title) and its program; `fetch` carries the URLs (from `rawInput.url` or
/// `rawInput.urls`); anything else is `other` with the title as its description.
pub fn confirmation_for(
    kind: &v1::ToolKind,
    title: &str,
    raw_input: Option<&serde_json::Value>,
) -> ToolCallConfirmation {
    let description = (!title.is_empty()).then(|| title.to_string());
    let input = |key: &str| raw_input.and_then(|input| input.get(key));
    match kind {
        v1::ToolKind::Edit | v1::ToolKind::Delete | v1::ToolKind::Move => {
            ToolCallConfirmation::Edit(EditConfirmation {
                description,
                extra: Default::default(),
            })
        }
        v1::ToolKind::Execute => {
            let command = match input("command") {
                Some(serde_json::Value::String(command)) => command.clone(),
                Some(serde_json::Value::Array(words)) => words
                    .iter()
                    .filter_map(|w| w.as_str())
                    .collect::<Vec<_>>()
                    .join(" "),
                _ => title.to_string(),
            };
            let root_command = command
                .split_whitespace()
                .next()
                .map(|program| program.rsplit('/').next().unwrap_or(program).to_string())
                .unwrap_or_default();
            ToolCallConfirmation::Execute(ExecuteConfirmation {
                command,
                root_command,
                description,
                extra: Default::default(),
            })
        }
        v1::ToolKind::Fetch => {
            let urls = match (input("url"), input("urls")) {
                (Some(serde_json::Value::String(url)), _) => vec![url.clone()],
                (_, Some(serde_json::Value::Array(urls))) => urls
                    .iter()
                    .filter_map(|u| u.as_str().map(str::to_string))
                    .collect(),
                _ => Vec::new(),
            };
            ToolCallConfirmation::Fetch(FetchConfirmation {
                urls,
                description,
                extra: Default::default(),
            })
        }
        _ => ToolCallConfirmation::Other(OtherConfirmation {
            description: description.unwrap_or_else(|| "Allow this tool call?".to_string()),
            extra: Default::default(),
        }),
    }
}

/// The v1 permission options that stand for a 0.0.9 confirmation's choices. Each option's
/// id is the wire name of the outcome it stands for (`allow`, `alwaysAllow`,
/// `alwaysAllowMcpServer`, `alwaysAllowTool`, `reject`), so [`outcome_of_selection`] maps the
/// answer back exactly.
pub fn permission_options(confirmation: &ToolCallConfirmation) -> Vec<v1::PermissionOption> {
    let option = |outcome: ToolCallConfirmationOutcome, name: String, kind| v1::PermissionOption {
        option_id: v1::PermissionOptionId(outcome.as_str().to_string()),
        name,
        kind,
        meta: None,
        extra: Default::default(),
    };
    let always = |name: String| {
        option(
            ToolCallConfirmationOutcome::AlwaysAllow,
            name,
            v1::PermissionOptionKind::AllowAlways,
        )
    };
    let mut options = vec![option(
        ToolCallConfirmationOutcome::Allow,
        "Allow".into(),
        v1::PermissionOptionKind::AllowOnce,
    )];
    match confirmation {
        ToolCallConfirmation::Edit(_) => options.push(always("Always allow edits".into())),
        ToolCallConfirmation::Execute(e) => {
            options.push(always(format!("Always allow `{}`", e.root_command)))
        }
        ToolCallConfirmation::Mcp(m) => {
            options.push(option(
                ToolCallConfirmationOutcome::AlwaysAllowMcpServer,
                format!("Always allow server `{}`", m.server_name),
                v1::PermissionOptionKind::AllowAlways,
            ));
            options.push(option(
                ToolCallConfirmationOutcome::AlwaysAllowTool,
                format!("Always allow tool `{}`", m.tool_display_name),
                v1::PermissionOptionKind::AllowAlways,
            ));
        }
        ToolCallConfirmation::Fetch(_) => options.push(always("Always allow fetching".into())),
        ToolCallConfirmation::Other(_) | ToolCallConfirmation::Unknown(_) => {
            options.push(always("Always allow".into()))
        }
    }
    options.push(option(
        ToolCallConfirmationOutcome::Reject,
        "Reject".into(),
        v1::PermissionOptionKind::RejectOnce,
    ));
    options
}

/// The 0.0.9 outcome of a v1 permission answer to [`permission_options`]: the selected option
/// id names the outcome; a cancelled request is `cancel`; an option id that names no outcome
/// is `reject` (nothing is allowed that was not chosen).
pub fn outcome_of_selection(outcome: &v1::RequestPermissionOutcome) -> ToolCallConfirmationOutcome {
    match outcome {
        v1::RequestPermissionOutcome::Cancelled => ToolCallConfirmationOutcome::Cancel,
        v1::RequestPermissionOutcome::Selected(selected) => {
            match serde_json::from_value(serde_json::Value::String(selected.option_id.0.clone())) {
                Ok(ToolCallConfirmationOutcome::Unknown(_)) | Err(_) => {
                    ToolCallConfirmationOutcome::Reject
                }
                Ok(known) => known,
            }
        }
        v1::RequestPermissionOutcome::Unknown(_) => ToolCallConfirmationOutcome::Reject,
    }
}

/// The v1 answer that stands for a 0.0.9 editor's `outcome`, chosen among the agent's
/// `options`: `allow` picks an allow-once option (else allow-always), the `alwaysAllow*`
/// outcomes an allow-always option (else allow-once), `reject` a reject-once option (else
/// reject-always); `cancel`, an unknown outcome, or no option of the wanted kind answers
/// "cancelled", which allows nothing.
pub fn selection_for_outcome(
    outcome: &ToolCallConfirmationOutcome,
    options: &[v1::PermissionOption],
) -> v1::RequestPermissionOutcome {
    use ToolCallConfirmationOutcome as O;
    use v1::PermissionOptionKind as K;
    let preference: &[K] = match outcome {
        O::Allow => &[K::AllowOnce, K::AllowAlways],
        O::AlwaysAllow | O::AlwaysAllowMcpServer | O::AlwaysAllowTool => {
            &[K::AllowAlways, K::AllowOnce]
        }
        O::Reject => &[K::RejectOnce, K::RejectAlways],
        O::Cancel | O::Unknown(_) => &[],
    };
    preference
        .iter()
        .find_map(|kind| options.iter().find(|o| &o.kind == kind))
        .map_or(v1::RequestPermissionOutcome::Cancelled, |o| {
            v1::RequestPermissionOutcome::selected(o.option_id.clone())
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v1_options() -> Vec<v1::PermissionOption> {
        serde_json::from_value(serde_json::json!([
            {"optionId": "yes", "name": "Yes", "kind": "allow_once"},
            {"optionId": "always", "name": "Always", "kind": "allow_always"},
            {"optionId": "no", "name": "No", "kind": "reject_once"}
        ]))
        .unwrap()
    }

    #[test]
    fn every_outcome_selects_the_option_of_its_kind() {
        let options = v1_options();
        let picked = |o| match selection_for_outcome(&o, &options) {
            v1::RequestPermissionOutcome::Selected(s) => s.option_id.0,
            other => format!("{other:?}"),
        };
        assert_eq!(picked(ToolCallConfirmationOutcome::Allow), "yes");
        assert_eq!(picked(ToolCallConfirmationOutcome::AlwaysAllow), "always");
        assert_eq!(
            picked(ToolCallConfirmationOutcome::AlwaysAllowMcpServer),
            "always"
        );
        assert_eq!(
            picked(ToolCallConfirmationOutcome::AlwaysAllowTool),
            "always"
        );
        assert_eq!(picked(ToolCallConfirmationOutcome::Reject), "no");
        assert_eq!(picked(ToolCallConfirmationOutcome::Cancel), "Cancelled");
    }

    #[test]
    fn a_missing_option_kind_falls_back_or_allows_nothing() {
        let only_once: Vec<_> = v1_options()
            .into_iter()
            .filter(|o| o.kind == v1::PermissionOptionKind::AllowOnce)
            .collect();
        assert_eq!(
            selection_for_outcome(&ToolCallConfirmationOutcome::AlwaysAllow, &only_once),
            v1::RequestPermissionOutcome::selected("yes")
        );
        assert_eq!(
            selection_for_outcome(&ToolCallConfirmationOutcome::Reject, &only_once),
            v1::RequestPermissionOutcome::Cancelled
        );
    }

    #[test]
    fn options_built_from_a_confirmation_map_back_to_the_same_outcome() {
        let mcp = ToolCallConfirmation::Mcp(McpConfirmation {
            server_name: "srv".into(),
            tool_name: "t".into(),
            tool_display_name: "Tool".into(),
            description: None,
            extra: Default::default(),
        });
        let options = permission_options(&mcp);
        let ids: Vec<_> = options.iter().map(|o| o.option_id.0.as_str()).collect();
        assert_eq!(
            ids,
            ["allow", "alwaysAllowMcpServer", "alwaysAllowTool", "reject"]
        );
        for option in &options {
            let back = outcome_of_selection(&v1::RequestPermissionOutcome::selected(
                option.option_id.clone(),
            ));
            assert_eq!(back.as_str(), option.option_id.0);
            // And through the other adapter: the outcome selects the same kind of option.
            let again = selection_for_outcome(&back, &options);
            let v1::RequestPermissionOutcome::Selected(s) = again else {
                panic!("{back} selected nothing")
            };
            let kind = &options
                .iter()
                .find(|o| o.option_id == s.option_id)
                .unwrap()
                .kind;
            assert_eq!(kind, &option.kind);
        }
        assert_eq!(
            outcome_of_selection(&v1::RequestPermissionOutcome::Cancelled),
            ToolCallConfirmationOutcome::Cancel
        );
        assert_eq!(
            outcome_of_selection(&v1::RequestPermissionOutcome::selected("sure")),
            ToolCallConfirmationOutcome::Reject
        );
    }

    #[test]
    fn confirmations_are_derived_from_the_tool_kind() {
        let input = serde_json::json!({"command": "/usr/bin/git status", "url": "https://x.test"});
        let execute = confirmation_for(&v1::ToolKind::Execute, "Run git", Some(&input));
        assert_eq!(
            serde_json::to_value(&execute).unwrap(),
            serde_json::json!({"type": "execute", "command": "/usr/bin/git status", "rootCommand": "git", "description": "Run git"})
        );
        let fetch = confirmation_for(&v1::ToolKind::Fetch, "Fetch", Some(&input));
        assert_eq!(
            serde_json::to_value(&fetch).unwrap()["urls"],
            serde_json::json!(["https://x.test"])
        );
        let edit = confirmation_for(&v1::ToolKind::Delete, "Delete a.txt", None);
        assert!(matches!(edit, ToolCallConfirmation::Edit(_)));
        let other = confirmation_for(&v1::ToolKind::Think, "", None);
        assert_eq!(
            serde_json::to_value(&other).unwrap(),
            serde_json::json!({"type": "other", "description": "Allow this tool call?"})
        );
    }

    #[test]
    fn content_keeps_a_lone_diff_and_joins_the_rest_as_markdown() {
        let diff = v1::ToolCallContent::Diff(v1::Diff {
            path: "/a".into(),
            old_text: None,
            new_text: "x".into(),
            meta: None,
            extra: Default::default(),
        });
        let text = content_to_v1(&ToolCallContent::Markdown(MarkdownContent {
            markdown: "done".into(),
            extra: Default::default(),
        }))
        .remove(0);
        assert!(matches!(
            content_from_v1(std::slice::from_ref(&diff)),
            Some(ToolCallContent::Diff(_))
        ));
        assert_eq!(
            content_from_v1(&[text, diff]),
            Some(ToolCallContent::Markdown(MarkdownContent {
                markdown: "done\n\nEdited `/a`".into(),
                extra: Default::default(),
            }))
        );
        assert_eq!(content_from_v1(&[]), None);
    }

    #[test]
    fn kinds_icons_and_statuses_round_trip_where_both_sides_have_the_word() {
        for kind in [
            v1::ToolKind::Read,
            v1::ToolKind::Edit,
            v1::ToolKind::Search,
            v1::ToolKind::Execute,
            v1::ToolKind::Think,
            v1::ToolKind::Fetch,
            v1::ToolKind::Other,
        ] {
            assert_eq!(kind_for_icon(&icon_for_kind(&kind)), kind);
        }
        for status in [
            ToolCallStatus::Running,
            ToolCallStatus::Finished,
            ToolCallStatus::Error,
        ] {
            assert_eq!(status_from_v1(&status_to_v1(&status)), status);
        }
        assert_eq!(
            status_from_v1(&v1::ToolCallStatus::Pending),
            ToolCallStatus::Running
        );
    }
}
