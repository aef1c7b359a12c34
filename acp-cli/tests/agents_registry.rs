//! `acp agents` and `--agent ID` against a registry served on a loopback port: our echo
//! agent as a binary archive (a good one, one with a `../` entry, one with a link out, one
//! whose checksum is wrong, one changed after its first download, one cut off halfway), an
//! npx entry and an agent for another platform only; offline against the shipped snapshot;
//! and with the cache already filled (the server sees no request), through `acp chat`,
//! `check`, `trace` and `serve`.

mod support;

mod registry_server;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use acp_client::registry::{PLATFORMS, current_platform};
use registry_server::{Body, Server, sha256_hex, tar_gz};
use support::{Scratch, acp, echo_agent, output_within};

/// `acp ARGS...` with its cache in `cache`, stdin closed, a time limit.
fn acp_in(cache: &Path, args: &[&str]) -> Output {
    let mut cmd = Command::new(acp());
    cmd.args(args)
        .env("ACP_CACHE_DIR", cache)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    output_within(
        cmd.spawn().expect("acp runs"),
        Duration::from_secs(120),
        &format!("acp {args:?}"),
    )
}

fn text(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn here() -> &'static str {
    current_platform().expect("the tests run on a platform the registry names")
}

/// A binary entry for this platform.
fn binary(id: &str, url: &str, cmd: &str, sha256: Option<&str>) -> serde_json::Value {
    let mut target = serde_json::json!({"archive": url, "cmd": cmd, "args": []});
    if let Some(sum) = sha256 {
        target["sha256"] = sum.into();
    }
    serde_json::json!({
        "id": id, "name": format!("Test {id}"), "version": "1.0.0", "description": "test",
        "distribution": {"binary": {here(): target}}
    })
}

/// The test registry, served with every archive; returns the server and the cache dir.
struct World {
    server: Server,
    scratch: Scratch,
}

impl World {
    fn new(name: &str) -> World {
        let scratch = Scratch::new(name);
        let server = Server::start();
        let url = |file: &str| format!("{}/{file}", server.url());
        // The good archive holds a launcher for the echo agent rather than its 60 MB debug
        // binary: what the registry path does with an archive (download, digest, unpack, mark
        // executable, run) is the same for four lines as for 60 MB, and packing, hashing and
        // unpacking the binary with debug builds of flate2 and sha2 took most of this file's
        // minutes.
        static AGENT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
        let agent = AGENT.get_or_init(echo_agent);
        let launcher = format!("#!/bin/sh\nexec {} \"$@\"\n", support::sh(agent));
        let good = tar_gz(&[
            ("echo/", None, b"" as &[u8]),
            ("echo/echo_agent", None, launcher.as_bytes()),
        ]);
        let script = b"#!/bin/sh\necho this must never run >&2\n" as &[u8];
        let dotdot = tar_gz(&[("agent.sh", None, script), ("../escaped", None, b"x")]);
        let link_out = tar_gz(&[("agent.sh", None, script), ("etc", Some("/etc"), b"")]);
        let small = tar_gz(&[("agent.sh", None, script)]);
        let other = PLATFORMS.into_iter().find(|p| *p != here()).unwrap();
        let registry = serde_json::json!({
            "version": "1.0.0",
            "agents": [
                binary("echo-good", &url("good.tar.gz"), "./echo/echo_agent", Some(&sha256_hex(&good))),
                binary("echo-dotdot", &url("dotdot.tar.gz"), "./agent.sh", None),
                binary("echo-link-out", &url("link-out.tar.gz"), "./agent.sh", None),
                binary("echo-bad-sum", &url("small.tar.gz"), "./agent.sh", Some(&"0".repeat(64))),
                binary("echo-changed", &url("changed.tar.gz"), "./agent.sh", None),
                binary("echo-cut", &url("cut.tar.gz"), "./agent.sh", None),
                {"id": "npx-agent", "name": "Npx Agent", "version": "2.0.0", "description": "npx",
                 "distribution": {"npx": {"package": "@acp-rs-test/agent@2.0.0", "args": ["--acp"]}}},
                {"id": "elsewhere", "name": "Elsewhere", "version": "3.0.0", "description": "other",
                 "distribution": {"binary": {other: {"archive": url("small.tar.gz"), "cmd": "./agent.sh"}}}},
            ],
            "extensions": []
        });
        server.put(
            "registry.json",
            Body::Full(registry.to_string().into_bytes()),
        );
        server.put("good.tar.gz", Body::Full(good));
        server.put("dotdot.tar.gz", Body::Full(dotdot));
        server.put("link-out.tar.gz", Body::Full(link_out));
        server.put("small.tar.gz", Body::Full(small.clone()));
        server.put("changed.tar.gz", Body::Full(small.clone()));
        server.put("cut.tar.gz", Body::Halfway(small));
        server.put(
            "not-json",
            Body::Full(b"<html>no registry here</html>".to_vec()),
        );
        server.put(
            "other-schema",
            Body::Full(br#"{"servers": [], "version": "0.1"}"#.to_vec()),
        );
        World { server, scratch }
    }

    fn cache(&self) -> PathBuf {
        self.scratch.0.join("cache")
    }

    fn acp(&self, args: &[&str]) -> Output {
        acp_in(&self.cache(), args)
    }

    fn update(&self) {
        let url = format!("{}/registry.json", self.server.url());
        let out = self.acp(&["agents", "update", "--registry", &url]);
        let (stdout, stderr) = text(&out);
        assert!(out.status.success(), "{stdout}{stderr}");
        assert!(
            stdout.contains("8 agents (registry schema 1.0.0)"),
            "{stdout}"
        );
    }

    /// Whether anything of agent `id` is in the cache (an install or a partial one).
    fn left_in_cache(&self, id: &str) -> Vec<String> {
        let agents = self.cache().join("agents");
        let Ok(entries) = std::fs::read_dir(&agents) else {
            return Vec::new();
        };
        entries
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| n == id || n.starts_with(".partial"))
            .collect()
    }
}

#[test]
fn registry_agents_are_listed_run_by_id_and_run_again_from_the_cache() {
    let world = World::new("registry-run");
    world.update();
    let out = world.acp(&["agents"]);
    let (stdout, _) = text(&out);
    assert!(out.status.success());
    let line = |id: &str| {
        stdout
            .lines()
            .find(|l| l.starts_with(&format!("{id} ")))
            .unwrap_or_else(|| panic!("{id} not listed:\n{stdout}"))
            .to_owned()
    };
    assert!(stdout.contains(&format!(
        "registry: fetched from {}/registry.json",
        world.server.url()
    )));
    assert!(line("echo-good").contains("Test echo-good"), "{stdout}");
    assert!(line("echo-good").contains("binary good.tar.gz"), "{stdout}");
    assert!(line("echo-good").ends_with(" no"), "{stdout}");
    assert!(
        line("npx-agent").contains("npx @acp-rs-test/agent@2.0.0"),
        "{stdout}"
    );
    assert!(
        line("elsewhere").contains("not here (archives for:"),
        "{stdout}"
    );

    // Not confirmed (no terminal, no --yes): said, and nothing downloaded.
    let before = world.server.requests().len();
    let out = world.acp(&["chat", "--agent", "echo-good", "--prompt", "hi"]);
    let (_, stderr) = text(&out);
    assert!(!out.status.success());
    assert!(
        stderr.contains("good.tar.gz") && stderr.contains("pass --yes"),
        "{stderr}"
    );
    assert_eq!(world.server.requests().len(), before, "nothing was fetched");

    let out = world.acp(&[
        "chat",
        "--agent",
        "echo-good",
        "--prompt",
        "registry hello",
        "--yes",
    ]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(
        stdout.contains("registry") && stdout.contains("hello"),
        "{stdout}"
    );
    assert!(
        stderr.contains("download ") && stderr.contains("/good.tar.gz"),
        "{stderr}"
    );
    assert!(stderr.contains("installed agent `echo-good`"), "{stderr}");
    assert!(stderr.contains("archive SHA-256"), "{stderr}");
    assert_eq!(
        world
            .server
            .requests()
            .iter()
            .filter(|r| *r == "/good.tar.gz")
            .count(),
        1
    );
    let listed = text(&world.acp(&["agents"])).0;
    assert!(listed.contains("yes (archive SHA-256"), "{listed}");

    // The cache is filled: chat, check and trace run it without a single request.
    let before = world.server.requests().len();
    let out = world.acp(&["chat", "--agent", "echo-good", "--prompt", "again", "--yes"]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(stderr.contains("is installed in"), "{stderr}");
    let out = world.acp(&[
        "check",
        "--agent",
        "echo-good",
        "--yes",
        "--protocol",
        "1",
        "--only",
        "handshake",
        "--timing-misses-ok",
    ]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(stdout.contains("handshake.initialize"), "{stdout}");
    let trace = world.scratch.0.join("trace.ndjson");
    // Stdin is closed at once: the agent exits (1, nothing was sent), the trace records it.
    let out = world.acp(&[
        "trace",
        "--out",
        trace.to_str().unwrap(),
        "--agent",
        "echo-good",
        "--yes",
    ]);
    assert!(text(&out).1.contains("is installed in"), "{}", text(&out).1);
    let recorded = std::fs::read_to_string(&trace).unwrap();
    assert!(recorded.contains("\"dir\":\"start\""), "{recorded}");
    assert!(
        recorded.contains("echo_agent"),
        "the trace names the registry agent's command: {recorded}"
    );
    // acp serve --agent ID: each connection gets the registry agent.
    let token = world.scratch.0.join("token");
    std::fs::write(&token, "registry-test-token\n").unwrap();
    let mut cmd = Command::new(acp());
    cmd.args(["serve", "--listen", "127.0.0.1:0", "--token-file"])
        .arg(&token)
        .args(["--agent", "echo-good", "--yes"])
        .env("ACP_CACHE_DIR", world.cache())
        .stdin(Stdio::null())
        .stderr(Stdio::null());
    let served = support::Served::spawn(cmd);
    let mut chat = Command::new(acp());
    chat.args([
        "chat",
        "--url",
        &served.url,
        "--prompt",
        "served hello",
        "--yes",
    ])
    .env("ACP_TOKEN", "registry-test-token")
    .stdin(Stdio::null())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let out = output_within(
        chat.spawn().unwrap(),
        Duration::from_secs(60),
        "acp chat --url",
    );
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(
        stdout.contains("served") && stdout.contains("hello"),
        "{stdout}"
    );
    drop(served);
    assert_eq!(
        world.server.requests().len(),
        before,
        "no request with the cache filled"
    );
}

#[test]
fn hostile_or_broken_archives_are_refused_and_nothing_runs() {
    let world = World::new("registry-hostile");
    world.update();
    for (id, why) in [
        ("echo-dotdot", "goes out through `..`"),
        ("echo-link-out", "link to an absolute path"),
        ("echo-bad-sum", "the registry says 0000"),
        ("echo-cut", "the download stopped"),
    ] {
        let out = world.acp(&["chat", "--agent", id, "--prompt", "hi", "--yes"]);
        let (stdout, stderr) = text(&out);
        assert!(!out.status.success(), "{id}: {stdout}{stderr}");
        assert!(stderr.contains(why), "{id}: {stderr}");
        assert!(!stderr.contains("must never run"), "{id}: {stderr}");
        assert!(!stderr.contains("acp: running"), "{id}: {stderr}");
        assert!(
            world.left_in_cache(id).is_empty(),
            "{id}: {:?}",
            world.left_in_cache(id)
        );
    }
    assert!(!world.cache().join("escaped").exists());
    assert!(!world.cache().join("agents/escaped").exists());
}

#[test]
fn an_archive_changed_after_its_first_download_is_refused() {
    let world = World::new("registry-changed");
    world.update();
    let out = world.acp(&["agents", "install", "echo-changed", "--yes"]);
    let (_, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    let first = stderr
        .split("archive SHA-256 ")
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .unwrap()
        .to_owned();
    // The publisher swaps the archive; the user clears the install.
    let swapped = tar_gz(&[("agent.sh", None, b"#!/bin/sh\necho swapped >&2\n" as &[u8])]);
    world.server.put("changed.tar.gz", Body::Full(swapped));
    std::fs::remove_dir_all(world.cache().join("agents/echo-changed")).unwrap();
    let out = world.acp(&["chat", "--agent", "echo-changed", "--prompt", "hi", "--yes"]);
    let (stdout, stderr) = text(&out);
    assert!(!out.status.success(), "{stdout}{stderr}");
    assert!(
        stderr.contains("changed since its first download"),
        "{stderr}"
    );
    assert!(
        stderr.contains(&first),
        "the recorded digest is shown: {stderr}"
    );
    assert!(!stderr.contains("swapped"), "{stderr}");
    assert!(world.left_in_cache("echo-changed").is_empty());
}

#[test]
fn bad_registries_unknown_ids_and_missing_npx_are_clear_messages() {
    let world = World::new("registry-bad");
    for (file, why) in [
        ("not-json", "not JSON"),
        ("other-schema", "not an ACP agent registry"),
    ] {
        let url = format!("{}/{file}", world.server.url());
        let out = world.acp(&["agents", "update", "--registry", &url]);
        let (_, stderr) = text(&out);
        assert!(!out.status.success());
        assert!(stderr.contains(why), "{file}: {stderr}");
        assert!(
            !world.cache().join("registry.json").exists(),
            "{file} was not stored"
        );
    }
    world.update();
    let out = world.acp(&[
        "chat",
        "--agent",
        "no-such-agent",
        "--prompt",
        "hi",
        "--yes",
    ]);
    let (_, stderr) = text(&out);
    assert!(!out.status.success());
    assert!(
        stderr.contains("no agent `no-such-agent` in the registry"),
        "{stderr}"
    );
    let out = world.acp(&["chat", "--agent", "elsewhere", "--prompt", "hi", "--yes"]);
    let (_, stderr) = text(&out);
    assert!(!out.status.success());
    assert!(
        stderr.contains(&format!("has nothing for {}", here())),
        "{stderr}"
    );
    // npx entries run through the user's own npx: without one on PATH, a clear message.
    let mut cmd = Command::new(acp());
    cmd.args(["chat", "--agent", "npx-agent", "--prompt", "hi", "--yes"])
        .env("ACP_CACHE_DIR", world.cache())
        .env("PATH", world.scratch.0.join("empty-path"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let out = output_within(
        cmd.spawn().unwrap(),
        Duration::from_secs(60),
        "acp chat npx",
    );
    let (_, stderr) = text(&out);
    assert!(!out.status.success());
    assert!(
        stderr.contains("`npx`") && stderr.contains("not on PATH"),
        "{stderr}"
    );
}

#[test]
fn offline_the_shipped_snapshot_is_listed() {
    let scratch = Scratch::new("registry-offline");
    let cache = scratch.0.join("cache");
    let out = acp_in(&cache, &["agents"]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains("the snapshot shipped with acp"), "{stdout}");
    assert!(
        stdout.contains("codex-acp") && stdout.contains("gemini"),
        "{stdout}"
    );
    // Resolving from the snapshot says what would be downloaded, and waits for a yes.
    let out = acp_in(&cache, &["check", "--agent", "codex-acp"]);
    let (_, stderr) = text(&out);
    assert!(!out.status.success());
    assert!(
        stderr.contains("https://github.com/zed-industries/codex-acp/releases/"),
        "{stderr}"
    );
    assert!(stderr.contains("pass --yes"), "{stderr}");
    assert!(!cache.join("agents").exists(), "nothing was downloaded");
}
