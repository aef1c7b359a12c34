//! The JSON of a streamed text chunk written directly: `session/update` with an
//! `agent_message_chunk`, `agent_thought_chunk` or `user_message_chunk` of plain text is
//! nearly every message an agent sends, and serde_json spends most of its time on such a
//! message escaping the same field names again. [`SessionNotification::write_text_chunk`]
//! writes exactly the bytes serde_json would (the engine uses it on its text transports);
//! any other shape is left to serde.

use super::{ContentBlock, SessionNotification, SessionUpdate};
use crate::serde_util::write_text_chunk_params;

impl SessionNotification {
    /// Appends this notification's JSON to `out`, byte for byte what `serde_json::to_writer`
    /// writes, when it is a text chunk with nothing else set (no `_meta`, no `messageId`, no
    /// annotations, no unknown fields); returns `false` having written nothing otherwise.
    ///
    /// ```
    /// use acp_types::v1::*;
    ///
    /// let n = SessionNotification::new("sess-1", SessionUpdate::agent_message_text("Hi \"you\""));
    /// let mut out = Vec::new();
    /// assert!(n.write_text_chunk(&mut out));
    /// assert_eq!(out, serde_json::to_vec(&n).unwrap());
    /// ```
    pub fn write_text_chunk(&self, out: &mut Vec<u8>) -> bool {
        let (tag, chunk) = match &self.update {
            SessionUpdate::AgentMessageChunk(chunk) => ("agent_message_chunk", chunk),
            SessionUpdate::AgentThoughtChunk(chunk) => ("agent_thought_chunk", chunk),
            SessionUpdate::UserMessageChunk(chunk) => ("user_message_chunk", chunk),
            _ => return false,
        };
        let ContentBlock::Text(text) = &chunk.content else {
            return false;
        };
        let plain = self.meta.is_none()
            && self.extra.is_empty()
            && chunk.message_id.is_none()
            && chunk.meta.is_none()
            && chunk.extra.is_empty()
            && text.annotations.is_none()
            && text.meta.is_none()
            && text.extra.is_empty();
        if !plain {
            return false;
        }
        let (session, text) = (&self.session_id.0, &text.text);
        write_text_chunk_params(out, session, tag, None, text);
        true
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::v1::{ContentChunk, TextContent};

    fn notification(kind: u8, session: &str, text: &str) -> SessionNotification {
        let update = match kind % 3 {
            0 => SessionUpdate::agent_message_text(text),
            1 => SessionUpdate::agent_thought_text(text),
            _ => SessionUpdate::user_message_text(text),
        };
        SessionNotification::new(session, update)
    }

    proptest! {
        /// Any session id and text, escapes and all: what serde_json writes.
        #[test]
        fn a_text_chunk_is_written_as_serde_json_writes_it(
            kind in 0u8..3,
            session in any::<String>(),
            text in any::<String>(),
        ) {
            let n = notification(kind, &session, &text);
            let mut out = b"before".to_vec();
            prop_assert!(n.write_text_chunk(&mut out));
            prop_assert_eq!(&out[..6], b"before");
            prop_assert_eq!(&out[6..], &serde_json::to_vec(&n).unwrap()[..]);
        }
    }

    #[test]
    fn escapes_and_control_characters_match_serde_json() {
        for text in [
            "",
            "\"",
            "\\",
            "a\nb\r\tc",
            "\u{0}\u{1f}\u{7f}",
            "é😀/</script>",
            "\u{2028}",
        ] {
            let n = notification(0, "s\"1", text);
            let mut out = Vec::new();
            assert!(n.write_text_chunk(&mut out));
            assert_eq!(out, serde_json::to_vec(&n).unwrap(), "{text:?}");
        }
    }

    #[test]
    fn any_other_shape_is_left_to_serde() {
        let chunk = |f: fn(&mut ContentChunk)| {
            let mut chunk = ContentChunk::new(ContentBlock::Text(TextContent::new("t")));
            f(&mut chunk);
            SessionNotification::new("s", SessionUpdate::AgentMessageChunk(chunk))
        };
        let mut with_meta = notification(0, "s", "t");
        with_meta.meta = Some(serde_json::from_str(r#"{"k":1}"#).unwrap());
        let mut with_extra = notification(0, "s", "t");
        with_extra.extra.insert("x", serde_json::json!(1));
        let others = [
            with_meta,
            with_extra,
            chunk(|c| c.message_id = Some("m".into())),
            chunk(|c| c.meta = Some(serde_json::from_str(r#"{"k":1}"#).unwrap())),
            chunk(|c| {
                c.extra.insert("x", serde_json::json!(1));
            }),
            chunk(|c| {
                if let ContentBlock::Text(t) = &mut c.content {
                    t.annotations = Some(serde_json::from_str(r#"{"priority":1}"#).unwrap());
                }
            }),
            chunk(|c| {
                if let ContentBlock::Text(t) = &mut c.content {
                    t.extra.insert("x", serde_json::json!(1));
                }
            }),
            chunk(|c| {
                c.content = ContentBlock::ResourceLink(Box::new(crate::v1::ResourceLink::new(
                    "n",
                    "file:///a",
                )))
            }),
            SessionNotification::new("s", SessionUpdate::plan(vec![])),
        ];
        for n in others {
            let mut out = Vec::new();
            assert!(!n.write_text_chunk(&mut out), "{n:?}");
            assert!(out.is_empty());
        }
    }
}
