//! What each `Durability` costs a streaming connection with a `PostgresStore` on the test
//! server (loopback, `fsync=off`: the figures are the round trips, not a disk), measured;
//! ignored by default (a measurement, not a check; run it on a quiet machine, in release):
//!
//! `cargo test --release -p acp-store-postgres --test durability_cost -- --ignored --nocapture`

mod support;

use std::sync::Arc;
use std::time::Duration;

use acp_agent::store::measure::streaming_time;
use acp_agent::store::{Durability, SessionStore};
use acp_store_postgres::PostgresStore;

const CHUNKS: usize = 2_000;
const TURNS: usize = 10;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement: run with --ignored --nocapture, in release"]
async fn store_durability_cost() {
    let Some(server) = support::shared() else {
        return;
    };
    let rows = [
        ("no store", None),
        ("turn", Some(Durability::Turn)),
        ("event", Some(Durability::Event)),
    ];
    let _ = streaming_time(None, TURNS, CHUNKS).await;
    println!("PostgresStore on loopback: {CHUNKS} chunks x {TURNS} turns per run, best of 3");
    let mut base = None;
    for (name, durability) in rows {
        let mut best = Duration::MAX;
        for _ in 0..3 {
            let store = match durability {
                Some(d) => {
                    let url = server.fresh_db();
                    let store = PostgresStore::open(&url).await.unwrap().with_durability(d);
                    Some(Arc::new(store) as Arc<dyn SessionStore>)
                }
                None => None,
            };
            best = best.min(streaming_time(store, TURNS, CHUNKS).await);
        }
        let rate = (CHUNKS * TURNS) as f64 / best.as_secs_f64();
        let base = *base.get_or_insert(rate);
        println!(
            "{name:>16}: {rate:>9.0} chunks/s  {:>6.1}% of no store  ({:.1} ms per turn)",
            100.0 * rate / base,
            best.as_secs_f64() * 1000.0 / TURNS as f64
        );
    }
}
