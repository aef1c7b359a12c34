//! A v1 client driving threads agents through `Builder::dialect`: against a
//! scripted agent, byte for byte (no `"jsonrpc"`, `"params": null`, colliding ids; the
//! file methods v1 lacks served by the sandbox); through both adapters to our own v1 agent;
//! and the native threads client against the native threads agent.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use acp_client::Dialect;
use acp_client::fs::SandboxedFs;
use acp_client::legacy::AdapterOptions;
use acp_client::legacy::threads as threads_client;
use acp_client::{Client, PromptEvent};
use acp_rpc::Error;
use acp_types::legacy::threads as t;
use acp_types::v1::*;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines, WriteHalf};

fn v<T: serde::de::DeserializeOwned>(j: Value) -> T {
    serde_json::from_value(j).expect("test JSON matches the type")
}

fn init() -> InitializeRequest {
    v(json!({"protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": true}}}))
}

fn new_session() -> NewSessionRequest {
    v(json!({"cwd": "/ignored", "mcpServers": []}))
}

fn prompt(session: &SessionId, text: &str) -> PromptRequest {
    PromptRequest::new(session.clone(), [ContentBlock::text(text)])
}

/// The (line, limit) window of each text read a client served.
type Reads = Arc<Mutex<Vec<(Option<u32>, Option<u32>)>>>;

/// A v1 client that records updates and serves text reads (noting the line window).
#[derive(Default, Clone)]
struct Recorder {
    updates: Arc<Mutex<Vec<SessionUpdate>>>,
    reads: Reads,
}

#[acp_client::async_trait]
impl Client for Recorder {
    async fn read_text_file(&self, p: ReadTextFileRequest) -> Result<ReadTextFileResponse, Error> {
        self.reads.lock().unwrap().push((p.line, p.limit));
        Ok(v(json!({"content": "# Title\nhello\n"})))
    }
    async fn session_update(&self, n: SessionNotification) -> Result<(), Error> {
        self.updates.lock().unwrap().push(n.update);
        Ok(())
    }
}

/// The agent's end of the wire, scripted line by line.
struct ScriptedAgent {
    lines: Lines<BufReader<tokio::io::ReadHalf<DuplexStream>>>,
    out: WriteHalf<DuplexStream>,
}

impl ScriptedAgent {
    async fn send(&mut self, line: &str) {
        self.out.write_all(line.as_bytes()).await.unwrap();
        self.out.write_all(b"\n").await.unwrap();
    }

    async fn expect(&mut self, expected: &str) {
        let line = tokio::time::timeout(Duration::from_secs(5), self.lines.next_line())
            .await
            .expect("the client writes within 5 s")
            .unwrap()
            .expect("the client keeps the connection open");
        // The same members with the same values (`"params": null` differs from no
        // `params`; a stray `"jsonrpc"` fails), in whatever key order serde_json's
        // `preserve_order` feature, which workspace builds unify, produces.
        let got: Value = serde_json::from_str(&line).expect("the client writes JSON");
        let want: Value = serde_json::from_str(expected).expect("the transcript is JSON");
        assert_eq!(got, want, "\n   got: {line}\nwanted: {expected}");
    }
}

fn scripted(
    client: Recorder,
    options: AdapterOptions,
) -> (acp_client::ClientConnection, ScriptedAgent) {
    let (ours, theirs) = tokio::io::duplex(64 * 1024);
    let (r, w) = tokio::io::split(ours);
    let conn = acp_client::Builder::new(client)
        .dialect(Dialect::Threads)
        .legacy(options)
        .io(r, w)
        .unwrap();
    let (r, w) = tokio::io::split(theirs);
    (
        conn,
        ScriptedAgent {
            lines: BufReader::new(r).lines(),
            out: w,
        },
    )
}

fn sandbox() -> (tempdir::Dir, SandboxedFs) {
    let dir = tempdir::Dir::new();
    std::fs::write(dir.path().join("README.md"), "# Title\nhello\n").unwrap();
    std::fs::write(dir.path().join("logo.png"), [0x89, b'P', b'N', b'G', 1, 2]).unwrap();
    std::fs::create_dir(dir.path().join("docs")).unwrap();
    std::fs::write(dir.path().join("docs/guide.md"), "guide").unwrap();
    let fs = SandboxedFs::new([dir.path()]).unwrap();
    (dir, fs)
}

/// A temporary directory removed on drop (std only).
mod tempdir {
    pub struct Dir(std::path::PathBuf);
    impl Dir {
        pub fn new() -> Dir {
            use std::sync::atomic::{AtomicU32, Ordering};
            static N: AtomicU32 = AtomicU32::new(0);
            let path = std::env::temp_dir().join(format!(
                "acp-threads-{}-{}",
                std::process::id(),
                N.fetch_add(1, Ordering::Relaxed)
            ));
            std::fs::create_dir_all(&path).unwrap();
            Dir(path.canonicalize().unwrap())
        }
        pub fn path(&self) -> &std::path::Path {
            &self.0
        }
    }
    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

#[tokio::test]
async fn a_v1_client_drives_a_threads_agent_byte_for_byte() {
    let (dir, fs) = sandbox();
    let root = dir.path().display().to_string();
    let client = Recorder::default();
    let (conn, mut agent) = scripted(client.clone(), AdapterOptions::default().with_fs(fs));
    let handle = conn.agent().clone();

    // initialize is answered locally: nothing crosses the wire.
    let answer = handle.initialize(init()).await.unwrap();
    assert_eq!(answer.protocol_version, ProtocolVersion::LATEST);
    assert!(answer.agent_capabilities.load_session);

    let created = tokio::spawn({
        let handle = handle.clone();
        async move { handle.new_session(new_session()).await }
    });
    agent
        .expect(r#"{"id":0,"method":"createThread","params":null}"#)
        .await;
    agent
        .send(r#"{"id":0,"result":{"threadId":"thread-1"}}"#)
        .await;
    let session = created.await.unwrap().unwrap().session_id;
    assert_eq!(session.0, "thread-1");

    let turn = tokio::spawn({
        let handle = handle.clone();
        let session = session.clone();
        async move {
            handle
                .prompt_stream(prompt(&session, "Summarize README.md"))
                .collect()
                .await
        }
    });
    agent.expect(r#"{"id":1,"method":"sendMessage","params":{"threadId":"thread-1","message":{"role":"user","chunks":[{"type":"text","chunk":"Summarize README.md"}]}}}"#).await;
    agent.send(r#"{"id":0,"method":"streamMessageChunk","params":{"threadId":"thread-1","chunk":{"type":"text","chunk":"Let me look "}}}"#).await;
    agent.expect(r#"{"id":0,"result":null}"#).await;
    agent.send(&format!(r#"{{"id":1,"method":"stat","params":{{"threadId":"thread-1","path":"{root}/README.md"}}}}"#)).await;
    agent
        .expect(r#"{"id":1,"result":{"exists":true,"isDirectory":false}}"#)
        .await;
    agent.send(&format!(r#"{{"id":2,"method":"readTextFile","params":{{"threadId":"thread-1","path":"{root}/README.md","lineOffset":0,"lineLimit":20}}}}"#)).await;
    agent
        .expect(r##"{"id":2,"result":{"version":0,"content":"# Title\nhello\n"}}"##)
        .await;
    agent.send(&format!(r#"{{"id":3,"method":"readBinaryFile","params":{{"threadId":"thread-1","path":"{root}/logo.png","byteLimit":4}}}}"#)).await;
    agent
        .expect(r#"{"id":3,"result":{"version":0,"content":"iVBORw=="}}"#)
        .await;
    agent.send(r#"{"id":4,"method":"globSearch","params":{"threadId":"thread-1","pattern":"**/*.md"}}"#).await;
    agent
        .expect(&format!(
            r#"{{"id":4,"result":{{"matches":["{root}/README.md","{root}/docs/guide.md"]}}}}"#
        ))
        .await;
    // Outside the sandbox: refused, and the agent goes on.
    agent
        .send(r#"{"id":5,"method":"stat","params":{"threadId":"thread-1","path":"/etc/passwd"}}"#)
        .await;
    agent.expect(r#"{"id":5,"error":{"code":-32602,"message":"access to /etc/passwd refused: the path is outside the allowed roots","data":{"path":"/etc/passwd","reason":"the path is outside the allowed roots"}}}"#).await;
    agent.send(r#"{"id":1,"result":null}"#).await;
    let (updates, result) = turn.await.unwrap();
    assert_eq!(result.unwrap().stop_reason, StopReason::EndTurn);
    assert_eq!(
        updates,
        vec![SessionUpdate::agent_message_text("Let me look ")]
    );
    // The threads offset 0 became the v1 line 1.
    assert_eq!(*client.reads.lock().unwrap(), vec![(Some(1), Some(20))]);

    // session/load replays the thread's entries as updates.
    let loaded = tokio::spawn({
        let handle = handle.clone();
        async move {
            handle
                .load_session(v(
                    json!({"sessionId": "thread-9", "cwd": "/", "mcpServers": []}),
                ))
                .await
        }
    });
    agent
        .expect(r#"{"id":2,"method":"openThread","params":{"threadId":"thread-9"}}"#)
        .await;
    agent.send(r#"{"id":2,"result":null}"#).await;
    agent
        .expect(r#"{"id":3,"method":"getThreadEntries","params":{"threadId":"thread-9"}}"#)
        .await;
    agent.send(r#"{"id":3,"result":{"entries":[{"type":"message","role":"user","chunks":[{"type":"text","chunk":"hi"}]},{"type":"readFile","path":"/p/a.rs","content":"x"},{"type":"message","role":"assistant","chunks":[{"type":"text","chunk":"hel"},{"type":"text","chunk":"lo"}]}]}}"#).await;
    loaded.await.unwrap().unwrap();
    let replayed = client.updates.lock().unwrap()[1..].to_vec();
    assert_eq!(replayed.len(), 4, "{replayed:?}");
    assert_eq!(replayed[0], SessionUpdate::user_message_text("hi"));
    assert!(
        matches!(&replayed[1], SessionUpdate::ToolCall(c) if c.kind == ToolKind::Read && c.locations[0].path == "/p/a.rs")
    );
    assert_eq!(replayed[2], SessionUpdate::agent_message_text("hel"));
    assert_eq!(replayed[3], SessionUpdate::agent_message_text("lo"));

    // An image cannot be sent to a threads agent: refused before anything is written.
    let mut with_image = prompt(&session, "look");
    with_image.prompt.push(v(
        json!({"type": "image", "data": "AA==", "mimeType": "image/png"}),
    ));
    let refused = handle.prompt(with_image).await.unwrap_err();
    assert_eq!(refused.code, acp_rpc::ErrorCode::INVALID_PARAMS);
    assert!(refused.message.contains("prompt[1]"), "{refused}");
    // Methods a threads agent lacks are refused by the adapter.
    let refused = handle
        .set_session_mode(v(json!({"sessionId": "thread-1", "modeId": "x"})))
        .await
        .unwrap_err();
    assert_eq!(refused.code, acp_rpc::ErrorCode::METHOD_NOT_FOUND);
}

#[tokio::test]
async fn without_a_sandbox_the_file_methods_v1_lacks_are_refused_clearly() {
    let (conn, mut agent) = scripted(Recorder::default(), AdapterOptions::default());
    let _ = conn.agent().initialize(init()).await.unwrap();
    agent
        .send(r#"{"id":0,"method":"globSearch","params":{"threadId":"t","pattern":"*"}}"#)
        .await;
    agent.expect(r#"{"id":0,"error":{"code":-32601,"message":"globSearch: v1 has no such method and no file system was configured (AdapterOptions::with_fs)","data":{"dialect":"threads","method":"globSearch"}}}"#).await;
    // The reads the client advertised still go to it.
    agent
        .send(r#"{"id":1,"method":"readTextFile","params":{"threadId":"t","path":"/a"}}"#)
        .await;
    agent
        .expect(r##"{"id":1,"result":{"version":0,"content":"# Title\nhello\n"}}"##)
        .await;
}

/// A v1 agent for the full chain: streams, reads a file through the client.
struct Echo;

#[acp_agent::async_trait]
impl acp_agent::Agent for Echo {
    async fn initialize(
        &self,
        _p: InitializeRequest,
        _cx: &acp_agent::AgentContext,
    ) -> Result<InitializeResponse, Error> {
        Ok(v(json!({"protocolVersion": 1})))
    }
    async fn new_session(
        &self,
        _p: NewSessionRequest,
        _cx: &acp_agent::AgentContext,
    ) -> Result<NewSessionResponse, Error> {
        Ok(v(json!({"sessionId": "chain-1"})))
    }
    async fn prompt(
        &self,
        p: PromptRequest,
        cx: &acp_agent::PromptContext,
    ) -> Result<PromptResponse, Error> {
        let ContentBlock::Text(text) = &p.prompt[0] else {
            unreachable!()
        };
        let read = cx
            .client()
            .read_text_file(v(
                json!({"sessionId": p.session_id, "path": "/x/README.md", "line": 2}),
            ))
            .await?;
        for word in [text.text.as_str(), " / ", read.content.as_str()] {
            cx.session().message_chunk(word).await?;
        }
        Ok(PromptResponse::new(StopReason::EndTurn))
    }
}

#[tokio::test]
async fn a_v1_client_and_a_v1_agent_talk_through_the_threads_dialect() {
    let (a, b) = tokio::io::duplex(64 * 1024);
    let (ar, aw) = tokio::io::split(a);
    let (br, bw) = tokio::io::split(b);
    acp_agent::Builder::new(Echo)
        .dialect(acp_agent::Dialect::Threads)
        .legacy(Default::default())
        .io(ar, aw);
    let client = Recorder::default();
    let conn = acp_client::Builder::new(client.clone())
        .dialect(Dialect::Threads)
        .legacy(AdapterOptions::default())
        .io(br, bw)
        .unwrap();
    let agent = conn.agent();
    agent.initialize(init()).await.unwrap();
    let session = agent.new_session(new_session()).await.unwrap().session_id;
    assert_eq!(session.0, "chain-1");
    let mut turn = agent.prompt_stream(prompt(&session, "ping"));
    let mut texts = Vec::new();
    let stop = loop {
        match tokio::time::timeout(Duration::from_secs(5), turn.next())
            .await
            .unwrap()
        {
            Some(PromptEvent::Update(SessionUpdate::AgentMessageChunk(c))) => {
                let ContentBlock::Text(t) = c.content else {
                    panic!("text")
                };
                texts.push(t.text);
            }
            Some(PromptEvent::Update(other)) => panic!("unexpected {other:?}"),
            Some(PromptEvent::Done(r)) => break r.unwrap().stop_reason,
            None => panic!("the stream ended without a result"),
        }
    };
    assert_eq!(stop, StopReason::EndTurn);
    assert_eq!(texts.concat(), "ping / # Title\nhello\n");
    // line 2 (v1) -> lineOffset 1 (threads) -> line 2 (v1) again.
    assert_eq!(*client.reads.lock().unwrap(), vec![(Some(2), None)]);
    let listed = agent.list_sessions(v(json!({}))).await.unwrap();
    assert_eq!(listed.sessions[0].title.as_deref(), Some("ping"));
}

/// A native threads agent with one thread.
struct NativeAgent;

#[acp_agent::async_trait]
impl acp_agent::legacy::threads::Agent for NativeAgent {
    async fn create_thread(
        &self,
        _cx: &acp_agent::legacy::threads::Context,
    ) -> Result<t::CreateThreadResponse, Error> {
        Ok(t::CreateThreadResponse::new("n-1"))
    }
    async fn send_message(
        &self,
        p: t::SendMessageParams,
        cx: &acp_agent::legacy::threads::Context,
    ) -> Result<(), Error> {
        cx.client().stream_text(&p.thread_id, "hello ").await?;
        let stat = cx
            .client()
            .stat(t::StatParams::new(p.thread_id.clone(), "/nowhere"))
            .await;
        // The native client below does not serve stat: the default answers -32601.
        assert_eq!(stat.unwrap_err().code, acp_rpc::ErrorCode::METHOD_NOT_FOUND);
        cx.client().stream_text(&p.thread_id, "world").await
    }
}

#[derive(Default, Clone)]
struct NativeClient(Arc<Mutex<String>>);

#[acp_client::async_trait]
impl threads_client::Client for NativeClient {
    async fn stream_message_chunk(&self, p: t::StreamMessageChunkParams) -> Result<(), Error> {
        if let t::MessageChunk::Text(text) = p.chunk {
            self.0.lock().unwrap().push_str(&text.chunk);
        }
        Ok(())
    }
}

#[tokio::test]
async fn the_native_threads_client_and_agent_talk_to_each_other() {
    let (a, b) = tokio::io::duplex(64 * 1024);
    let (ar, aw) = tokio::io::split(a);
    let (br, bw) = tokio::io::split(b);
    acp_agent::legacy::threads::serve(NativeAgent, ar, aw);
    let client = NativeClient::default();
    let conn = threads_client::connect(client.clone(), br, bw);
    let id = conn.agent().create_thread().await.unwrap().thread_id;
    let message = t::Message::new(t::Role::User, [t::MessageChunk::text("hi")]);
    conn.agent()
        .send_message(t::SendMessageParams::new(id, message))
        .await
        .unwrap();
    assert_eq!(*client.0.lock().unwrap(), "hello world");
    // Methods the native agent does not implement answer -32601.
    let missing = conn.agent().get_threads().await.unwrap_err();
    assert_eq!(missing.code, acp_rpc::ErrorCode::METHOD_NOT_FOUND);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chunks_sent_without_waiting_reach_the_prompt_stream_in_order_before_the_end() {
    let (conn, mut agent) = scripted(Recorder::default(), AdapterOptions::default());
    let handle = conn.agent().clone();
    handle.initialize(init()).await.unwrap();
    let created = tokio::spawn({
        let handle = handle.clone();
        async move { handle.new_session(new_session()).await }
    });
    agent
        .expect(r#"{"id":0,"method":"createThread","params":null}"#)
        .await;
    agent.send(r#"{"id":0,"result":{"threadId":"t"}}"#).await;
    let session = created.await.unwrap().unwrap().session_id;
    let turn = tokio::spawn({
        let handle = handle.clone();
        async move { handle.prompt_stream(prompt(&session, "go")).collect().await }
    });
    agent.expect(r#"{"id":1,"method":"sendMessage","params":{"threadId":"t","message":{"role":"user","chunks":[{"type":"text","chunk":"go"}]}}}"#).await;
    // Like the agents of that time: chunks fired without awaiting their answers, then the
    // turn's answer, all in one write: enough of them to keep two worker threads busy (a
    // wrong order shows), few enough that the unread answers fit in the pipe.
    const CHUNKS: usize = 2000;
    let mut burst = String::new();
    for i in 0..CHUNKS {
        burst.push_str(&format!(
            r#"{{"id":{i},"method":"streamMessageChunk","params":{{"threadId":"t","chunk":{{"type":"text","chunk":"{i} "}}}}}}"#
        ));
        burst.push('\n');
    }
    burst.push_str(r#"{"id":1,"result":null}"#);
    agent.send(&burst).await;
    let (updates, result) = tokio::time::timeout(Duration::from_secs(10), turn)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(result.unwrap().stop_reason, StopReason::EndTurn);
    let expected: Vec<_> = (0..CHUNKS)
        .map(|i| SessionUpdate::agent_message_text(format!("{i} ")))
        .collect();
    assert_eq!(updates, expected);
}
