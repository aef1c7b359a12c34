//! Conversions between the probe dialect's vocabulary and v1's, used by both translations
//! (a v1 agent serving a probe editor, a v1 client driving a probe agent) so that a value
//! crossing both comes back as it went in as far as the two vocabularies allow.
//!
//! | v1 | probe |
//! | --- | --- |
//! | `ToolCallStatus` `pending` / `in_progress` / `completed` / `failed` | the same four, same spelling |
//! | `ToolKind` (`search`, `execute`, `read`...) | the tool's free-form `kind` string; a kind v1 does not name is `other` |
//! | session mode id `NORMAL` / `PLANNING` (any id) | `SessionMode` of the same spelling |

use super::*;
use crate::v1;

/// A v1 tool-call status in probe terms (the dialect has the same four).
pub fn status_from_v1(status: &v1::ToolCallStatus) -> ToolCallStatus {
    use v1::ToolCallStatus as S;
    match status {
        S::Pending => ToolCallStatus::Pending,
        S::InProgress => ToolCallStatus::InProgress,
        S::Completed => ToolCallStatus::Completed,
        S::Failed => ToolCallStatus::Failed,
        S::Unknown(other) => ToolCallStatus::Unknown(other.clone()),
    }
}

/// A probe tool-call status in v1 terms.
pub fn status_to_v1(status: &ToolCallStatus) -> v1::ToolCallStatus {
    match status {
        ToolCallStatus::Pending => v1::ToolCallStatus::Pending,
        ToolCallStatus::InProgress => v1::ToolCallStatus::InProgress,
        ToolCallStatus::Completed => v1::ToolCallStatus::Completed,
        ToolCallStatus::Failed => v1::ToolCallStatus::Failed,
        ToolCallStatus::Unknown(other) => v1::ToolCallStatus::Unknown(other.clone()),
    }
}

/// A v1 tool kind as the probe `kind` string (v1's own spelling).
pub fn kind_from_v1(kind: &v1::ToolKind) -> String {
    serde_json::to_value(kind)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| "other".to_string())
}

/// A probe `kind` string as a v1 tool kind: the kinds v1 names keep their name, the
/// seed's own (`query`, `extract`) are searches and reads, anything else is `other`.
pub fn kind_to_v1(kind: &str) -> v1::ToolKind {
    use v1::ToolKind as K;
    match kind {
        "read" | "extract" => K::Read,
        "edit" => K::Edit,
        "delete" => K::Delete,
        "move" => K::Move,
        "search" | "query" => K::Search,
        "execute" => K::Execute,
        "think" => K::Think,
        "fetch" => K::Fetch,
        "switch_mode" => K::SwitchMode,
        _ => K::Other,
    }
}

/// The probe mode a v1 session mode id names (`NORMAL`, `PLANNING`, or any other id, kept).
pub fn mode_from_v1(mode: &v1::SessionModeId) -> SessionMode {
    match mode.0.as_str() {
        "NORMAL" => SessionMode::NORMAL,
        "PLANNING" => SessionMode::PLANNING,
        other => SessionMode::Unknown(other.to_string()),
    }
}

/// The v1 session mode id of a probe mode.
pub fn mode_to_v1(mode: &SessionMode) -> v1::SessionModeId {
    v1::SessionModeId(mode.as_str().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_and_modes_round_trip() {
        for s in ["pending", "in_progress", "completed", "failed", "queued"] {
            let probe: ToolCallStatus = serde_json::from_value(serde_json::json!(s)).unwrap();
            assert_eq!(status_from_v1(&status_to_v1(&probe)), probe, "{s}");
        }
        for m in ["NORMAL", "PLANNING", "REVIEW"] {
            let probe: SessionMode = serde_json::from_value(serde_json::json!(m)).unwrap();
            assert_eq!(mode_from_v1(&mode_to_v1(&probe)), probe, "{m}");
        }
        assert_eq!(kind_to_v1("query"), v1::ToolKind::Search);
        assert_eq!(kind_from_v1(&v1::ToolKind::Execute), "execute");
        assert_eq!(
            kind_to_v1(&kind_from_v1(&v1::ToolKind::Fetch)),
            v1::ToolKind::Fetch
        );
    }
}
