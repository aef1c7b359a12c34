"""The benchmark client on the official Python SDK (agent-client-protocol, import name `acp`),
written the way its docs show: a client object connected with `acp.spawn_agent_process`,
serving fs reads and permission requests and checking every streamed chunk. It runs one
measurement (the plan) and prints its outcome as one JSON line on stdout, which acp-bench
reads (benches/src/foreign.rs).

    python client.py --plan <plan> -- <agent command...>

Plans: `handshake` (f), `job <prompt text>` (a, b, d), `many <sessions> <chunks>` (g),
`exchange` (h).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
import time
from typing import Any

import acp
from acp.exceptions import RequestError
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    FileSystemCapabilities,
    Implementation,
    ReadTextFileResponse,
    RequestPermissionResponse,
)

from common import CWD, REPORT_KEY, content_for, new_report, parse_args, percentile, unix_nanos

OPTS = parse_args(sys.argv[1:])
TIMED = re.compile(r"tok(\d+)@(\d+) ")


class BenchClient:
    def __init__(self) -> None:
        self.next = 0
        self.wrong = 0
        self.per_session: dict[str, dict] | None = None

    def on_connect(self, conn: Any) -> None:
        pass

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        content = getattr(update, "content", None)
        text = content.text if update.session_update == "agent_message_chunk" and getattr(content, "type", None) == "text" else None
        if self.per_session is not None:
            now = unix_nanos()
            track = self.per_session.get(session_id)
            m = TIMED.fullmatch(text) if text is not None else None
            if track is None:
                self.wrong += 1
            elif m and int(m.group(1)) == track["next"]:
                track["next"] += 1
                track["latencies"].append(now - int(m.group(2)))
                if track["first_at"] is None:
                    track["first_at"] = now
            else:
                track["wrong"] += 1
            return
        if text == f"tok{self.next} ":
            self.next += 1
        else:
            self.wrong += 1

    async def request_permission(self, session_id: str, tool_call: Any, options: list[Any], **kwargs: Any) -> RequestPermissionResponse:
        allow = next((o for o in options if o.kind == "allow_once"), None)
        if allow is None:
            raise RequestError.invalid_params({"reason": "no allow option"})
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=allow.option_id))

    async def read_text_file(self, session_id: str, path: str, line: int | None = None, limit: int | None = None, **kwargs: Any) -> ReadTextFileResponse:
        content = content_for(path)
        if content is None:
            raise RequestError.resource_not_found(path)
        return ReadTextFileResponse(content=content)


async def prompt(conn: Any, session_id: str, text: str) -> dict:
    response = await conn.prompt(session_id=session_id, prompt=[acp.text_block(text)])
    report = (response.field_meta or {}).get(REPORT_KEY)
    if report is None:
        raise RuntimeError("no report in the answer")
    return report


async def main() -> None:
    kind, *plan_args = OPTS.get("plan", "").split()
    client = BenchClient()
    outcome: dict = {"elapsed_ns": 0, "report": None, "after": None, "chunks": [0, 0], "many": None}
    # f and h are timed from just before the agent is spawned, as for every column.
    start = time.perf_counter_ns()
    async with acp.spawn_agent_process(client, OPTS["rest"][0], *OPTS["rest"][1:], env=dict(os.environ), transport_kwargs={"stderr": None}) as (conn, proc):
        await conn.initialize(
            protocol_version=1,
            client_capabilities=ClientCapabilities(fs=FileSystemCapabilities(read_text_file=True)),
            client_info=Implementation(name="acp-bench", version="0"),
        )
        if kind == "handshake":
            outcome["elapsed_ns"] = time.perf_counter_ns() - start
        else:
            session_id = (await conn.new_session(cwd=CWD, mcp_servers=[])).session_id
            if kind == "job":
                t = time.perf_counter_ns()
                outcome["report"] = await prompt(conn, session_id, " ".join(plan_args))
                outcome["elapsed_ns"] = time.perf_counter_ns() - t
                outcome["chunks"] = [client.next, client.wrong]
            elif kind == "many":
                count, chunks = int(plan_args[0]), int(plan_args[1])
                ids = [(await conn.new_session(cwd=CWD, mcp_servers=[])).session_id for _ in range(count)]
                client.per_session = {i: {"next": 0, "wrong": 0, "latencies": [], "first_at": None} for i in ids}
                prompted_at = unix_nanos()
                t = time.perf_counter_ns()
                reports = await asyncio.gather(*(prompt(conn, i, f"tstream {chunks}") for i in ids))
                outcome["elapsed_ns"] = time.perf_counter_ns() - t
                outcome["report"] = new_report()
                for r in reports:
                    outcome["report"]["count"] += r["count"]
                    outcome["report"]["errors"] += r["errors"]
                many = {"sessions": len(ids), "in_order": 0, "errors": client.wrong, "median_session_p99_ns": 0, "worst_session_p99_ns": 0, "worst_first_chunk_ns": 0}
                p99s = []
                for track in client.per_session.values():
                    many["in_order"] += track["next"]
                    many["errors"] += track["wrong"]
                    track["latencies"].sort()
                    p99s.append(percentile(track["latencies"], 99))
                    first = (track["first_at"] - prompted_at) if track["first_at"] is not None else 2**53
                    many["worst_first_chunk_ns"] = max(many["worst_first_chunk_ns"], first)
                p99s.sort()
                many["median_session_p99_ns"] = percentile(p99s, 50)
                many["worst_session_p99_ns"] = p99s[-1] if p99s else 0
                outcome["many"] = many
            elif kind == "exchange":
                outcome["report"] = await prompt(conn, session_id, "exchange")
            else:
                raise SystemExit(f"unknown plan {OPTS.get('plan')!r}")
            if kind in ("job", "many"):
                outcome["after"] = await prompt(conn, session_id, "mem")
        proc.stdin.close()
        await proc.wait()
    if kind == "exchange":
        outcome["elapsed_ns"] = time.perf_counter_ns() - start
    sys.stdout.write(json.dumps(outcome) + "\n")


if __name__ == "__main__":
    asyncio.run(main())
