//! Property: arbitrary byte streams never crash the reader, and every well-formed request
//! mixed into them gets exactly one reply.

mod common;

use std::collections::HashMap;

use acp_rpc::Config;
use common::{RawPeer, TestHandler};
use proptest::prelude::*;
use serde_json::{Value, json};

#[derive(Debug, Clone)]
enum Segment {
    Garbage(Vec<u8>),
    Request(usize),
}

fn segment() -> impl Strategy<Value = Segment> {
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..200).prop_map(Segment::Garbage),
        // JSON-ish garbage is more interesting than random bytes.
        "[\\[\\]{}\":,0-9a-z \\\\\r\u{feff}]{0,60}".prop_map(|s| Segment::Garbage(s.into_bytes())),
        (0usize..1000).prop_map(Segment::Request),
    ]
}

fn run(segments: &[Segment]) -> Result<(), TestCaseError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let config = Config::default().with_max_message_size(128);
        let (_conn, mut raw) = RawPeer::connect(TestHandler::new(), config);
        let mut expected = HashMap::new();
        let mut bytes = Vec::new();
        for (n, seg) in segments.iter().enumerate() {
            match seg {
                Segment::Garbage(g) => bytes.extend_from_slice(g),
                Segment::Request(v) => {
                    let id = format!("wf-{n}");
                    let req = json!({"jsonrpc": "2.0", "id": id, "method": "echo", "params": [v]});
                    bytes.extend_from_slice(req.to_string().as_bytes());
                    expected.insert(id, json!([v]));
                }
            }
            bytes.push(b'\n');
        }
        let writer = tokio::spawn(async move {
            raw.send(&bytes).await;
            raw.until_probe(0).await
        });
        let replies: Vec<Value> = writer.await.unwrap();
        let mut seen: HashMap<String, usize> = HashMap::new();
        for r in &replies {
            if let Some(id) = r["id"].as_str()
                && let Some(result) = expected.get(id)
            {
                prop_assert_eq!(&r["result"], result);
                *seen.entry(id.to_owned()).or_default() += 1;
            }
        }
        for id in expected.keys() {
            prop_assert_eq!(seen.get(id).copied(), Some(1), "request {}", id);
        }
        Ok(())
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_crash_the_reader_and_each_well_formed_request_gets_one_reply(
        segments in proptest::collection::vec(segment(), 0..40)
    ) {
        run(&segments)?;
    }
}
