//! `@path` in a prompt: the file goes along as an embedded resource when the agent
//! advertises `embeddedContext`, as a resource link otherwise.

use std::path::Path;

use acp_types::v1::ContentBlock;

use crate::proto;

/// Files larger than this are always sent as links, never embedded.
pub const MAX_EMBEDDED_BYTES: u64 = 256 * 1024;

/// The prompt's blocks: the text as typed, then one block per `@path` that names a file.
/// A `@word` that is not a readable file stays plain text and is reported in the errors.
pub fn prompt_blocks(text: &str, cwd: &Path, embed: bool) -> (Vec<ContentBlock>, Vec<String>) {
    let mut blocks = vec![ContentBlock::text(text)];
    let mut problems = Vec::new();
    for word in text.split_whitespace() {
        let Some(name) = word.strip_prefix('@') else {
            continue;
        };
        if name.is_empty() {
            continue;
        }
        let path = cwd.join(name);
        let meta = match std::fs::metadata(&path) {
            Ok(meta) if meta.is_file() => meta,
            Ok(_) => {
                problems.push(format!("@{name} is not a file; not attached"));
                continue;
            }
            Err(e) => {
                problems.push(format!("@{name}: {e}; not attached"));
                continue;
            }
        };
        let absolute = std::fs::canonicalize(&path).unwrap_or(path);
        let uri = format!("file://{}", absolute.display());
        let text = (embed && meta.len() <= MAX_EMBEDDED_BYTES)
            .then(|| std::fs::read(&absolute).ok())
            .flatten()
            .and_then(|bytes| String::from_utf8(bytes).ok());
        blocks.push(match text {
            Some(text) => proto::embedded_text(uri, text),
            None => proto::resource_link(uri, name.to_owned(), i64::try_from(meta.len()).ok()),
        });
    }
    (blocks, problems)
}

#[cfg(test)]
mod tests {
    use super::*;
    use acp_types::v1::EmbeddedResourceResource;

    #[test]
    fn files_are_embedded_or_linked_by_capability() {
        let dir = std::env::temp_dir().join(format!("acp-attach-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("a.txt"), "alpha\n").unwrap();
        let (blocks, problems) = prompt_blocks("see @a.txt and @missing", &dir, true);
        assert_eq!(blocks.len(), 2);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].starts_with("@missing: "));
        match &blocks[1] {
            ContentBlock::Resource(r) => match &r.resource {
                EmbeddedResourceResource::TextResourceContents(t) => {
                    assert_eq!(t.text, "alpha\n");
                    assert!(t.uri.starts_with("file:///") && t.uri.ends_with("/a.txt"));
                }
                other => panic!("{other:?}"),
            },
            other => panic!("{other:?}"),
        }
        let (blocks, _) = prompt_blocks("see @a.txt", &dir, false);
        match &blocks[1] {
            ContentBlock::ResourceLink(l) => {
                assert_eq!(l.name, "a.txt");
                assert_eq!(l.size, Some(6));
            }
            other => panic!("{other:?}"),
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
