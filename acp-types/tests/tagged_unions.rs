//! Internally tagged unions read the same whether the tag comes first (read straight from the
//! text, the usual case) or elsewhere in the object (buffered as a `Value` first): same
//! values, same unknown variants kept whole, same objects rejected.

use acp_types::v1::*;
use serde::de::DeserializeOwned;

/// `text` as written, and with its first key moved to the end of the object.
fn both_orders(text: &str) -> [String; 2] {
    let inner = text
        .trim()
        .strip_prefix('{')
        .and_then(|t| t.strip_suffix('}'))
        .unwrap();
    let value: serde_json::Value = serde_json::from_str(text).unwrap();
    let first_key = inner.split(':').next().unwrap().trim();
    let key: String = serde_json::from_str(first_key).unwrap();
    let first = format!("{first_key}:{}", value[&key]);
    let rest = inner
        .strip_prefix(first.as_str())
        .unwrap()
        .trim_start_matches(',');
    let moved = if rest.is_empty() {
        format!("{{{first}}}")
    } else {
        format!("{{{rest},{first}}}")
    };
    [text.to_owned(), moved]
}

fn read_both<T: DeserializeOwned + PartialEq + std::fmt::Debug>(text: &str) -> T {
    let [first, last] = both_orders(text);
    let a: T = serde_json::from_str(&first).unwrap_or_else(|e| panic!("{first}: {e}"));
    let b: T = serde_json::from_str(&last).unwrap_or_else(|e| panic!("{last}: {e}"));
    assert_eq!(a, b, "{first} and {last} differ");
    a
}

fn fails_both<T: DeserializeOwned + std::fmt::Debug>(text: &str) -> [String; 2] {
    both_orders(text).map(|t| {
        serde_json::from_str::<T>(&t)
            .map(|v| panic!("{t} was accepted as {v:?}"))
            .unwrap_err()
            .to_string()
    })
}

#[test]
fn the_tag_may_come_first_or_last() {
    let update: SessionUpdate = read_both(
        r#"{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi","_meta":{"a":1}}}"#,
    );
    assert_eq!(
        update,
        SessionUpdate::agent_message_text("hi").with_text_meta()
    );
    let update: SessionUpdate = read_both(
        r#"{"sessionUpdate":"tool_call","toolCallId":"t1","title":"Read","kind":"read","status":"pending","content":[{"type":"content","content":{"type":"text","text":"x"}}]}"#,
    );
    assert!(matches!(update, SessionUpdate::ToolCall(ref c) if c.tool_call_id.0 == "t1"));
    let block: ContentBlock = read_both(r#"{"type":"image","data":"AAAA","mimeType":"image/png"}"#);
    assert!(matches!(block, ContentBlock::Image(_)));
}

#[test]
fn unknown_tags_are_kept_whole_in_either_order() {
    let update: SessionUpdate =
        read_both(r#"{"sessionUpdate":"subagent_spawned","child":"s2","depth":3}"#);
    assert_eq!(
        update,
        SessionUpdate::Unknown(serde_json::json!({
            "sessionUpdate": "subagent_spawned", "child": "s2", "depth": 3
        }))
    );
}

#[test]
fn bad_objects_are_rejected_in_either_order() {
    // A known tag with a broken body.
    for e in fails_both::<ContentBlock>(r#"{"type":"image","mimeType":"image/png"}"#) {
        assert!(e.contains("data"), "{e}");
    }
    // A tag that is not a string.
    for e in
        fails_both::<SessionUpdate>(r#"{"sessionUpdate":7,"content":{"type":"text","text":"x"}}"#)
    {
        assert!(e.contains("must be a string"), "{e}");
    }
    // No tag at all.
    assert!(
        serde_json::from_str::<SessionUpdate>(r#"{"content":{"type":"text","text":"x"}}"#).is_err()
    );
    // Not an object.
    let e = serde_json::from_str::<SessionUpdate>(r#""agent_message_chunk""#).unwrap_err();
    assert!(e.to_string().contains("an object for SessionUpdate"), "{e}");
}

#[test]
fn a_tag_written_with_escapes_names_the_same_variant() {
    let text = r#"{"sessionUpdate":"agent_message\u005fchunk","content":{"type":"te\u0078t","text":"hi"}}"#;
    let update: SessionUpdate = serde_json::from_str(text).unwrap();
    assert_eq!(update, SessionUpdate::agent_message_text("hi"));
}

#[test]
fn a_tag_of_any_other_json_type_is_rejected_in_either_order() {
    for tag in [
        "null",
        "true",
        "-3",
        "18446744073709551615",
        "2.5",
        "[1,2]",
        r#"{"a":1}"#,
    ] {
        let text = format!(r#"{{"sessionUpdate":{tag},"content":{{"type":"text","text":"x"}}}}"#);
        for e in fails_both::<SessionUpdate>(&text) {
            assert!(e.contains("must be a string"), "{tag}: {e}");
        }
    }
}

#[test]
fn errors_in_a_directly_read_body_point_into_the_text() {
    let text = r#"{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":5}}}"#;
    let e = serde_json::from_str::<SessionNotification>(text).unwrap_err();
    assert!(e.to_string().contains("invalid type"), "{e}");
    assert!(e.column() > 0, "{e}");
}

trait WithTextMeta {
    fn with_text_meta(self) -> Self;
}

impl WithTextMeta for SessionUpdate {
    fn with_text_meta(self) -> Self {
        let mut update = self;
        if let SessionUpdate::AgentMessageChunk(chunk) = &mut update
            && let ContentBlock::Text(t) = &mut chunk.content
        {
            let mut meta = serde_json::Map::new();
            meta.insert("a".into(), 1.into());
            t.meta = Some(meta.into());
        }
        update
    }
}

#[test]
fn boxed_variants_convert_from_their_body_and_write_the_same_json() {
    // `x-boxed` changes the Rust shape only: the wire form is the body's fields beside the tag.
    let image: ContentBlock = ImageContent::new("AAAA", "image/png").into();
    assert!(matches!(&image, ContentBlock::Image(i) if i.mime_type == "image/png"));
    assert_eq!(
        serde_json::to_value(&image).unwrap(),
        serde_json::json!({"type": "image", "data": "AAAA", "mimeType": "image/png"})
    );
    let back: ContentBlock = serde_json::from_value(serde_json::to_value(&image).unwrap()).unwrap();
    assert_eq!(back, image);
}
