//! `SqliteStore` shared by several processes: the conformance suite run at once by several
//! child processes (this test binary again) on one store directory, each in a namespace of
//! its own ([`acp_store::conformance::Namespaced`]), every case on a handle of its own; and,
//! in one process, two handles standing for two processes: the lease refuses a second
//! writer of a session and passes once the first lets go, and a JSON Lines store is imported
//! whole on first open.
#![cfg(feature = "test-support")]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use acp_store::conformance::{CASES, Namespaced, read_all, run_case};
use acp_store::{
    JsonlStore, ListQuery, SessionMeta, SessionStore, SqliteStore, StoreError, StoredEvent, TurnEnd,
};
use acp_types::v1::{ContentBlock, SessionId, SessionUpdate};

const DIR_ENV: &str = "ACP_STORE_SUITE_DIR";
const PREFIX_ENV: &str = "ACP_STORE_SUITE_PREFIX";

fn fresh_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("acp-store-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// The child's part (run by `the_suite_passes_from_several_processes_at_once` with the
/// environment set; ignored otherwise): every case, each on a fresh handle of the shared
/// directory, in this process's namespace.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "the child process of the_suite_passes_from_several_processes_at_once"]
async fn child_runs_the_suite() {
    let dir = std::env::var(DIR_ENV).expect("run by the parent test");
    let prefix = std::env::var(PREFIX_ENV).expect("run by the parent test");
    for case in CASES {
        let store = SqliteStore::open(&dir).expect("the shared store opens");
        run_case(case, Namespaced::new(store, format!("{prefix}{case}-"))).await;
    }
}

#[test]
fn the_suite_passes_from_several_processes_at_once() {
    let dir = fresh_dir("suite-processes");
    let children: Vec<_> = (0..4)
        .map(|k| {
            Command::new(std::env::current_exe().unwrap())
                .args(["--exact", "child_runs_the_suite", "--ignored", "--quiet"])
                .env(DIR_ENV, &dir)
                .env(PREFIX_ENV, format!("p{k}-"))
                .spawn()
                .expect("a child test process")
        })
        .collect();
    for (k, mut child) in children.into_iter().enumerate() {
        let deadline = std::time::Instant::now() + Duration::from_secs(120);
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            if std::time::Instant::now() > deadline {
                let _ = child.kill();
                panic!("child {k} hung");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        assert!(status.success(), "child {k}: {status}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

fn said(text: &str) -> StoredEvent {
    StoredEvent::Update(SessionUpdate::agent_message_text(text.to_owned()))
}

async fn ids(store: &SqliteStore) -> Vec<String> {
    let page = store
        .list(ListQuery {
            owner: None,
            cwd: None,
            cursor: None,
            limit: 100,
        })
        .await
        .unwrap();
    page.sessions.into_iter().map(|s| s.session_id.0).collect()
}

/// Two handles of one directory stand for two processes (each is a holder of its own):
/// both list what either created; a turn claims its session, so the other handle's turn
/// and appends are refused with `Leased` until the turn ends; then it writes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_is_written_by_one_holder_at_a_time() {
    let dir = fresh_dir("lease");
    let a = SqliteStore::open(&dir).unwrap();
    let b = SqliteStore::open(&dir).unwrap();
    let id = SessionId("s".into());
    a.create(SessionMeta::new(id.clone(), "/w")).await.unwrap();
    assert_eq!(ids(&b).await, ["s"]);
    a.begin_turn(&id).await.unwrap();
    let prompt = StoredEvent::Prompt(vec![ContentBlock::text("go")]);
    a.append(&id, vec![prompt, said("one ")]).await.unwrap();
    let err = b.begin_turn(&id).await.unwrap_err();
    assert!(matches!(err, StoreError::Leased { pid, .. } if pid == std::process::id()));
    assert!(err.to_string().contains("being written by another process"));
    let err = b.append(&id, vec![said("intruder")]).await.unwrap_err();
    assert!(matches!(err, StoreError::Leased { .. }), "{err}");
    // Mid-turn, the other holder reads what was streamed so far.
    assert_eq!(read_all(&b, &id, 10).await.len(), 2);
    a.append(
        &id,
        vec![said("two"), StoredEvent::TurnEnd(TurnEnd::default())],
    )
    .await
    .unwrap();
    b.begin_turn(&id).await.unwrap();
    b.append(&id, vec![said("three")]).await.unwrap();
    assert_eq!(read_all(&a, &id, 10).await.len(), 5);
    // A holder that goes away gives its leases back.
    drop(b);
    a.append(&id, vec![said("four")]).await.unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

/// A JSON Lines store becomes the SQLite store's on first open, nothing lost: every session
/// (owners, titles, metadata, listing order) and every event, and the JSON Lines index is
/// set aside so the import never runs twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_jsonl_store_is_imported_whole() {
    let dir = fresh_dir("import");
    let mut expected = Vec::new();
    {
        let old = JsonlStore::open(&dir).unwrap();
        for i in 0..30 {
            let id = SessionId(format!("s{i}"));
            let owner = (i % 3 == 0).then(|| "alice".to_owned());
            let mut meta = SessionMeta::new(id.clone(), format!("/w{}", i % 2)).owned_by(owner);
            meta.title = Some(format!("title {i}"));
            meta.turn_markers = true;
            old.create(meta).await.unwrap();
            let events: Vec<StoredEvent> = (0..i).map(|n| said(&format!("{i}.{n}"))).collect();
            old.append(&id, events.clone()).await.unwrap();
            expected.push((id, events));
        }
        old.delete(&SessionId("s7".into())).await.unwrap();
        expected.retain(|(id, _)| id.0 != "s7");
    }
    let old_meta = {
        let old = JsonlStore::open(&dir).unwrap();
        let mut metas = Vec::new();
        for (id, _) in &expected {
            metas.push(old.meta(id).await.unwrap().unwrap());
        }
        metas
    };
    let new = SqliteStore::open(&dir).unwrap();
    for ((id, events), meta) in expected.iter().zip(&old_meta) {
        assert_eq!(new.meta(id).await.unwrap().as_ref(), Some(meta), "{}", id.0);
        assert_eq!(&read_all(&new, id, 7).await, events, "{}", id.0);
    }
    let unnamed: Vec<String> = expected
        .iter()
        .rev()
        .filter(|(id, _)| id.0[1..].parse::<u32>().unwrap() % 3 != 0)
        .map(|(id, _)| id.0.clone())
        .collect();
    assert_eq!(ids(&new).await, unnamed, "newest first, as before");
    assert!(dir.join("index.jsonl.imported").exists());
    assert!(!dir.join("index.jsonl").exists());
    drop(new);
    let again = SqliteStore::open(&dir).unwrap();
    assert_eq!(ids(&again).await.len(), unnamed.len());
    let _ = std::fs::remove_dir_all(Path::new(&dir));
}
