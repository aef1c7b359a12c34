//! The skeleton every translation shares, so a dialect's `v1_agent.rs` and `v1_client.rs`
//! hold only their mapping: the user's v1 side runs on an in-memory message pair ([`translate`]);
//! the translation's two ends share one state `S` (the dialect's conversation, sessions,
//! ids); the [`V1End`] serves the user's v1 side (its routing table is [`v1_routes!`]) and
//! calls the legacy peer through its typed handle; the [`LegacyEnd`] implements the
//! dialect's own `Agent` or `Client` trait and calls the user's v1 side through its peer.

use std::collections::VecDeque;
use std::ops::Deref;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use acp_rpc::memory::tie;
use acp_rpc::transport::{MemoryEnd, Transport, memory_pair};
use acp_rpc::{CallOptions, Config, Error, Handler, Peer, PendingResponse};
use acp_types::{RequestMethod, v1};
use tokio::sync::OnceCell;

use crate::Connection;

/// One end of a translation: the state both ends share (it derefs to it), the legacy
/// peer's typed handle `H`, and `V`: nothing on the [`V1End`], the user's v1 side's peer on
/// the [`LegacyEnd`].
pub(crate) struct End<S, H, V> {
    state: Arc<S>,
    legacy: Arc<OnceLock<H>>,
    /// The user's v1 agent (agent role) or v1 client (client role), on the [`LegacyEnd`].
    pub(crate) v1: V,
}

/// The end of a translation the user's v1 side talks to (its routing table is
/// [`v1_routes!`]); it calls the legacy peer.
pub(crate) type V1End<S, H> = End<S, H, ()>;

/// The end of a translation the legacy peer talks to (it implements the dialect's `Agent`
/// or `Client`); it calls the user's v1 side through `v1`, and the legacy peer itself when
/// it must (as crow's answer to a permission request does).
pub(crate) type LegacyEnd<S, H> = End<S, H, Peer>;

impl<S, H, V> End<S, H, V> {
    /// The legacy peer's handle (set before any message can arrive).
    pub(crate) fn legacy(&self) -> Result<&H, Error> {
        self.legacy
            .get()
            .ok_or_else(|| Error::internal_error("the legacy connection is not ready"))
    }
}

impl<S, H, V> Deref for End<S, H, V> {
    type Target = S;
    fn deref(&self) -> &S {
        &self.state
    }
}

/// Messages each direction of a translation's in-memory pair holds unread (the byte pipe it
/// replaces held 64 KiB: a few hundred streamed chunks).
const PAIR_CAPACITY: usize = 256;

/// Runs a translation: the user's v1 side, which `user_side` starts on one end of a fresh
/// in-memory message pair (returning its connection's [`Peer`]); the [`V1End`] on the other
/// end (whole messages pass between them, no line framing);
/// and the legacy connection `legacy` starts with the [`LegacyEnd`]. Both ends share
/// `state`. When one of the three connections ends, all do. Returns the legacy peer.
pub(crate) fn translate<S, H>(
    user_side: impl FnOnce(MemoryEnd) -> Peer,
    state: S,
    legacy: impl FnOnce(LegacyEnd<S, H>) -> Connection<H>,
) -> Peer
where
    S: Send + Sync + 'static,
    H: Send + Sync + 'static,
    V1End<S, H>: Handler,
{
    let (user_end, v1_end_transport) = memory_pair(PAIR_CAPACITY);
    let user = user_side(user_end);
    let (v1, outer) = translate_over(v1_end_transport, Config::default(), state, legacy);
    tie(&v1, &user);
    outer
}

/// [`translate`] with the [`V1End`] on `v1_transport` (with `config`) instead of a pair to
/// a v1 side in this process: the v1 peer is on the wire (a v1 client of a v2 agent in
/// this process, or a v1 agent driven for a v2 client in this process), and `legacy`
/// starts the other dialect's connection where the user's side is. Returns the peers of the
/// [`V1End`]'s connection and of the legacy one; when one ends, both do.
pub(crate) fn translate_over<S, H>(
    v1_transport: impl Transport,
    config: Config,
    state: S,
    legacy: impl FnOnce(LegacyEnd<S, H>) -> Connection<H>,
) -> (Peer, Peer)
where
    S: Send + Sync + 'static,
    H: Send + Sync + 'static,
    V1End<S, H>: Handler,
{
    let state = Arc::new(state);
    let slot = Arc::<OnceLock<H>>::default();
    let v1_end = V1End {
        state: state.clone(),
        legacy: slot.clone(),
        v1: (),
    };
    let v1 = acp_rpc::Connection::over(v1_transport, v1_end, config)
        .peer()
        .clone();
    let outer = legacy(LegacyEnd {
        state,
        legacy: slot.clone(),
        v1: v1.clone(),
    });
    let _ = slot.set(outer.handle);
    tie(&outer.peer, &v1);
    (v1, outer.peer)
}

/// [`translate_over`] for a user side that speaks the other dialect, in this process:
/// `user_side` starts it on one end of a fresh in-memory pair (returning its [`Peer`]) and
/// `legacy` starts the legacy connection on the other end; the v1 peer is on
/// `v1_transport`. When one of the three connections ends, all do. Returns the v1 wire's
/// peer.
#[cfg(feature = "v2")]
pub(crate) fn translate_for_legacy_user<S, H>(
    user_side: impl FnOnce(MemoryEnd) -> Peer,
    v1_transport: impl Transport,
    config: Config,
    state: S,
    legacy: impl FnOnce(LegacyEnd<S, H>, MemoryEnd) -> Connection<H>,
) -> Peer
where
    S: Send + Sync + 'static,
    H: Send + Sync + 'static,
    V1End<S, H>: Handler,
{
    let (user_end, legacy_end) = memory_pair(PAIR_CAPACITY);
    let user = user_side(user_end);
    let (v1, outer) = translate_over(v1_transport, config, state, |end| legacy(end, legacy_end));
    tie(&outer, &user);
    v1
}

/// The v1 `initialize` a translation for a legacy editor performs itself, once, before the
/// first call that needs the agent (the legacy handshake, where there is one, carries
/// nothing v1 needs): the latest version, and the file methods the editor serves.
pub(crate) struct V1Handshake {
    answer: OnceCell<v1::InitializeResponse>,
    files: v1::FileSystemCapabilities,
}

impl V1Handshake {
    /// A handshake advertising `fs.readTextFile`, and `fs.writeTextFile` when `write`.
    pub(crate) fn reading(write: bool) -> Self {
        V1Handshake {
            answer: OnceCell::new(),
            files: v1::FileSystemCapabilities::new()
                .read_text_file(true)
                .write_text_file(write),
        }
    }

    /// The agent's answer, asking it on first use.
    pub(crate) async fn done(&self, agent: &Peer) -> Result<&v1::InitializeResponse, Error> {
        self.answer
            .get_or_try_init(|| async {
                let capabilities = v1::ClientCapabilities::new().fs(self.files.clone());
                let init = v1::InitializeRequest::new(v1::ProtocolVersion::LATEST)
                    .client_capabilities(capabilities);
                agent.typed_request(&init).await
            })
            .await
    }
}

/// How many streamed requests may await the legacy editor's answers at once (see
/// [`Streamed`]).
pub(crate) const STREAM_WINDOW: usize = 64;

/// How long a streamed request waits for the editor's answer when the legacy connection's
/// [`Config::default_timeout`] sets none: an editor that never answers its chunks (a hostile
/// or stuck one) slows the stream to one window of them per this long, and the turn still
/// ends, instead of waiting for ever.
pub(crate) const STREAM_ANSWER_TIMEOUT: Duration = Duration::from_secs(60);

/// The requests a translation streams to a legacy editor where v1 has notifications (0.0.9's
/// `streamAssistantMessageChunk`, threads' `streamMessageChunk`), sent in order without
/// waiting a round trip each: they leave in the order sent and the dialects' editors handle
/// their requests in order, so only [`STREAM_WINDOW`] unanswered ones make the stream wait,
/// and the turn's end waits for all ([`Streamed::answered`]). Each answer is waited for at
/// most the connection's default timeout, or [`STREAM_ANSWER_TIMEOUT`] without one; one not
/// given by then counts as a refusal, and no `$/cancel_request` follows (the dialects have
/// none).
pub(crate) struct Streamed<R> {
    /// The requests sent whose answers are still awaited, oldest first.
    window: tokio::sync::Mutex<VecDeque<PendingResponse<R>>>,
    /// How each is sent: its timeout, and no cancellation.
    options: CallOptions,
}

impl<R: Send + 'static> Streamed<R> {
    /// A window for a legacy connection made with `config`.
    pub(crate) fn new(config: &Config) -> Self {
        let timeout = config.default_timeout.unwrap_or(STREAM_ANSWER_TIMEOUT);
        Streamed {
            window: tokio::sync::Mutex::default(),
            options: CallOptions::default()
                .timeout(timeout)
                .cancel_on_drop(false),
        }
    }

    /// Sends `params` to `editor` after the requests sent before it. With the window full,
    /// the oldest answer is waited for first; its refusal (or its timeout) is what this
    /// returns (the request is sent all the same: each is a chunk of its own).
    pub(crate) async fn send<P>(&self, editor: &Peer, params: &P) -> Result<(), Error>
    where
        P: RequestMethod<Response = R>,
    {
        let mut window = self.window.lock().await;
        let mut answered = Ok(());
        if window.len() >= STREAM_WINDOW
            && let Some(oldest) = window.pop_front()
        {
            answered = oldest.await.map(|_| ());
        }
        let sent = editor.send_typed_request_with(params, self.options).await?;
        window.push_back(sent);
        answered
    }

    /// Waits for the editor's answers to every request sent so far; one it refused is
    /// logged, as a failed notification's handler is (the v1 agent sent it as one).
    pub(crate) async fn answered(&self) {
        let mut window = self.window.lock().await;
        while let Some(oldest) = window.pop_front() {
            if let Err(e) = oldest.await {
                tracing::warn!(error = %e, "the editor refused a streamed chunk, or did not answer it in time");
            }
        }
    }
}

/// Sends `update` about `session` to the user's v1 client (`client`) as `session/update`.
///
/// Not an `async fn`: the update is handed to the engine when this is called, so the
/// returned future (which the legacy handler awaiting it carries, boxed per chunk) holds the
/// queued message only, not the update and the notification beside it.
pub(crate) fn show(
    client: &Peer,
    session: impl Into<v1::SessionId>,
    update: v1::SessionUpdate,
) -> impl Future<Output = Result<(), Error>> + Send + '_ {
    let n = v1::SessionNotification::new(session, update);
    // As a value: the user's v1 client on the memory pair takes it without JSON.
    client.notify_value(v1::names::SESSION_UPDATE, n)
}

/// A v1 prompt as the pieces a legacy agent takes, `piece` mapping each block it can carry;
/// any other block is refused with `-32602` naming it (`prompt[<i>]: <takes>`).
pub(crate) fn prompt_pieces<T>(
    prompt: &[v1::ContentBlock],
    takes: &str,
    piece: impl Fn(&v1::ContentBlock) -> Option<T>,
) -> Result<Vec<T>, Error> {
    let refused = |i| {
        Error::invalid_params(format!("prompt[{i}]: {takes}"))
            .with_data(serde_json::json!({ "field": format!("prompt[{i}]") }))
    };
    let pieces = prompt.iter().enumerate();
    pieces
        .map(|(i, b)| piece(b).ok_or_else(|| refused(i)))
        .collect()
}

/// A text block as its text and a resource link as an `@<path>` mention (the blocks the
/// threads and probe dialects carry in their plain-text messages).
pub(crate) fn text_or_mention(block: &v1::ContentBlock) -> Option<String> {
    match block {
        v1::ContentBlock::Text(text) => Some(text.text.clone()),
        v1::ContentBlock::ResourceLink(link) => Some(format!(
            "@{}",
            link.uri.strip_prefix("file://").unwrap_or(&link.uri)
        )),
        _ => None,
    }
}

/// The `sessionUpdate` tag of a v1 update, for the log line that says it was dropped.
pub(crate) fn update_kind(update: &v1::SessionUpdate) -> String {
    let tagged = serde_json::to_value(update).ok();
    let kind = tagged
        .as_ref()
        .and_then(|v| v.get("sessionUpdate")?.as_str());
    kind.unwrap_or("another kind").to_string()
}

/// Runs `f` when dropped: ends a turn's bookkeeping however the turn ends (an error, or
/// the request being cancelled mid-await).
pub(crate) struct OnDrop<F: FnMut()>(pub(crate) F);

impl<F: FnMut()> Drop for OnDrop<F> {
    fn drop(&mut self) {
        (self.0)();
    }
}

/// Implements [`acp_rpc::Handler`] for a translation's [`V1End`] from its routing table:
/// each v1 request method to the end's method mapping it (`async fn(&self,
/// &RequestContext, Request) -> Result<Response, Error>`; the params are parsed and the
/// answer serialized here), every other request to the `refuse` error (`-32601` saying
/// why); each notification to its method (`async fn(&self, Notification) -> Result<(),
/// Error>`), every other one to `drop` (a log line saying why).
macro_rules! v1_routes {
    (
        $end:ty;
        requests { $($request:path => $on_request:ident),* $(,)? }
        refuse |$refused:ident| $refusal:expr;
        notifications { $($notification:path => $on_notification:ident),* $(,)? }
        drop |$dropped:ident| $drop:expr $(;)?
    ) => {
        #[async_trait::async_trait]
        impl acp_rpc::Handler for $end {
            async fn handle_request(
                &self,
                cx: acp_rpc::RequestContext,
                method: &str,
                params: acp_rpc::Params,
            ) -> Result<Box<acp_rpc::RawValue>, acp_rpc::Error> {
                let _ = (&cx, &params);
                match method {
                    $($request => acp_rpc::to_raw(&self.$on_request(&cx, params.parse_request()?).await?),)*
                    $refused => Err($refusal),
                }
            }

            async fn handle_notification(
                &self,
                _cx: acp_rpc::NotificationContext,
                method: &str,
                params: acp_rpc::Params,
            ) -> Result<(), acp_rpc::Error> {
                let _ = &params;
                match method {
                    $($notification => self.$on_notification(params.parse()?).await,)*
                    $dropped => {
                        $drop;
                        Ok(())
                    }
                }
            }

            // The other engine of the memory pair hands over its notifications' params as
            // values (`Peer::notify_value`): taken as they are, neither written nor parsed.
            fn start_notification_value(
                self: std::sync::Arc<Self>,
                _cx: acp_rpc::NotificationContext,
                method: &str,
                params: acp_rpc::ParamsValue,
            ) -> Result<acp_rpc::StartedNotification, acp_rpc::ParamsValue> {
                match method {
                    $($notification => {
                        // Kept in its box until the handler takes it: the future holds 8
                        // bytes for it, not the value beside the handler's own copy.
                        let value = params.downcast_box()?;
                        Ok(acp_rpc::StartedNotification::new($notification, async move {
                            self.$on_notification(*value).await
                        }))
                    })*
                    _ => Err(params),
                }
            }
        }
    };
}
pub(crate) use v1_routes;

#[cfg(test)]
mod tests {
    use super::*;

    /// Without a default timeout on the legacy connection, a streamed chunk's answer is
    /// still waited for only so long; with one, that one; never a `$/cancel_request`.
    #[test]
    fn a_streamed_chunks_answer_is_waited_for_a_bounded_time() {
        let unbounded: Streamed<()> = Streamed::new(&Config::default());
        assert_eq!(unbounded.options.timeout, Some(STREAM_ANSWER_TIMEOUT));
        assert_eq!(unbounded.options.cancel_on_drop, Some(false));
        let config = Config::default().with_default_timeout(Some(Duration::from_secs(5)));
        let bounded: Streamed<()> = Streamed::new(&config);
        assert_eq!(bounded.options.timeout, Some(Duration::from_secs(5)));
    }
}
