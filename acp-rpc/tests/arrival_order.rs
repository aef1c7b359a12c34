//! The arrival hook: every request and notification is offered in read order, with its
//! place in that order, before anything is dispatched (so a handler can tell which of a
//! request and a notification was read first even though they run on different tasks).

mod common;

use std::sync::{Arc, Mutex};

use acp_rpc::{
    Arrival, Config, Error, Handler, NotificationContext, Params, RawValue, RequestContext,
    StartedNotification, async_trait, to_raw,
};
use common::RawPeer;

/// One arrival as recorded: place, method, id, params.
type Seen = (u64, String, Option<String>, Option<String>);

#[derive(Default)]
struct Recorder {
    seen: Mutex<Vec<Seen>>,
}

struct Rec(Arc<Recorder>);

#[async_trait]
impl Handler for Rec {
    fn arrived(&self, a: Arrival<'_>) {
        self.0.seen.lock().unwrap().push((
            a.seq,
            a.method.to_owned(),
            a.id.map(|id| id.to_string()),
            a.params.map(str::to_owned),
        ));
    }

    async fn handle_request(
        &self,
        _cx: RequestContext,
        _method: &str,
        _params: Params,
    ) -> Result<Box<RawValue>, Error> {
        to_raw(&true)
    }

    async fn handle_notification(
        &self,
        _cx: NotificationContext,
        _method: &str,
        _params: Params,
    ) -> Result<(), Error> {
        Ok(())
    }

    fn start_notification(
        self: Arc<Self>,
        _cx: NotificationContext,
        method: &str,
        params: &str,
    ) -> Option<StartedNotification> {
        let len = params.len();
        (method == "fast").then(|| {
            StartedNotification::new("fast", async move {
                let _ = len;
                Ok(())
            })
        })
    }
}

#[tokio::test]
async fn requests_and_notifications_are_offered_in_read_order_with_their_place() {
    let recorder = Arc::new(Recorder::default());
    let (x, y) = tokio::io::duplex(64 * 1024);
    let (xr, xw) = tokio::io::split(x);
    let (yr, yw) = tokio::io::split(y);
    let _conn = acp_rpc::Connection::new(xr, xw, Rec(recorder.clone()), Config::default());
    let mut raw = RawPeer {
        reader: tokio::io::BufReader::new(yr),
        writer: yw,
    };
    raw.send(
        concat!(
            r#"{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s"}}"#,
            "\n",
            r#"{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}"#,
            "\n",
            // Not offered: a cancel request, a bad line, a response, a duplicate id.
            r#"{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":1}}"#,
            "\n",
            "oops\n",
            r#"{"jsonrpc":"2.0","id":99,"result":1}"#,
            "\n",
            r#"{"jsonrpc":"2.0","method":"fast","params":[1,2]}"#,
            "\n",
            r#"{"jsonrpc":"2.0","id":"b","method":"m"}"#,
            "\n",
        )
        .as_bytes(),
    )
    .await;
    // Answers to 1, the parse error, and "b": then everything has been read.
    let mut answered = 0;
    while answered < 3 {
        raw.json().await;
        answered += 1;
    }
    let seen = recorder.seen.lock().unwrap().clone();
    let s = |v: &str| Some(v.to_owned());
    assert_eq!(
        seen,
        vec![
            (
                0,
                "session/prompt".into(),
                s("1"),
                s(r#"{"sessionId":"s"}"#)
            ),
            (1, "session/cancel".into(), None, s(r#"{"sessionId":"s"}"#)),
            (2, "fast".into(), None, s("[1,2]")),
            (3, "m".into(), s("\"b\""), None),
        ]
    );
}
