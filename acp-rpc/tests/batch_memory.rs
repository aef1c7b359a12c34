//! A batch's memory is bounded by its line, not by its element count: a batch of millions of
//! tiny elements over the bound is refused after a count that keeps none of them. Measured
//! with a counting allocator (this test binary's only test, so nothing else allocates in
//! parallel).

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use acp_rpc::{Config, Framing};
use common::{RawPeer, TestHandler};
use serde_json::{Value, json};

struct Counting;

static CURRENT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let now = CURRENT.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        CURRENT.fetch_sub(layout.size(), Ordering::Relaxed);
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

#[tokio::test]
async fn a_batch_of_millions_of_elements_is_refused_in_memory_bounded_by_its_line() {
    const ELEMENTS: usize = 8 * 1024 * 1024;
    let config = Config::default()
        .with_max_message_size(32 * 1024 * 1024)
        .with_framing(Framing::default().answer_batches(64));
    let (_conn, mut raw) = RawPeer::connect(TestHandler::new(), config);
    let mut line = Vec::with_capacity(2 * ELEMENTS + 2);
    line.push(b'[');
    for _ in 0..ELEMENTS - 1 {
        line.extend_from_slice(b"1,");
    }
    line.extend_from_slice(b"1]\n");
    let base = CURRENT.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    raw.send(&line).await;
    let answer = raw.json().await;
    let grown = PEAK.load(Ordering::Relaxed) - base;
    assert_eq!(
        answer,
        json!({"jsonrpc": "2.0", "id": Value::Null, "error": {"code": -32600,
            "message": format!("batch of {ELEMENTS} messages exceeds the maximum of 64")}})
    );
    // The line is 16 MiB; the reader's buffer holds it (growing by doubling). Keeping its
    // elements would cost 16 bytes each, 128 MiB more.
    assert!(
        grown < 80 * 1024 * 1024,
        "peak grew by {} MiB",
        grown / (1024 * 1024)
    );
    assert!(raw.until_probe(1).await.is_empty(), "serving on");
}
