//! The shared conformance suite every [`SessionStore`] passes (feature `test-support`):
//! create, append, load and replay by pages, resume (the metadata answered again), list with
//! cursors and the `cwd` filter, close, delete, fork (a history copied page by page), the
//! turn markers, concurrent appends that never interleave, and owners (each session keeps
//! the identity that created it; a listing shows one owner's sessions only).
//!
//! Written once, run against each store with [`session_store_conformance!`](crate::session_store_conformance),
//! which expands into one `#[tokio::test]` per case, each on a fresh store from your
//! factory:
//!
//! ```ignore
//! acp_agent::session_store_conformance!(async { acp_agent::store::MemoryStore::new() });
//! ```
//!
//! Each case is also a plain `pub async fn` taking the store, for a harness of its own.
//! They panic (assert) on a failure, as tests do.

use std::collections::HashSet;
use std::sync::Arc;

use acp_types::v1::{
    ContentBlock, SessionConfigId, SessionConfigKind, SessionConfigOption, SessionConfigSelect,
    SessionConfigSelectOption, SessionConfigSelectOptions, SessionConfigValueId, SessionId,
    SessionMode, SessionModeId, SessionModeState, SessionUpdate,
};

use crate::{
    HistoryCursor, ListQuery, MetaChange, SessionMeta, SessionStore, StoreError, StoredEvent,
    TurnEnd,
};

/// A `model` select option with `small` and `large`, `current` selected.
fn model_option(current: &str) -> SessionConfigOption {
    let values = [("small", "Small"), ("large", "Large")].map(|(value, name)| {
        SessionConfigSelectOption::new(SessionConfigValueId(value.into()), name)
    });
    SessionConfigOption::new(
        SessionConfigId("model".into()),
        "Model",
        SessionConfigKind::Select(SessionConfigSelect::new(
            SessionConfigValueId(current.into()),
            SessionConfigSelectOptions::Ungrouped(values.into()),
        )),
    )
}

/// Every case's name, in the order the macro runs them (for a harness that lists them).
pub const CASES: &[&str] = &[
    "create_and_meta",
    "unknown_sessions",
    "append_and_replay_by_pages",
    "resume_answers_the_metadata_again",
    "list_pages_and_cwd_filter",
    "close_keeps_the_data",
    "delete_removes_only_that_session",
    "fork_copies_the_history",
    "turn_markers_round_trip",
    "concurrent_appends_never_interleave",
    "hostile_ids_are_plain_data",
    "owners_are_kept_and_listings_never_mix_them",
];

mod namespaced;
mod scratch;
pub use namespaced::Namespaced;
pub use scratch::scratch_dir;

/// Runs the case named `name` (one of [`CASES`]) on `store`, for a harness that picks cases
/// by name (another process running the suite, say). Panics on a name not in [`CASES`].
pub async fn run_case<S: SessionStore>(name: &str, store: S) {
    match name {
        "create_and_meta" => create_and_meta(store).await,
        "unknown_sessions" => unknown_sessions(store).await,
        "append_and_replay_by_pages" => append_and_replay_by_pages(store).await,
        "resume_answers_the_metadata_again" => resume_answers_the_metadata_again(store).await,
        "list_pages_and_cwd_filter" => list_pages_and_cwd_filter(store).await,
        "close_keeps_the_data" => close_keeps_the_data(store).await,
        "delete_removes_only_that_session" => delete_removes_only_that_session(store).await,
        "fork_copies_the_history" => fork_copies_the_history(store).await,
        "turn_markers_round_trip" => turn_markers_round_trip(store).await,
        "concurrent_appends_never_interleave" => concurrent_appends_never_interleave(store).await,
        "hostile_ids_are_plain_data" => hostile_ids_are_plain_data(store).await,
        "owners_are_kept_and_listings_never_mix_them" => {
            owners_are_kept_and_listings_never_mix_them(store).await
        }
        other => panic!("no conformance case {other:?}"),
    }
}

fn sid(s: &str) -> SessionId {
    SessionId(s.to_owned())
}

fn said(text: impl Into<String>) -> StoredEvent {
    StoredEvent::Update(SessionUpdate::agent_message_text(text.into()))
}

fn prompt(text: &str) -> StoredEvent {
    StoredEvent::Prompt(vec![ContentBlock::text(text)])
}

/// Reads a whole history, `page` events at a time, following the cursors.
pub async fn read_all<S: SessionStore + ?Sized>(
    store: &S,
    id: &SessionId,
    page: usize,
) -> Vec<StoredEvent> {
    let mut out = Vec::new();
    let mut cursor = HistoryCursor::START;
    for _ in 0..1_000_000 {
        let got = store
            .history(id, cursor, page)
            .await
            .expect("history reads");
        assert!(
            got.events.len() <= page.max(1),
            "a page holds at most `max` events"
        );
        out.extend(got.events);
        match got.next {
            Some(next) => cursor = next,
            None => return out,
        }
    }
    panic!("the history of {} never ends", id.0);
}

async fn list_ids<S: SessionStore + ?Sized>(
    store: &S,
    cwd: Option<&str>,
    limit: usize,
) -> Vec<Vec<String>> {
    list_owned(store, None, cwd, limit).await
}

/// The pages of one owner's listing (`None`: the unnamed identity's), `limit` rows a page.
async fn list_owned<S: SessionStore + ?Sized>(
    store: &S,
    owner: Option<&str>,
    cwd: Option<&str>,
    limit: usize,
) -> Vec<Vec<String>> {
    let mut pages = Vec::new();
    let mut cursor = None;
    loop {
        let page = store
            .list(ListQuery {
                owner: owner.map(str::to_owned),
                cwd: cwd.map(str::to_owned),
                cursor: cursor.take(),
                limit,
            })
            .await
            .expect("list reads");
        assert!(page.sessions.len() <= limit);
        pages.push(
            page.sessions
                .iter()
                .map(|s| s.session_id.0.clone())
                .collect(),
        );
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => return pages,
        }
        assert!(pages.len() < 10_000, "listing never ends");
    }
}

fn rich_meta(id: &str, cwd: &str) -> SessionMeta {
    let mut meta = SessionMeta::new(sid(id), cwd);
    meta.additional_directories = vec!["/lib".into(), "/docs".into()];
    meta.modes = Some(SessionModeState::new(
        SessionModeId("ask".into()),
        vec![
            SessionMode::new(SessionModeId("ask".into()), "Ask"),
            SessionMode::new(SessionModeId("code".into()), "Code"),
        ],
    ));
    meta.config_options = Some(vec![model_option("small")]);
    meta
}

/// `create` stores the metadata as given; a second `create` of the id is `AlreadyExists`.
pub async fn create_and_meta<S: SessionStore>(store: S) {
    let meta = rich_meta("a", "/w");
    store.create(meta.clone()).await.expect("create");
    assert_eq!(store.meta(&sid("a")).await.unwrap(), Some(meta.clone()));
    let again = store.create(rich_meta("a", "/elsewhere")).await;
    assert!(
        matches!(again, Err(StoreError::AlreadyExists(_))),
        "{again:?}"
    );
    assert_eq!(store.meta(&sid("a")).await.unwrap().unwrap().cwd, "/w");
    assert!(read_all(&store, &sid("a"), 10).await.is_empty());
}

/// Every operation on a session the store does not have: `None` from `meta`, `NotFound`
/// from the others.
pub async fn unknown_sessions<S: SessionStore>(store: S) {
    let ghost = sid("ghost");
    assert_eq!(store.meta(&ghost).await.unwrap(), None);
    let nf = |r: Result<(), StoreError>| matches!(r, Err(StoreError::NotFound(_)));
    assert!(nf(store.append(&ghost, vec![said("x")]).await));
    assert!(nf(store.update_meta(&ghost, MetaChange::touch()).await));
    assert!(nf(store.delete(&ghost).await));
    let history = store.history(&ghost, HistoryCursor::START, 10).await;
    assert!(matches!(history, Err(StoreError::NotFound(_))));
    // A bad list cursor is the caller's fault, named.
    let bad = store
        .list(ListQuery {
            owner: None,
            cwd: None,
            cursor: Some("not-a-cursor".into()),
            limit: 10,
        })
        .await;
    assert!(matches!(bad, Err(StoreError::BadCursor(_))), "{bad:?}");
}

/// Appends are stored in order; the history reads the same whatever the page size, and a
/// page of `max` 0 still makes progress.
pub async fn append_and_replay_by_pages<S: SessionStore>(store: S) {
    let id = sid("h");
    store
        .create(SessionMeta::new(id.clone(), "/w"))
        .await
        .unwrap();
    let mut expected = vec![prompt("first")];
    store.append(&id, expected.clone()).await.unwrap();
    for batch in 0..10 {
        let events: Vec<_> = (0..batch).map(|i| said(format!("{batch}.{i}"))).collect();
        store.append(&id, events.clone()).await.unwrap();
        expected.extend(events);
    }
    // An empty append is allowed and changes nothing.
    store.append(&id, Vec::new()).await.unwrap();
    // A large event (a long streamed answer stored as one chunk).
    let long = said("x".repeat(256 * 1024));
    store.append(&id, vec![long.clone()]).await.unwrap();
    expected.push(long);
    for page in [0, 1, 3, 7, 1000] {
        assert_eq!(
            read_all(&store, &id, page).await,
            expected,
            "page size {page}"
        );
    }
    // Replay renders prompts as user chunks and updates as they were.
    let updates: Vec<_> = expected[..2]
        .iter()
        .cloned()
        .flat_map(StoredEvent::into_updates)
        .collect();
    assert!(matches!(updates[0], SessionUpdate::UserMessageChunk(_)));
}

/// What `session/resume` and `session/load` answer again: modes, config options, title
/// and the directories, as the last changes left them.
pub async fn resume_answers_the_metadata_again<S: SessionStore>(store: S) {
    let id = sid("r");
    store.create(rich_meta("r", "/w")).await.unwrap();
    let change = MetaChange {
        title: Some(Some("A title".into())),
        current_mode: Some("code".to_owned().into()),
        ..MetaChange::touch()
    };
    let at = change.updated_at.clone();
    store.update_meta(&id, change).await.unwrap();
    let options = vec![model_option("large")];
    store
        .update_meta(
            &id,
            MetaChange {
                config_options: Some(options.clone()),
                updated_at: at.clone(),
                ..MetaChange::default()
            },
        )
        .await
        .unwrap();
    let meta = store.meta(&id).await.unwrap().unwrap();
    assert_eq!(meta.title.as_deref(), Some("A title"));
    assert_eq!(meta.modes.unwrap().current_mode_id.0.to_string(), "code");
    assert_eq!(meta.config_options, Some(options));
    assert_eq!(meta.additional_directories, ["/lib", "/docs"]);
    assert_eq!(meta.updated_at, at);
    // Clearing the title.
    let clear = MetaChange {
        title: Some(None),
        ..MetaChange::touch()
    };
    store.update_meta(&id, clear).await.unwrap();
    assert_eq!(store.meta(&id).await.unwrap().unwrap().title, None);
}

/// Newest first, in cursor pages that together hold every session once; the `cwd` filter
/// holds across pages; a title change shows in the listing.
pub async fn list_pages_and_cwd_filter<S: SessionStore>(store: S) {
    for i in 0..25 {
        let cwd = if i % 3 == 0 { "/odd" } else { "/w" };
        store
            .create(SessionMeta::new(sid(&format!("l{i:02}")), cwd))
            .await
            .unwrap();
    }
    let pages = list_ids(&store, None, 10).await;
    assert_eq!(pages.iter().map(Vec::len).collect::<Vec<_>>(), [10, 10, 5]);
    let all: Vec<String> = pages.concat();
    let expected: Vec<String> = (0..25).rev().map(|i| format!("l{i:02}")).collect();
    assert_eq!(all, expected);
    let odd: Vec<String> = list_ids(&store, Some("/odd"), 4).await.concat();
    let expected: Vec<String> = (0..25)
        .rev()
        .filter(|i| i % 3 == 0)
        .map(|i| format!("l{i:02}"))
        .collect();
    assert_eq!(odd, expected);
    assert_eq!(list_ids(&store, Some("/none"), 4).await.concat().len(), 0);
    let change = MetaChange {
        title: Some(Some("Named".into())),
        ..MetaChange::touch()
    };
    store.update_meta(&sid("l24"), change).await.unwrap();
    let first = store
        .list(ListQuery {
            owner: None,
            cwd: None,
            cursor: None,
            limit: 1,
        })
        .await
        .unwrap();
    assert_eq!(first.sessions[0].title.as_deref(), Some("Named"));
    assert!(first.next_cursor.is_some());
}

/// `close` lets go of what is held for a session; its data stays and it takes appends
/// again afterwards.
pub async fn close_keeps_the_data<S: SessionStore>(store: S) {
    let id = sid("c");
    store
        .create(SessionMeta::new(id.clone(), "/w"))
        .await
        .unwrap();
    store.append(&id, vec![said("one")]).await.unwrap();
    store.close(&id).await.unwrap();
    assert!(store.meta(&id).await.unwrap().is_some());
    store.append(&id, vec![said("two")]).await.unwrap();
    assert_eq!(read_all(&store, &id, 10).await, [said("one"), said("two")]);
    // Closing a session twice, or one never opened, is harmless.
    store.close(&id).await.unwrap();
}

/// `delete` removes the session (metadata, history, listing row) and nothing else; the id
/// can be created anew, empty.
pub async fn delete_removes_only_that_session<S: SessionStore>(store: S) {
    for id in ["d1", "d2"] {
        store.create(SessionMeta::new(sid(id), "/w")).await.unwrap();
        store.append(&sid(id), vec![said(id)]).await.unwrap();
    }
    store.delete(&sid("d1")).await.unwrap();
    assert_eq!(store.meta(&sid("d1")).await.unwrap(), None);
    let gone = store.history(&sid("d1"), HistoryCursor::START, 10).await;
    assert!(matches!(gone, Err(StoreError::NotFound(_))));
    assert_eq!(list_ids(&store, None, 10).await.concat(), ["d2"]);
    assert_eq!(read_all(&store, &sid("d2"), 10).await, [said("d2")]);
    store
        .create(SessionMeta::new(sid("d1"), "/v"))
        .await
        .unwrap();
    assert!(read_all(&store, &sid("d1"), 10).await.is_empty());
}

/// A fork as the connection records one (`session/fork`): a new session whose history
/// starts as a page-by-page copy of the source's; afterwards each goes on apart.
pub async fn fork_copies_the_history<S: SessionStore>(store: S) {
    let (src, fork) = (sid("src"), sid("src-fork"));
    store
        .create(SessionMeta::new(src.clone(), "/w"))
        .await
        .unwrap();
    let history: Vec<_> = (0..10).map(|i| said(i.to_string())).collect();
    store.append(&src, history.clone()).await.unwrap();
    store
        .create(SessionMeta::new(fork.clone(), "/f"))
        .await
        .unwrap();
    let mut cursor = HistoryCursor::START;
    loop {
        let page = store.history(&src, cursor, 3).await.unwrap();
        store.append(&fork, page.events).await.unwrap();
        match page.next {
            Some(next) => cursor = next,
            None => break,
        }
    }
    assert_eq!(read_all(&store, &fork, 4).await, history);
    store.append(&fork, vec![said("fork")]).await.unwrap();
    store.append(&src, vec![said("source")]).await.unwrap();
    assert_eq!(read_all(&store, &fork, 4).await.last(), Some(&said("fork")));
    assert_eq!(
        read_all(&store, &src, 4).await.last(),
        Some(&said("source"))
    );
    assert_eq!(read_all(&store, &src, 4).await.len(), 11);
}

/// The turn markers the recorder writes (a turn's end with its stop reason) are stored and
/// read back like any event, and replay as no update.
pub async fn turn_markers_round_trip<S: SessionStore>(store: S) {
    let id = sid("t");
    store
        .create(SessionMeta::new(id.clone(), "/w"))
        .await
        .unwrap();
    let end = StoredEvent::TurnEnd(TurnEnd {
        stop_reason: Some("end_turn".into()),
    });
    let events = vec![prompt("q"), said("a"), end.clone(), prompt("q2"), said("b")];
    store.append(&id, events.clone()).await.unwrap();
    assert_eq!(read_all(&store, &id, 2).await, events);
    assert!(end.into_updates().is_empty());
}

/// Many tasks appending at once, to one session and to several: each append's events are
/// stored together and in order (two turns never interleave), and none is lost.
pub async fn concurrent_appends_never_interleave<S: SessionStore>(store: S) {
    let store = Arc::new(store);
    for id in ["x", "y"] {
        store.create(SessionMeta::new(sid(id), "/w")).await.unwrap();
    }
    let mut tasks = Vec::new();
    for writer in 0..8 {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            for turn in 0..10 {
                let id = sid(if writer % 2 == 0 { "x" } else { "y" });
                let events = (0..5)
                    .map(|i| said(format!("{writer}/{turn}/{i}")))
                    .collect();
                store.append(&id, events).await.expect("append");
            }
        }));
    }
    for task in tasks {
        task.await.expect("writer task");
    }
    for id in ["x", "y"] {
        let events = read_all(&*store, &sid(id), 7).await;
        assert_eq!(events.len(), 4 * 10 * 5, "{id}: nothing lost");
        let mut seen = HashSet::new();
        let mut last_turn = std::collections::HashMap::new();
        for chunk in events.chunks(5) {
            let texts: Vec<String> = chunk
                .iter()
                .map(|e| match e {
                    StoredEvent::Update(SessionUpdate::AgentMessageChunk(c)) => match &c.content {
                        ContentBlock::Text(t) => t.text.clone(),
                        other => panic!("{other:?}"),
                    },
                    other => panic!("{other:?}"),
                })
                .collect();
            let (writer, turn) = texts[0]
                .rsplit_once('/')
                .unwrap()
                .0
                .split_once('/')
                .unwrap();
            for (i, t) in texts.iter().enumerate() {
                assert_eq!(*t, format!("{writer}/{turn}/{i}"), "{id}: interleaved");
            }
            let turn: u32 = turn.parse().unwrap();
            // One writer's turns stay in its order.
            if let Some(prev) = last_turn.insert(writer.to_owned(), turn) {
                assert!(prev < turn, "{id}: writer {writer} out of order");
            }
            assert!(seen.insert(texts[0].clone()));
        }
    }
}

/// Ids are data, never names: slashes, dots, quotes, non-ASCII and the empty id work like
/// any other.
pub async fn hostile_ids_are_plain_data<S: SessionStore>(store: S) {
    let ids = [
        "../../x",
        "a/b",
        "'; DROP TABLE sessions; --",
        "é 中 🙂",
        "",
        "%_\\",
    ];
    for id in ids {
        store.create(SessionMeta::new(sid(id), "/w")).await.unwrap();
        store.append(&sid(id), vec![said(id)]).await.unwrap();
    }
    for id in ids {
        assert_eq!(read_all(&store, &sid(id), 10).await, [said(id)], "{id:?}");
    }
    assert_eq!(list_ids(&store, None, 100).await.concat().len(), ids.len());
    // A `cwd` filter with LIKE/glob characters matches only itself.
    store
        .create(SessionMeta::new(sid("pct"), "/w%"))
        .await
        .unwrap();
    assert_eq!(list_ids(&store, Some("/w%"), 100).await.concat(), ["pct"]);
}

/// Each session keeps the owner it was created with (through metadata changes), `meta`
/// answers it, and a listing shows only the sessions of its `owner` (`None`: those with
/// none), with its `cwd` filter and its pages as for any listing; a deleted session leaves
/// its owner's listing.
pub async fn owners_are_kept_and_listings_never_mix_them<S: SessionStore>(store: S) {
    let made = [
        ("u1", None, "/w"),
        ("a1", Some("alice"), "/w"),
        ("b1", Some("bob"), "/w"),
        ("a2", Some("alice"), "/x"),
        ("u2", None, "/x"),
        ("a3", Some("alice"), "/w"),
    ];
    for (id, owner, cwd) in made {
        let meta = rich_meta(id, cwd).owned_by(owner.map(str::to_owned));
        store.create(meta.clone()).await.expect("create");
        assert_eq!(store.meta(&sid(id)).await.unwrap(), Some(meta), "{id}");
    }
    let all = |owner, cwd| list_owned(&store, owner, cwd, 100);
    assert_eq!(all(None, None).await.concat(), ["u2", "u1"]);
    assert_eq!(all(Some("alice"), None).await.concat(), ["a3", "a2", "a1"]);
    assert_eq!(all(Some("bob"), None).await.concat(), ["b1"]);
    assert_eq!(all(Some("alice"), Some("/w")).await.concat(), ["a3", "a1"]);
    assert_eq!(all(None, Some("/x")).await.concat(), ["u2"]);
    assert!(all(Some("carol"), None).await.concat().is_empty());
    // A name is compared whole: no prefix, case or pattern matching.
    for stranger in ["alic", "Alice", "alice ", "%", "a%", ""] {
        assert!(
            all(Some(stranger), None).await.concat().is_empty(),
            "{stranger:?}"
        );
    }
    // Pages of one owner skip the others' rows and still end.
    let pages = list_owned(&store, Some("alice"), None, 1).await;
    let pages: Vec<Vec<String>> = pages.into_iter().filter(|p| !p.is_empty()).collect();
    assert_eq!(pages, [vec!["a3"], vec!["a2"], vec!["a1"]]);
    // Changes keep the owner.
    let change = MetaChange {
        title: Some(Some("renamed".into())),
        current_mode: Some(SessionModeId("code".into())),
        ..MetaChange::touch()
    };
    store.update_meta(&sid("a1"), change).await.unwrap();
    store
        .update_meta(&sid("u1"), MetaChange::touch())
        .await
        .unwrap();
    store.append(&sid("a1"), vec![said("hi")]).await.unwrap();
    let a1 = store.meta(&sid("a1")).await.unwrap().unwrap();
    assert_eq!(a1.owner.as_deref(), Some("alice"));
    assert_eq!(a1.title.as_deref(), Some("renamed"));
    assert_eq!(store.meta(&sid("u1")).await.unwrap().unwrap().owner, None);
    assert_eq!(all(Some("alice"), None).await.concat(), ["a3", "a2", "a1"]);
    assert_eq!(all(None, None).await.concat(), ["u2", "u1"]);
    store.delete(&sid("a2")).await.unwrap();
    assert_eq!(all(Some("alice"), None).await.concat(), ["a3", "a1"]);
    assert_eq!(all(Some("bob"), None).await.concat(), ["b1"]);
}

/// Expands into one `#[tokio::test]` per case of [`crate::conformance`], each given
/// a fresh store from `$make` (an expression of a future that returns the store). The
/// calling crate needs tokio with `macros` and `rt-multi-thread` among its dev-dependencies.
#[macro_export]
macro_rules! session_store_conformance {
    ($make:expr) => {
        $crate::session_store_conformance!(@cases $make;
            create_and_meta, unknown_sessions, append_and_replay_by_pages,
            resume_answers_the_metadata_again, list_pages_and_cwd_filter,
            close_keeps_the_data, delete_removes_only_that_session, fork_copies_the_history,
            turn_markers_round_trip, concurrent_appends_never_interleave,
            hostile_ids_are_plain_data, owners_are_kept_and_listings_never_mix_them);
    };
    (@cases $make:expr; $($case:ident),*) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                let store = $make.await;
                $crate::conformance::$case(store).await;
            }
        )*
    };
}
