//! Every check against a deliberately broken agent: a small agent built on acp-agent that
//! does everything a check looks at (authentication, modes, config options, MCP over http,
//! session list/resume/close/load, images, tool calls, 1 MB file reads and writes,
//! cancellation), run in process with one fault switched on. Faults the agent cannot commit
//! through acp-agent (which answers bad input correctly by construction) are made by a line
//! filter between the agent and the kit.
//!
//! Each test runs the whole kit and asserts that exactly the check owning the fault fails:
//! the check catches its fault, and no other check mistakes that fault for its own.

mod specimen;

use std::time::Duration;

use acp_check::{Bounds, Offer, Options, PromptScript, Report};

use specimen::{CANCEL_PROMPT, Fault, HOLD_PROMPT, target};

fn options() -> Options {
    Options {
        offer: Offer::default(),
        bounds: Bounds {
            check: Duration::from_secs(3),
            turn: Duration::from_secs(5),
            cancel: Duration::from_secs(1),
            handshake: Duration::from_secs(1),
            session_new: Duration::from_secs(1),
            round_trip: Duration::from_millis(300),
            file_read: Duration::from_millis(1500),
            file_write: Duration::from_millis(1500),
        },
        script: PromptScript {
            prompts: vec!["please copy hello.txt".into()],
            cancel: CANCEL_PROMPT.into(),
            hold: HOLD_PROMPT.into(),
            file: "hello.txt".into(),
            ..PromptScript::default()
        },
        // These faults are v1's (the v2 ones are in tests/v2_faults).
        protocol: Some(1),
        ..Options::default()
    }
}

async fn grade(fault: Fault) -> Report {
    acp_check::run(&target(fault), &options()).await
}

/// The checks `report` failed that the fault, not the machine, explains: the protocol
/// failures, and a timing miss only of `owner` (a fault that is slowness). Another check's
/// time bound missed on a loaded 2-core host (a 1 MB write in process took 2.4 s against
/// the 1.5 s bound while CI ran) is not a check mistaking the fault for its own.
fn failed_by_the_fault(report: &Report, owner: Option<&str>) -> Vec<&'static str> {
    let mut failed = report.protocol_failures();
    failed.extend(
        report
            .timing_misses()
            .into_iter()
            .filter(|name| Some(*name) == owner),
    );
    failed
}

/// Runs the kit against the agent with `fault` and asserts that `owner` alone fails.
async fn only_fails(fault: Fault, owner: &str) -> Report {
    let report = grade(fault).await;
    assert_eq!(
        failed_by_the_fault(&report, Some(owner)),
        [owner],
        "{fault:?} should fail {owner} and nothing else:\n{}",
        report.table(None)
    );
    report
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_healthy_specimen_passes_every_check_and_skips_none() {
    let report = grade(Fault::None).await;
    let v1_checks = acp_check::CHECKS
        .iter()
        .filter(|c| !c.name.starts_with("v2."))
        .count();
    assert_eq!(report.checks.len(), v1_checks, "{}", report.table(None));
    let not_passed: Vec<_> = report
        .checks
        .iter()
        .filter(|c| !c.outcome.is_pass())
        .map(|c| (c.name, c.outcome.clone()))
        .collect();
    assert!(not_passed.is_empty(), "{}", report.table(None));
}

macro_rules! fault_tests {
    ($($test:ident: $fault:ident => $owner:literal;)*) => {$(
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $test() {
            only_fails(Fault::$fault, $owner).await;
        }
    )*};
}

fault_tests! {
    initialize_with_the_wrong_version: WrongVersion => "handshake.initialize";
    unsupported_version_refused: RefuseUnsupportedVersion => "handshake.unsupported_version";
    auth_methods_with_a_duplicate_id: DuplicateAuthMethods => "handshake.auth_methods";
    auth_required_with_the_wrong_code: WrongAuthCode => "handshake.auth_required";
    session_new_without_an_id: EmptySessionId => "sessions.new";
    an_update_for_another_session_during_a_turn: UpdateForOtherSession => "prompt.session_ids";
    an_update_after_the_turn_answer: LateUpdate => "prompt.no_late_updates";
    a_stop_reason_outside_the_set: UnknownStopReason => "prompt.stop_reason";
    a_tool_call_update_for_an_unknown_id: GhostToolCallUpdate => "prompt.tool_call_ids";
    a_turn_in_one_session_spills_into_another: SpillIntoFirstSession => "sessions.separate";
    an_advertised_image_refused: RefuseImage => "capabilities.prompt_content";
    an_offered_mode_refused: RefuseMode => "capabilities.modes";
    an_offered_config_option_refused: RefuseConfigOption => "capabilities.config_options";
    an_advertised_session_list_failing: RefuseList => "capabilities.session_methods";
    an_advertised_mcp_transport_refused: RefuseMcpHttp => "capabilities.mcp";
    load_without_replay: NoReplayOnLoad => "sessions.load";
    session_cancel_ignored: IgnoreCancel => "cancel.session_cancel";
    a_terminal_that_was_not_offered: UseTerminal => "capabilities.offered_only";
    a_slow_handshake: SlowInitialize => "timing.handshake";
    a_slow_session_new: SlowNewSession => "timing.session_new";
    a_slow_megabyte_read: SlowAfterRead => "timing.fs_read_1mb";
    a_slow_megabyte_write: SlowAfterWrite => "timing.fs_write_1mb";
    a_prompt_for_an_unknown_session_answered: AnswerUnknownSession => "sessions.unknown_id";
    unknown_method_with_the_wrong_code: WrongUnknownMethodCode => "robustness.unknown_method";
    invalid_params_with_the_wrong_code: WrongInvalidParamsCode => "robustness.invalid_params";
    silence_after_a_malformed_line: SilentOnMalformedLine => "robustness.malformed_line";
    a_log_line_on_stdout: NoiseOnStdout => "robustness.stdout_protocol_only";
    an_update_before_its_session_exists: EarlyUpdate => "prompt.no_early_updates";
    a_message_that_is_not_v1: InvalidMessage => "schema.agent_messages";
    a_slow_round_trip: SlowUnknownMethod => "timing.round_trip";
    turn_content_after_the_load_answer: ContentAfterLoad => "sessions.load";
}

/// The cancelled request is never answered: that check costs its bound (1 s here), the agent
/// is replaced, and the checks after it still run and pass.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hung_request_costs_one_bound_and_the_run_goes_on() {
    let started = std::time::Instant::now();
    let report = only_fails(Fault::DropCancelledAnswer, "cancel.cancel_request").await;
    let hung = report.get("cancel.cancel_request").unwrap();
    assert!(
        hung.millis >= 1000 && hung.millis < 4000,
        "{}",
        report.table(None)
    );
    for after in [
        "robustness.unknown_method",
        "robustness.invalid_params",
        "robustness.malformed_line",
    ] {
        assert!(
            report.get(after).unwrap().outcome.is_pass(),
            "{}",
            report.table(None)
        );
    }
    assert!(started.elapsed() < Duration::from_secs(20));
}

/// Issue 32: session metadata (available commands, a title, the mode, config options) may
/// arrive at any time, before the answer that created the session, after a turn's answer, after
/// the `session/load` answer; only turn content counts as early or late.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_metadata_at_any_time_fails_no_check() {
    let report = grade(Fault::MetadataAtAnyTime).await;
    assert!(
        failed_by_the_fault(&report, None).is_empty(),
        "{}",
        report.table(None)
    );
    for name in [
        "prompt.no_late_updates",
        "prompt.no_early_updates",
        "sessions.load",
    ] {
        assert!(
            report.get(name).unwrap().outcome.is_pass(),
            "{name}:\n{}",
            report.table(None)
        );
    }
}

/// Issue 32, found running the kit against real agents: metadata for another session of the
/// connection during a turn (qwen-code's late command list), and a tool call first named by
/// the permission request about it (gemini-cli), are what the protocol allows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metadata_for_another_session_and_tool_calls_named_by_a_question_fail_no_check() {
    for fault in [Fault::MetadataForOtherSession, Fault::ToolCallAskedFirst] {
        let report = grade(fault).await;
        assert!(
            failed_by_the_fault(&report, None).is_empty(),
            "{fault:?}:\n{}",
            report.table(None)
        );
        for name in ["prompt.session_ids", "prompt.tool_call_ids"] {
            assert!(
                report.get(name).unwrap().outcome.is_pass(),
                "{fault:?} {name}:\n{}",
                report.table(None)
            );
        }
    }
}

/// Issue 32: `$/cancel_request` is optional. An agent that does not implement it answers the
/// withdrawn prompt when the kit falls back to `session/cancel`: a skip with the reason, not a
/// failure.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_without_cancel_request_is_skipped_with_the_reason() {
    let report = grade(Fault::NoCancelRequest).await;
    assert!(
        failed_by_the_fault(&report, None).is_empty(),
        "{}",
        report.table(None)
    );
    let outcome = &report.get("cancel.cancel_request").unwrap().outcome;
    assert_eq!(outcome.word(), "skip", "{}", report.table(None));
    assert!(
        outcome
            .detail()
            .contains("does not implement `$/cancel_request`"),
        "{}",
        report.table(None)
    );
}

/// Issue 32: a timing miss is reported as its own class, apart from protocol failures: a slow
/// machine does not read as a broken agent (it still fails the run unless allowed).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timing_miss_is_its_own_class() {
    let report = grade(Fault::SlowInitialize).await;
    assert_eq!(
        report.timing_misses(),
        ["timing.handshake"],
        "{}",
        report.table(None)
    );
    assert!(
        report.protocol_failures().is_empty(),
        "{}",
        report.table(None)
    );
    assert!(report.failed());
    let table = report.table(None);
    let row = table
        .lines()
        .find(|l| l.starts_with("timing.handshake "))
        .unwrap();
    assert!(row.contains(" SLOW "), "{table}");
    let summary = table.lines().last().unwrap();
    assert!(
        summary.contains(" passed, 0 failed, 1 timing miss, "),
        "{table}"
    );
    assert_eq!(report.to_json()["timing_misses"], 1);
    assert_eq!(report.to_json()["failed"], 0);
}

/// Every check has a fault test above (or is the hung-request test's owner).
#[test]
fn every_check_has_its_fault() {
    let source = include_str!("main.rs");
    // The v2 checks' faults are tests/v2_faults'.
    for check in acp_check::CHECKS
        .iter()
        .filter(|c| !c.name.starts_with("v2."))
    {
        assert!(
            source.contains(&format!("=> \"{}\"", check.name))
                || source.contains(&format!("Fault::DropCancelledAnswer, \"{}\"", check.name)),
            "no fault test owns {}",
            check.name
        );
    }
}
