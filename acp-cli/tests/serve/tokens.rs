//! Tokens and identities: empty and malformed token files refused, the file re-read on
//! SIGHUP, and each identity reaching only its own sessions.

use super::*;

#[test]
fn serve_refuses_an_empty_token_file() {
    let scratch = Scratch::new("serve-empty-token");
    let token_file = scratch.0.join("token");
    std::fs::write(&token_file, "\n").unwrap();
    let out = Command::new(acp())
        .args(["serve", "--listen", "127.0.0.1:0", "--token-file"])
        .arg(&token_file)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("empty"));
}

/// `acp serve` refuses a token file with a malformed line at start, naming the line and
/// never the token.
#[test]
fn serve_refuses_a_malformed_token_file_naming_the_line() {
    let scratch = Scratch::new("serve-bad-token-file");
    let token_file = scratch.0.join("tokens");
    for (text, line) in [
        ("alice:tok-a\n# ok\nal ice:secret-one\n", "line 3"),
        ("alice:tok-a\nbob:tok-a\n", "line 2"),
        ("alice:secret-one\nalice:secret-two\n", "line 2"),
        (":secret-one\n", "line 1"),
    ] {
        std::fs::write(&token_file, text).unwrap();
        let out = Command::new(acp())
            .args(["serve", "--listen", "127.0.0.1:0", "--token-file"])
            .arg(&token_file)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{text:?}: {stderr}");
        assert!(stderr.contains(line), "{text:?}: {stderr}");
        assert!(stderr.contains("--token-file"), "{text:?}: {stderr}");
        assert!(
            !stderr.contains("secret") && !stderr.contains("tok-a"),
            "{text:?}: a token is echoed: {stderr}"
        );
    }
}

/// `--token-file` is re-read on SIGHUP: added and changed tokens work from the next
/// request, removed ones are refused; a file that does not parse keeps the tokens before,
/// and the log (stderr) says why, naming the line, not the token.
#[test]
fn the_token_file_is_reloaded_on_sighup_and_a_bad_one_keeps_the_old_tokens() {
    let scratch = Scratch::new("serve-sighup");
    let token_file = scratch.0.join("tokens");
    std::fs::write(&token_file, "alice:tok-a\n").unwrap();
    let log_path = scratch.0.join("serve.log");
    let log = std::fs::File::create(&log_path).unwrap();
    let server = Serve::start_logged(&scratch, &token_file, &["--metrics"], &[], log.into());
    let url = server.url.clone();
    let hup = || unsafe { libc::kill(server.served.child.id() as i32, libc::SIGHUP) };
    let status = |token: &str| http_get(&url, "/metrics", token).0;
    assert!(status("tok-a").contains(" 200 "));
    assert!(status("tok-b").contains(" 401 "));

    std::fs::write(&token_file, "alice:tok-a\nbob:tok-b\n").unwrap();
    assert_eq!(hup(), 0);
    wait_for_status(&url, "tok-b", " 200 ");
    assert!(status("tok-a").contains(" 200 "));

    // Alice removed, Bob's token changed.
    std::fs::write(&token_file, "# rotated\nbob:tok-b2\n").unwrap();
    assert_eq!(hup(), 0);
    wait_for_status(&url, "tok-b2", " 200 ");
    assert!(status("tok-a").contains(" 401 "));
    assert!(status("tok-b").contains(" 401 "));

    // A duplicate name: nothing changes, and the log says why.
    std::fs::write(&token_file, "carol:tok-c\ncarol:tok-d\n").unwrap();
    assert_eq!(hup(), 0);
    let deadline = Instant::now() + Duration::from_secs(10);
    let logged = loop {
        let text = std::fs::read_to_string(&log_path).unwrap();
        if text.contains("tokens before stay") {
            break text;
        }
        assert!(
            Instant::now() < deadline,
            "no word of the failed reload: {text}"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(logged.contains("line 2"), "{logged}");
    assert!(!logged.contains("tok-"), "a token in the log: {logged}");
    assert!(status("tok-b2").contains(" 200 "));
    assert!(status("tok-c").contains(" 401 "));
    // A missing file neither: the tokens stay.
    std::fs::remove_file(&token_file).unwrap();
    assert_eq!(hup(), 0);
    std::thread::sleep(Duration::from_millis(300));
    assert!(status("tok-b2").contains(" 200 "));
    drop(server);
}

/// What `conn` gets for `session/load`, `session/resume`, a prompt, `session/close` and
/// `session/delete` of session `id`, in that order: each answer, or its error code.
async fn outcomes(
    conn: &acp_rpc::Connection,
    id: &str,
    cwd: &str,
) -> Vec<(&'static str, Result<serde_json::Value, i32>)> {
    use serde_json::json;
    let opened = json!({"sessionId": id, "cwd": cwd, "mcpServers": []});
    let calls = [
        ("session/load", opened.clone()),
        ("session/resume", opened),
        (
            "session/prompt",
            json!({"sessionId": id, "prompt": [{"type": "text", "text": "/echo hijack"}]}),
        ),
        ("session/close", json!({"sessionId": id})),
        ("session/delete", json!({"sessionId": id})),
    ];
    let mut out = Vec::new();
    for (method, params) in calls {
        let answer = conn.peer().request(method, &params).await;
        out.push((method, answer.map_err(|e| e.code.0)));
    }
    out
}

/// What one identity's connection gets for another identity's session `id` is what it gets
/// for a session that does not exist, call for call: `-32002` for `session/load`,
/// `session/resume`, a prompt and `session/close`, and for `session/delete` the same answer
/// (the spec's silent success when the agent is asked), which deletes nothing; and
/// `session/list` does not show it.
async fn cannot_reach(conn: &acp_rpc::Connection, id: &str, cwd: &str, who: &str) {
    let theirs = outcomes(conn, id, cwd).await;
    let nobodys = outcomes(conn, &format!("no-such-{id}"), cwd).await;
    assert_eq!(
        theirs, nobodys,
        "{who}: another's session is answered as none"
    );
    for (method, answer) in &theirs[..4] {
        assert_eq!(*answer, Err(-32002), "{who}: {method}");
    }
    assert!(
        !session_ids(conn, cwd).await.contains(&id.to_owned()),
        "{who} lists another's session"
    );
}

/// After a host died: a fresh connection through the balancer at `url` and its
/// `session/list` for `cwd`, both tried again (bounded) while the balancer answers `503`
/// (until its health checks settle it may hold every host down for a moment).
async fn listed_after_failover(
    url: &str,
    token: &str,
    log: &support::UpdateLog,
    cwd: &str,
) -> (acp_rpc::Connection, Vec<String>) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let conn = connect_as(url, token, log).await;
        let list: Result<serde_json::Value, _> = conn
            .peer()
            .request("session/list", &serde_json::json!({"cwd": cwd}))
            .await;
        match list {
            Ok(list) => {
                let ids = list["sessions"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|s| s["sessionId"].as_str().unwrap().to_owned())
                    .collect();
                return (conn, ids);
            }
            Err(e) if e.message.contains("503") && tokio::time::Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(e) => panic!("session/list through the balancer after kill -9: {e:?}"),
        }
    }
}

/// The ids `session/list` answers for `cwd`.
async fn session_ids(conn: &acp_rpc::Connection, cwd: &str) -> Vec<String> {
    let list: serde_json::Value = conn
        .peer()
        .request("session/list", &serde_json::json!({"cwd": cwd}))
        .await
        .unwrap();
    list["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["sessionId"].as_str().unwrap().to_owned())
        .collect()
}

/// A new session in `cwd` with one turn in which the agent says `text`; its id.
async fn session_with_a_turn(conn: &acp_rpc::Connection, cwd: &str, text: &str) -> String {
    use serde_json::{Value, json};
    let created: Value = conn
        .peer()
        .request("session/new", &json!({"cwd": cwd, "mcpServers": []}))
        .await
        .unwrap();
    let id = created["sessionId"].as_str().unwrap().to_owned();
    // `/echo`: the built-in agent streams the text back (no permission to ask).
    let echo = format!("/echo {text}");
    let prompt = json!({"sessionId": id, "prompt": [{"type": "text", "text": echo}]});
    let done: Value = conn
        .peer()
        .request("session/prompt", &prompt)
        .await
        .unwrap();
    assert_eq!(done["stopReason"], "end_turn");
    id
}

/// `session/load` of `id` works for its owner and replays its turn (`said` in a chunk).
async fn loads_own(url: &str, token: &str, id: &str, cwd: &str, said: &str) {
    let log = support::UpdateLog::default();
    let conn = connect_as(url, token, &log).await;
    let _: serde_json::Value = conn
        .peer()
        .request(
            "session/load",
            &serde_json::json!({"sessionId": id, "cwd": cwd, "mcpServers": []}),
        )
        .await
        .unwrap_or_else(|e| panic!("{token}: loading its own session: {e:?}"));
    let replayed = log.texts().concat();
    assert!(replayed.contains(said), "{token}: {replayed}");
}

/// Two identities in one token file (and the unnamed one) on one `acp serve --store DIR`:
/// each lists, loads, resumes and prompts its own sessions, and neither lists, loads,
/// resumes, prompts, closes nor deletes the other's (each gets the answer for a session
/// that does not exist).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_identities_on_one_store_reach_only_their_own_sessions() {
    let scratch = Scratch::new("serve-identities");
    let token_file = scratch.0.join("tokens");
    std::fs::write(&token_file, "alice:tok-a\nbob:tok-b\ntok-unnamed\n").unwrap();
    let store = scratch.0.join("sessions");
    let server = Serve::start_with(
        &scratch,
        &token_file,
        &["--store", store.to_str().unwrap()],
        &[],
    );
    let url = server.url.clone();
    let cwd = scratch.0.to_str().unwrap();
    let log = support::UpdateLog::default();
    let alice = connect_as(&url, "tok-a", &log).await;
    let bob = connect_as(&url, "tok-b", &log).await;
    let unnamed = connect_as(&url, "tok-unnamed", &log).await;
    let a = session_with_a_turn(&alice, cwd, "hello from alice").await;
    let b = session_with_a_turn(&bob, cwd, "hello from bob").await;
    let u = session_with_a_turn(&unnamed, cwd, "hello from nobody").await;
    assert_eq!(session_ids(&alice, cwd).await, std::slice::from_ref(&a));
    assert_eq!(session_ids(&bob, cwd).await, std::slice::from_ref(&b));
    assert_eq!(session_ids(&unnamed, cwd).await, std::slice::from_ref(&u));

    cannot_reach(&bob, &a, cwd, "bob").await;
    cannot_reach(&unnamed, &a, cwd, "unnamed").await;
    cannot_reach(&alice, &b, cwd, "alice").await;
    cannot_reach(&alice, &u, cwd, "alice").await;
    cannot_reach(&bob, &u, cwd, "bob").await;
    // The same over the WebSocket profile.
    let ws = url.replace("http://", "ws://");
    let bob_ws = connect_as(&ws, "tok-b", &log).await;
    assert_eq!(session_ids(&bob_ws, cwd).await, std::slice::from_ref(&b));
    cannot_reach(&bob_ws, &a, cwd, "bob over WebSocket").await;
    drop(bob_ws);

    // Each still has its own, whole, on a new connection.
    loads_own(&url, "tok-a", &a, cwd, "hello from alice").await;
    loads_own(&url, "tok-b", &b, cwd, "hello from bob").await;
    loads_own(&url, "tok-unnamed", &u, cwd, "hello from nobody").await;
    let again = connect_as(&url, "tok-b", &log).await;
    let resumed: serde_json::Value = again
        .peer()
        .request(
            "session/resume",
            &serde_json::json!({"sessionId": b, "cwd": cwd, "mcpServers": []}),
        )
        .await
        .unwrap();
    assert!(resumed.is_object(), "{resumed}");
    let prompt =
        serde_json::json!({"sessionId": b, "prompt": [{"type": "text", "text": "/echo more"}]});
    let done: serde_json::Value = again
        .peer()
        .request("session/prompt", &prompt)
        .await
        .unwrap();
    assert_eq!(done["stopReason"], "end_turn");
    // Its owner can delete it.
    let _: serde_json::Value = again
        .peer()
        .request("session/delete", &serde_json::json!({"sessionId": b}))
        .await
        .unwrap();
    assert!(session_ids(&bob, cwd).await.is_empty());
    assert_eq!(session_ids(&alice, cwd).await, [a]);
    drop((alice, bob, unnamed, again));
    drop(server);
}

/// The deployment of docs/DEPLOYMENT.md with two identities: two `acp serve` hosts on one
/// PostgreSQL store behind HAProxy. Neither identity lists, loads, resumes, prompts, closes
/// nor deletes the other's sessions, on either host; after one host is killed with
/// `kill -9`, each identity still lists and loads its own through the balancer, and still
/// cannot reach the other's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_identities_on_two_hosts_keep_to_their_own_sessions_across_a_kill_9() {
    let Some(postgres) = pg::shared() else { return };
    let scratch = Scratch::new("serve-balanced-identities");
    let token_file = scratch.0.join("tokens");
    std::fs::write(&token_file, "alice:tok-a\nbob:tok-b\n").unwrap();
    let db = postgres.fresh_db();
    let store = ["--store", db.as_str()];
    let mut first = Serve::start_with(&scratch, &token_file, &store, &[]);
    let second = Serve::start_with(&scratch, &token_file, &store, &[]);
    let Some(balancer) = Balancer::start(&scratch, &[&first.host(), &second.host()]) else {
        return;
    };
    let cwd = scratch.0.to_str().unwrap();
    let log = support::UpdateLog::default();
    // Sessions made on each host, for each identity.
    let mut made = Vec::new();
    for (host, n) in [(&first.url, 1), (&second.url, 2)] {
        for (token, who) in [("tok-a", "alice"), ("tok-b", "bob")] {
            let conn = connect_as(host, token, &log).await;
            let said = format!("{who} on host {n}");
            let id = session_with_a_turn(&conn, cwd, &said).await;
            made.push((token, who, id, said));
        }
    }
    let own = |token: &str| -> Vec<String> {
        let mut ids: Vec<String> = made
            .iter()
            .filter(|(t, ..)| *t == token)
            .map(|(_, _, id, _)| id.clone())
            .collect();
        ids.reverse();
        ids
    };
    // On each host, each identity lists its own (newest first) and reaches none of the other's.
    for host in [&first.url, &second.url] {
        for (token, who) in [("tok-a", "alice"), ("tok-b", "bob")] {
            let conn = connect_as(host, token, &log).await;
            assert_eq!(session_ids(&conn, cwd).await, own(token), "{who} on {host}");
            for (_, owner, id, _) in made.iter().filter(|(t, ..)| *t != token) {
                cannot_reach(&conn, id, cwd, &format!("{who} on {host}, {owner}'s")).await;
            }
        }
    }

    first.kill_9();
    for (token, who) in [("tok-a", "alice"), ("tok-b", "bob")] {
        let (conn, listed) = listed_after_failover(&balancer.url, token, &log, cwd).await;
        assert_eq!(listed, own(token), "{who} after kill -9");
        for (_, _, id, _) in made.iter().filter(|(t, ..)| *t != token) {
            cannot_reach(&conn, id, cwd, &format!("{who} after kill -9")).await;
        }
        for (_, _, id, said) in made.iter().filter(|(t, ..)| *t == token) {
            loads_own(&balancer.url, token, id, cwd, said).await;
        }
    }
    drop(balancer);
    drop(second);
}
