//! What each `Durability` costs a streaming connection with a `PostgresStore` on the test
//! server (loopback, `fsync=off`: the figures are the round trips, not a disk), measured;
//! ignored by default (a measurement, not a check; run it on a quiet machine, in release):
//!
//! `cargo test --release -p acp-store-postgres --test durability_cost -- --ignored --nocapture`

mod support;

use std::sync::Arc;
use std::time::Duration;

use acp_agent::store::{Durability, SessionStore};
use acp_agent::store_measure::streaming_time;
use acp_store_postgres::PostgresStore;

const CHUNKS: usize = 2_000;
const TURNS: usize = 20;
/// Runs per row; the best counts. Rows take turns, so a slow moment of a shared machine
/// hits every row alike.
const RUNS: usize = 5;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement: run with --ignored --nocapture, in release"]
async fn store_durability_cost() {
    let Some(server) = support::shared() else {
        return;
    };
    let rows = [
        ("no store", None),
        ("turn", Some(Durability::Turn)),
        (
            "interval 50 ms",
            Some(Durability::Interval(Duration::from_millis(50))),
        ),
        ("event", Some(Durability::Event)),
    ];
    let _ = streaming_time(None, TURNS, CHUNKS).await;
    println!("PostgresStore on loopback: {CHUNKS} chunks x {TURNS} turns per run, best of {RUNS}");
    let mut best = vec![Duration::MAX; rows.len()];
    for _ in 0..RUNS {
        for (i, (_, durability)) in rows.iter().enumerate() {
            let durability = *durability;
            let store = match durability {
                Some(d) => {
                    let url = server.fresh_db();
                    let store = PostgresStore::open(&url).await.unwrap().with_durability(d);
                    Some(Arc::new(store) as Arc<dyn SessionStore>)
                }
                None => None,
            };
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
}
