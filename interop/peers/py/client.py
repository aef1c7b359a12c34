"""The Python interop client, built with agent-client-protocol (import name `acp`).

    python client.py --script <script.json> --cwd <workspace> -- <agent command...>

Spawns the agent with `spawn_agent_process`, runs initialize -> bad calls -> session/new ->
prompt (text, image and resource blocks) -> a second prompt it cancels with session/cancel ->
session/load, serving permission, fs and terminal requests, and prints every event (each update
it receives included) as one JSON line on stdout. This SDK cannot send `$/cancel_request`, so
the third turn is skipped (and says so).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any

import acp
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    CreateTerminalResponse,
    DeniedOutcome,
    FileSystemCapabilities,
    Implementation,
    KillTerminalResponse,
    ReadTextFileResponse,
    ReleaseTerminalResponse,
    RequestPermissionResponse,
    TerminalExitStatus,
    TerminalOutputResponse,
    WaitForTerminalExitResponse,
    WriteTextFileResponse,
)
from acp.exceptions import RequestError

import trace_context
from common import error_code, load_script, parse_args

OPTS = parse_args(sys.argv[1:])
SCRIPT = load_script(OPTS["script"])
CWD = os.path.realpath(OPTS["cwd"])


def out(event: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()


def inside(path: str) -> str:
    resolved = os.path.realpath(path)
    if resolved != CWD and not resolved.startswith(CWD + os.sep):
        raise RequestError.invalid_params({"path": path, "reason": "outside the workspace"})
    return resolved


class Terminal:
    def __init__(self, proc: asyncio.subprocess.Process, limit: int) -> None:
        self.proc = proc
        self.limit = limit
        self.output = b""
        self.truncated = False
        self.pump = asyncio.create_task(self._pump())

    async def _pump(self) -> None:
        assert self.proc.stdout is not None
        while chunk := await self.proc.stdout.read(4096):
            self.output = (self.output + chunk)[-self.limit :]
            self.truncated = self.truncated or len(self.output) == self.limit

    def status(self) -> TerminalExitStatus | None:
        code = self.proc.returncode
        if code is None:
            return None
        return TerminalExitStatus(exit_code=code if code >= 0 else None, signal=None if code >= 0 else str(-code))


class InteropClient:
    def __init__(self) -> None:
        self.conn: Any = None
        self.turn: str | None = None
        self.terminals: dict[str, Terminal] = {}

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        out({"event": "update", "turn": self.turn, "sessionId": session_id, "update": update.model_dump(by_alias=True, exclude_none=True, mode="json")})

    async def request_permission(self, session_id: str, tool_call: Any, options: list[Any], **kwargs: Any) -> RequestPermissionResponse:
        if self.turn == "2":
            await self.conn.cancel(session_id=session_id)
            out({"event": "cancel_sent", "turn": self.turn})
            out({"event": "permission", "turn": self.turn, "toolCallId": tool_call.tool_call_id, "outcome": "cancelled"})
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        want = "reject_once" if tool_call.kind == "delete" else "allow_once"
        option = next((o for o in options if o.kind == want), options[0])
        out({"event": "permission", "turn": self.turn, "toolCallId": tool_call.tool_call_id, "outcome": "selected", "optionId": option.option_id})
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=option.option_id))

    async def read_text_file(self, session_id: str, path: str, line: int | None = None, limit: int | None = None, **kwargs: Any) -> ReadTextFileResponse:
        out({"event": "fs_read", "path": path})
        with open(inside(path), encoding="utf-8") as f:
            return ReadTextFileResponse(content=f.read())

    async def write_text_file(self, session_id: str, path: str, content: str, **kwargs: Any) -> WriteTextFileResponse:
        out({"event": "fs_write", "path": path})
        with open(inside(path), "w", encoding="utf-8") as f:
            f.write(content)
        return WriteTextFileResponse()

    async def create_terminal(self, session_id: str, command: str, args: list[str] | None = None, env: Any = None, cwd: str | None = None, output_byte_limit: int | None = None, **kwargs: Any) -> CreateTerminalResponse:
        out({"event": "terminal_create", "command": command, "args": args or []})
        proc = await asyncio.create_subprocess_exec(command, *(args or []), cwd=cwd or CWD, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
        terminal_id = f"term-{len(self.terminals) + 1}"
        self.terminals[terminal_id] = Terminal(proc, output_byte_limit or 1 << 20)
        return CreateTerminalResponse(terminal_id=terminal_id)

    def terminal(self, terminal_id: str) -> Terminal:
        if terminal_id not in self.terminals:
            raise RequestError.resource_not_found(terminal_id)
        return self.terminals[terminal_id]

    async def terminal_output(self, session_id: str, terminal_id: str, **kwargs: Any) -> TerminalOutputResponse:
        term = self.terminal(terminal_id)
        return TerminalOutputResponse(output=term.output.decode("utf-8", "replace"), truncated=term.truncated, exit_status=term.status())

    async def wait_for_terminal_exit(self, session_id: str, terminal_id: str, **kwargs: Any) -> WaitForTerminalExitResponse:
        term = self.terminal(terminal_id)
        await term.proc.wait()
        await term.pump
        status = term.status()
        return WaitForTerminalExitResponse(exit_code=status.exit_code, signal=status.signal)

    async def kill_terminal(self, session_id: str, terminal_id: str, **kwargs: Any) -> KillTerminalResponse:
        term = self.terminal(terminal_id)
        if term.proc.returncode is None:
            term.proc.kill()
        return KillTerminalResponse()

    async def release_terminal(self, session_id: str, terminal_id: str, **kwargs: Any) -> ReleaseTerminalResponse:
        term = self.terminals.pop(terminal_id, None)
        if term and term.proc.returncode is None:
            term.proc.kill()
        return ReleaseTerminalResponse()


async def bad_call(conn: Any, name: str, method: str, params: dict[str, Any]) -> None:
    try:
        await conn._conn.send_request(method, params)
        out({"event": "error", "bad_call": name, "code": None})
    except Exception as e:  # noqa: BLE001 - the code is what we report
        out({"event": "error", "bad_call": name, "code": error_code(e)})


async def main() -> None:
    if not OPTS["rest"]:
        raise SystemExit("no agent command after --")
    trace_context.install("py-interop-client")
    try:
        with trace_context.span("py-interop-client"):
            await run()
    finally:
        trace_context.shutdown()


async def run() -> None:
    client = InteropClient()
    # The SDK trims the child's environment and pipes its stderr without reading it: pass
    # both through explicitly.
    async with acp.spawn_agent_process(client, OPTS["rest"][0], *OPTS["rest"][1:], env=dict(os.environ), transport_kwargs={"stderr": None}) as (conn, proc):
        init = await conn.initialize(
            protocol_version=1,
            client_capabilities=ClientCapabilities(fs=FileSystemCapabilities(read_text_file=True, write_text_file=True), terminal=True),
            client_info=Implementation(name="py-interop-client", version="0.12.1"),
        )
        load = bool(init.agent_capabilities and init.agent_capabilities.load_session)
        out({"event": "initialized", "protocolVersion": init.protocol_version, "loadSession": load})

        session = await conn.new_session(cwd=CWD, mcp_servers=[])
        sid = session.session_id
        out({"event": "session", "sessionId": sid})
        await bad_call(conn, "unknown_method", SCRIPT["unknownMethod"], {})
        await bad_call(conn, "invalid_params", "session/prompt", {"sessionId": sid, "prompt": "not a list of blocks"})

        client.turn = "1"
        first = await conn.prompt(
            session_id=sid,
            prompt=[
                acp.text_block(SCRIPT["prompts"]["work"]),
                acp.image_block(SCRIPT["image"]["data"], SCRIPT["image"]["mimeType"]),
                acp.resource_block(acp.embedded_text_resource(SCRIPT["resourceUri"], SCRIPT["resourceText"], mime_type="text/markdown")),
            ],
        )
        out({"event": "stop", "turn": "1", "stopReason": first.stop_reason})

        client.turn = "2"
        second = await conn.prompt(session_id=sid, prompt=[acp.text_block(SCRIPT["prompts"]["cancel"])])
        out({"event": "stop", "turn": "2", "stopReason": second.stop_reason})

        out({"event": "skip", "turn": "3", "what": "$/cancel_request", "why": "agent-client-protocol 0.12.1 cannot send it"})

        if load:
            client.turn = "load"
            await conn.load_session(cwd=CWD, session_id=sid, mcp_servers=[])
            out({"event": "loaded", "sessionId": sid})
        client.turn = None
        proc.stdin.close()
        try:
            code = await asyncio.wait_for(proc.wait(), 5)
        except asyncio.TimeoutError:
            proc.kill()
            code = None
    out({"event": "agent_exit", "code": code, "signal": None})
    out({"event": "done"})


if __name__ == "__main__":
    asyncio.run(main())
