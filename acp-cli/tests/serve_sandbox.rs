//! `acp serve -- AGENT`'s children, through the real binary on loopback: their environment
//! (the allow-list and `--pass-env`, never `ACP_TOKEN` or `ACP_STORE`, `ACP_IDENTITY` set)
//! and `--sandbox` (Debian's bubblewrap): an agent that tries to write outside the served
//! root, read the token file and credentials, and see the host's processes fails at each,
//! while a normal turn works (the built-in agent's, and acp-agent's echo agent's). Without
//! `bwrap` the sandbox tests are skipped (under `CI=true` they fail), and `--sandbox` is a
//! clear error at start.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use support::{Scratch, Served, acp};

const TOKEN: &str = "s3cret-sandbox-token";

/// A running `acp serve`, stopped with SIGTERM on drop.
struct Serve(Served);

impl Serve {
    /// `acp serve --listen 127.0.0.1:0 OPTIONS -- AGENT` in `dir`, with `env` added to the
    /// environment; waits for the printed URL.
    fn start(dir: &Path, options: &[&str], env: &[(&str, &str)], agent: &[&str]) -> Serve {
        let mut cmd = Command::new(acp());
        cmd.args(["serve", "--listen", "127.0.0.1:0"])
            .args(options)
            .arg("--")
            .args(agent)
            .envs(env.iter().copied())
            .current_dir(dir)
            .stdin(Stdio::null())
            .stderr(Stdio::inherit());
        Serve(Served::spawn(cmd))
    }
}

/// `acp ARGS` in `dir` with the token in `ACP_TOKEN` and a time limit.
fn acp_run(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let child = Command::new(acp())
        .args(args)
        .envs(env.iter().copied())
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    support::output_within(child, Duration::from_secs(30), &format!("acp {args:?}"))
}

/// One turn with `acp chat --url`: the built-in agent behind the gateway echoes it.
fn turn(dir: &Path, url: &str) {
    let stdout = chat(dir, url);
    assert!(stdout.contains("You said: hello remote"), "{stdout}");
}

/// `acp chat --url URL --prompt "hello remote" --yes`, which must succeed and end its
/// turn; what it printed.
fn chat(dir: &Path, url: &str) -> String {
    let out = acp_run(
        dir,
        &["chat", "--url", url, "--prompt", "hello remote", "--yes"],
        &[("ACP_TOKEN", TOKEN)],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("end_turn"), "{stdout}");
    stdout.into_owned()
}

/// A directory outside /tmp (which the sandbox replaces), so what the agent may not reach
/// is really there on the host; removed on drop.
struct HostDir(PathBuf);

impl HostDir {
    fn new(name: &str) -> HostDir {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("acp-sandbox-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        HostDir(std::fs::canonicalize(dir).unwrap())
    }
}

impl Drop for HostDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// An executable shell script at `path`.
fn script(path: &Path, text: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn a_gateway_agent_gets_the_allow_listed_environment_and_never_the_token() {
    let scratch = Scratch::new("serve-env");
    let agent = scratch.0.join("agent.sh");
    // Reports its environment, then is the built-in agent.
    script(
        &agent,
        &format!(
            "#!/bin/sh\nenv > '{}'\nexec '{}' agent\n",
            scratch.0.join("env.txt").display(),
            acp().display()
        ),
    );
    let store = scratch.0.join("store");
    let server = Serve::start(
        &scratch.0,
        &[
            "--pass-env",
            "ACP_TEST_PASSED",
            "--pass-env",
            "ACP_TEST_PREFIX_*",
        ],
        &[
            ("ACP_TOKEN", TOKEN),
            ("ACP_STORE", store.to_str().unwrap()),
            ("ACP_TEST_PASSED", "passed"),
            ("ACP_TEST_PREFIX_ONE", "one"),
            ("ACP_TEST_UNLISTED", "unlisted"),
            ("PGPASSWORD", "pg-secret"),
        ],
        &[agent.to_str().unwrap()],
    );
    turn(&scratch.0, &server.0.url);
    let env = std::fs::read_to_string(scratch.0.join("env.txt")).unwrap();
    let names: Vec<&str> = env.lines().filter_map(|l| l.split('=').next()).collect();
    for passed in [
        "ACP_TEST_PASSED=passed",
        "ACP_TEST_PREFIX_ONE=one",
        "ACP_IDENTITY=bearer",
    ] {
        assert!(env.lines().any(|l| l == passed), "{passed} in:\n{env}");
    }
    assert!(names.contains(&"PATH"), "{env}");
    for hidden in ["ACP_TOKEN", "ACP_STORE", "ACP_TEST_UNLISTED", "PGPASSWORD"] {
        assert!(!names.contains(&hidden), "{hidden} in:\n{env}");
    }
    assert!(!env.contains(TOKEN) && !env.contains("pg-secret"), "{env}");
    assert!(!store.exists(), "the agent did not open the server's store");
}

#[test]
fn gateway_flags_that_cannot_be_met_are_clear_errors_at_start() {
    let scratch = Scratch::new("serve-sandbox-errors");
    // The arguments, the environment, what the error says.
    type Case<'a> = (&'a [&'a str], &'a [(&'a str, &'a str)], &'a str);
    let cases: [Case; 4] = [
        (
            &["--sandbox", "--", "/bin/true"],
            &[("PATH", "/nonexistent-acp-test")],
            "`bwrap` is not on PATH",
        ),
        (&["--sandbox"], &[], "for an agent command"),
        (
            &["--pass-env", "ACP_TOKEN", "--", "/bin/true"],
            &[],
            "never reach the agent",
        ),
        (&["--pass-env", "A*B", "--", "/bin/true"], &[], "NAME*"),
    ];
    for (args, env, says) in cases {
        let mut all = vec!["serve", "--listen", "127.0.0.1:0"];
        all.extend_from_slice(args);
        let mut env = env.to_vec();
        env.push(("ACP_TOKEN", TOKEN));
        let out = acp_run(&scratch.0, &all, &env);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
        assert!(out.stdout.is_empty(), "nothing served: {args:?}");
    }
}

/// Whether bubblewrap can make a sandbox here; skips (prints why) when not, except under
/// `CI=true`, where the test fails instead.
fn bwrap_works(test: &str) -> bool {
    let works = Command::new("bwrap")
        .args([
            "--ro-bind",
            "/",
            "/",
            "--unshare-pid",
            "--dev",
            "/dev",
            "--proc",
            "/proc",
        ])
        .arg("true")
        .output()
        .is_ok_and(|o| o.status.success());
    if !works {
        let msg = "bubblewrap (`bwrap`) is missing or cannot make namespaces here \
                   (`apt-get install bubblewrap`; .ci/run installs it)";
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!("{msg}");
        }
        eprintln!("\n!!! SKIPPED {test}: {msg} !!!\n");
    }
    works
}

#[test]
fn a_sandboxed_agent_cannot_write_outside_the_root_read_secrets_or_see_host_processes() {
    if !bwrap_works("the --sandbox test") {
        return;
    }
    // Everything is outside /tmp (which the sandbox replaces), really there on the host: the
    // served root (the server's directory) holding the token file, the home directory with
    // credentials beside it, and the place the agent tries to write.
    let dir = HostDir::new("host");
    let host = &dir.0;
    let root = host.join("root");
    std::fs::create_dir_all(&root).unwrap();
    let token_file = root.join("token");
    std::fs::write(&token_file, format!("{TOKEN}\n")).unwrap();
    let home = host.join("home");
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    std::fs::write(home.join(".ssh/id_ed25519"), "PRIVATE-KEY").unwrap();
    std::fs::write(home.join(".netrc"), "machine x password NETRC-SECRET").unwrap();
    let outside = host.join("written-by-the-agent");
    let agent = host.join("agent.sh");
    // Tries each thing and writes what happened to report.txt in its directory (the root),
    // then is the built-in agent for a normal turn.
    script(
        &agent,
        &format!(
            r#"#!/bin/sh
r=report.txt
: > "$r" || exit 9
try() {{ if eval "$2" >/dev/null 2>&1; then echo "$1=yes" >> "$r"; else echo "$1=no" >> "$r"; fi; }}
echo "tmp_entries=$(ls -A /tmp | wc -l)" >> "$r"
try write_outside 'echo x > "{outside}"'
try write_beside_root 'echo x > ../beside-root'
try write_home 'echo x > "$HOME/planted"'
try write_scratch 'echo x > /tmp/scratch && test -s /tmp/scratch'
try read_token 'grep -q {TOKEN} "{token}"'
try read_ssh_key 'grep -q PRIVATE-KEY "$HOME/.ssh/id_ed25519"'
try read_netrc 'grep -q NETRC-SECRET "$HOME/.netrc"'
try see_test_process 'test -e /proc/{pid}'
try signal_test_process 'kill -0 {pid}'
echo "processes=$(ls /proc | grep -c '^[0-9][0-9]*$')" >> "$r"
echo "token_env=${{ACP_TOKEN:-none}}" >> "$r"
echo "identity=${{ACP_IDENTITY:-none}}" >> "$r"
exec '{acp}' agent
"#,
            outside = outside.display(),
            token = token_file.display(),
            pid = std::process::id(),
            acp = acp().display(),
        ),
    );
    let server = Serve::start(
        &root,
        &["--sandbox", "--token-file", token_file.to_str().unwrap()],
        &[("ACP_TOKEN", TOKEN), ("HOME", home.to_str().unwrap())],
        &[agent.to_str().unwrap()],
    );
    turn(&root, &server.0.url);
    let report = std::fs::read_to_string(root.join("report.txt")).unwrap();
    let got = |key: &str| {
        report
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{key}=")))
            .unwrap_or_else(|| panic!("{key} missing from the report:\n{report}"))
            .to_owned()
    };
    assert_eq!(got("tmp_entries"), "0", "a fresh /tmp:\n{report}");
    for denied in [
        "write_outside",
        "write_beside_root",
        "write_home",
        "read_token",
        "read_ssh_key",
        "read_netrc",
        "see_test_process",
        "signal_test_process",
    ] {
        assert_eq!(got(denied), "no", "{denied}:\n{report}");
    }
    assert_eq!(got("write_scratch"), "yes", "{report}");
    let processes: usize = got("processes").parse().unwrap();
    assert!(
        processes < 10,
        "only the sandbox's own processes:\n{report}"
    );
    assert_eq!(got("token_env"), "none");
    assert_eq!(got("identity"), "bearer");
    // And on the host: nothing written outside the root, the secrets untouched.
    assert!(!outside.exists());
    assert!(!home.join("planted").exists());
    assert!(!host.join("beside-root").exists());
    assert_eq!(
        std::fs::read_to_string(&token_file).unwrap(),
        format!("{TOKEN}\n")
    );
    // The connection's sandbox is gone without a trace: no zombie left with the server
    // (the sandbox's init outlives bwrap by a moment; the orphan reaper passes every 2 s).
    let serve = server.0.child.id();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !zombie_children(serve).is_empty() {
        assert!(
            Instant::now() < deadline,
            "zombies of acp serve: {:?}",
            zombie_children(serve)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    drop(server);
}

/// The children of process `pid` that are zombies.
fn zombie_children(pid: u32) -> Vec<u32> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    let mut zombies = Vec::new();
    for task in tasks.flatten() {
        let children = std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
        for child in children
            .split_whitespace()
            .filter_map(|c| c.parse::<u32>().ok())
        {
            let stat = std::fs::read_to_string(format!("/proc/{child}/stat")).unwrap_or_default();
            // The state follows the command name, which is in parentheses.
            let state = stat
                .rsplit_once(") ")
                .and_then(|(_, rest)| rest.chars().next());
            if state == Some('Z') {
                zombies.push(child);
            }
        }
    }
    zombies
}

/// acp-agent's echo agent (a plan, a file read through the client, a terminal command run
/// through the client) has a whole turn from its sandbox.
#[test]
fn the_echo_agent_has_a_whole_turn_in_the_sandbox() {
    if !bwrap_works("the --sandbox echo agent test") {
        return;
    }
    let agent = support::echo_agent();
    let dir = HostDir::new("echo");
    let server = Serve::start(
        &dir.0,
        &["--sandbox"],
        &[("ACP_TOKEN", TOKEN)],
        &[agent.to_str().unwrap()],
    );
    let stdout = chat(&dir.0, &server.0.url);
    assert!(stdout.contains("connected to echo-agent"), "{stdout}");
    assert!(stdout.contains("hello from a terminal"), "{stdout}");
    assert!(stdout.contains("hello remote"), "{stdout}");
}
