//! Writing generated files, or checking them, through one function (rust-analyzer's
//! `ensure_file_contents`): the generator stays pure, and `cargo xtask codegen [--check]` and
//! the freshness tests share this code path.

use std::path::{Path, PathBuf};

use crate::GeneratedFile;

/// Compares `contents` with the file at `path`, ignoring CRLF versus LF. Returns `Ok(true)`
/// when they match. Otherwise, in check mode returns `Ok(false)` and leaves the file alone; in
/// write mode writes the file (creating its folder) and returns `Ok(false)`.
pub fn ensure_file_contents(path: &Path, contents: &str, check: bool) -> std::io::Result<bool> {
    let normalize = |s: &str| s.replace("\r\n", "\n");
    if let Ok(old) = std::fs::read_to_string(path)
        && normalize(&old) == normalize(contents)
    {
        return Ok(true);
    }
    if !check {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::write(path, contents)?;
    }
    Ok(false)
}

/// Brings every file under `root` in line with `files` (or only checks, with `check`) and
/// returns the paths, relative to `root`, that were stale.
pub fn sync(root: &Path, files: &[GeneratedFile], check: bool) -> std::io::Result<Vec<PathBuf>> {
    let mut stale = Vec::new();
    for file in files {
        if !ensure_file_contents(&root.join(&file.path), &file.contents, check)? {
            stale.push(file.path.clone());
        }
    }
    Ok(stale)
}
