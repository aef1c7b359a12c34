//! Conversions between the crow dialect's vocabulary and v1's, used by both translations.
//!
//! | v1 | crow |
//! | --- | --- |
//! | `ToolCallStatus`, `PlanEntryPriority`, `PlanEntryStatus` | the same values, same spelling |
//! | `ToolKind` | the `kind` string, v1's spelling (a kind v1 does not name is kept as text) |
//! | `StopReason` `end_turn` / `cancelled` | the same; crow's `error` has no v1 stop reason (the translation answers an error instead); v1's `max_tokens`, `max_turn_requests` and `refusal` have no crow one (`end_turn`) |

use super::*;
use crate::v1;

/// Reads a value of one vocabulary as the other's same-spelled value (both write their
/// enum values as strings; an unknown one is kept as text).
fn respell<A: serde::Serialize, B: serde::de::DeserializeOwned>(value: &A, fallback: B) -> B {
    serde_json::to_value(value)
        .ok()
        .and_then(|v| serde_json::from_value(v).ok())
        .unwrap_or(fallback)
}

/// A v1 tool-call status in crow terms.
pub fn status_from_v1(status: &v1::ToolCallStatus) -> ToolCallStatus {
    respell(status, ToolCallStatus::InProgress)
}

/// A crow tool-call status in v1 terms.
pub fn status_to_v1(status: &ToolCallStatus) -> v1::ToolCallStatus {
    respell(status, v1::ToolCallStatus::InProgress)
}

/// A v1 tool kind as crow's `kind` string.
pub fn kind_from_v1(kind: &v1::ToolKind) -> String {
    respell(kind, "other".to_string())
}

/// Crow's `kind` string as a v1 tool kind.
pub fn kind_to_v1(kind: &str) -> v1::ToolKind {
    respell(&kind, v1::ToolKind::Other)
}

/// A v1 plan entry in crow terms.
pub fn plan_entry_from_v1(entry: &v1::PlanEntry) -> PlanEntry {
    PlanEntry::new(
        entry.content.clone(),
        respell(&entry.priority, PlanPriority::Medium),
        respell(&entry.status, PlanStatus::Pending),
    )
}

/// A crow plan entry in v1 terms.
pub fn plan_entry_to_v1(entry: &PlanEntry) -> v1::PlanEntry {
    v1::PlanEntry::new(
        entry.content.clone(),
        respell(&entry.priority, v1::PlanEntryPriority::Medium),
        respell(&entry.status, v1::PlanEntryStatus::Pending),
    )
}

/// A v1 stop reason in crow terms: `end_turn` and `cancelled` as they are, the reasons
/// crow has no word for as `end_turn`.
pub fn stop_reason_from_v1(reason: &v1::StopReason) -> StopReason {
    match reason {
        v1::StopReason::Cancelled => StopReason::Cancelled,
        _ => StopReason::EndTurn,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shared_vocabulary_round_trips() {
        for s in ["pending", "in_progress", "completed", "failed"] {
            let crow: ToolCallStatus = serde_json::from_value(serde_json::json!(s)).unwrap();
            assert_eq!(status_from_v1(&status_to_v1(&crow)), crow, "{s}");
        }
        assert_eq!(kind_to_v1("execute"), v1::ToolKind::Execute);
        assert_eq!(kind_from_v1(&v1::ToolKind::Read), "read");
        let entry = PlanEntry::new("Analyze", PlanPriority::High, PlanStatus::Completed);
        assert_eq!(plan_entry_from_v1(&plan_entry_to_v1(&entry)), entry);
        assert_eq!(
            stop_reason_from_v1(&v1::StopReason::Refusal),
            StopReason::EndTurn
        );
    }
}
