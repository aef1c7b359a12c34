"""The benchmark agent on the official Python SDK (agent-client-protocol, import name `acp`),
written the way its docs show: an agent object served by `acp.run_agent`, streaming with
`conn.session_update` and calling the client with `conn.read_text_file`. It runs the job the
prompt's text names and answers with a report in `_meta.acpBench` (benches/src/msg.rs).

    python agent.py
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import acp
from acp.schema import (
    AgentCapabilities,
    Implementation,
    InitializeResponse,
    NewSessionResponse,
    PermissionOption,
    PromptResponse,
    ToolCallUpdate,
)

from common import EXCHANGE_UPDATES, REPORT_KEY, SMALL_CONTENT, SMALL_PATH, memory, new_report, percentile, unix_nanos


class BenchAgent:
    def __init__(self) -> None:
        self.conn: Any = None
        self.sessions: set[str] = set()
        self.next = 0

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    async def initialize(self, protocol_version: int, client_capabilities: Any = None, client_info: Any = None, **kwargs: Any) -> InitializeResponse:
        return InitializeResponse(
            protocol_version=protocol_version,
            agent_capabilities=AgentCapabilities(),
            agent_info=Implementation(name="acp-bench", version="0"),
        )

    async def new_session(self, cwd: str, mcp_servers: Any = None, **kwargs: Any) -> NewSessionResponse:
        n = self.next
        self.next += 1
        session_id = f"{n >> 48:08x}-0000-4000-8000-{n & 0xFFFFFFFFFFFF:012x}"
        self.sessions.add(session_id)
        return NewSessionResponse(session_id=session_id)

    async def chunk(self, session_id: str, text: str) -> None:
        await self.conn.session_update(session_id=session_id, update=acp.update_agent_message_text(text))

    async def reads(self, session_id: str, n: int, path: str, size: int, report: dict) -> None:
        samples = []
        for _ in range(n):
            t = time.perf_counter_ns()
            try:
                ok = len((await self.conn.read_text_file(session_id=session_id, path=path)).content) == size
            except Exception:  # noqa: BLE001 - a failed call is counted, not raised
                ok = False
            samples.append(time.perf_counter_ns() - t)
            report["count"] += 1
            if ok:
                report["bytes"] += size
            else:
                report["errors"] += 1
        samples.sort()
        report["p50_ns"] = percentile(samples, 50)
        report["p99_ns"] = percentile(samples, 99)

    async def prompt(self, prompt: list[Any], session_id: str, **kwargs: Any) -> PromptResponse:
        if session_id not in self.sessions:
            raise acp.RequestError.resource_not_found(session_id)
        text = next((b.text for b in prompt if b.type == "text"), "")
        verb, *args = text.split()
        report = new_report()
        start = time.perf_counter_ns()
        if verb == "stream":
            for i in range(int(args[0])):
                await self.chunk(session_id, f"tok{i} ")
                report["count"] += 1
        elif verb == "tstream":
            for i in range(int(args[0])):
                await self.chunk(session_id, f"tok{i}@{unix_nanos()} ")
                report["count"] += 1
        elif verb == "seq":
            await self.reads(session_id, int(args[0]), SMALL_PATH, len(SMALL_CONTENT), report)
        elif verb == "big":
            size = int(args[1])
            await self.reads(session_id, int(args[0]), f"/bench/big/{size}", size, report)
        elif verb == "exchange":
            for i in range(EXCHANGE_UPDATES):
                await self.chunk(session_id, f"tok{i} ")
                report["count"] += 1
            answer = await self.conn.request_permission(
                session_id=session_id,
                tool_call=ToolCallUpdate(tool_call_id="call-1"),
                options=[
                    PermissionOption(option_id="allow", name="Allow", kind="allow_once"),
                    PermissionOption(option_id="reject", name="Reject", kind="reject_once"),
                ],
            )
            outcome = answer.outcome
            if getattr(outcome, "outcome", None) == "selected" and outcome.option_id == "allow":
                report["count"] += 1
            else:
                report["errors"] += 1
            one = new_report()
            await self.reads(session_id, 1, SMALL_PATH, len(SMALL_CONTENT), one)
            for key in ("count", "errors", "bytes"):
                report[key] += one[key]
        elif verb != "mem":
            raise acp.RequestError.invalid_params({"text": text})
        report["elapsed_ns"] = time.perf_counter_ns() - start
        report["rss_kib"], report["hwm_kib"] = memory()
        return PromptResponse(stop_reason="end_turn", field_meta={REPORT_KEY: report})


async def main() -> None:
    await acp.run_agent(BenchAgent())


if __name__ == "__main__":
    asyncio.run(main())
