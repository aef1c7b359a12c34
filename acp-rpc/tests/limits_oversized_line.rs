//! Limits: a 1 GiB line streamed in is skipped without being buffered (peak RSS stays
//! under 64 MiB) and the connection serves the next line. Alone in its test binary so the
//! process's memory numbers are not polluted by other tests.

mod common;

use acp_rpc::Config;
use common::{RawPeer, TestHandler};
use serde_json::json;
use tokio::io::AsyncWriteExt;

/// Peak resident set size of this process (VmHWM), in bytes.
fn peak_rss() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    let kb: usize = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kb * 1024
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_one_gib_line_is_skipped_with_bounded_memory_and_the_next_line_is_served() {
    const GIB: usize = 1 << 30;
    const LIMIT: usize = 8 << 20;
    let before = peak_rss();
    let config = Config::default().with_max_message_size(LIMIT);
    let (_conn, raw) = RawPeer::connect_with_buffer(TestHandler::new(), config, 256 * 1024);
    let RawPeer {
        mut reader,
        mut writer,
    } = raw;
    // Stream the line lazily from one reused 1 MiB chunk.
    let feeder = tokio::spawn(async move {
        let chunk = vec![b'x'; 1 << 20];
        for _ in 0..GIB / chunk.len() {
            writer.write_all(&chunk).await.unwrap();
        }
        writer
            .write_all(
                b"\n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"echo\",\"params\":\"after\"}\n",
            )
            .await
            .unwrap();
        writer
    });
    let mut raw = RawPeer {
        reader: {
            // Read the replies while the line streams in.
            let mut lines = Vec::new();
            for _ in 0..2 {
                let mut s = String::new();
                let n = tokio::time::timeout(
                    std::time::Duration::from_secs(120),
                    tokio::io::AsyncBufReadExt::read_line(&mut reader, &mut s),
                )
                .await
                .expect("no reply")
                .unwrap();
                assert!(n > 0);
                lines.push(serde_json::from_str::<serde_json::Value>(&s).unwrap());
            }
            assert_eq!(
                lines,
                vec![
                    json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32600,
                        "message": format!("message of {GIB} bytes exceeds the maximum of {LIMIT} bytes")}}),
                    json!({"jsonrpc": "2.0", "id": 1, "result": "after"}),
                ]
            );
            reader
        },
        writer: feeder.await.unwrap(),
    };
    assert!(raw.until_probe(0).await.is_empty());
    let after = peak_rss();
    eprintln!(
        "peak RSS before {} MiB, after {} MiB",
        before >> 20,
        after >> 20
    );
    assert!(after < 64 << 20, "peak RSS {} MiB", after >> 20);
    assert!(
        after - before < 48 << 20,
        "grew by {} MiB",
        (after - before) >> 20
    );
}
