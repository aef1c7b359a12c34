//! Agent-side negotiation from the raw first message: each dialect is detected, a dialect
//! the agent does not accept gets an answer that names what it speaks, and garbage, an
//! oversized line or a silent hang-up are answered or reported, never waited on forever.

mod common;

use acp_agent::Dialect;
use acp_agent::negotiate::{NegotiateOptions, NegotiatedConnection, NegotiationError};
use common::FullAgent;
use common::editor::Editor;
use serde_json::{Value, json};

/// Serves [`FullAgent`] with `dialects` accepted; returns the client's end and the
/// negotiation's outcome, once the first message is in.
fn start(
    dialects: &[Dialect],
    config: acp_agent::Config,
) -> (
    Editor,
    tokio::task::JoinHandle<Result<NegotiatedConnection, NegotiationError>>,
) {
    let options = NegotiateOptions::default()
        .with_dialects(dialects.to_vec())
        .with_config(config)
        .with_legacy_cwd("/w");
    let mut task = None;
    let editor = Editor::connect(|r, w| {
        task = Some(tokio::spawn(
            acp_agent::Builder::new(FullAgent)
                .negotiate(options)
                .io(r, w),
        ))
    });
    (editor, task.unwrap())
}

async fn answer(e: &mut Editor) -> Value {
    serde_json::from_str(&e.line().await).unwrap()
}

#[tokio::test]
async fn each_dialect_is_detected_from_its_first_message() {
    let cases = [
        (
            r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}"#,
            Dialect::V1,
        ),
        (
            r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"0.0.9"}}"#,
            Dialect::Legacy009,
        ),
        (
            r#"{"id":0,"method":"createThread","params":null}"#,
            Dialect::Threads,
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"1"}}"#,
            Dialect::Probe,
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocol_version":1,"client_capabilities":{},"client_info":{"name":"crow-ide","version":"0.1.0"}}}"#,
            Dialect::Crow,
        ),
    ];
    for (first, dialect) in cases {
        let (mut e, negotiated) = start(&Dialect::ALL, Default::default());
        e.send(first).await;
        let reply = answer(&mut e).await;
        assert!(reply.get("result").is_some(), "{dialect}: {reply}");
        assert_eq!(negotiated.await.unwrap().unwrap().dialect(), dialect);
    }
}

#[tokio::test]
async fn an_unaccepted_handshake_is_answered_with_the_version_the_agent_speaks() {
    // A 0.0.9 client, an agent accepting only v1: v1 answers its latest version, 1.
    let (mut e, negotiated) = start(&[Dialect::V1], Default::default());
    e.send(
        r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"0.0.9"}}"#,
    )
    .await;
    assert_eq!(answer(&mut e).await["result"]["protocolVersion"], 1);
    assert_eq!(negotiated.await.unwrap().unwrap().dialect(), Dialect::V1);

    // A v1 client, an agent accepting only 0.0.9: answered "0.0.9", as Gemini CLI did.
    let (mut e, negotiated) = start(&[Dialect::Legacy009], Default::default());
    e.send(r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}"#)
        .await;
    assert_eq!(
        answer(&mut e).await["result"],
        json!({"protocolVersion": "0.0.9", "isAuthenticated": true})
    );
    assert_eq!(
        negotiated.await.unwrap().unwrap().dialect(),
        Dialect::Legacy009
    );

    // A thread method, an agent without threads: the first accepted dialect refuses it.
    let (mut e, negotiated) = start(&[Dialect::Legacy009, Dialect::V1], Default::default());
    e.send(r#"{"id":0,"method":"getThreads","params":null}"#)
        .await;
    let refused = answer(&mut e).await;
    assert_eq!(refused["id"], 0);
    assert_eq!(refused["error"]["code"], -32601);
    assert_eq!(
        negotiated.await.unwrap().unwrap().dialect(),
        Dialect::Legacy009
    );
}

#[tokio::test]
async fn garbage_first_is_answered_by_the_first_dialect_which_goes_on_serving() {
    let (mut e, negotiated) = start(&Dialect::ALL, Default::default());
    e.send("this is not json").await;
    let refused = answer(&mut e).await;
    assert_eq!(refused["id"], Value::Null);
    assert_eq!(refused["error"]["code"], -32700);
    assert_eq!(negotiated.await.unwrap().unwrap().dialect(), Dialect::V1);
    e.send(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}"#)
        .await;
    assert_eq!(answer(&mut e).await["result"]["protocolVersion"], 1);
}

#[tokio::test]
async fn an_oversized_first_line_is_refused_and_serving_goes_on() {
    let config = acp_agent::Config::default().with_max_message_size(1024);
    let (mut e, negotiated) = start(&Dialect::ALL, config);
    e.send(&format!(r#"{{"junk":"{}"}}"#, "x".repeat(10_000)))
        .await;
    let refused = answer(&mut e).await;
    assert_eq!(refused["error"]["code"], -32600, "{refused}");
    assert_eq!(negotiated.await.unwrap().unwrap().dialect(), Dialect::V1);
    e.send(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}"#)
        .await;
    assert_eq!(answer(&mut e).await["result"]["protocolVersion"], 1);
}

#[tokio::test]
async fn a_client_that_hangs_up_first_and_an_empty_pin_list_are_errors() {
    let (ours, theirs) = tokio::io::duplex(64);
    drop(theirs);
    let (r, w) = tokio::io::split(ours);
    let error = acp_agent::Builder::new(FullAgent)
        .negotiate(NegotiateOptions::default())
        .io(r, w)
        .await
        .unwrap_err();
    assert!(
        matches!(error, NegotiationError::ClosedBeforeFirstMessage),
        "{error}"
    );

    let (ours, _theirs) = tokio::io::duplex(64);
    let (r, w) = tokio::io::split(ours);
    let error = acp_agent::Builder::new(FullAgent)
        .negotiate(NegotiateOptions::default().with_dialects([]))
        .io(r, w)
        .await
        .unwrap_err();
    assert!(matches!(error, NegotiationError::NoDialect(..)), "{error}");
}

/// A v2 `initialize` to a negotiation that accepts v2 (`with_v2`) is served v2, the v1 agent
/// behind the v1<->v2 translation; without it the same offer is answered in v1, whose
/// answer names version 1 for the client to decide on.
#[cfg(feature = "v2")]
#[tokio::test]
async fn a_v2_offer_is_served_v2_through_the_translation_only_when_accepted() {
    let offer = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":2,"info":{"name":"t","version":"1"}}}"#;
    for accepts_v2 in [true, false] {
        let options = NegotiateOptions::default()
            .with_legacy_cwd("/w")
            .with_v2(accepts_v2);
        let mut task = None;
        let mut e = Editor::connect(|r, w| {
            task = Some(tokio::spawn(
                acp_agent::Builder::new(FullAgent)
                    .negotiate(options)
                    .io(r, w),
            ))
        });
        e.send(offer).await;
        let reply = answer(&mut e).await;
        let served = task.unwrap().await.unwrap().unwrap();
        let (version, v1) = if accepts_v2 { (2, false) } else { (1, true) };
        assert_eq!(reply["result"]["protocolVersion"], version, "{reply}");
        assert_eq!(served.version(), version);
        assert_eq!(served.dialect(), Dialect::V1);
        assert_eq!(served.v1().is_some(), v1, "{served}");
        if accepts_v2 {
            // v2's baseline, through the translation: a session in the asked directory.
            e.send(r#"{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/w"}}"#)
                .await;
            let made = answer(&mut e).await;
            assert!(made["result"]["sessionId"].is_string(), "{made}");
        }
    }
}

/// Serves [`FullAgent`] with v2 accepted on a frame transport (acp-remote's in-process
/// agents, `acp serve`): the carrier's port, and the negotiation's outcome once the first
/// frame is in.
#[cfg(feature = "v2")]
fn start_on_frames(
    config: acp_agent::Config,
) -> (
    acp_rpc::transport::FramePort,
    tokio::task::JoinHandle<Result<NegotiatedConnection, NegotiationError>>,
) {
    let (frames, port) = acp_rpc::transport::frame_adapter(16);
    let options = NegotiateOptions::default()
        .with_config(config)
        .with_v2(true);
    let task = tokio::spawn(
        acp_agent::Builder::new(FullAgent)
            .negotiate(options)
            .over_frames(frames),
    );
    (port, task)
}

#[cfg(feature = "v2")]
async fn frame_answer(port: &mut acp_rpc::transport::FramePort) -> Value {
    let frame = tokio::time::timeout(std::time::Duration::from_secs(10), port.receiver.recv())
        .await
        .expect("an answer within 10 s")
        .expect("the connection is still open");
    serde_json::from_slice(&frame).unwrap()
}

/// A first frame that is not JSON, or over the size limit, is served v1 (the network carries
/// v1 and v2 only): answered as any unreadable message, and the connection goes on serving.
#[cfg(feature = "v2")]
#[tokio::test]
async fn a_garbage_or_oversized_first_frame_is_answered_in_v1_which_goes_on_serving() {
    let oversized = format!(r#"{{"junk":"{}"}}"#, "x".repeat(10_000));
    for (first, code) in [
        ("this is not json".to_string(), -32700),
        (oversized, -32600),
        (
            r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"#
                .to_string(),
            -32700,
        ),
    ] {
        let config = acp_agent::Config::default().with_max_message_size(1024);
        let (mut port, negotiated) = start_on_frames(config);
        port.sender.send(first.clone()).await.unwrap();
        let refused = frame_answer(&mut port).await;
        assert_eq!(refused["error"]["code"], code, "{first:.40}: {refused}");
        assert_eq!(refused["id"], Value::Null, "{refused}");
        let served = negotiated.await.unwrap().unwrap();
        assert_eq!(served.version(), 1, "{first:.40}");
        let offer =
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}"#;
        port.sender.send(offer).await.unwrap();
        let answer = frame_answer(&mut port).await;
        assert_eq!(answer["result"]["protocolVersion"], 1, "{answer}");
    }
}

/// A v2 first frame is served v2 through the translation; a carrier that ends before any
/// frame is an error, never a wait.
#[cfg(feature = "v2")]
#[tokio::test]
async fn a_v2_first_frame_is_served_v2_and_a_silent_carrier_is_an_error() {
    let (mut port, negotiated) = start_on_frames(Default::default());
    let offer = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":2,"info":{"name":"t","version":"1"}}}"#;
    port.sender.send(offer).await.unwrap();
    let reply = frame_answer(&mut port).await;
    assert_eq!(reply["result"]["protocolVersion"], 2, "{reply}");
    assert_eq!(negotiated.await.unwrap().unwrap().version(), 2);

    let (port, negotiated) = start_on_frames(Default::default());
    drop(port);
    let error = negotiated.await.unwrap().unwrap_err();
    assert!(
        matches!(error, NegotiationError::ClosedBeforeFirstMessage),
        "{error}"
    );
}
