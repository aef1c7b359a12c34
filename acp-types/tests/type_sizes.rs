//! Keeps the types of the streaming path small. serde's derived deserializers move a value by
//! value two or three times per nesting level while building it, so the size of these types is
//! parse time: a `session/update` stream spent ~30% of the client's time in `memmove` when
//! every `_meta` was an inline `serde_json::Map` (SessionNotification was 560 bytes).
//!
//! The bounds are today's sizes plus a few words of headroom, measured on a 64-bit target with
//! serde_json's `preserve_order` on (acp-types' dev-dependencies turn it on; without it the
//! types are smaller). A field that pushes a type past its bound deserves a look: box it if it
//! is rarely set, as [`acp_types::Meta`] boxes `_meta`, or mark a large, rare union variant
//! `x-boxed` in the schema (see `acp-schema/CONVENTIONS.md`).

use std::mem::size_of;

use acp_types::v1::{ContentBlock, ContentChunk, SessionNotification, SessionUpdate};

#[test]
fn the_streaming_types_stay_small() {
    for (name, size, bound) in [
        // 208 bytes when measured (560 with `_meta` inline and nothing boxed; 176 before
        // every object kept its unknown fields, one boxed `Extra` pointer per level).
        ("SessionNotification", size_of::<SessionNotification>(), 232),
        // A chunk; the tool-call variants (320 bytes each) are boxed (`x-boxed`).
        ("SessionUpdate", size_of::<SessionUpdate>(), 184),
        ("ContentChunk", size_of::<ContentChunk>(), 176),
        // Text; image, audio and resource bodies are boxed.
        ("ContentBlock", size_of::<ContentBlock>(), 136),
    ] {
        assert!(
            size <= bound,
            "{name} is {size} bytes, over its bound of {bound}: see this file's header"
        );
        eprintln!("{name}: {size} bytes (bound {bound})");
    }
}
