//! Keeps the types of the streaming path small. serde's derived deserializers move a value by
//! value two or three times per nesting level while building it, so the size of these types is
//! parse time: a `session/update` stream spent ~30% of the client's time in `memmove` when
//! every `_meta` was an inline `serde_json::Map` (SessionNotification was 560 bytes).
//!
//! The bounds are today's sizes plus a few words of headroom, measured on a 64-bit target with
//! serde_json's `preserve_order` on (acp-types' dev-dependencies turn it on; without it the
//! types are smaller). A field that pushes a type past its bound deserves a look: box it if it
//! is rarely set, as [`acp_types::Meta`] boxes `_meta`.

use std::mem::size_of;

use acp_types::v1::{ContentBlock, ContentChunk, SessionNotification, SessionUpdate};

#[test]
fn the_streaming_types_stay_small() {
    for (name, size, bound) in [
        // 360 bytes when measured.
        ("SessionNotification", size_of::<SessionNotification>(), 384),
        // 328: its largest variants are ToolCall and ToolCallUpdate (320 each).
        ("SessionUpdate", size_of::<SessionUpdate>(), 352),
        // 248.
        ("ContentChunk", size_of::<ContentChunk>(), 272),
        // 216.
        ("ContentBlock", size_of::<ContentBlock>(), 240),
    ] {
        assert!(
            size <= bound,
            "{name} is {size} bytes, over its bound of {bound}: see this file's header"
        );
    }
}
