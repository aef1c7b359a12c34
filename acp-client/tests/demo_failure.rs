//! The demo example when its agent fails: it exits with an error naming the agent's exit
//! status and stderr tail, and removes its scratch directory. Runs the example binary that
//! `cargo test` builds next to the test binaries.

use std::path::PathBuf;
use std::process::Command;

fn demo_binary() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let debug = exe.parent().and_then(|deps| deps.parent()).unwrap();
    let demo = debug.join("examples").join("demo");
    assert!(
        demo.exists(),
        "{} is missing: run `cargo test -p acp-client` (it builds the examples) or \
         `cargo build -p acp-client --example demo` first",
        demo.display()
    );
    demo
}

#[test]
fn a_failing_agent_is_named_with_its_exit_status_and_stderr_and_the_scratch_dir_is_removed() {
    let child = Command::new(demo_binary())
        .args([
            "--",
            "sh",
            "-c",
            "echo 'fatal: no model configured' >&2; exit 5",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let scratch = std::env::temp_dir().join(format!("acp-demo-{}", child.id()));
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("exit status: 5"), "{stderr}");
    assert!(stderr.contains("fatal: no model configured"), "{stderr}");
    assert!(!scratch.exists(), "{} left behind", scratch.display());
}
