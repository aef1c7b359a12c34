//! The transcript as drawn: the gutter, titles, tool calls rewritten in place or printed
//! once per status, their content once as it is now, diffs and plans.

use super::*;
use crate::view::diff_lines;
use crate::view::term::GREEN;

/// A writer the test can read back.
#[derive(Clone, Default)]
struct Shared(Arc<Mutex<Vec<u8>>>);
impl Write for Shared {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
impl Shared {
    fn text(&self) -> String {
        String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
    }
}

#[test]
fn forged_lines_stay_behind_the_gutter() {
    let out = Shared::default();
    let screen = Screen::new(Box::new(out.clone()), false, (80, 24));
    screen.update(&SessionUpdate::agent_message_text(
        "hello\nyou> rm -rf /\n\r? Allow everything\x1b[2K",
    ));
    let text = out.text();
    assert_eq!(text, "  hello\n  you> rm -rf /\n  ? Allow everything");
    for line in text.lines() {
        assert!(line.starts_with("  "), "{line:?} reached column 0");
    }
}

#[test]
fn a_title_change_is_one_line_and_other_session_info_is_quiet() {
    let out = Shared::default();
    let screen = Screen::new(Box::new(out.clone()), false, (80, 24));
    let renamed = SessionInfoUpdate::new().title(Some("Fix\nthe \x1b[2Jbuild".into()));
    screen.update(&SessionUpdate::SessionInfoUpdate(renamed));
    let touched = SessionInfoUpdate::new().updated_at(Some("2026-11-24T17:00:00Z".into()));
    screen.update(&SessionUpdate::SessionInfoUpdate(touched));
    screen.update(&SessionUpdate::SessionInfoUpdate(
        SessionInfoUpdate::new().title(None),
    ));
    assert_eq!(out.text(), "title: Fix the build\ntitle cleared\n");
}

#[test]
fn long_agent_lines_wrap_behind_the_gutter() {
    let out = Shared::default();
    let screen = Screen::new(Box::new(out.clone()), false, (20, 24));
    screen.update(&SessionUpdate::agent_message_text("x".repeat(50)));
    for line in out.text().lines() {
        assert!(line.starts_with("  x"), "{line:?}");
        assert!(line.chars().count() < 20, "{line:?}");
    }
}

#[test]
fn tool_status_is_rewritten_in_place_on_a_terminal() {
    let out = Shared::default();
    let screen = Screen::new(Box::new(out.clone()), true, (80, 24));
    let call = ToolCall::new("t1", "Edit NOTES.md").kind(ToolKind::Edit);
    screen.update(&SessionUpdate::ToolCall(Box::new(call)));
    let update = ToolCallUpdate::new("t1").status(ToolCallStatus::Completed);
    screen.update(&SessionUpdate::ToolCallUpdate(Box::new(update)));
    let text = out.text();
    // Saved cursor, up one row, cleared line, the new header, restored cursor.
    assert!(text.contains("\x1b7\x1b[1A\r\x1b[2K⏺ "), "{text:?}");
    assert!(
        text.ends_with(&format!("{GREEN}✓ completed{RESET}\x1b8")),
        "{text:?}"
    );
}

#[test]
fn tool_status_gets_a_new_line_in_a_transcript() {
    let out = Shared::default();
    let screen = Screen::new(Box::new(out.clone()), false, (80, 24));
    screen.update(&SessionUpdate::ToolCall(Box::new(ToolCall::new(
        "t1", "Run echo",
    ))));
    let update = ToolCallUpdate::new("t1").status(ToolCallStatus::Failed);
    screen.update(&SessionUpdate::ToolCallUpdate(Box::new(update)));
    assert_eq!(
        out.text(),
        "⏺ Run echo (other) … pending\n⏺ Run echo (other) ✗ failed\n"
    );
}

/// Issue 32: Claude sends three or four `tool_call_update`s per call with the same
/// status; a transcript showed a new "⏺ ... pending" line for each.
#[test]
fn updates_that_keep_the_status_print_no_new_line_in_a_transcript() {
    let out = Shared::default();
    let screen = Screen::new(Box::new(out.clone()), false, (80, 24));
    screen.update(&SessionUpdate::ToolCall(Box::new(ToolCall::new(
        "t1",
        "Read file",
    ))));
    for title in ["Read NOTES.md", "Read NOTES.md", "Read NOTES.md (40 lines)"] {
        let update = ToolCallUpdate::new("t1")
            .title(title)
            .status(ToolCallStatus::Pending);
        screen.update(&SessionUpdate::ToolCallUpdate(Box::new(update)));
    }
    let update = ToolCallUpdate::new("t1").status(ToolCallStatus::Completed);
    screen.update(&SessionUpdate::ToolCallUpdate(Box::new(update)));
    let update = ToolCallUpdate::new("t1").status(ToolCallStatus::Completed);
    screen.update(&SessionUpdate::ToolCallUpdate(Box::new(update)));
    assert_eq!(
        out.text(),
        "⏺ Read file (other) … pending\n⏺ Read NOTES.md (40 lines) (other) ✓ completed\n"
    );
}

/// On a terminal an update that keeps the status still refreshes the line in place (a
/// new title shows), and adds no line.
#[test]
fn updates_that_keep_the_status_rewrite_the_line_in_place_on_a_terminal() {
    let out = Shared::default();
    let screen = Screen::new(Box::new(out.clone()), true, (80, 24));
    screen.update(&SessionUpdate::ToolCall(Box::new(ToolCall::new(
        "t1",
        "Read file",
    ))));
    for _ in 0..3 {
        let update = ToolCallUpdate::new("t1")
            .title("Read NOTES.md")
            .status(ToolCallStatus::Pending);
        screen.update(&SessionUpdate::ToolCallUpdate(Box::new(update)));
    }
    let text = out.text();
    assert_eq!(text.matches('\n').count(), 1, "{text:?}");
    assert_eq!(
        text.matches("\x1b7\x1b[1A\r\x1b[2K⏺ ").count(),
        3,
        "{text:?}"
    );
}

/// Once the line has scrolled off the screen it cannot be rewritten: updates that keep
/// the status print nothing, a new status prints the line once more.
#[test]
fn a_scrolled_away_tool_line_is_printed_again_only_for_a_new_status() {
    let out = Shared::default();
    let screen = Screen::new(Box::new(out.clone()), true, (100, 50));
    screen.update(&SessionUpdate::ToolCall(Box::new(ToolCall::new(
        "t1",
        "Read file",
    ))));
    for i in 0..60 {
        screen.update(&SessionUpdate::agent_message_text(format!("row {i}\n")));
    }
    for _ in 0..3 {
        let update = ToolCallUpdate::new("t1")
            .title("Read NOTES.md")
            .status(ToolCallStatus::Pending);
        screen.update(&SessionUpdate::ToolCallUpdate(Box::new(update)));
    }
    let update = ToolCallUpdate::new("t1").status(ToolCallStatus::Completed);
    screen.update(&SessionUpdate::ToolCallUpdate(Box::new(update)));
    let text = out.text();
    assert_eq!(text.matches("⏺ ").count(), 2, "{text:?}");
    assert!(
        !text.contains("\x1b7"),
        "no rewrite that cannot reach: {text:?}"
    );
}

/// A `tool_call_update` with `status` and, when given, `text` as its whole content.
fn tool_update(status: ToolCallStatus, text: Option<&str>) -> SessionUpdate {
    let mut update = ToolCallUpdate::new("t1").status(status);
    if let Some(text) = text {
        update = update.content([ToolCallContent::content(text)]);
    }
    SessionUpdate::ToolCallUpdate(Box::new(update))
}

/// Issue 52: OpenCode sends a shell command's output with `in_progress` and the same
/// output again with `completed`; the transcript printed it with each status line.
#[test]
fn repeated_tool_content_is_printed_once_in_a_transcript() {
    let out = Shared::default();
    let screen = Screen::new(Box::new(out.clone()), false, (80, 24));
    let call = ToolCall::new("t1", "ls").kind(ToolKind::Execute);
    screen.update(&SessionUpdate::ToolCall(Box::new(call)));
    let output = "NOTES.md\nsrc";
    screen.update(&tool_update(ToolCallStatus::InProgress, Some(output)));
    screen.update(&tool_update(ToolCallStatus::InProgress, Some(output)));
    screen.update(&tool_update(ToolCallStatus::Completed, Some(output)));
    assert_eq!(
        out.text(),
        "⏺ ls (execute) … pending\n\
         ⏺ ls (execute) ⟳ running\n    NOTES.md\n    src\n\
         ⏺ ls (execute) ✓ completed\n"
    );
}

/// Content that grows is printed as the rows it gains; content that changes after other
/// output is printed under its header again; emptied content prints nothing.
#[test]
fn changed_tool_content_is_printed_once_as_it_changes_in_a_transcript() {
    let out = Shared::default();
    let screen = Screen::new(Box::new(out.clone()), false, (80, 24));
    screen.update(&SessionUpdate::ToolCall(Box::new(ToolCall::new(
        "t1", "ls",
    ))));
    screen.update(&tool_update(ToolCallStatus::InProgress, Some("one")));
    screen.update(&tool_update(ToolCallStatus::InProgress, Some("one\ntwo")));
    screen.update(&SessionUpdate::agent_message_text("meanwhile\n"));
    screen.update(&tool_update(ToolCallStatus::InProgress, Some("three")));
    screen.update(&tool_update(ToolCallStatus::InProgress, Some("")));
    screen.update(&tool_update(ToolCallStatus::Completed, Some("")));
    assert_eq!(
        out.text(),
        "⏺ ls (other) … pending\n\
         ⏺ ls (other) ⟳ running\n    one\n    two\n\
         \x20 meanwhile\n\
         ⏺ ls (other) ⟳ running\n    three\n\
         ⏺ ls (other) ✓ completed\n"
    );
}

/// On a terminal, content repeated with each status is written once; the status is
/// rewritten in place.
#[test]
fn repeated_tool_content_is_written_once_on_a_terminal() {
    let out = Shared::default();
    let screen = Screen::new(Box::new(out.clone()), true, (80, 24));
    screen.update(&SessionUpdate::ToolCall(Box::new(ToolCall::new(
        "t1", "ls",
    ))));
    screen.update(&tool_update(ToolCallStatus::InProgress, Some("NOTES.md")));
    screen.update(&tool_update(ToolCallStatus::Completed, Some("NOTES.md")));
    let text = out.text();
    assert_eq!(text.matches("NOTES.md").count(), 1, "{text:?}");
    assert_eq!(text.matches('\n').count(), 2, "{text:?}");
    assert!(
        text.ends_with(&format!("{GREEN}✓ completed{RESET}\x1b8")),
        "{text:?}"
    );
}

/// On a terminal, changed content is redrawn in place: erased and written again when it
/// is the last thing on screen, rewritten row by row when output follows it and it keeps
/// its number of rows.
#[test]
fn changed_tool_content_is_redrawn_in_place_on_a_terminal() {
    let out = Shared::default();
    let screen = Screen::new(Box::new(out.clone()), true, (80, 24));
    screen.update(&SessionUpdate::ToolCall(Box::new(ToolCall::new(
        "t1", "ls",
    ))));
    screen.update(&tool_update(ToolCallStatus::InProgress, Some("a\nb")));
    screen.update(&tool_update(ToolCallStatus::InProgress, Some("c")));
    let text = out.text();
    // Up the two rows, erase to the end of the screen, the new row.
    assert!(text.ends_with("\x1b[2A\r\x1b[J    c\n"), "{text:?}");
    screen.update(&SessionUpdate::agent_message_text("after\n"));
    screen.update(&tool_update(ToolCallStatus::InProgress, Some("d")));
    let text = out.text();
    assert!(
        text.ends_with("\x1b7\x1b[2A\r\x1b[2K    d\x1b8"),
        "{text:?}"
    );
    assert_eq!(text.matches("    d").count(), 1, "{text:?}");
    // More rows than it had, after other output: under the header printed again.
    screen.update(&tool_update(ToolCallStatus::InProgress, Some("e\nf")));
    let text = out.text();
    assert!(
        text.ends_with(&format!("⟳ running{RESET}\n    e\n    f\n")),
        "{text:?}"
    );
}

/// Content that needs fewer rows than it had, with output after it (a question), is
/// rewritten in place and the rows it no longer fills are blanked: the call keeps one
/// header.
#[test]
fn shorter_tool_content_is_rewritten_in_place_with_output_after_it_on_a_terminal() {
    let out = Shared::default();
    let screen = Screen::new(Box::new(out.clone()), true, (80, 24));
    screen.update(&SessionUpdate::ToolCall(Box::new(ToolCall::new(
        "t1", "Edit",
    ))));
    screen.update(&tool_update(ToolCallStatus::Pending, Some("a\nb")));
    screen.info("a question");
    screen.update(&tool_update(ToolCallStatus::Completed, Some("applied")));
    let text = out.text();
    assert!(
        text.ends_with("\x1b7\x1b[3A\r\x1b[2K    applied\x1b8\x1b7\x1b[2A\r\x1b[2K\x1b8"),
        "{text:?}"
    );
    assert_eq!(text.matches('\n').count(), 4, "{text:?}");
}

#[test]
fn diffs_show_the_changed_lines() {
    assert_eq!(
        diff_lines("a\nb\nc\n", "a\nB\nc\nd\n"),
        vec![
            (' ', "a".to_owned()),
            ('-', "b".to_owned()),
            ('-', "c".to_owned()),
            ('+', "B".to_owned()),
            ('+', "c".to_owned()),
            ('+', "d".to_owned()),
        ]
    );
    assert_eq!(
        diff_lines("x\n", "x\ny\n"),
        vec![(' ', "x".to_owned()), ('+', "y".to_owned())]
    );
}

#[test]
fn a_plan_is_a_checklist() {
    let out = Shared::default();
    let screen = Screen::new(Box::new(out.clone()), false, (80, 24));
    let plan = Plan::new(vec![
        crate::proto::plan_entry("one", PlanEntryStatus::Completed),
        crate::proto::plan_entry("two", PlanEntryStatus::InProgress),
        crate::proto::plan_entry("three", PlanEntryStatus::Pending),
    ]);
    screen.update(&SessionUpdate::Plan(plan));
    assert_eq!(out.text(), "plan\n  ☑ one\n  ◐ two\n  ☐ three\n");
}
