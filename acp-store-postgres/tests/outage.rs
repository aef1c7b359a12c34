//! The database away: unreachable at open is a clear error at once; gone mid-session, the
//! connection answers the store's methods with a JSON-RPC error naming PostgreSQL (no hang,
//! no crash) but not where it is (host, port, database, user: the server's log has those)
//! while prompts go on; back again, the same store and connection recover.
//! (Its own server: stopping it must not disturb the other test binaries.)

mod support;

use std::time::{Duration, Instant};

use acp_agent::types::*;
use acp_agent::{Agent, AgentContext, Config, Error, PromptContext};
use acp_store_postgres::PostgresStore;
use serde_json::{Value, json};

/// A database nobody listens on is an error within the connect timeout, naming the server.
#[tokio::test]
async fn an_unreachable_database_is_a_clear_error_at_open() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let start = Instant::now();
    let err = PostgresStore::open(&format!("postgres://acp:secret@127.0.0.1:{port}/acp"))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        start.elapsed() < Duration::from_secs(15),
        "{:?}",
        start.elapsed()
    );
    assert!(
        err.contains(&format!(
            "cannot reach PostgreSQL at postgres://127.0.0.1:{port}/acp"
        )),
        "{err}"
    );
    assert!(!err.contains("secret"), "{err}");
    // Not a connection string at all.
    let err = PostgresStore::open("postgres://[")
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("not a PostgreSQL connection string"), "{err}");
}

struct Echo;

#[acp_agent::async_trait]
impl Agent for Echo {
    async fn initialize(
        &self,
        _p: InitializeRequest,
        _cx: &AgentContext,
    ) -> Result<InitializeResponse, Error> {
        Ok(InitializeResponse::new(ProtocolVersion::V1))
    }

    async fn new_session(
        &self,
        _p: NewSessionRequest,
        _cx: &AgentContext,
    ) -> Result<NewSessionResponse, Error> {
        Ok(NewSessionResponse::new("outage"))
    }

    async fn prompt(&self, _p: PromptRequest, cx: &PromptContext) -> Result<PromptResponse, Error> {
        cx.session().message_chunk("ok").await?;
        Ok(PromptResponse::new(StopReason::EndTurn))
    }
}

struct Deaf;

#[acp_rpc::async_trait]
impl acp_rpc::Handler for Deaf {
    async fn handle_request(
        &self,
        _cx: acp_rpc::RequestContext,
        method: &str,
        _p: acp_rpc::Params,
    ) -> Result<Box<acp_rpc::RawValue>, Error> {
        Err(Error::method_not_found(method))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_database_going_away_mid_session_is_an_error_and_its_return_recovers() {
    let Some(server) = support::Server::start() else {
        return;
    };
    let db = "outage_named_db";
    let url = server.named_db(db);
    let store = PostgresStore::open(&url).await.unwrap();
    // What a remote client may not learn of the database.
    let hidden = [server.port.to_string(), db.to_owned(), "acp".to_owned()];
    let shows_nothing = |message: &str| {
        for secret in &hidden {
            assert!(!message.contains(secret.as_str()), "{secret} in {message}");
        }
    };
    let (a, b) = tokio::io::duplex(64 * 1024);
    let (ar, aw) = tokio::io::split(a);
    let (br, bw) = tokio::io::split(b);
    let _agent = acp_agent::Builder::new(Echo)
        .store(store.clone())
        .io(ar, aw);
    let client = acp_rpc::Connection::new(br, bw, Deaf, Config::default());
    let call = |method: &'static str, params: Value| {
        let peer = client.peer().clone();
        async move {
            tokio::time::timeout(
                Duration::from_secs(30),
                peer.request::<_, Value>(method, &params),
            )
            .await
            .unwrap_or_else(|_| panic!("{method} answered within 30 s (no hang)"))
        }
    };
    call("initialize", json!({"protocolVersion": 1}))
        .await
        .unwrap();
    call("session/new", json!({"cwd": "/w", "mcpServers": []}))
        .await
        .unwrap();
    let prompt = json!({"sessionId": "outage", "prompt": [{"type": "text", "text": "hi"}]});
    call("session/prompt", prompt.clone()).await.unwrap();

    server.stop();
    let err = call("session/list", json!({})).await.unwrap_err();
    assert_eq!(err.code, acp_agent::ErrorCode::INTERNAL_ERROR, "{err:?}");
    assert!(err.message.contains("PostgreSQL"), "{}", err.message);
    shows_nothing(&err.message);
    assert!(err.data.is_none(), "{err:?}");
    // A new session whose record cannot be made: the same.
    let err = call("session/new", json!({"cwd": "/w", "mcpServers": []}))
        .await
        .unwrap_err();
    assert!(
        err.message.contains("could not be stored"),
        "{}",
        err.message
    );
    shows_nothing(&err.message);
    let err = call(
        "session/load",
        json!({"sessionId": "outage", "cwd": "/w", "mcpServers": []}),
    )
    .await
    .unwrap_err();
    assert!(err.message.contains("PostgreSQL"), "{}", err.message);
    shows_nothing(&err.message);
    // A prompt still runs (what cannot be recorded is logged).
    call("session/prompt", prompt.clone()).await.unwrap();

    server.restart();
    let list = call("session/list", json!({}))
        .await
        .expect("recovers once the database is back");
    assert_eq!(list["sessions"][0]["sessionId"], "outage");
    call("session/prompt", prompt).await.unwrap();
    let events =
        acp_agent::store::conformance::read_all(&store, &SessionId("outage".into()), 50).await;
    let prompts = events
        .iter()
        .filter(|e| matches!(e, acp_agent::store::StoredEvent::Prompt(_)))
        .count();
    assert_eq!(
        prompts, 2,
        "the turns before and after the outage are stored"
    );
}
