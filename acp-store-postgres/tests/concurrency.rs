//! Several processes' worth of `PostgresStore`s (each its own pool, as separate agent
//! hosts would have) on one database: concurrent opens migrate once, concurrent appends
//! to one session neither interleave nor lose a turn, and what one host records another
//! lists and loads through a real agent connection.

mod support;

use std::time::Duration;

use acp_agent::store::{
    HistoryCursor, ListQuery, SessionMeta, SessionStore, StoredEvent, conformance::read_all,
};
use acp_agent::types::*;
use acp_agent::{Agent, AgentContext, Config, Error, PromptContext};
use acp_store_postgres::{PostgresStore, SCHEMA_VERSION};
use serde_json::{Value, json};

fn said(text: String) -> StoredEvent {
    StoredEvent::Update(SessionUpdate::agent_message_text(text))
}

/// Four hosts open a new database at once: each open succeeds and the schema's versions
/// are applied exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_opens_migrate_once() {
    let Some(server) = support::shared() else {
        return;
    };
    let url = server.fresh_db();
    let opens = (0..4).map(|_| {
        let url = url.clone();
        tokio::spawn(async move { PostgresStore::open(&url).await })
    });
    for open in opens {
        open.await.unwrap().expect("every concurrent open succeeds");
    }
    let (client, conn) = tokio_postgres_connect(&url).await;
    let rows = client
        .query("SELECT version FROM acp_store_schema ORDER BY version", &[])
        .await
        .unwrap();
    let versions: Vec<i32> = rows.iter().map(|r| r.get(0)).collect();
    assert_eq!(versions, (1..=SCHEMA_VERSION).collect::<Vec<_>>());
    drop(client);
    conn.abort();
}

async fn tokio_postgres_connect(
    url: &str,
) -> (tokio_postgres::Client, tokio::task::JoinHandle<()>) {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap();
    let task = tokio::spawn(async move {
        let _ = connection.await;
    });
    (client, task)
}

/// Two hosts append whole turns (one append each, as `Durability::Turn` writes them) to one
/// session at the same time: every turn is stored contiguously and none is lost, and each
/// host's turns keep their order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hosts_appending_to_one_session_never_interleave_turns() {
    let Some(server) = support::shared() else {
        return;
    };
    let url = server.fresh_db();
    let a = PostgresStore::open(&url).await.unwrap();
    let b = PostgresStore::open(&url).await.unwrap();
    let id = SessionId("shared".into());
    a.create(SessionMeta::new(id.clone(), "/w")).await.unwrap();
    let host = |store: PostgresStore, name: &'static str| {
        let id = id.clone();
        tokio::spawn(async move {
            for turn in 0..40 {
                let events = (0..20)
                    .map(|i| said(format!("{name}/{turn}/{i}")))
                    .collect();
                store.append(&id, events).await.unwrap();
            }
        })
    };
    let (ha, hb) = (host(a.clone(), "a"), host(b.clone(), "b"));
    ha.await.unwrap();
    hb.await.unwrap();
    let events = read_all(&b, &id, 33).await;
    assert_eq!(events.len(), 2 * 40 * 20);
    let mut next = std::collections::HashMap::from([("a", 0), ("b", 0)]);
    for turn in events.chunks(20) {
        let texts: Vec<String> = turn
            .iter()
            .map(|e| {
                serde_json::to_value(e).unwrap()["update"]["content"]["text"]
                    .as_str()
                    .unwrap()
                    .to_owned()
            })
            .collect();
        let mut parts = texts[0].split('/');
        let (name, n) = (parts.next().unwrap(), parts.next().unwrap());
        let expected = next.get_mut(name).unwrap();
        assert_eq!(n, expected.to_string(), "{name}'s turns in order");
        *expected += 1;
        for (i, t) in texts.iter().enumerate() {
            assert_eq!(*t, format!("{name}/{n}/{i}"), "a turn is contiguous");
        }
    }
}

/// Answers each prompt with its words, one chunk each.
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
        Ok(NewSessionResponse::new(format!(
            "pg-{}",
            std::process::id()
        )))
    }

    async fn prompt(&self, p: PromptRequest, cx: &PromptContext) -> Result<PromptResponse, Error> {
        if let Some(ContentBlock::Text(t)) = p.prompt.first() {
            for word in t.text.split_whitespace() {
                cx.session().message_chunk(format!("{word} ")).await?;
            }
        }
        Ok(PromptResponse::new(StopReason::EndTurn))
    }
}

/// Collects the `session/update`s a client receives.
#[derive(Clone, Default)]
struct Updates(std::sync::Arc<std::sync::Mutex<Vec<Value>>>);

#[acp_rpc::async_trait]
impl acp_rpc::Handler for Updates {
    async fn handle_request(
        &self,
        _cx: acp_rpc::RequestContext,
        method: &str,
        _p: acp_rpc::Params,
    ) -> Result<Box<acp_rpc::RawValue>, Error> {
        Err(Error::method_not_found(method))
    }

    async fn handle_notification(
        &self,
        _cx: acp_rpc::NotificationContext,
        _m: &str,
        p: acp_rpc::Params,
    ) -> Result<(), Error> {
        let v: Value = p.parse()?;
        self.0.lock().unwrap().push(v["update"].clone());
        Ok(())
    }
}

/// An agent host: the echo agent served with `store`, and a client connection to it.
pub struct Host {
    pub agent: acp_agent::AgentConnection,
    pub client: acp_rpc::Connection,
    updates: Updates,
}

impl Host {
    pub async fn serve(store: PostgresStore) -> Host {
        let (a, b) = tokio::io::duplex(64 * 1024);
        let (ar, aw) = tokio::io::split(a);
        let (br, bw) = tokio::io::split(b);
        let agent = acp_agent::Builder::new(Echo).store(store).io(ar, aw);
        let updates = Updates::default();
        let client = acp_rpc::Connection::new(
            br,
            bw,
            updates.clone(),
            Config::default().with_default_timeout(Some(Duration::from_secs(30))),
        );
        let host = Host {
            agent,
            client,
            updates,
        };
        host.call("initialize", json!({"protocolVersion": 1}))
            .await
            .unwrap();
        host
    }

    pub async fn call(&self, method: &str, params: Value) -> Result<Value, Error> {
        self.client.peer().request(method, &params).await
    }

    fn take(&self) -> Vec<Value> {
        std::mem::take(&mut *self.updates.0.lock().unwrap())
    }
}

/// A session recorded by one host is listed and loaded by another (its own pool, as
/// another process would have) once the turn ended, and goes on there; the first sees the
/// second's turn after it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_recorded_on_one_host_loads_on_another() {
    let Some(server) = support::shared() else {
        return;
    };
    let url = server.fresh_db();
    let one = Host::serve(PostgresStore::open(&url).await.unwrap()).await;
    let two = Host::serve(PostgresStore::open(&url).await.unwrap()).await;
    let created = one
        .call("session/new", json!({"cwd": "/w", "mcpServers": []}))
        .await
        .unwrap();
    let id = created["sessionId"].as_str().unwrap().to_owned();
    one.call(
        "session/prompt",
        json!({"sessionId": id, "prompt": [{"type": "text", "text": "hello from one"}]}),
    )
    .await
    .unwrap();
    let list = two
        .call("session/list", json!({"cwd": "/w"}))
        .await
        .unwrap();
    assert_eq!(list["sessions"][0]["sessionId"], id.as_str(), "{list}");
    two.take();
    two.call(
        "session/load",
        json!({"sessionId": id, "cwd": "/w", "mcpServers": []}),
    )
    .await
    .unwrap();
    let replay: Vec<String> = two
        .take()
        .iter()
        .filter_map(|u| u["content"]["text"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(replay, ["hello from one", "hello ", "from ", "one "]);
    two.call(
        "session/prompt",
        json!({"sessionId": id, "prompt": [{"type": "text", "text": "and two"}]}),
    )
    .await
    .unwrap();
    let store = PostgresStore::open(&url).await.unwrap();
    let all = read_all(&store, &SessionId(id.clone()), 100).await;
    let prompts = all
        .iter()
        .filter(|e| matches!(e, StoredEvent::Prompt(_)))
        .count();
    let ends = all
        .iter()
        .filter(|e| matches!(e, StoredEvent::TurnEnd(_)))
        .count();
    assert_eq!((prompts, ends), (2, 2), "{all:?}");
    // The listing's first page through a third pool agrees.
    let page = store
        .list(ListQuery {
            owner: None,
            cwd: Some("/w".into()),
            cursor: None,
            limit: 10,
        })
        .await
        .unwrap();
    assert_eq!(page.sessions.len(), 1);
    let first = store
        .history(&SessionId(id), HistoryCursor::START, 1)
        .await
        .unwrap();
    assert!(first.next.is_some());
}

/// A database of schema version 1 (before owners) keeps its sessions when a newer build
/// opens it: they become the unnamed identity's (no owner), listed for it and for no named
/// identity, and new sessions get their owner beside them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_version_1_database_keeps_its_sessions_as_the_unnamed_identitys() {
    let Some(server) = support::shared() else {
        return;
    };
    let url = server.fresh_db();
    let (client, conn) = tokio_postgres_connect(&url).await;
    client
        .batch_execute(include_str!("../migrations/0001_sessions.sql"))
        .await
        .unwrap();
    client
        .batch_execute(
            "CREATE TABLE acp_store_schema (version INT PRIMARY KEY, \
             applied_at TIMESTAMPTZ NOT NULL DEFAULT now()); \
             INSERT INTO acp_store_schema (version) VALUES (1)",
        )
        .await
        .unwrap();
    let old = SessionMeta::new(SessionId("old".into()), "/w");
    let text = serde_json::to_string(&old).unwrap();
    assert!(!text.contains("owner"), "version 1 rows have no owner");
    client
        .execute(
            "INSERT INTO acp_sessions (session_id, cwd, meta) VALUES ('old', '/w', $1)",
            &[&text],
        )
        .await
        .unwrap();
    let store = PostgresStore::open(&url).await.expect("the store migrates");
    let meta = store.meta(&SessionId("old".into())).await.unwrap().unwrap();
    assert_eq!(meta.owner, None);
    let list = |owner: Option<&str>| {
        let query = ListQuery {
            owner: owner.map(str::to_owned),
            cwd: None,
            cursor: None,
            limit: 10,
        };
        let store = &store;
        async move {
            let page = store.list(query).await.unwrap();
            page.sessions
                .into_iter()
                .map(|s| s.session_id.0)
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(list(None).await, ["old"]);
    assert!(list(Some("alice")).await.is_empty());
    let new = SessionMeta::new(SessionId("new".into()), "/w").owned_by(Some("alice".into()));
    store.create(new).await.unwrap();
    assert_eq!(list(Some("alice")).await, ["new"]);
    assert_eq!(list(None).await, ["old"]);
    let owner: Option<String> = client
        .query_one(
            "SELECT owner FROM acp_sessions WHERE session_id = 'new'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(owner.as_deref(), Some("alice"));
    drop(client);
    conn.abort();
}
