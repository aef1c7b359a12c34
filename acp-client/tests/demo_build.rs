//! The demo example builds its echo agent before it starts it (issue 52): spawned through
//! `cargo run`, a first build ran on the negotiation's clock and the demo failed with "no
//! dialect was agreed within 60s". Here `$CARGO` (the cargo the demo uses, as `cargo run`
//! sets it) is a stand-in that logs how it was called and names a stand-in agent as the
//! built example; the demo must build first, say so, and then spawn that program, only
//! once the build has ended. Runs the example binary that `cargo test` builds next to the
//! test binaries.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

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

/// A scratch directory, removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir =
            std::env::temp_dir().join(format!("acp-demo-build-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn script(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// Runs the demo with `cargo` as its cargo; panics if it runs over 60 s.
fn demo_with_cargo(cargo: &Path) -> Output {
    let child = Command::new(demo_binary())
        .env("CARGO", cargo)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let watchdog = std::thread::spawn(move || {
        for _ in 0..600 {
            std::thread::sleep(std::time::Duration::from_millis(100));
            if !Path::new(&format!("/proc/{pid}")).exists() {
                return;
            }
        }
        unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    });
    let out = child.wait_with_output().unwrap();
    let _ = watchdog.join();
    out
}

fn nanos(path: &Path) -> u128 {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.trim().parse().unwrap()
}

#[test]
fn the_echo_agent_is_built_first_and_the_built_program_spawned_after_the_build() {
    let dir = Scratch::new("ok");
    let d = dir.0.display();
    let agent = dir.0.join("agent.sh");
    script(
        &agent,
        &format!(
            "#!/bin/sh\ndate +%s%N > {d}/agent-started\necho 'the built agent ran' >&2\nexit 7\n"
        ),
    );
    let cargo = dir.0.join("cargo.sh");
    script(
        &cargo,
        &format!(
            "#!/bin/sh\nprintf '%s\\n' \"$@\" > {d}/cargo-args\necho 'Compiling echo_agent' >&2\n\
             sleep 1\necho '{{\"reason\":\"build-script-executed\"}}'\n\
             echo '{{\"reason\":\"compiler-artifact\",\"target\":{{\"name\":\"echo_agent\",\"kind\":[\"example\"]}},\"executable\":\"{}\"}}'\n\
             echo '{{\"reason\":\"build-finished\",\"success\":true}}'\n\
             date +%s%N > {d}/cargo-ended\n",
            agent.display()
        ),
    );
    let out = demo_with_cargo(&cargo);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    // It said what it was doing, and cargo's own progress showed.
    assert!(
        stderr.contains("building the echo agent example"),
        "{stderr}"
    );
    assert!(stderr.contains("Compiling echo_agent"), "{stderr}");
    // One build of the example (not `cargo run`)...
    let args = std::fs::read_to_string(dir.0.join("cargo-args")).unwrap();
    let args: Vec<&str> = args.lines().collect();
    assert_eq!(args[0], "build", "{args:?}");
    assert!(
        args.windows(2).any(|w| w == ["--example", "echo_agent"]),
        "{args:?}"
    );
    assert!(
        args.windows(2).any(|w| w == ["-p", "acp-agent"]),
        "{args:?}"
    );
    // ...then the program it built, started after the build ended.
    assert!(stderr.contains("exit status: 7"), "{stderr}");
    assert!(stderr.contains("the built agent ran"), "{stderr}");
    assert!(
        nanos(&dir.0.join("agent-started")) >= nanos(&dir.0.join("cargo-ended")),
        "the agent started before the build ended"
    );
}

#[test]
fn a_failed_build_is_one_error_and_starts_no_agent() {
    let dir = Scratch::new("fails");
    let cargo = dir.0.join("cargo.sh");
    script(
        &cargo,
        "#!/bin/sh\necho 'error: could not compile `acp-agent`' >&2\nexit 101\n",
    );
    let out = demo_with_cargo(&cargo);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("could not compile"), "{stderr}");
    assert!(
        stderr.contains("demo failed: building the echo agent failed (exit status: 101)"),
        "{stderr}"
    );
    assert!(!stdout.contains("spawning the agent"), "{stdout}");
}
