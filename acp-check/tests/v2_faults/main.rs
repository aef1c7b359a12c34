//! The v2 checks (`--protocol 2`) against agents in process: a healthy v2 agent passes them
//! all, each deliberately broken one fails exactly the checks its fault breaks, a v1
//! application served as v2 through the translation passes, and a v1-only agent is refused
//! with both versions named. A run that pins no version grades the version the agent
//! answers, and the report says which.

mod agent;
#[allow(dead_code)]
#[path = "../faults/specimen.rs"]
mod specimen;

use std::time::Duration;

use acp_check::{Bounds, Options, PromptScript, Report, Target};

use agent::{CANCEL_PROMPT, Fault, target};

fn options(protocol: Option<u16>) -> Options {
    Options {
        bounds: Bounds {
            check: Duration::from_secs(3),
            turn: Duration::from_secs(3),
            cancel: Duration::from_secs(2),
            handshake: Duration::from_secs(2),
            session_new: Duration::from_secs(2),
            round_trip: Duration::from_millis(500),
            ..Bounds::default()
        },
        script: PromptScript {
            prompts: vec!["please work".into()],
            cancel: CANCEL_PROMPT.into(),
            ..PromptScript::default()
        },
        protocol,
        ..Options::default()
    }
}

async fn grade(target: &Target, protocol: Option<u16>) -> Report {
    acp_check::run(target, &options(protocol)).await
}

/// The checks a v2 run grades.
fn v2_checks() -> Vec<&'static str> {
    let shared = [
        "robustness.unknown_method",
        "robustness.invalid_params",
        "robustness.malformed_line",
        "robustness.stdout_protocol_only",
        "schema.agent_messages",
        "timing.handshake",
        "timing.session_new",
        "timing.round_trip",
    ];
    acp_check::CHECKS
        .iter()
        .map(|c| c.name)
        .filter(|n| n.starts_with("v2.") || shared.contains(n))
        .collect()
}

fn not_passed(report: &Report) -> Vec<&'static str> {
    report
        .checks
        .iter()
        .filter(|c| !c.outcome.is_pass())
        .map(|c| c.name)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_healthy_v2_agent_passes_every_v2_check_and_the_report_says_v2() {
    let report = grade(&target(Fault::None), Some(2)).await;
    let table = report.table(None);
    let graded: Vec<_> = report.checks.iter().map(|c| c.name).collect();
    assert_eq!(graded, v2_checks(), "{table}");
    assert!(not_passed(&report).is_empty(), "{table}");
    assert_eq!(report.protocol, Some(2));
    assert!(
        table.contains("graded on protocol v2 (pinned by --protocol 2)"),
        "{table}"
    );
    assert_eq!(report.to_json()["protocol"], 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_pinned_version_a_v2_agent_is_graded_on_v2() {
    let report = grade(&target(Fault::None), None).await;
    let table = report.table(None);
    assert_eq!(report.protocol, Some(2), "{table}");
    assert!(
        table.contains("graded on protocol v2 (offered 2 and 1, the agent answered 2)"),
        "{table}"
    );
    assert!(report.get("v2.state.lifecycle").is_some(), "{table}");
    assert!(report.get("handshake.initialize").is_none(), "{table}");
    assert!(report.failures().is_empty(), "{table}");
}

/// The faulty agent fails exactly `owners`.
async fn only_fails(fault: Fault, owners: &[&str]) {
    let report = grade(&target(fault), Some(2)).await;
    assert_eq!(
        report.failures(),
        owners,
        "{fault:?} should fail {owners:?} and nothing else:\n{}",
        report.table(None)
    );
}

macro_rules! fault_tests {
    ($($test:ident: $fault:ident => [$($owner:literal),*];)*) => {$(
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $test() {
            only_fails(Fault::$fault, &[$($owner),*]).await;
        }
    )*};
}

fault_tests! {
    work_that_never_ends_with_idle: NoIdle => ["v2.state.lifecycle", "v2.state.stop_reason"];
    work_that_is_never_running: NoRunning => ["v2.state.lifecycle"];
    a_stop_reason_outside_the_set: UnknownStopReason => ["v2.state.stop_reason"];
    tool_call_content_for_an_unannounced_call: ChunkForUnknownToolCall => ["v2.upserts.ids"];
    the_echoed_user_message_cleared_by_a_patch: ClearsUserMessage => ["v2.upserts.patches"];
    a_custom_content_block_refused: RefusesCustomBlock => ["v2.extension.custom_values"];
    a_retry_with_the_same_key_runs_again: IgnoresIdempotencyKey => ["v2.prompt.idempotency"];
    a_cancel_that_does_not_end_the_work: IgnoresCancel => ["v2.cancel.session_cancel"];
    a_list_that_names_no_session: ListsNothing => ["v2.sessions.list"];
    no_resume_despite_the_session_capability: NoResume => ["v2.sessions.resume"];
    a_closed_session_that_still_takes_prompts: PromptAfterClose => ["v2.sessions.close"];
    a_cancel_of_a_tool_call_that_never_was_accepted: CancelsUnknownToolCall => ["v2.cancel.tool_call"];
    an_advertised_mcp_transport_refused_as_invalid: RefusesMcpHttp => ["v2.sessions.mcp"];
}

/// A v1 application (the v1 faults' healthy specimen) served to the kit as v2 through
/// `acp_agent::v2::serve_v1`: every v2 check passes. The translation documents no failure
/// of these checks; the retry check passes because the translation answers idempotency keys
/// itself (acp_dialects::v2::prompt_keys).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_v1_application_behind_the_translation_passes_the_v2_checks() {
    let mut options = options(Some(2));
    options.script.cancel = specimen::CANCEL_PROMPT.into();
    options.script.prompts = vec!["please copy hello.txt".into()];
    let report = acp_check::run(&specimen::served_as_v2(), &options).await;
    let table = report.table(None);
    eprintln!("{table}");
    assert_eq!(report.protocol, Some(2), "{table}");
    assert!(report.failures().is_empty(), "{table}");
    assert!(
        not_passed(&report).is_empty(),
        "nothing skipped either:\n{table}"
    );
}

/// `--protocol 2` against an agent that speaks only v1: one failed check naming both
/// versions, the run stopped (not a panic, not a hang, no check skipped one by one).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn protocol_2_against_a_v1_only_agent_is_refused_naming_both_versions() {
    let v1_only = specimen::target(specimen::Fault::None);
    let started = std::time::Instant::now();
    let report = grade(&v1_only, Some(2)).await;
    let table = report.table(None);
    assert!(started.elapsed() < Duration::from_secs(10), "{table}");
    assert_eq!(report.failures(), ["v2.handshake.initialize"], "{table}");
    let evidence = report
        .get("v2.handshake.initialize")
        .unwrap()
        .outcome
        .detail();
    assert!(
        evidence.contains("offered protocol version 2")
            && evidence.contains("answered protocol version 1"),
        "{evidence}"
    );
    let stopped = report.stopped.as_ref().expect("the run stopped");
    assert_eq!(
        stopped.because,
        "offered protocol version 2, the agent answered 1"
    );
    assert!(
        table.lines().next().unwrap().contains("--protocol 2"),
        "{table}"
    );
    // Unpinned, the same agent is graded on v1, and the report says so.
    let report = grade(&specimen::target(specimen::Fault::None), None).await;
    let table = report.table(None);
    assert_eq!(report.protocol, Some(1), "{table}");
    assert!(
        table.contains("graded on protocol v1 (offered 2 and 1, the agent answered 1)"),
        "{table}"
    );
    assert!(
        report
            .get("handshake.initialize")
            .is_some_and(|c| c.outcome.is_pass()),
        "{table}"
    );
}
