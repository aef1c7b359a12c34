"""W3C Trace Context across the wire for the Python interop peers (issue 51).

The official SDK (agent-client-protocol 0.12.1, `acp/telemetry.py`) opens an OpenTelemetry
span for every request it handles (`acp.request`) and notification (`acp.notification`), in
the *current* OpenTelemetry context, but never reads `_meta.traceparent` from what it receives
nor writes it into what it sends: alone, it cannot continue a trace across the wire. With
`ACP_INTEROP_OTEL` set, `install()` adds what is missing, with the standard OpenTelemetry
Python API and its W3C TraceContext propagator, around the SDK's `Connection`:

* every message received: its `params._meta` (`traceparent`, `tracestate`) is extracted and
  made the current context while the SDK starts the message's task, so the SDK's own
  `acp.request` / `acp.notification` span is a child of the sender's span;
* every request and notification sent: the current context is injected into its
  `params._meta` (the SDK's `acp.request` span, in a handler; the caller's span otherwise).

Spans are exported over OTLP/HTTP (protobuf) to `OTEL_EXPORTER_OTLP_ENDPOINT`, one by one as
they end, under `OTEL_SERVICE_NAME`. Without `ACP_INTEROP_OTEL` nothing is imported or
changed.
"""

from __future__ import annotations

import os
from contextlib import nullcontext
from typing import Any

_PROVIDER: Any = None


def enabled() -> bool:
    return bool(os.environ.get("ACP_INTEROP_OTEL"))


def install(service: str) -> None:
    """Sets up the exporter and wraps the SDK's connection (only with `ACP_INTEROP_OTEL`)."""
    global _PROVIDER
    if not enabled():
        return
    from opentelemetry import context, trace
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    import acp.connection

    resource = Resource.create({"service.name": os.environ.get("OTEL_SERVICE_NAME", service)})
    _PROVIDER = TracerProvider(resource=resource)
    _PROVIDER.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(_PROVIDER)
    propagator = TraceContextTextMapPropagator()

    def with_context(params: Any) -> Any:
        """`params` with the current context in `_meta` (a copy; non-objects unchanged)."""
        if not isinstance(params, dict):
            return params
        carrier: dict[str, str] = {}
        propagator.inject(carrier)
        if not carrier:
            return params
        meta = params.get("_meta")
        meta = dict(meta) if isinstance(meta, dict) else {}
        meta.update(carrier)
        return {**params, "_meta": meta}

    connection = acp.connection.Connection
    send_request = connection.send_request
    send_notification = connection.send_notification
    process_message = connection._process_message

    async def traced_send_request(self: Any, method: str, params: Any = None) -> Any:
        return await send_request(self, method, with_context(params))

    async def traced_send_notification(self: Any, method: str, params: Any = None) -> None:
        await send_notification(self, method, with_context(params))

    def traced_process_message(self: Any, message: dict[str, Any]) -> None:
        params = message.get("params")
        meta = params.get("_meta") if isinstance(params, dict) else None
        carrier = {k: v for k, v in meta.items() if isinstance(v, str)} if isinstance(meta, dict) else {}
        # The SDK starts the message's task here: the task copies the current context, so
        # the SDK's span for the message starts as the remote span's child.
        token = context.attach(propagator.extract(carrier))
        try:
            process_message(self, message)
        finally:
            context.detach(token)

    connection.send_request = traced_send_request
    connection.send_notification = traced_send_notification
    connection._process_message = traced_process_message


def span(name: str) -> Any:
    """A span of the peer's own (a root, the current span while open), or nothing."""
    if _PROVIDER is None:
        return nullcontext()
    return _PROVIDER.get_tracer("acp-interop").start_as_current_span(name)


def shutdown() -> None:
    """Sends what is left (the simple processor has sent each span as it ended)."""
    if _PROVIDER is not None:
        _PROVIDER.shutdown()
