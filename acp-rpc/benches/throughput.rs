//! Throughput benchmarks over `tokio::io::duplex`: one-way notifications, sequential round
//! trips, 64 concurrent outstanding requests, and 1 MiB responses.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use acp_rpc::{
    Config, Connection, Error, Handler, NotificationContext, Params, RawValue, RequestContext,
    async_trait, to_raw,
};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use serde_json::{Value, json};
use tokio::sync::Notify;

#[derive(Default)]
struct Bench {
    notes: AtomicU64,
    every: AtomicU64,
    reached: Notify,
}

#[async_trait]
impl Handler for Bench {
    async fn handle_request(
        &self,
        _cx: RequestContext,
        method: &str,
        params: Params,
    ) -> Result<Box<RawValue>, Error> {
        match method {
            "echo" => Ok(params.into_raw().unwrap_or_else(|| to_raw(&()).unwrap())),
            "big" => {
                let n: usize = params.parse()?;
                to_raw(&"x".repeat(n))
            }
            _ => Err(Error::method_not_found(method)),
        }
    }

    async fn handle_notification(
        &self,
        _cx: NotificationContext,
        _method: &str,
        _params: Params,
    ) -> Result<(), Error> {
        let n = self.notes.fetch_add(1, Ordering::Relaxed) + 1;
        if n.is_multiple_of(self.every.load(Ordering::Relaxed)) {
            self.reached.notify_one();
        }
        Ok(())
    }
}

struct Fwd(Arc<Bench>);

#[async_trait]
impl Handler for Fwd {
    async fn handle_request(
        &self,
        cx: RequestContext,
        method: &str,
        params: Params,
    ) -> Result<Box<RawValue>, Error> {
        self.0.handle_request(cx, method, params).await
    }
    async fn handle_notification(
        &self,
        cx: NotificationContext,
        method: &str,
        params: Params,
    ) -> Result<(), Error> {
        self.0.handle_notification(cx, method, params).await
    }
}

fn setup(rt: &tokio::runtime::Runtime) -> (Connection, Arc<Bench>) {
    let server = Arc::new(Bench::default());
    let s = server.clone();
    let client = rt.block_on(async move {
        let (x, y) = tokio::io::duplex(256 * 1024);
        let (xr, xw) = tokio::io::split(x);
        let (yr, yw) = tokio::io::split(y);
        let _server = Connection::new(yr, yw, Fwd(s), Config::default());
        Connection::new(xr, xw, (), Config::default())
    });
    (client, server)
}

fn benches(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (client, server) = setup(&rt);
    let peer = client.peer().clone();

    const BATCH: u64 = 1000;
    server.every.store(BATCH, Ordering::Relaxed);
    let mut g = c.benchmark_group("rpc");
    g.throughput(Throughput::Elements(BATCH));
    g.bench_function("notifications_one_way_x1000", |b| {
        b.iter(|| {
            rt.block_on(async {
                let params = json!({"sessionId": "s", "update": {"text": "hello"}});
                for _ in 0..BATCH {
                    peer.notify("session/update", &params).await.unwrap();
                }
                server.reached.notified().await;
            })
        })
    });

    g.throughput(Throughput::Elements(1));
    g.bench_function("sequential_round_trip", |b| {
        b.iter(|| {
            rt.block_on(async {
                let v: Value = peer.request("echo", &json!({"a": 1})).await.unwrap();
                assert_eq!(v["a"], 1);
            })
        })
    });

    g.throughput(Throughput::Elements(64));
    g.bench_function("concurrent_64_outstanding", |b| {
        b.iter(|| {
            rt.block_on(async {
                let mut set = tokio::task::JoinSet::new();
                for i in 0..64 {
                    let peer = peer.clone();
                    set.spawn(async move {
                        let v: Value = peer.request("echo", &json!({"i": i})).await.unwrap();
                        assert_eq!(v["i"], i);
                    });
                }
                while let Some(r) = set.join_next().await {
                    r.unwrap();
                }
            })
        })
    });

    const MIB: usize = 1 << 20;
    g.throughput(Throughput::Bytes(MIB as u64));
    g.sample_size(20);
    g.bench_function("response_1mib", |b| {
        b.iter(|| {
            rt.block_on(async {
                let s: String = peer.request("big", &MIB).await.unwrap();
                assert_eq!(s.len(), MIB);
            })
        })
    });
    g.finish();
}

criterion_group!(rpc, benches);
criterion_main!(rpc);
