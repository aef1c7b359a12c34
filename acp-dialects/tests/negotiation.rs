//! Negotiation's dialect knowledge: detection of a first message, the answer a client
//! accepts, and which accepted dialect an agent answers an unaccepted one with.

use acp_dialects::Dialect;
use acp_dialects::negotiation::{
    PROBE_FIRST_METHODS, THREADS_FIRST_METHODS, answer_dialect, choose, detect, offer_line,
};
use serde_json::{Value, json};

#[test]
fn detection_reads_the_handshake_or_the_method() {
    use Dialect::*;
    let init = |v: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","id":0,"method":"initialize","params":{{"protocolVersion":{v}}}}}"#
        )
    };
    assert_eq!(detect(init("1").as_bytes()), Some(V1));
    assert_eq!(detect(init("99").as_bytes()), Some(V1));
    assert_eq!(detect(init(r#""1""#).as_bytes()), Some(Probe));
    assert_eq!(detect(init(r#""2.0""#).as_bytes()), Some(V1));
    let crow = br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocol_version":1,"client_capabilities":{},"client_info":{"name":"crow-ide","version":"0.1.0"}}}"#;
    assert_eq!(detect(crow), Some(Crow));
    assert_eq!(detect(init(r#""0.0.9""#).as_bytes()), Some(Legacy009));
    assert_eq!(detect(init(r#""0.0.11""#).as_bytes()), Some(Legacy009));
    assert_eq!(detect(init("null").as_bytes()), None);
    assert_eq!(detect(br#"{"id":0,"method":"initialize"}"#), None);
    for m in THREADS_FIRST_METHODS {
        let line = format!(r#"{{"id":0,"method":"{m}","params":null}}"#);
        assert_eq!(detect(line.as_bytes()), Some(Threads), "{m}");
    }
    for m in PROBE_FIRST_METHODS {
        let line = format!(r#"{{"jsonrpc":"2.0","id":2,"method":"{m}","params":{{}}}}"#);
        assert_eq!(detect(line.as_bytes()), Some(Probe), "{m}");
    }
    assert_eq!(
        detect(br#"{"jsonrpc":"2.0","id":0,"method":"session/new"}"#),
        None
    );
    assert_eq!(detect(br#"[1,2]"#), None);
    assert_eq!(detect(b"\xff\xfe"), None);
}

#[test]
fn an_answer_is_accepted_only_for_a_version_it_names_exactly() {
    use Dialect::*;
    let answer = |v: Value| json!({ "protocolVersion": v });
    assert_eq!(answer_dialect(&answer(json!(1)), V1), Ok(V1));
    assert_eq!(answer_dialect(&answer(json!(1)), Legacy009), Ok(V1));
    assert_eq!(answer_dialect(&answer(json!("0.0.9")), V1), Ok(Legacy009));
    assert_eq!(answer_dialect(&answer(json!("1")), V1), Ok(Probe));
    assert_eq!(answer_dialect(&answer(json!("1")), Probe), Ok(Probe));
    assert_eq!(
        answer_dialect(&answer(json!("2")), Probe),
        Err(r#"protocol version "2""#.into())
    );
    assert_eq!(
        answer_dialect(&json!({"protocol_version": 1}), Crow),
        Ok(Crow)
    );
    assert_eq!(
        answer_dialect(&json!({"protocol_version": 2}), Crow),
        Err("crow protocol version 2".into())
    );
    assert_eq!(
        answer_dialect(&answer(json!(2)), V1),
        Err("protocol version 2".into())
    );
    assert_eq!(
        answer_dialect(&answer(json!(0)), V1),
        Err("protocol version 0".into())
    );
    assert_eq!(
        answer_dialect(&answer(json!("0.0.10")), V1),
        Err(r#"protocol version "0.0.10""#.into())
    );
    assert_eq!(
        answer_dialect(&json!({"threads": []}), Threads),
        Ok(Threads)
    );
    assert_eq!(
        answer_dialect(&json!({"threads": []}), V1),
        Err(String::new())
    );
}

#[test]
fn an_undetected_or_unaccepted_dialect_is_answered_by_the_one_that_can_say_so() {
    use Dialect::*;
    assert_eq!(choose(Some(Legacy009), &[V1, Legacy009]), Legacy009);
    assert_eq!(choose(Some(Legacy009), &[Threads, V1]), V1);
    assert_eq!(choose(Some(V1), &[Threads, Legacy009]), Legacy009);
    assert_eq!(choose(Some(Threads), &[Legacy009, V1]), Legacy009);
    assert_eq!(choose(None, &[Threads, V1]), Threads);
    assert_eq!(choose(Some(Probe), &[V1, Probe]), Probe);
    assert_eq!(choose(Some(Probe), &[Threads, V1]), V1);
    assert_eq!(choose(Some(Probe), &[Threads]), Threads);
    assert_eq!(choose(Some(Crow), &[V1, Crow]), Crow);
    assert_eq!(choose(Some(Crow), &[Probe, V1]), Probe);
}

#[test]
fn the_seed_dialects_are_offered_as_their_clients_wrote_them() {
    use acp_types::v1::{Implementation, InitializeRequest, ProtocolVersion};
    let init = InitializeRequest::new(ProtocolVersion::V1)
        .client_info(Implementation::new("crow-ide", "0.1.0"));
    let line = |d| String::from_utf8(offer_line(d, 1, &init)).unwrap();
    let as_json = |s: String| serde_json::from_str::<Value>(&s).unwrap();
    assert_eq!(
        as_json(line(Dialect::Probe)),
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "1"}})
    );
    assert_eq!(
        as_json(line(Dialect::Crow)),
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocol_version": 1, "client_capabilities": {}, "client_info": {"name": "crow-ide", "version": "0.1.0"}}})
    );
    assert!(line(Dialect::Crow).ends_with('\n'));
}
