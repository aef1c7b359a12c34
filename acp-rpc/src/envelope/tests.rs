//! Tests of the envelope reader: the one pass against the full parse, the plain shapes,
//! and the trace's details on good and bad input.

use super::*;
use serde_json::Value;

/// The one pass reads what the full parse reads, on every shape a field can take, and
/// falls back to it on what it cannot read.
#[test]
fn the_one_pass_reads_what_the_full_parse_reads() {
    let lines = [
        r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"a\nb"}}}}"#,
        r#"{"jsonrpc":"2.0","id":7,"result":{"sessionId":"s2","modes":[1,{"a":2}]}}"#,
        r#"{"jsonrpc":"2.0","id":"x\u0041","result":{"stopReason":"end_turn"}}"#,
        r#"{"jsonrpc":"2.0","id":null,"result":null}"#,
        r#"{"jsonrpc":"2.0","id":null,"method":null,"params":null,"error":null}"#,
        r#"{"jsonrpc":"2.0","id":{"odd":[1,2]},"method":3,"params":[1,"s"]}"#,
        r#"{"jsonrpc":"2.0","id":1.5,"error":{"code":-32602,"message":"bad","data":{}}}"#,
        r#"{"jsonrpc":"2.0","id":2,"error":"not an object"}"#,
        r#"{"jsonrpc":"2.0","id":2,"error":{"code":"x"}}"#,
        r#"{"method":"m","params":{"sessionId":5,"update":[1]}}"#,
        r#"{"method":"m","params":{"sessionId":"s\"q"}}"#,
        r#"{"id":1,"id":2,"method":"dup"}"#,
        r#"{"method":"m","params":{"sessionId":"a","sessionId":"b"}}"#,
        r#"  {"method":"spaces" , "id" : 3 }  "#,
        r#"[1,2]"#,
        r#""just a string""#,
    ];
    for line in lines {
        let value: Value = serde_json::from_str(line).unwrap();
        let read = Envelope::read(line).expect(line);
        let full = Envelope::of_value(&value);
        assert_eq!(read.method, full.method, "{line}");
        assert_eq!(read.id_key(), full.id_key(), "{line}");
        assert_eq!(read.params_session, full.params_session, "{line}");
        assert_eq!(read.result_session, full.result_session, "{line}");
        assert_eq!(read.error, full.error, "{line}");
        assert_eq!(read.has_result, full.has_result, "{line}");
        assert_eq!(read.kind(), full.kind(), "{line}");
        assert_eq!(read.request_id(), full.request_id(), "{line}");
    }
    assert!(Envelope::read("not json").is_none());
    assert!(Envelope::read(r#"{"method":"m""#).is_none());
}

#[test]
fn ids_meet_whatever_their_spelling() {
    let key = |line| Envelope::read(line).unwrap().id_key();
    assert_eq!(key(r#"{"id": 1 ,"result":{}}"#).as_deref(), Some("1"));
    assert_eq!(
        key(r#"{"id":"\u0061","result":{}}"#).as_deref(),
        Some("\"a\"")
    );
    assert_eq!(key(r#"{"result":{}}"#), None);
}

#[test]
fn plain_response_splits_only_the_usual_shape_with_a_json_integer_id() {
    fn split(line: &str) -> Option<(i64, &str)> {
        plain_response(line)
    }
    assert_eq!(
        split(r#"{"jsonrpc":"2.0","id":42,"result":{"content":"x"}}"#),
        Some((42, r#"{"content":"x"}"#))
    );
    assert_eq!(
        split(r#"{"jsonrpc":"2.0","id":-7,"result":null} "#),
        Some((-7, "null"))
    );
    assert_eq!(
        split(r#"{"jsonrpc":"2.0","id":0,"result":1}"#),
        Some((0, "1"))
    );
    for other in [
        r#"{"jsonrpc":"2.0","id":"7","result":1}"#,
        r#"{"jsonrpc":"2.0","id":07,"result":1}"#,
        r#"{"jsonrpc":"2.0","id":-,"result":1}"#,
        r#"{"jsonrpc":"2.0","id":1-2,"result":1}"#,
        r#"{"jsonrpc":"2.0","id":1.5,"result":1}"#,
        r#"{"jsonrpc":"2.0","id":99999999999999999999,"result":1}"#,
        r#"{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"x"}}"#,
        r#"{"jsonrpc":"2.0","result":1,"id":1}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":1]"#,
    ] {
        assert_eq!(split(other), None, "{other}");
    }
}

#[test]
fn plain_notification_splits_only_the_usual_shape() {
    /// The split, checked against the bytes-only check, which must say the same.
    fn split(line: &str) -> Option<(&str, &str)> {
        let split = plain_notification(line);
        assert_eq!(
            is_plain_notification(line.as_bytes()),
            split.is_some(),
            "{line}"
        );
        split
    }
    assert_eq!(
        split(r#"{"jsonrpc":"2.0","method":"session/update","params":{"a":[1]}} "#),
        Some(("session/update", r#"{"a":[1]}"#))
    );
    // Not validated: the decoder's full parse is what rejects this one.
    assert_eq!(
        split(r#"{"jsonrpc":"2.0","method":"m","params":{"a":1},"id":2}"#),
        Some(("m", r#"{"a":1},"id":2"#))
    );
    assert_eq!(
        split(r#"{"jsonrpc":"2.0","method":"m","params":{}"#),
        Some(("m", "{"))
    );
    for other in [
        r#"{"method":"m","jsonrpc":"2.0","params":{}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{}}"#,
        r#"{"jsonrpc":"2.0","method":"m"}"#,
        r#"{"jsonrpc":"2.0","method":"m","params":{}]"#,
        r#"{"jsonrpc":"2.0","method":"a\"b","params":{}}"#,
        r#"{"jsonrpc":"2.0","method":"a\u0062","params":{}}"#,
        "{\"jsonrpc\":\"2.0\",\"method\":\"a\tb\",\"params\":{}}",
        r#"{ "jsonrpc":"2.0","method":"m","params":{}}"#,
    ] {
        assert_eq!(split(other), None, "{other}");
    }
    // A method name that is not ASCII is split at its quotes all the same.
    assert_eq!(
        split(r#"{"jsonrpc":"2.0","method":"é/ü","params":[]}"#),
        Some(("é/ü", "[]"))
    );
    // The bytes are not checked to be UTF-8 beyond the fixed shape (params are not read).
    assert!(is_plain_notification(
        b"{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"params\":\"\xff\"}"
    ));
}

#[test]
fn kind_and_session_follow_the_fields() {
    let read = |line| Envelope::read(line).unwrap();
    let r =
        read(r#"{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s"}}"#);
    assert_eq!((r.kind(), r.session_id()), (Kind::Request, Some("s")));
    let n = read(r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"t"}}"#);
    assert_eq!((n.kind(), n.session_id()), (Kind::Notification, Some("t")));
    let a = read(r#"{"jsonrpc":"2.0","id":1,"result":{"sessionId":"u"}}"#);
    assert_eq!((a.kind(), a.session_id()), (Kind::Response, Some("u")));
    let e = read(r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"m"}}"#);
    assert_eq!((e.kind(), e.error), (Kind::Response, Some(Some(-32601))));
    assert_eq!(read(r#"{"jsonrpc":"2.0","id":1}"#).kind(), Kind::Invalid);
}

/// The detailed reading gives the same envelope as [`Envelope::read`], and details equal to
/// a full parse's, on every shape the two fields can take.
#[test]
fn the_detailed_reading_agrees_with_the_plain_one_and_the_full_parse() {
    let lines = [
        r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"text":"x"}}}}"#,
        r#"{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"tool\u005fcall"},"sessionId":"s\"2"}}"#,
        r#"{"method":"session/update","params":{"update":{"sessionUpdate":7}}}"#,
        r#"{"method":"session/update","params":{"update":{"sessionUpdate":{"nested":"x"}}}}"#,
        r#"{"method":"session/update","params":{"update":{"sessionUpdate":null}}}"#,
        r#"{"method":"session/update","params":{"update":"agent_message_chunk"}}"#,
        r#"{"method":"session/update","params":{"update":["sessionUpdate"]}}"#,
        r#"{"method":"session/update","params":"not an object"}"#,
        r#"{"method":"m","params":{"update":{"sessionUpdate":"a"},"update":{"sessionUpdate":"b"}}}"#,
        r#"{"method":"m","params":{"update":{"sessionUpdate":"a","sessionUpdate":"b"}}}"#,
        r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"bad \u00e9\n","data":{"message":"inner"}}}"#,
        r#"{"jsonrpc":"2.0","id":1,"error":{"message":"first","code":-1}}"#,
        r#"{"jsonrpc":"2.0","id":1,"error":{"code":"x","message":5}}"#,
        r#"{"jsonrpc":"2.0","id":1,"error":{"code":1.5,"message":null}}"#,
        r#"{"jsonrpc":"2.0","id":1,"error":{"code":99999999999999999999,"message":["m"]}}"#,
        r#"{"jsonrpc":"2.0","id":1,"error":{"code":1,"code":2,"message":"dup"}}"#,
        r#"{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"a","message":"b"}}"#,
        r#"{"jsonrpc":"2.0","id":1,"error":"a string"}"#,
        r#"{"jsonrpc":"2.0","id":1,"error":null}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":{"sessionId":"r"}}"#,
        r#"[{"method":"m"}]"#,
    ];
    for line in lines {
        let value: Value = serde_json::from_str(line).unwrap();
        let (envelope, details) = Envelope::read_detailed(line).expect(line);
        assert_eq!(Some(&envelope), Envelope::read(line).as_ref(), "{line}");
        assert_eq!(details, Details::of_value(&value), "{line}");
    }
    let kind = |line| Envelope::read_detailed(line).unwrap().1.update_kind;
    assert_eq!(
        kind(lines[0]).as_deref(),
        Some("agent_message_chunk"),
        "a plain kind"
    );
    assert_eq!(kind(lines[1]).as_deref(), Some("tool_call"), "escapes read");
    assert!(matches!(kind(lines[0]), Some(Cow::Borrowed(_))), "borrowed");
    for not_a_string in &lines[2..8] {
        assert_eq!(kind(not_a_string), None, "{not_a_string}");
    }
    let message = |line| Envelope::read_detailed(line).unwrap().1.error_message;
    assert_eq!(message(lines[10]).as_deref(), Some("bad é\n"));
    assert_eq!(message(lines[11]).as_deref(), Some("first"));
    for not_a_string in [lines[12], lines[13], lines[14], lines[17], lines[18]] {
        assert_eq!(message(not_a_string), None, "{not_a_string}");
    }
    // Duplicates go through the full parse: the last one wins, as it does there.
    assert_eq!(kind(lines[8]).as_deref(), Some("b"));
    assert_eq!(kind(lines[9]).as_deref(), Some("b"));
    assert_eq!(message(lines[16]).as_deref(), Some("b"));
}

#[test]
fn the_detailed_reading_takes_huge_strings_and_refuses_truncated_json() {
    let big = "é\\\"".repeat(200_000);
    let line = format!(
        r#"{{"method":"session/update","params":{{"sessionId":"s","update":{{"sessionUpdate":"{big}","content":"{big}"}}}},"error":{{"code":-1,"message":"{big}"}}}}"#
    );
    let (envelope, details) = Envelope::read_detailed(&line).unwrap();
    let unescaped = "é\"".repeat(200_000);
    assert_eq!(envelope.session_id(), Some("s"));
    assert_eq!(details.update_kind.as_deref(), Some(unescaped.as_str()));
    assert_eq!(details.error_message.as_deref(), Some(unescaped.as_str()));
    for cut in [
        r#"{"method":"session/update","params":{"update":{"sessionUpdate":"agent_mes"#,
        r#"{"method":"session/update","params":{"update":{"sessionUpdate":"a"}}"#,
        r#"{"id":1,"error":{"code":-1,"message":"unterminated}}"#,
        r#"{"id":1,"error":{"code":-1,"message":"\uZZZZ"}}"#,
        "{\"id\":1,\"error\":{\"code\":-1,\"message\":\"\u{1}\"}}",
        r#"{"id":1,"error":{"code":-,"message":"m"}}"#,
        "",
        "{",
    ] {
        assert!(Envelope::read_detailed(cut).is_none(), "{cut}");
    }
}
