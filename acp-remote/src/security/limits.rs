//! How much: the [`Limits`] on what one remote peer, and all of them, can make the server
//! hold, and the token bucket behind the per-connection message rate.

use std::time::Duration;

/// The bounds on what one remote peer, and all of them, can make the server hold.
///
/// Each bound, when hit, gets a clear answer: an HTTP status (413, 503, 408), a JSON-RPC
/// error on the connection's stream, or a WebSocket close code. Nothing is dropped silently.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Limits {
    /// Largest POST body or WebSocket message, in bytes (413 over HTTP, close code 1009 over
    /// WebSocket). Also the longest line an agent may write: a longer one ends the connection
    /// (each of the client's requests waiting for an answer gets a JSON-RPC error `-32000`
    /// naming the limit, and the agent is ended), since the answer it carried is lost.
    pub max_message_bytes: usize,
    /// ACP connections open at once, over both profiles (503 for the next `initialize` or
    /// upgrade).
    pub max_connections: usize,
    /// Sessions one connection may create or load (a JSON-RPC error `-32000` answers the
    /// next `session/new`, `session/load` or `session/resume`).
    pub max_sessions_per_connection: usize,
    /// A connection with no request and no open stream for this long is closed (its agent
    /// ended).
    pub idle_timeout: Duration,
    /// Bytes of agent output one connection may hold for its client. At it the server stops
    /// reading the agent's output until the client takes some (backpressure: the agent's
    /// writes wait, nothing is dropped and the connection stays).
    pub max_buffered_bytes: usize,
    /// How long a connection held at [`Limits::max_buffered_bytes`] waits for its client to
    /// take any output: a client that takes none for this long has stopped reading (or never
    /// opened the stream the output is for), and its connection is closed.
    pub max_output_stall: Duration,
    /// TCP connections open at once; past it new sockets are closed at once.
    pub max_sockets: usize,
    /// Time a client has to send a request's headers (slow-loris guard).
    pub header_timeout: Duration,
    /// Time a client has to send a POST body once its headers arrived (408 after).
    pub body_timeout: Duration,
    /// Time the agent has to answer `initialize` (504 after, the connection is dropped).
    pub initialize_timeout: Duration,
    /// Over WebSocket: after this long without a frame from the client the server sends a
    /// ping, and a client that sends nothing (not even the pong every WebSocket library
    /// answers with) for another such interval is gone: its connection is closed (1001) and
    /// its agent ended, instead of a half-open TCP connection holding them until the idle
    /// timeout.
    pub websocket_ping_interval: Duration,
    /// Requests and notifications one connection may send per second, with bursts of up to
    /// as many: past it a POST is answered `429` (with `Retry-After`) and a WebSocket
    /// message with a JSON-RPC error, and the message is not forwarded, so one client cannot
    /// flood its agent (or a gateway's child) faster than it can work. Answers to the
    /// agent's requests are never held back.
    pub max_messages_per_second: u32,
    /// How long one write to a client's socket may wait (its kernel buffers full: a client
    /// that stopped reading its WebSocket or SSE stream). Past it the socket is closed, and
    /// the task and memory writing to it released: a WebSocket's connection ends (its agent
    /// with it); an SSE stream ends, and its connection stays for the client to reopen it
    /// (within [`Limits::max_output_stall`] if output is waiting for it). The clock runs only
    /// while a write waits, so a slow but steady reader is never cut off.
    pub write_timeout: Duration,
    /// Bytes of a connection's messages waiting for its agent to read them (the queue between
    /// the client's requests and the agent's input). A message that does not fit while others
    /// wait is refused: a request or notification with `429` (and `Retry-After: 1`) over
    /// HTTP, or a JSON-RPC error `-32000` over WebSocket, and not forwarded; an answer to the
    /// agent's own request waits for room instead (the agent is waiting for it). One message
    /// always fits in an empty queue, whatever its size (up to
    /// [`Limits::max_message_bytes`]).
    pub max_inbound_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_message_bytes: 4 * 1024 * 1024,
            max_connections: 256,
            max_sessions_per_connection: 64,
            idle_timeout: Duration::from_secs(600),
            max_buffered_bytes: 16 * 1024 * 1024,
            max_output_stall: Duration::from_secs(60),
            max_sockets: 1024,
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(30),
            initialize_timeout: Duration::from_secs(30),
            websocket_ping_interval: Duration::from_secs(30),
            max_messages_per_second: 1000,
            write_timeout: Duration::from_secs(30),
            max_inbound_bytes: 8 * 1024 * 1024,
        }
    }
}

impl Limits {
    /// The defaults: 4 MiB messages, 256 connections, 64 sessions per connection, 10 minutes
    /// idle, 16 MiB buffered per connection (then the agent waits, for up to 60 s of a
    /// client taking nothing), 1024 sockets, 10 s for headers, 30 s for a body
    /// and for `initialize`, a WebSocket ping after 30 s of silence, 1000 messages a second
    /// per connection, 30 s for a write to a client's socket, 8 MiB of a connection's messages
    /// waiting for its agent.
    pub fn new() -> Self {
        Self::default()
    }
}

/// A token bucket: `rate` tokens a second, at most `rate` held (a second's burst).
#[derive(Debug)]
pub(crate) struct RateBucket {
    rate: f64,
    tokens: f64,
    last: std::time::Instant,
}

impl RateBucket {
    pub(crate) fn new(per_second: u32) -> Self {
        let rate = f64::from(per_second.max(1));
        RateBucket {
            rate,
            tokens: rate,
            last: std::time::Instant::now(),
        }
    }

    /// Takes one token if there is one.
    pub(crate) fn take(&mut self) -> bool {
        let now = std::time::Instant::now();
        let refill = now.duration_since(self.last).as_secs_f64() * self.rate;
        self.tokens = (self.tokens + refill).min(self.rate);
        self.last = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}
