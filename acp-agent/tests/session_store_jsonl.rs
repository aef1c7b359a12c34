//! The on-disk default store on real files: reopening keeps everything (owners included),
//! a torn last record is ignored with a warning (and cut off before the next append), a
//! corrupt record in the middle is reported with its place and skipped, a second opener is
//! refused, an unusable directory is an error at open, delete removes the files, and
//! hostile ids stay inside.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use acp_agent::store::{
    HistoryCursor, JsonlStore, ListQuery, MetaChange, SessionMeta, SessionStore, StoreError,
    StoredEvent,
};
use acp_agent::types::{ContentBlock, SessionId, SessionUpdate};

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("acp-store-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn sid(s: &str) -> SessionId {
    SessionId(s.to_owned())
}

fn said(text: &str) -> StoredEvent {
    StoredEvent::Update(SessionUpdate::agent_message_text(text))
}

async fn all(store: &JsonlStore, id: &SessionId) -> Vec<StoredEvent> {
    let mut out = Vec::new();
    let mut cursor = HistoryCursor::START;
    loop {
        let page = store.history(id, cursor, 3).await.unwrap();
        out.extend(page.events);
        match page.next {
            Some(next) => cursor = next,
            None => return out,
        }
    }
}

/// Captures the warnings the store logs.
#[derive(Clone, Default)]
struct Logs(Arc<Mutex<Vec<u8>>>);

impl Write for Logs {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Logs {
    /// The process-wide log (the store logs from blocking-pool threads, so a thread-local
    /// subscriber would miss it); tests tell their lines apart by file name.
    fn capture() -> (Logs, ()) {
        static LOGS: std::sync::OnceLock<Logs> = std::sync::OnceLock::new();
        let logs = LOGS.get_or_init(|| {
            let logs = Logs::default();
            let writer = logs.clone();
            tracing_subscriber::fmt()
                .with_writer(move || writer.clone())
                .with_ansi(false)
                .init();
            logs
        });
        (logs.clone(), ())
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

fn history_file(dir: &Path, id: &str) -> PathBuf {
    dir.join("sessions").join(format!("s-{id}.jsonl"))
}

/// Everything written is there after the store is dropped and opened again: history in
/// order, metadata changes, the listing.
#[tokio::test]
async fn reopening_keeps_history_metadata_and_listing() {
    let dir = temp_dir("reopen");
    {
        let store = JsonlStore::open(&dir).unwrap();
        store
            .create(SessionMeta::new(sid("a"), "/w"))
            .await
            .unwrap();
        store
            .create(SessionMeta::new(sid("b"), "/v"))
            .await
            .unwrap();
        store
            .append(
                &sid("a"),
                vec![StoredEvent::Prompt(vec![ContentBlock::text("hi")])],
            )
            .await
            .unwrap();
        for i in 0..7 {
            store
                .append(&sid("a"), vec![said(&i.to_string())])
                .await
                .unwrap();
        }
        let change = MetaChange {
            title: Some(Some("A title".into())),
            ..MetaChange::touch()
        };
        store.update_meta(&sid("a"), change).await.unwrap();
        let owned = SessionMeta::new(sid("c"), "/w").owned_by(Some("alice".into()));
        store.create(owned).await.unwrap();
        store
            .update_meta(&sid("c"), MetaChange::touch())
            .await
            .unwrap();
    }
    let store = JsonlStore::open(&dir).unwrap();
    let c = store.meta(&sid("c")).await.unwrap().unwrap();
    assert_eq!(
        c.owner.as_deref(),
        Some("alice"),
        "the owner survives a reopen"
    );
    let alices = store
        .list(ListQuery {
            owner: Some("alice".into()),
            cwd: None,
            cursor: None,
            limit: 10,
        })
        .await
        .unwrap();
    assert_eq!(alices.sessions.len(), 1);
    assert_eq!(alices.sessions[0].session_id, sid("c"));
    let history = all(&store, &sid("a")).await;
    assert_eq!(history.len(), 8);
    assert_eq!(
        history[0],
        StoredEvent::Prompt(vec![ContentBlock::text("hi")])
    );
    assert_eq!(history[7], said("6"));
    let meta = store.meta(&sid("a")).await.unwrap().unwrap();
    assert_eq!(meta.title.as_deref(), Some("A title"));
    assert_eq!(meta.cwd, "/w");
    let page = store
        .list(ListQuery {
            owner: None,
            cwd: None,
            cursor: None,
            limit: 10,
        })
        .await
        .unwrap();
    let ids: Vec<_> = page
        .sessions
        .iter()
        .map(|s| s.session_id.0.as_str())
        .collect();
    assert_eq!(ids, ["b", "a"]);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A record cut off mid-write (the process was killed) is ignored with a warning naming the
/// file, and the next append starts on a fresh line, so nothing after it is lost.
#[tokio::test]
async fn a_torn_last_record_is_ignored_and_cut_before_the_next_append() {
    let dir = temp_dir("torn");
    {
        let store = JsonlStore::open(&dir).unwrap();
        store
            .create(SessionMeta::new(sid("t"), "/w"))
            .await
            .unwrap();
        store
            .append(&sid("t"), vec![said("one"), said("two")])
            .await
            .unwrap();
    }
    let path = history_file(&dir, "t");
    std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap()
        .write_all(br#"{"update":{"sessionUpdate":"agent_message_chunk","content":{"ty"#)
        .unwrap();
    let (logs, ()) = Logs::capture();
    let store = JsonlStore::open(&dir).unwrap();
    assert_eq!(all(&store, &sid("t")).await, vec![said("one"), said("two")]);
    assert!(logs.text().contains("torn last record"), "{}", logs.text());
    assert!(logs.text().contains("s-t.jsonl"), "{}", logs.text());
    store.append(&sid("t"), vec![said("three")]).await.unwrap();
    assert_eq!(
        all(&store, &sid("t")).await,
        vec![said("one"), said("two"), said("three")]
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A line that does not parse in the middle of a history is reported with its file and byte
/// offset and skipped; the records around it are read.
#[tokio::test]
async fn a_corrupt_record_mid_file_is_reported_with_its_place_and_skipped() {
    let dir = temp_dir("corrupt");
    {
        let store = JsonlStore::open(&dir).unwrap();
        store
            .create(SessionMeta::new(sid("c"), "/w"))
            .await
            .unwrap();
        store.append(&sid("c"), vec![said("before")]).await.unwrap();
    }
    let path = history_file(&dir, "c");
    let offset = std::fs::metadata(&path).unwrap().len();
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    file.write_all(b"{not json at all\n").unwrap();
    drop(file);
    let (logs, ()) = Logs::capture();
    let store = JsonlStore::open(&dir).unwrap();
    store.append(&sid("c"), vec![said("after")]).await.unwrap();
    assert_eq!(
        all(&store, &sid("c")).await,
        vec![said("before"), said("after")]
    );
    let text = logs.text();
    assert!(text.contains("corrupt history record"), "{text}");
    assert!(text.contains(&format!("offset={offset}")), "{text}");
    assert!(text.contains("s-c.jsonl"), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A second opener of the same directory (another agent process, or this one twice) is
/// refused with a clear error; once the first is gone the directory opens again.
#[tokio::test]
async fn a_second_opener_is_refused() {
    let dir = temp_dir("locked");
    let first = JsonlStore::open(&dir).unwrap();
    let err = JsonlStore::open(&dir).unwrap_err();
    assert!(matches!(err, StoreError::Locked(_)), "{err}");
    assert!(
        err.to_string().contains("in use by another process"),
        "{err}"
    );
    drop(first);
    JsonlStore::open(&dir).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

/// A directory that cannot be created or written is an error at open that names it.
#[tokio::test]
async fn an_unusable_directory_is_an_error_at_open() {
    let dir = temp_dir("unusable");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("a-file");
    std::fs::write(&file, b"").unwrap();
    let err = JsonlStore::open(file.join("store")).unwrap_err();
    assert!(err.to_string().contains("a-file"), "{err}");
    assert!(matches!(err, StoreError::Io { .. }), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `delete` removes the session's files; ids that look like paths are stored inside the
/// directory under an encoded name.
#[tokio::test]
async fn delete_removes_files_and_hostile_ids_stay_inside() {
    let dir = temp_dir("delete");
    let store = JsonlStore::open(&dir).unwrap();
    let hostile = sid("../../escape");
    store
        .create(SessionMeta::new(hostile.clone(), "/w"))
        .await
        .unwrap();
    store.append(&hostile, vec![said("x")]).await.unwrap();
    let files: Vec<_> = std::fs::read_dir(dir.join("sessions"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(files.len(), 2, "{files:?}");
    assert!(files.iter().all(|f| f.starts_with("h-")), "{files:?}");
    assert!(!dir.parent().unwrap().join("escape.jsonl").exists());
    store.delete(&hostile).await.unwrap();
    assert_eq!(std::fs::read_dir(dir.join("sessions")).unwrap().count(), 0);
    assert!(matches!(
        store.delete(&hostile).await,
        Err(StoreError::NotFound(_))
    ));
    assert!(store.meta(&hostile).await.unwrap().is_none());
    let _ = std::fs::remove_dir_all(&dir);
}

/// An agent that creates `s1` and answers each prompt with one chunk.
struct OneChunk;

#[acp_agent::async_trait]
impl acp_agent::Agent for OneChunk {
    async fn initialize(
        &self,
        _p: acp_agent::types::InitializeRequest,
        _cx: &acp_agent::AgentContext,
    ) -> Result<acp_agent::types::InitializeResponse, acp_agent::Error> {
        Ok(acp_agent::types::InitializeResponse::new(
            acp_agent::types::ProtocolVersion::V1,
        ))
    }

    async fn new_session(
        &self,
        _p: acp_agent::types::NewSessionRequest,
        _cx: &acp_agent::AgentContext,
    ) -> Result<acp_agent::types::NewSessionResponse, acp_agent::Error> {
        Ok(acp_agent::types::NewSessionResponse::new("s1"))
    }

    async fn prompt(
        &self,
        _p: acp_agent::types::PromptRequest,
        cx: &acp_agent::PromptContext,
    ) -> Result<acp_agent::types::PromptResponse, acp_agent::Error> {
        cx.session().message_chunk("hi").await?;
        Ok(acp_agent::types::PromptResponse::new(
            acp_agent::types::StopReason::EndTurn,
        ))
    }
}

/// A client that ignores what the agent sends.
struct Deaf;

#[acp_rpc::async_trait]
impl acp_rpc::Handler for Deaf {
    async fn handle_request(
        &self,
        _cx: acp_rpc::RequestContext,
        method: &str,
        _params: acp_rpc::Params,
    ) -> Result<Box<acp_rpc::RawValue>, acp_agent::Error> {
        Err(acp_agent::Error::method_not_found(method))
    }
}

/// Serves `OneChunk` with a store on `dir` and runs a turn; returns the agent's connection
/// and the client's.
async fn served_turn(dir: &Path) -> (acp_agent::AgentConnection, acp_rpc::Connection) {
    use serde_json::{Value, json};
    let store = JsonlStore::open(dir).unwrap();
    let (a, b) = tokio::io::duplex(64 * 1024);
    let (ar, aw) = tokio::io::split(a);
    let (br, bw) = tokio::io::split(b);
    let agent = acp_agent::Builder::new(OneChunk).store(store).io(ar, aw);
    let client = acp_rpc::Connection::new(br, bw, Deaf, acp_agent::Config::default());
    let peer = client.peer();
    let _: Value = peer
        .request("initialize", &json!({"protocolVersion": 1}))
        .await
        .unwrap();
    let _: Value = peer
        .request("session/new", &json!({"cwd": "/w", "mcpServers": []}))
        .await
        .unwrap();
    let _: Value = peer
        .request(
            "session/prompt",
            &json!({"sessionId": "s1", "prompt": [{"type": "text", "text": "x"}]}),
        )
        .await
        .unwrap();
    (agent, client)
}

/// The close-then-reopen leak: the connection's state lives as long as any handle to it
/// (the `AgentConnection` itself, a `ClientHandle` an agent task kept), and it used to hold
/// the store, so a `JsonlStore` reopened in the same process after `close()` stayed locked
/// for as long as such a handle lived. Now the store is let go of when the connection
/// ends: once `closed()` returns the directory opens again, handles or not, and what was
/// recorded is there.
#[tokio::test]
async fn a_closed_connection_lets_go_of_its_store_while_handles_live() {
    let dir = temp_dir("close-reopen");
    let (agent, _client) = served_turn(&dir).await;
    let kept = agent.client().clone();
    agent.close();
    agent.closed().await;
    let store = JsonlStore::open(&dir).expect("reopens at once after close()");
    assert_eq!(all(&store, &sid("s1")).await.len(), 3, "prompt, chunk, end");
    drop((store, kept, agent));

    // The same when the client hangs up (the agent never calls close()).
    let (agent, client) = served_turn(&dir.join("eof")).await;
    client.close();
    agent.closed().await;
    JsonlStore::open(dir.join("eof")).expect("reopens after the client hung up");
    drop(agent);
    let _ = std::fs::remove_dir_all(&dir);
}
