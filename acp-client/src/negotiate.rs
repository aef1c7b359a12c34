//! Negotiation on the client side ([`crate::Builder::negotiate`]): offer the preferred dialect first, fall back along
//! a pinned list, and hand back an ordinary v1 [`ClientConnection`] whatever the agent speaks
//! (a legacy agent is driven through its adapter).
//!
//! ```no_run
//! use acp_client::negotiate::NegotiateOptions;
//! use acp_client::process::AgentCommand;
//! use acp_client::{Builder, Client, Dialect};
//! use acp_types::v1::*;
//!
//! struct Printer;
//! impl Client for Printer {}
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let init = InitializeRequest::new(ProtocolVersion::V1).client_capabilities(
//!     ClientCapabilities::new().fs(FileSystemCapabilities::new().read_text_file(true)),
//! );
//! let options = NegotiateOptions::new(init).with_dialects([Dialect::V1, Dialect::Legacy009]);
//! let command = AgentCommand::new("my-agent");
//! let (_process, negotiated) = Builder::new(Printer).negotiate(options).spawn(&command).await?;
//! println!("the agent speaks {}", negotiated.dialect);
//! let conn = negotiated.connection; // v1 from here on, whatever the agent speaks
//! # let _ = conn; Ok(()) }
//! ```
//!
//! # How the dialect is found
//!
//! Each dialect of the list is offered in turn, on the agent's stdin, before any connection
//! starts:
//!
//! | dialect | offered with | accepted when the answer is |
//! | --- | --- | --- |
//! | v1 | `initialize` with [`ClientSide::initialize`] | a result with an integer `protocolVersion` |
//! | 0.0.9 | `initialize` with `"protocolVersion": "0.0.9"` | a result with `"protocolVersion": "0.0.9"` |
//! | threads | `getThreads` (no `jsonrpc`, `params: null`) | a result |
//! | probe | `initialize` with `"protocolVersion": "1"` | a result with `"protocolVersion": "1"` |
//! | crow | `initialize` with `"protocol_version": 1` (snake_case, `client_info` from [`ClientSide::initialize`]) | a result with `"protocol_version": 1` |
//!
//! An error answer or no answer within [`ClientSide::timeout`] moves on to the next
//! dialect. The answer's version decides, whichever offer it answers (acp-dialects'
//! `negotiation::answer_dialect`): an agent that answers the v1 offer with `"0.0.9"` (as
//! Gemini CLI 0.1.x did) speaks 0.0.9, and a v1 agent whose late answer arrives while a
//! later dialect is offered is still recognised as v1. Only the exact versions count: the
//! integer `1` and `"0.0.9"`. Another version (`2`, `"0.0.10"`), or v1 when only legacy
//! dialects are pinned, ends the negotiation with [`NegotiationError::Unaccepted`] (the
//! specification's rule: a client that does not support the version the agent answers
//! closes the connection and tells the user); an exhausted list with
//! [`NegotiationError::NoAnswer`], naming what each offer got.
//!
//! Never a hang: the whole negotiation, every offer and the handshake through a legacy
//! translation, ends within [`ClientSide::deadline`] ([`NegotiationError::Deadline`]),
//! however many dialects are offered.
//!
//! Lines the agent writes before answering (requests, logs on stdout) are kept and handed to
//! the connection in one piece once the dialect is known, up to
//! [`ClientSide::max_kept_lines`] lines and [`ClientSide::max_kept_bytes`]
//! bytes; past either, the negotiation ends with [`NegotiationError::TooMuchBeforeAnswer`].
//!
//! After the handshake the connection numbers its own requests after the offers', so a late
//! answer to an offer cannot be mistaken for the answer to a real request.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use acp_dialects::negotiation::{answer_dialect, offer_line, translation_handshake};
use acp_dialects::{Input, Output};
use acp_rpc::sniff::{LineSniffer, SniffError};
use acp_rpc::{Message, RequestId};
use acp_types::v1;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWriteExt};

use crate::{Client, ClientConnection, Dialect};

mod v2;
use v2::{connect_v2, v2_offer};

/// What [`crate::Builder::negotiate`] offers, and how it drives each dialect (acp-dialects' options shared by
/// both sides, with this side's own part: the v1 `initialize`, the offer timeout, the
/// overall deadline and the caps on what the agent writes before answering).
pub type NegotiateOptions = acp_dialects::negotiation::NegotiateOptions<ClientSide>;

pub use acp_dialects::negotiation::{
    ClientSide, DEFAULT_DEADLINE, DEFAULT_MAX_KEPT_BYTES, DEFAULT_MAX_KEPT_LINES,
    DEFAULT_OFFER_TIMEOUT, OfferV2, compiled_dialects,
};

/// What one offer got, when it found no dialect.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum OfferOutcome {
    /// No answer within the timeout.
    #[error("no answer")]
    NoAnswer,
    /// An error answer.
    #[error("refused: {0}")]
    Refused(acp_rpc::Error),
    /// A result that says nothing about the dialect.
    #[error("an answer naming no dialect: {0}")]
    Unrecognised(Value),
}

/// Why a negotiating [`crate::Builder`] found no dialect to speak.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NegotiationError {
    /// The agent answered with a dialect or version that is not accepted (Claude's agent,
    /// offered a version it does not know, answers `2` with a v2-shaped result).
    #[error(
        "the agent answered {speaks}, which we did not offer (we offered {})",
        offered(.accepted)
    )]
    Unaccepted {
        /// What the agent speaks, as it said it (`v1`, `legacy-0.0.9`, `0.0.10`...).
        speaks: String,
        /// The accepted dialects.
        accepted: DialectList,
    },
    /// The agent answered a protocol version the client did not offer, where v2 was
    /// offered ([`acp_dialects::negotiation::OfferV2`]): `1` when only v2 was, `3`, ...
    #[error("the agent answered {answered}, which we did not offer (we offered {offered})")]
    Unoffered {
        /// What the agent answered (`protocol version 1`, `legacy-0.0.9`, ...).
        answered: String,
        /// What was offered (`protocol version 2`, ...).
        offered: String,
    },
    /// Every dialect was offered and none was answered.
    #[error("no dialect was accepted: {}", tried(.0))]
    NoAnswer(Vec<(Dialect, OfferOutcome)>),
    /// The agent closed its stdout during negotiation.
    #[error("the agent closed the connection during negotiation (after offering {0})")]
    Closed(Dialect),
    /// Reading or writing the agent's stdio failed.
    #[error("talking to the agent failed during negotiation: {0}")]
    Io(#[from] std::io::Error),
    /// No dialect to offer: the list is empty or names only dialects this build lacks.
    #[error("no dialect to offer: {0}")]
    NoDialect(DialectList),
    /// The connection started, but its v1 handshake through the legacy adapter failed.
    #[error("the {0} handshake failed: {1}")]
    Handshake(Dialect, acp_rpc::Error),
    /// The negotiation did not end within [`ClientSide::deadline`].
    #[error("no dialect was agreed within {:?}: {}", .0, tried(.1))]
    Deadline(Duration, Vec<(Dialect, OfferOutcome)>),
    /// The agent wrote more before answering than [`ClientSide::max_kept_lines`] or
    /// [`ClientSide::max_kept_bytes`] allow.
    #[error(
        "the agent wrote more than {lines} lines or {bytes} bytes before answering the handshake"
    )]
    TooMuchBeforeAnswer {
        /// The line cap.
        lines: usize,
        /// The byte cap.
        bytes: usize,
    },
}

/// What each offer got, `<dialect>: <outcome>; ...`.
fn tried(outcomes: &[(Dialect, OfferOutcome)]) -> String {
    let each: Vec<_> = outcomes.iter().map(|(d, o)| format!("{d}: {o}")).collect();
    each.join("; ")
}

/// What the client offered, for an error: v1 as `protocol version 1` (the number the agent
/// answers with), the legacy dialects by name.
fn offered(accepted: &DialectList) -> String {
    if accepted.0.is_empty() {
        return "nothing".into();
    }
    let each: Vec<String> = accepted
        .0
        .iter()
        .map(|d| match d {
            Dialect::V1 => "protocol version 1".to_owned(),
            other => other.name().to_owned(),
        })
        .collect();
    each.join(", ")
}

/// What a negotiation accepts: the dialects, and the id of the v2 offer when v2 is offered.
struct Accepted<'a> {
    dialects: &'a [Dialect],
    v2: Option<i64>,
}

impl Accepted<'_> {
    /// What was offered, for an error: `protocol version 2` when it was, then the dialects
    /// as [`offered`] names them.
    fn offered(&self) -> String {
        let dialects =
            (!self.dialects.is_empty()).then(|| offered(&DialectList(self.dialects.to_vec())));
        let v2 = self.v2.map(|_| "protocol version 2".to_owned());
        let each: Vec<String> = v2.into_iter().chain(dialects).collect();
        if each.is_empty() {
            return "nothing".into();
        }
        each.join(", ")
    }
}

/// A list of dialects, displayed comma-separated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DialectList(pub Vec<Dialect>);

impl fmt::Display for DialectList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            return f.write_str("none");
        }
        let names: Vec<_> = self.0.iter().map(|d| d.name()).collect();
        f.write_str(&names.join(", "))
    }
}

/// A negotiated connection: the dialect the agent speaks, the v1 connection to use, and the
/// v1 `initialize` answer (already done).
#[derive(Debug)]
#[non_exhaustive]
pub struct Negotiated {
    /// The dialect spoken on the wire: v1 when [`Negotiated::version`] is 2 (the dialects
    /// are v1's and the legacy ones; the connection is v1 through the v1<->v2 translation).
    pub dialect: Dialect,
    /// The protocol version on the wire: 2 when the agent answered the v2 offer
    /// ([`acp_dialects::negotiation::OfferV2`]), else 1.
    pub version: u16,
    /// The v1 connection (through the dialect's adapter for a legacy agent).
    pub connection: ClientConnection,
    /// The agent's answer to `initialize`, in v1 terms.
    pub initialize: v1::InitializeResponse,
}

/// The lines the agent wrote before answering, kept for the connection in the order read,
/// each followed by `\n`, and capped in lines and bytes.
struct Kept {
    bytes: Vec<u8>,
    lines: usize,
    max_lines: usize,
    max_bytes: usize,
}

impl Kept {
    fn new(options: &NegotiateOptions) -> Self {
        Kept {
            bytes: Vec::new(),
            lines: 0,
            max_lines: options.side.max_kept_lines,
            max_bytes: options.side.max_kept_bytes,
        }
    }

    fn push(&mut self, line: &[u8]) -> Result<(), NegotiationError> {
        if self.lines >= self.max_lines || self.bytes.len() + line.len() + 1 > self.max_bytes {
            return Err(NegotiationError::TooMuchBeforeAnswer {
                lines: self.max_lines,
                bytes: self.max_bytes,
            });
        }
        self.bytes.extend_from_slice(line);
        self.bytes.push(b'\n');
        self.lines += 1;
        Ok(())
    }

    /// Puts every kept line back in front of what `sniffer` has buffered, in one copy.
    fn replay<R: AsyncRead + Unpin>(mut self, sniffer: &mut LineSniffer<R>) {
        if self.bytes.pop().is_some() {
            sniffer.unread(&self.bytes);
        }
    }
}

/// An answer that settles the negotiation.
enum Found {
    /// An answer naming a dialect: the dialect it names, the result, and the offer it
    /// answered (`None`: the v2 offer).
    Dialect(Dialect, Value, Option<Dialect>),
    /// `protocolVersion` 2, answering the v2 offer: the result.
    V2(Value),
}

/// Reads until an answer to one of `offers` (ids and dialects) or `deadline`; `Ok(Err(_))`
/// when the last offer is done without a dialect. Lines that are not answers to an offer
/// (agent requests, logs on stdout) are kept in `kept`, to be read by the connection. An
/// answer naming a version outside `accepted`'s dialects, or EOF, ends the negotiation.
/// `v2` is the id of the v2 offer, when one was sent: its answer with version 2 is
/// [`Found::V2`] (a late one too), an error answering it while it is `current` refuses it.
async fn await_answer<R: AsyncRead + Unpin>(
    sniffer: &mut LineSniffer<R>,
    offers: &[(i64, Dialect)],
    accepted: &Accepted<'_>,
    deadline: tokio::time::Instant,
    kept: &mut Kept,
) -> Result<Result<Found, OfferOutcome>, NegotiationError> {
    let current = offers.last().expect("an offer was sent").1;
    let v2_current = accepted.v2.is_some() && accepted.v2 == offers.last().map(|o| o.0);
    loop {
        let line = match tokio::time::timeout_at(deadline, sniffer.next_line()).await {
            Err(_) => return Ok(Err(OfferOutcome::NoAnswer)),
            Ok(Ok(Some(line))) => line,
            Ok(Ok(None)) => return Err(NegotiationError::Closed(current)),
            Ok(Err(SniffError::Io(e))) => return Err(e.into()),
            Ok(Err(SniffError::TooLong(max))) => {
                return Err(std::io::Error::other(format!(
                    "the agent wrote a line longer than {max} bytes during negotiation"
                ))
                .into());
            }
        };
        // Any dialect's answer: threads' has no `jsonrpc`.
        let framing = acp_rpc::Framing::default().accept_missing_jsonrpc(true);
        let Ok(Message::Response(response)) = Message::parse(&line, &framing) else {
            tracing::trace!("not an answer to an offer: kept for the connection");
            kept.push(&line)?;
            continue;
        };
        // An error with `id: null` refuses what was sent last (the agent could not read its
        // id: a v1 agent refusing the threads offer, which has no `jsonrpc`).
        let answers_v2 = match &response.id {
            Some(RequestId::Int(id)) => accepted.v2 == Some(*id),
            None => v2_current,
            _ => false,
        };
        if answers_v2 {
            match response.result {
                Ok(result) => {
                    let result: Value = serde_json::from_str(result.get()).unwrap_or(Value::Null);
                    if result["protocolVersion"].as_u64() == Some(2) {
                        return Ok(Ok(Found::V2(result)));
                    }
                    return match answer_dialect(&result, Dialect::V1) {
                        // The v1 agent has seen v2's capabilities, not the client's v1 ones:
                        // as though a legacy offer were answered, the v1 handshake is done.
                        Ok(spoken) if accepted.dialects.contains(&spoken) => {
                            Ok(Ok(Found::Dialect(spoken, result, None)))
                        }
                        Ok(spoken) => Err(NegotiationError::Unoffered {
                            answered: offered(&DialectList(vec![spoken])),
                            offered: accepted.offered(),
                        }),
                        Err(version) if !version.is_empty() => Err(NegotiationError::Unoffered {
                            answered: version,
                            offered: accepted.offered(),
                        }),
                        Err(_) if v2_current => Ok(Err(OfferOutcome::Unrecognised(result))),
                        Err(_) => continue,
                    };
                }
                Err(error) if v2_current => return Ok(Err(OfferOutcome::Refused(error))),
                Err(_) => continue,
            }
        }
        let dialect = match (&response.id, &response.result) {
            (None, Err(_)) => Some(current),
            (Some(RequestId::Int(id)), _) => offers.iter().find(|(p, _)| p == id).map(|p| p.1),
            _ => None,
        };
        let Some(dialect) = dialect else {
            tracing::debug!(id = ?response.id, "an answer to no offer: ignored");
            continue;
        };
        let result = match response.result {
            Ok(result) => serde_json::from_str(result.get()).unwrap_or(Value::Null),
            Err(error) => {
                tracing::debug!(%dialect, %error, "offer refused");
                if dialect == current {
                    return Ok(Err(OfferOutcome::Refused(error)));
                }
                continue;
            }
        };
        return match answer_dialect(&result, dialect) {
            Ok(spoken) => Ok(Ok(Found::Dialect(spoken, result, Some(dialect)))),
            Err(version) if !version.is_empty() && accepted.v2.is_some() => {
                Err(NegotiationError::Unoffered {
                    answered: version,
                    offered: accepted.offered(),
                })
            }
            Err(version) if !version.is_empty() => Err(NegotiationError::Unaccepted {
                speaks: version,
                accepted: DialectList(accepted.dialects.to_vec()),
            }),
            Err(_) => Ok(Err(OfferOutcome::Unrecognised(result))),
        };
    }
}

/// Offers the dialects of `options` in turn on the agent's stdin (`writer`), reading its
/// stdout (`reader`), and starts the connection in the first one the agent answers; see the
/// module docs. The v1 `initialize` is done: its answer is in [`Negotiated::initialize`].
pub(crate) async fn connect<C: Client>(
    client: Arc<C>,
    reader: impl Input,
    writer: impl Output,
    options: NegotiateOptions,
) -> Result<Negotiated, NegotiationError> {
    let deadline = tokio::time::Instant::now() + options.side.deadline;
    let limit = options.side.deadline;
    let mut tried = Vec::new();
    let negotiation = negotiate(client, reader, writer, options, deadline, &mut tried);
    match tokio::time::timeout_at(deadline, negotiation).await {
        Ok(result) => result,
        Err(_) => Err(NegotiationError::Deadline(limit, tried)),
    }
}

/// [`connect`] without the overall deadline: `tried` records each offer's outcome as it is
/// known, for the error when the deadline ends it.
async fn negotiate<C: Client>(
    client: Arc<C>,
    reader: impl Input,
    mut writer: impl Output,
    options: NegotiateOptions,
    deadline: tokio::time::Instant,
    tried: &mut Vec<(Dialect, OfferOutcome)>,
) -> Result<Negotiated, NegotiationError> {
    let v2 = v2_offer(&options);
    let dialects = match v2 {
        Some((_, true)) => Vec::new(),
        _ => acp_dialects::negotiation::accepted(&options.dialects)
            .map_err(|_| NegotiationError::NoDialect(DialectList(options.dialects.clone())))?,
    };
    let accepted = Accepted {
        dialects: &dialects,
        v2: v2.as_ref().map(|_| 0),
    };
    let mut sniffer = LineSniffer::new(reader, options.config.max_message_size);
    let mut offers: Vec<(i64, Dialect)> = Vec::new();
    let mut next_id = 0;
    let mut kept = Kept::new(&options);
    let mut found = None;
    if let Some((line, only)) = &v2 {
        // The v2 offer takes id 0; in `offers` as v1, the version it falls back to.
        offers.push((next_id, Dialect::V1));
        next_id += 1;
        writer.write_all(line).await?;
        writer.flush().await?;
        let wait = (tokio::time::Instant::now() + options.side.timeout).min(deadline);
        match await_answer(&mut sniffer, &offers, &accepted, wait, &mut kept).await? {
            Ok(answer) => found = Some(answer),
            Err(outcome) if *only => {
                return Err(NegotiationError::NoAnswer(vec![(Dialect::V1, outcome)]));
            }
            Err(outcome) => tracing::debug!(%outcome, "the v2 offer got no version"),
        }
        // An answer to the v2 offer arriving later is still recognised; offered as v1 no
        // more.
        offers.clear();
    }
    for &dialect in dialects.iter().take_while(|_| found.is_none()) {
        let id = next_id;
        next_id += 1;
        offers.push((id, dialect));
        writer
            .write_all(&offer_line(dialect, id, &options.side.initialize))
            .await?;
        writer.flush().await?;
        let wait = (tokio::time::Instant::now() + options.side.timeout).min(deadline);
        // Unanswered until known otherwise, should the deadline end the wait.
        tried.push((dialect, OfferOutcome::NoAnswer));
        match await_answer(&mut sniffer, &offers, &accepted, wait, &mut kept).await? {
            Ok(answer) => {
                tried.pop();
                found = Some(answer);
                break;
            }
            Err(outcome) => {
                tried.last_mut().expect("pushed above").1 = outcome;
                if tokio::time::Instant::now() >= deadline {
                    return Err(NegotiationError::Deadline(
                        options.side.deadline,
                        std::mem::take(tried),
                    ));
                }
            }
        }
    }
    let (dialect, result, answered) = match found {
        None => return Err(NegotiationError::NoAnswer(std::mem::take(tried))),
        Some(Found::Dialect(dialect, result, answered)) => (dialect, result, answered),
        Some(Found::V2(result)) => {
            kept.replay(&mut sniffer);
            let reader = sniffer.into_reader();
            let config = options.config.clone().with_first_request_id(next_id);
            return connect_v2(client, reader, writer, options, config, result).await;
        }
    };
    if !dialects.contains(&dialect) {
        return Err(NegotiationError::Unaccepted {
            speaks: dialect.to_string(),
            accepted: DialectList(dialects),
        });
    }
    kept.replay(&mut sniffer);
    let reader = sniffer.into_reader();
    let config = options.config.with_first_request_id(next_id);
    tracing::debug!(%dialect, offers = next_id, "negotiated");
    let handshake = |e: acp_rpc::Error| NegotiationError::Handshake(dialect, e);
    if dialect == Dialect::V1 && answered == Some(Dialect::V1) {
        let initialize = serde_json::from_value(result).map_err(|e| {
            handshake(acp_rpc::Error::invalid_params(format!(
                "the agent's initialize answer does not read as v1: {e}"
            )))
        })?;
        let connection = ClientConnection::start(client, (reader, writer), config);
        return Ok(Negotiated {
            dialect,
            version: 1,
            connection,
            initialize,
        });
    }
    let answered = answered.unwrap_or(Dialect::V1);
    let connection = match dialect {
        // A v1 agent answered a legacy handshake with its version: it has not seen this
        // client's capabilities yet, so the v1 handshake is done properly.
        Dialect::V1 => ClientConnection::start(client, (reader, writer), config),
        legacy => {
            let mut adapter = options.legacy.with_config(config);
            adapter.handshake =
                translation_handshake(legacy, answered, result).map_err(handshake)?;
            crate::legacy::connect_translated(legacy, client, reader, writer, adapter)
                .expect("only compiled dialects are accepted")
        }
    };
    let initialize = connection
        .agent()
        .initialize(options.side.initialize)
        .await
        .map_err(handshake)?;
    Ok(Negotiated {
        dialect,
        version: 1,
        connection,
        initialize,
    })
}
