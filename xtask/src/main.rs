//! Project automation for acp-rs, run as `cargo xtask <command>`.
//!
//! - `cargo xtask codegen` regenerates every generated file from the schemas in acp-schema.
//! - `cargo xtask codegen --check` regenerates in memory and fails, naming each stale file,
//!   when a checked-in file differs (CI runs this).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

const USAGE: &str = "usage: cargo xtask codegen [--check]";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    match args.as_slice() {
        ["codegen"] => codegen(false),
        ["codegen", "--check"] | ["codegen", "check"] => codegen(true),
        ["help"] | ["--help"] | ["-h"] => {
            println!("{USAGE}");
            ExitCode::SUCCESS
        }
        _ => {
            eprintln!("{USAGE}");
            ExitCode::from(2)
        }
    }
}

/// The workspace root (the parent of this crate's directory).
fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives inside the workspace")
        .to_path_buf()
}

fn codegen(check: bool) -> ExitCode {
    let files = match acp_codegen::generate_all() {
        Ok(files) => files,
        Err(e) => {
            eprintln!("error: code generation failed: {e}");
            return ExitCode::FAILURE;
        }
    };
    let root = workspace_root();
    let mut stale = Vec::new();
    for file in &files {
        match ensure_file_contents(&root.join(&file.path), &file.contents, check) {
            Ok(true) => {}
            Ok(false) => stale.push(file.path.display().to_string()),
            Err(e) => {
                eprintln!("error: {}: {e}", file.path.display());
                return ExitCode::FAILURE;
            }
        }
    }
    if check && !stale.is_empty() {
        for path in &stale {
            eprintln!("error: `{path}` is not up to date");
        }
        eprintln!("run `cargo xtask codegen` and commit the result");
        return ExitCode::FAILURE;
    }
    if !check {
        for path in &stale {
            println!("updated {path}");
        }
    }
    println!(
        "{} generated files {}",
        files.len(),
        if check { "are up to date" } else { "written" }
    );
    ExitCode::SUCCESS
}

/// Compares `contents` with the file at `path` (CRLF-insensitive). Returns `Ok(true)` when they
/// match. Otherwise, in check mode returns `Ok(false)`; in write mode writes the file and
/// returns `Ok(false)` so the caller can report it.
fn ensure_file_contents(path: &Path, contents: &str, check: bool) -> std::io::Result<bool> {
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
