use std::sync::Barrier;

use super::*;
use crate::SessionMeta;

/// Threads of one store that lease a session at the same moment get one writer: the
/// database grants this store's holder the lease again, so without the store's own
/// guard each made a writer of its own, and a second writer's open could cut the line
/// the first was writing (a lost append, seen once in the conformance test's concurrent
/// appends).
#[test]
fn threads_leasing_one_session_at_once_share_one_writer() {
    // Where the conformance suite's scratch directories go (its sweep removes this one
    // should the test not get to).
    let dir = std::env::temp_dir()
        .join("acp-store-conformance")
        .join(format!("{}-sqlite-leasing", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    let store = SqliteStore::open(&dir).expect("the store opens");
    let id = SessionId::from("s");
    store
        .inner
        .create(&SessionMeta::new(id.clone(), "/w"))
        .expect("created");
    const THREADS: usize = 8;
    for round in 0..20 {
        let barrier = Arc::new(Barrier::new(THREADS));
        let writers: Vec<Arc<Writer>> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..THREADS)
                .map(|_| {
                    let (inner, barrier, id) = (&store.inner, barrier.clone(), &id);
                    scope.spawn(move || {
                        barrier.wait();
                        inner.lease(id).expect("leased")
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(
            writers.iter().all(|w| Arc::ptr_eq(w, &writers[0])),
            "round {round}: one session leased through more than one writer"
        );
        store.inner.unlease(&id).expect("released");
    }
    drop(store);
    let _ = fs::remove_dir_all(&dir);
}
