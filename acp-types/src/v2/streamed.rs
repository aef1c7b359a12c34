//! The JSON of a streamed v2 text chunk written directly, as v1's is (see
//! `acp_types::v1::SessionNotification::write_text_chunk`): `session/update` with an
//! `agent_message_chunk`, `agent_thought_chunk` or `user_message_chunk` of plain text,
//! byte for byte what serde_json writes. The generated v2 sides send their
//! `session/update`s through it.

use super::{ContentBlock, SessionUpdate, UpdateSessionNotification};
use crate::serde_util::write_text_chunk_params;

impl UpdateSessionNotification {
    /// Appends this notification's JSON to `out`, byte for byte what `serde_json::to_writer`
    /// writes, when it is a text chunk with nothing else set (no `_meta`, no annotations,
    /// no unknown fields); returns `false` having written nothing otherwise.
    ///
    /// ```
    /// use acp_types::v2::*;
    ///
    /// let chunk = SessionUpdate::agent_message_chunk("m1", ContentBlock::Text(TextContent::new("Hi")));
    /// let n = UpdateSessionNotification::new("sess-1", chunk);
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
            && chunk.meta.is_none()
            && chunk.extra.is_empty()
            && text.annotations.is_none()
            && text.meta.is_none()
            && text.extra.is_empty();
        if !plain {
            return false;
        }
        let (session, message) = (&self.session_id.0, Some(chunk.message_id.0.as_str()));
        write_text_chunk_params(out, session, tag, message, &text.text);
        true
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::v2::{ContentChunk, TextContent};

    fn notification(
        kind: u8,
        session: &str,
        message: &str,
        text: &str,
    ) -> UpdateSessionNotification {
        let content = ContentBlock::Text(TextContent::new(text));
        let update = match kind % 3 {
            0 => SessionUpdate::agent_message_chunk(message, content),
            1 => SessionUpdate::agent_thought_chunk(message, content),
            _ => SessionUpdate::user_message_chunk(message, content),
        };
        UpdateSessionNotification::new(session, update)
    }

    proptest! {
        /// Any session id, message id and text, escapes and all: what serde_json writes.
        #[test]
        fn a_text_chunk_is_written_as_serde_json_writes_it(
            kind in 0u8..3,
            session in any::<String>(),
            message in any::<String>(),
            text in any::<String>(),
        ) {
            let n = notification(kind, &session, &message, &text);
            let mut out = b"before".to_vec();
            prop_assert!(n.write_text_chunk(&mut out));
            prop_assert_eq!(&out[..6], b"before");
            prop_assert_eq!(&out[6..], &serde_json::to_vec(&n).unwrap()[..]);
        }
    }

    #[test]
    fn any_other_shape_is_left_to_serde() {
        let chunk = |f: fn(&mut ContentChunk)| {
            let mut chunk = ContentChunk::new("m", ContentBlock::Text(TextContent::new("t")));
            f(&mut chunk);
            UpdateSessionNotification::new("s", SessionUpdate::AgentMessageChunk(chunk))
        };
        let mut with_meta = notification(0, "s", "m", "t");
        with_meta.meta = Some(serde_json::from_str(r#"{"k":1}"#).unwrap());
        let mut with_extra = notification(0, "s", "m", "t");
        with_extra.extra.insert("x", serde_json::json!(1));
        let others = [
            with_meta,
            with_extra,
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
            UpdateSessionNotification::new("s", SessionUpdate::agent_message("m")),
        ];
        for n in others {
            let mut out = Vec::new();
            assert!(!n.write_text_chunk(&mut out), "{n:?}");
            assert!(out.is_empty());
        }
    }
}
