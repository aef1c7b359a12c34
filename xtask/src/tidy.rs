//! Tidy checks over the source tree, run by `cargo test` (as rust-analyzer's xtask does).
//!
//! `no_protocol_value_is_built_from_a_json_literal`: protocol values are built with the
//! generated constructors and builders (`ToolCall::new(id, title).kind(...)`), never by
//! decoding a JSON literal, which fails at run time and gets no completion. The check scans
//! [`SCANNED`] (what users copy: examples, library sources and their docs, the README and
//! the cookbooks, our bench and interop peers) for the ways such a value is decoded from a
//! literal: `from_value(json!(...))`, `from_str` or `from_slice` of a literal that opens an
//! object or array, and a generic helper that turns any `Value` into any type (the way the
//! literal hides behind a function). Tests are not scanned (they check wire bytes on
//! purpose), nor is anything after a file's `#[cfg(test)]`. [`ALLOWED`] names the places
//! that decode data on purpose, each with its reason.

use std::path::{Path, PathBuf};

/// Where the check looks, relative to the workspace root: directories (every `.rs` file
/// below) and single files.
const SCANNED: &[&str] = &[
    "README.md",
    "acp-agent/src",
    "acp-agent/examples",
    "acp-check/src",
    "acp-client/src",
    "acp-client/examples",
    "acp-remote/src",
    "acp-cli/src",
    "acp-rpc/src",
    "acp-types/src/v1",
    "acp-types/src/legacy",
    "acp-types/src/legacy.rs",
    "acp-types/src/lib.rs",
    "acp-types/src/meta.rs",
    "benches/src",
    "interop/src/peers",
    "interop/examples",
];

/// Files that decode JSON into protocol values on purpose, with the reason.
const ALLOWED: &[(&str, &str)] = &[
    (
        "interop/src/peers/ours_agent.rs",
        "decodes the shared interop script (peers/script.json): the same JSON every SDK's peer sends",
    ),
    (
        "interop/src/peers/official_agent.rs",
        "decodes the shared interop script (peers/script.json): the same JSON every SDK's peer sends",
    ),
    (
        "interop/src/peers/official_v2.rs",
        "decodes the shared v2 interop script (peers/script.v2.json): the same JSON every SDK's peer sends",
    ),
];

/// What decoding a literal looks like once white space is removed.
const PATTERNS: &[&str] = &[
    "from_value(json!",
    "from_value(serde_json::json!",
    "from_str(\"{",
    "from_str(\"[",
    "from_str(r#\"{",
    "from_str(r#\"[",
    "from_slice(b\"{",
    "from_slice(br#\"{",
    "DeserializeOwned>(value:Value)",
    "DeserializeOwned>(value:serde_json::Value)",
    "DeserializeOwned>(j:Value)",
    "DeserializeOwned>(j:serde_json::Value)",
];

/// The text with white space removed, turbofishes (`::<T>`) dropped, and everything from the
/// first `#[cfg(test)]` on cut off.
fn normalized(text: &str) -> String {
    let text = text.split("#[cfg(test)]").next().unwrap_or_default();
    let mut out: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    while let Some(start) = out.find("::<") {
        let mut depth = 0;
        let mut end = None;
        for (i, c) in out[start + 2..].char_indices() {
            match c {
                '<' => depth += 1,
                '>' => {
                    depth -= 1;
                    if depth == 0 {
                        end = Some(start + 2 + i + 1);
                        break;
                    }
                }
                _ => {}
            }
        }
        match end {
            Some(end) => out.replace_range(start..end, ""),
            None => break,
        }
    }
    // Doc comments keep their code after the comment markers.
    out.replace("//!", "").replace("///", "")
}

/// Every `(file, pattern)` where a scanned file decodes a literal.
fn findings(root: &Path, scanned: &[&str]) -> Vec<(String, &'static str)> {
    let mut files = Vec::new();
    for entry in scanned {
        collect(&root.join(entry), &mut files);
    }
    let mut found = Vec::new();
    for file in files {
        let rel = file
            .strip_prefix(root)
            .unwrap_or(&file)
            .to_string_lossy()
            .replace('\\', "/");
        if ALLOWED.iter().any(|(path, _)| *path == rel) {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        let text = normalized(&text);
        for pattern in PATTERNS {
            if contains_call(&text, pattern) {
                found.push((rel.clone(), *pattern));
            }
        }
    }
    found
}

/// Whether `text` holds `pattern` as a call of its own: a match that is the tail of a longer
/// name (`extend_from_slice(b"{...` writes bytes, it decodes nothing) does not count.
fn contains_call(text: &str, pattern: &str) -> bool {
    text.match_indices(pattern).any(|(at, _)| {
        !text[..at]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_alphanumeric() || c == '_')
    })
}

fn collect(path: &Path, files: &mut Vec<PathBuf>) {
    if path.is_file() {
        files.push(path.to_path_buf());
    } else if let Ok(entries) = std::fs::read_dir(path) {
        let mut entries: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
        entries.sort();
        for entry in entries {
            if entry.is_dir() {
                collect(&entry, files);
            } else if entry.extension().is_some_and(|e| e == "rs" || e == "md") {
                files.push(entry);
            }
        }
    }
}

#[test]
fn no_protocol_value_is_built_from_a_json_literal() {
    let root = crate::workspace_root();
    for entry in SCANNED {
        assert!(
            root.join(entry).exists(),
            "{entry} is scanned but does not exist: update SCANNED"
        );
    }
    let found = findings(&root, SCANNED);
    assert!(
        found.is_empty(),
        "protocol values built from JSON literals (use the generated constructors):\n{}",
        found
            .iter()
            .map(|(file, pattern)| format!("  {file}: `{pattern}`"))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

#[test]
fn the_check_finds_each_way_of_decoding_a_literal() {
    let dir = std::env::temp_dir().join(format!("acp-tidy-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let samples = [
        "let x: T = serde_json::from_value(serde_json::json!({\"a\": 1})).unwrap();",
        "let x = serde_json::from_value::<T>(\n    json!({}))?;",
        "let x: T = serde_json::from_str(r#\"{\"a\":1}\"#)?;",
        "/// let x: T = serde_json::from_str(\"[1]\").unwrap();",
        "fn v<T: DeserializeOwned>(value: Value) -> T { todo() }",
    ];
    for (i, sample) in samples.iter().enumerate() {
        std::fs::write(dir.join(format!("s{i}.rs")), sample).unwrap();
    }
    std::fs::write(
        dir.join("clean.rs"),
        "let v = ToolCall::new(\"t\", \"x\");\n#[cfg(test)]\nmod t { fn f() { serde_json::from_value(json!(1)); } }",
    )
    .unwrap();
    let found = findings(&dir, &["."]);
    let files: Vec<&str> = found.iter().map(|(f, _)| f.as_str()).collect();
    std::fs::remove_dir_all(&dir).ok();
    for i in 0..samples.len() {
        let name = format!("s{i}.rs");
        assert!(
            files.iter().any(|f| f.trim_start_matches("./") == name),
            "sample {i} not found: {files:?}"
        );
    }
    assert!(
        !files.iter().any(|f| f.ends_with("clean.rs")),
        "clean file flagged: {found:?}"
    );
}

#[test]
fn a_longer_name_ending_in_a_pattern_is_not_a_finding() {
    assert!(contains_call(
        "serde_json::from_slice(b\"{",
        "from_slice(b\"{"
    ));
    assert!(contains_call("from_slice(b\"{", "from_slice(b\"{"));
    assert!(!contains_call(
        "out.extend_from_slice(b\"{",
        "from_slice(b\"{"
    ));
    assert!(contains_call(
        "out.extend_from_slice(b\"{x;serde_json::from_slice(b\"{",
        "from_slice(b\"{"
    ));
}
