//! Client to agent: each message the client sends, admitted within the connection's bounds
//! (its queue towards the agent, in bytes; requests in flight; the message rate) and
//! queued for the agent, or refused with a clear error.

use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use serde_json::Value;
use tokio::sync::OwnedSemaphorePermit;

use crate::server::outbox::Outbox;
use acp_rpc::Direction;
use acp_rpc::envelope::Envelope;
use acp_rpc::sync::lock;

use super::{
    Conn, MAX_PENDING, Pending, Refused, Waiting, inbound_permits, observe_message, refusal,
};

impl Conn {
    /// Forwards one client message (a JSON object) to the agent. `session` is the POST's
    /// `Acp-Session-Id`. A request refused by a limit is answered with a JSON-RPC error on
    /// the connection stream, not forwarded.
    pub(crate) async fn forward_to_agent(
        &self,
        mut message: Value,
        session: Option<&str>,
    ) -> Result<(), Refused> {
        if self.closed.is_cancelled() {
            return Err(Refused::Closed);
        }
        let method = message.get("method").and_then(Value::as_str);
        // Answers to the agent's own requests are never held back (the agent would wait for
        // them); their number follows the agent's requests anyway.
        if method.is_some() && !lock(&self.rate).take() {
            return Err(Refused::RateLimited);
        }
        // The guard may change the request (the host's own MCP servers are added), so the
        // line is made from what it leaves.
        if let Some(guard) = self.guard_sessions.get()
            && method.is_some_and(crate::server::guard::SessionGuard::guards)
            && let Err(why) = guard.admit(&mut message, &self.identity).await
        {
            self.touch();
            tracing::info!(conn = %self.id, %why, "session request refused");
            if let Some(id) = message.get("id") {
                self.push(&self.main, crate::server::guard::refusal(id, &why));
            }
            return Ok(());
        }
        // The gateway's hop span (feature `otel`): the client's `_meta.traceparent` is its
        // parent, and the agent gets the hop's (acp_rpc::otel::hop).
        #[cfg(feature = "otel")]
        let _hop = acp_rpc::otel::hop("acp.gateway", &mut message, true);
        let method = message.get("method").and_then(Value::as_str);
        let line = Bytes::from(serde_json::to_vec(&message).unwrap_or_default());
        let permit = self.room_for(&line, method.is_some()).await?;
        self.touch();
        let id = message.get("id").filter(|_| method.is_some());
        let named = session.map(str::to_owned).or_else(|| {
            let p = message.get("params")?.get("sessionId")?.as_str()?;
            Some(p.to_owned())
        });
        let opens = matches!(method, Some("session/load" | "session/resume"));
        let creates = matches!(method, Some("session/new" | "session/fork"));
        {
            let mut routing = lock(&self.routing);
            if let Some(header) = session
                && !opens
                && !routing.sessions.contains_key(header)
            {
                return Err(Refused::UnknownSession);
            }
            let adds = creates
                || (opens
                    && named
                        .as_ref()
                        .is_some_and(|s| !routing.sessions.contains_key(s)));
            if let Some(id) = id
                && routing.pending.len() >= MAX_PENDING
            {
                drop(routing);
                let error = refusal(id, "too many requests in flight on this connection");
                self.push(&self.main, error);
                return Ok(());
            }
            if let Some(id) = id
                && adds
                && routing.sessions.len() + routing.creating
                    >= self.limits.max_sessions_per_connection
            {
                drop(routing);
                let error = refusal(id, "this connection has reached its session limit");
                self.push(&self.main, error);
                return Ok(());
            }
            if opens && let Some(s) = &named {
                let budget = self.budget.clone();
                if !routing.sessions.contains_key(s) {
                    routing
                        .sessions
                        .insert(s.clone(), Arc::new(Outbox::new(budget)));
                    if let Some(metrics) = &self.metrics {
                        metrics.session_opened();
                    }
                }
            }
            if let Some(id) = id {
                let session = session.filter(|_| !self.websocket).map(str::to_owned);
                routing.creating += usize::from(creates);
                let timing = method
                    .filter(|_| self.observer.is_some())
                    .map(|m| (Instant::now(), m.to_owned()));
                // `initialize`'s waiter, registered first, stays (and gets its timing).
                let waiting = routing.pending.entry(id.to_string()).or_insert(Waiting {
                    to: Pending::Answer { session, creates },
                    timing: None,
                });
                waiting.timing = timing;
            }
        }
        if let Some(o) = &self.observer {
            let envelope = Envelope::of_value(&message);
            observe_message(o.as_ref(), Direction::Incoming, &envelope, &line);
        }
        self.to_agent
            .send((line, permit))
            .await
            .map_err(|_| Refused::Closed)
    }

    /// The room `line` takes in the queue towards the agent ([`Limits::max_inbound_bytes`]):
    /// taken at once, or refused for a request or notification (`asks`), waited for by an
    /// answer to the agent.
    pub(super) async fn room_for(
        &self,
        line: &Bytes,
        asks: bool,
    ) -> Result<OwnedSemaphorePermit, Refused> {
        let max = inbound_permits(&self.limits);
        // A message larger than the whole bound takes all of it (it passes alone).
        let wanted = u32::try_from((line.len() + 1).min(max)).unwrap_or(u32::MAX);
        let inbound = self.inbound.clone();
        if asks {
            return inbound
                .try_acquire_many_owned(wanted)
                .map_err(|_| Refused::Backlog);
        }
        tokio::select! {
            permit = inbound.acquire_many_owned(wanted) => permit.map_err(|_| Refused::Closed),
            () = self.closed.cancelled() => Err(Refused::Closed),
        }
    }
}
