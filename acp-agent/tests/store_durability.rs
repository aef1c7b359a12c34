//! What each `Durability` costs a streaming connection with a `JsonlStore`, measured
//! (ignored by default: a measurement, not a check; run it on a quiet machine, in release):
//!
//! `cargo test --release -p acp-agent --features test-support --test store_durability -- --ignored --nocapture`
//!
//! `acp_agent::store_measure::streaming_time` streams `TURNS` turns of `CHUNKS` chunks:
//! without a store, then with a store (in the system's temp directory) at each durability.
//! Printed: chunks per second, and each row against the row without a store.
#![cfg(feature = "test-support")]

use std::sync::Arc;
use std::time::Duration;

use acp_agent::store::{Durability, JsonlStore, SessionStore};
use acp_agent::store_measure::streaming_time;

const CHUNKS: usize = 2_000;
const TURNS: usize = 20;
/// Runs per row; the best counts. Rows take turns, so a slow moment of a shared machine
/// hits every row alike.
const RUNS: usize = 5;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement: run with --ignored --nocapture, in release"]
async fn store_durability_cost() {
    let rows = [
        ("no store", None),
        ("turn", Some(Durability::Turn)),
        (
            "interval 50 ms",
            Some(Durability::Interval(Duration::from_millis(50))),
        ),
        ("event", Some(Durability::Event)),
        ("event-sync-turn", Some(Durability::EventSyncTurn)),
    ];
    let base_dir = std::env::temp_dir().join(format!("acp-durability-{}", std::process::id()));
    let _ = streaming_time(None, TURNS, CHUNKS).await;
    println!("JsonlStore in {base_dir:?}: {CHUNKS} chunks x {TURNS} turns per run, best of {RUNS}");
    let mut best = vec![Duration::MAX; rows.len()];
    for attempt in 0..RUNS {
        for (i, (name, durability)) in rows.iter().enumerate() {
            let (name, durability) = (*name, *durability);
            let store = durability.map(|d| {
                let dir = base_dir.join(format!("{name}-{attempt}"));
                let _ = std::fs::remove_dir_all(&dir);
                Arc::new(JsonlStore::open(&dir).unwrap().with_durability(d))
                    as Arc<dyn SessionStore>
            });
            best[i] = best[i].min(streaming_time(store, TURNS, CHUNKS).await);
        }
    }
    let base = (CHUNKS * TURNS) as f64 / best[0].as_secs_f64();
    for ((name, _), best) in rows.iter().zip(best) {
        let rate = (CHUNKS * TURNS) as f64 / best.as_secs_f64();
        println!(
            "{name:>16}: {rate:>9.0} chunks/s  {:>6.1}% of no store  ({:.2} ms per turn)",
            100.0 * rate / base,
            best.as_secs_f64() * 1000.0 / TURNS as f64
        );
    }
    let _ = std::fs::remove_dir_all(&base_dir);
}
