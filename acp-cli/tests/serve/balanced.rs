//! Hosts behind proxies: a TLS-terminating proxy with a private authority, two hosts on one
//! PostgreSQL store behind HAProxy (one going away, one killed mid-turn), `/readyz`.

use super::*;

/// `acp chat` reaches an `acp serve` behind a TLS-terminating proxy at `https://` and
/// `wss://`, trusting the proxy's certificate authority given with `--ca-file`; without it
/// the certificate is refused, with a reason, before any credential is sent.
#[test]
fn chat_over_tls_through_a_terminating_proxy_with_a_private_certificate_authority() {
    let scratch = Scratch::new("serve-tls");
    let token_file = scratch.0.join("token");
    std::fs::write(&token_file, "s3cret-token\n").unwrap();
    let server = Serve::start(&scratch, &token_file, &[]);
    let host = server
        .url
        .trim_start_matches("http://")
        .trim_end_matches("/acp")
        .to_owned();
    let Some((proxy, ca)) = Balancer::tls(&scratch, &host) else {
        return;
    };
    let ca = ca.to_str().unwrap();
    let token = Some("s3cret-token");
    check_turn(
        &chat(&scratch, &proxy.url, &["--ca-file", ca], token),
        "https",
    );
    let wss = proxy.url.replace("https://", "wss://");
    check_turn(&chat(&scratch, &wss, &["--ca-file", ca], token), "wss");
    check_turn(
        &chat(&scratch, &proxy.url, &["--ws", "--ca-file", ca], token),
        "https with --ws",
    );
    for url in [&proxy.url, &wss] {
        let refused = chat(&scratch, url, &[], token);
        assert_eq!(refused.status.code(), Some(1), "{url}");
        let said =
            String::from_utf8_lossy(&refused.stdout) + String::from_utf8_lossy(&refused.stderr);
        assert!(
            said.contains("certificate") && said.contains("UnknownIssuer"),
            "{url}: {said}"
        );
    }
}

/// The deployment docs/DEPLOYMENT.md describes, for real: two `acp serve` hosts sharing one
/// PostgreSQL store behind HAProxy. Sessions made through the balancer (over both profiles)
/// are listed by each host; after the host that made them stops, the balancer sends the
/// client to the other, which loads them with their history.
#[test]
fn two_hosts_behind_a_load_balancer_share_sessions_and_survive_one_going_away() {
    let Some(postgres) = pg::shared() else { return };
    let scratch = Scratch::new("serve-balanced");
    let token_file = scratch.0.join("token");
    std::fs::write(&token_file, "s3cret-token\n").unwrap();
    let db = postgres.fresh_db();
    let store = ["--store", db.as_str()];
    let first = Serve::start_with(&scratch, &token_file, &store, &[]);
    let second = Serve::start_with(&scratch, &token_file, &store, &[]);
    let host = |url: &str| {
        url.trim_start_matches("http://")
            .trim_end_matches("/acp")
            .to_owned()
    };
    let (first_host, second_host) = (host(&first.url), host(&second.url));
    let Some(balancer) = Balancer::start(&scratch, &[&first_host, &second_host]) else {
        return;
    };
    let token = Some("s3cret-token");
    // Four turns, so that round robin gives each host some, over both profiles (the HTTP
    // profile's requests stay on one host through the balancer's cookie).
    for profile in [&[][..], &["--ws"][..], &[][..], &["--ws"][..]] {
        check_turn(
            &chat(&scratch, &balancer.url, profile, token),
            "through the balancer",
        );
    }
    let on_first = listed(&scratch, &first.url, token);
    let on_second = listed(&scratch, &second.url, token);
    assert_eq!(
        on_first.len(),
        4,
        "every session in the shared store: {on_first:?}"
    );
    assert_eq!(on_first, on_second, "both hosts list the same sessions");

    drop(first);
    for (id, profile) in on_second.iter().zip([&[][..], &["--ws"][..]]) {
        let mut extra = profile.to_vec();
        extra.extend_from_slice(&["--load", id]);
        let out = chat(&scratch, &balancer.url, &extra, token);
        check_turn(&out, "loaded after a host went away");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains("earlier turn"), "{profile:?}: {stdout}");
    }
    drop(balancer);
    drop(second);
}

/// The crash the deployment exists for: the host running a turn is killed with `kill -9`
/// while a second host joins the balancer. The client's next connection lands on the new
/// host, which lists the session, replays every chunk the client had seen (the turn marked
/// interrupted) and runs a new turn.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_killed_mid_turn_leaves_its_session_to_a_host_that_joined_the_balancer() {
    use serde_json::{Value, json};
    let Some(postgres) = pg::shared() else { return };
    let scratch = Scratch::new("serve-crash");
    let token_file = scratch.0.join("token");
    std::fs::write(&token_file, "s3cret-token\n").unwrap();
    let db = postgres.fresh_db();
    let joining = format!("127.0.0.1:{}", free_port());
    let mut first = Serve::start_with(&scratch, &token_file, &["--store", &db], &[]);
    // The second host is in the balancer's list but not running yet: all goes to the first.
    let Some(balancer) = Balancer::start(&scratch, &[&first.host(), &joining]) else {
        return;
    };
    let log = support::UpdateLog::default();
    let conn = through(&balancer, &log).await;
    let cwd = scratch.0.to_str().unwrap();
    let created: Value = conn
        .peer()
        .request("session/new", &json!({"cwd": cwd, "mcpServers": []}))
        .await
        .unwrap();
    let id = created["sessionId"].as_str().unwrap().to_owned();
    let peer = conn.peer().clone();
    let prompt = json!({"sessionId": id, "prompt": [{"type": "text", "text": "/count 200"}]});
    let running = tokio::spawn(async move {
        let _ = peer.request::<_, Value>("session/prompt", &prompt).await;
    });
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while log.texts().len() < 5 {
        assert!(tokio::time::Instant::now() < deadline, "the turn streams");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let second = Serve::start_with(
        &scratch,
        &token_file,
        &["--listen", &joining, "--store", &db],
        &[],
    );
    first.kill_9();
    let seen = log.texts();
    tokio::time::timeout(Duration::from_secs(30), running)
        .await
        .expect("the cut-off turn ends for the client")
        .unwrap();

    let log = support::UpdateLog::default();
    let conn = through(&balancer, &log).await;
    let list: Value = conn
        .peer()
        .request("session/list", &json!({"cwd": cwd}))
        .await
        .unwrap();
    assert_eq!(list["sessions"][0]["sessionId"], id.as_str(), "{list}");
    let _: Value = conn
        .peer()
        .request(
            "session/load",
            &json!({"sessionId": id, "cwd": cwd, "mcpServers": []}),
        )
        .await
        .unwrap();
    let replayed = log.texts();
    assert!(
        replayed.len() >= seen.len(),
        "saw {seen:?}, replayed {replayed:?}"
    );
    assert_eq!(
        replayed[..seen.len()],
        seen[..],
        "every chunk the client saw"
    );
    let last = log.0.lock().unwrap().last().cloned().unwrap();
    assert_eq!(last["_meta"]["acp-rs/turnInterrupted"], true, "{last}");
    let done: Value = conn
        .peer()
        .request(
            "session/prompt",
            &json!({"sessionId": id, "prompt": [{"type": "text", "text": "/count 2"}]}),
        )
        .await
        .unwrap();
    assert_eq!(done["stopReason"], "end_turn");
    drop(conn);
    drop(balancer);
    drop(second);
}

/// `/readyz` of `acp serve --store postgres://` follows the database: 503 while it is
/// stopped (so a load balancer sends clients elsewhere), 200 again when it is back, while
/// `/healthz` (alive) stays 200 throughout.
#[test]
fn readyz_follows_the_session_store() {
    // A server of its own: it is stopped here, which the other tests must not see.
    let Some(postgres) = pg::Server::start() else {
        return;
    };
    let scratch = Scratch::new("serve-readyz");
    let token_file = scratch.0.join("token");
    std::fs::write(&token_file, "s3cret-token\n").unwrap();
    let db = postgres.fresh_db();
    let server = Serve::start_with(&scratch, &token_file, &["--store", &db], &[]);
    let host = server.host();
    assert_eq!(status_of(&host, "/readyz"), 200);
    postgres.stop();
    assert_eq!(status_of(&host, "/readyz"), 503);
    assert_eq!(status_of(&host, "/healthz"), 200);
    postgres.restart();
    let deadline = Instant::now() + Duration::from_secs(20);
    while status_of(&host, "/readyz") != 200 {
        assert!(
            Instant::now() < deadline,
            "ready again once the database is back"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    drop(server);
}
