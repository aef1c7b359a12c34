"""The Python interop agent, built with agent-client-protocol (import name `acp`).

    python agent.py --script <script.json> [--report <file>]

It follows interop/peers/script.json: turn 1 streams every update this SDK can build, asks
permission (allowed, then rejected), reads and writes a file, runs a terminal if offered and
makes bad calls to check the client's error replies; turn 2 waits for session/cancel; turn 3 holds for a while
(this SDK has no `$/cancel_request`). session/load replays the history. What it saw goes to the
report file; stdout is the protocol channel.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import acp
from acp.schema import (
    AgentCapabilities,
    Implementation,
    InitializeResponse,
    LoadSessionResponse,
    NewSessionResponse,
    PermissionOption,
    PromptCapabilities,
    PromptResponse,
    SessionModeState,
    SessionNotification,
    ToolCallUpdate,
)
from pydantic import ValidationError

import trace_context
from common import error_code, load_script, parse_args, reporter

OPTS = parse_args(sys.argv[1:])
SCRIPT = load_script(OPTS["script"])
report = reporter(OPTS.get("report"))


def update_of(session_id: str, raw: dict[str, Any]) -> Any:
    """Builds the SDK's model of one `session/update` (raises ValidationError if unknown)."""
    return SessionNotification.model_validate({"sessionId": session_id, "update": raw}).update


class InteropAgent:
    def __init__(self) -> None:
        self.conn: Any = None
        self.caps: Any = None
        self.sessions = 0
        self.cwd: dict[str, str] = {}
        self.cancel_events: dict[str, asyncio.Event] = {}

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    async def send(self, session_id: str, raw: dict[str, Any]) -> None:
        await self.conn.session_update(session_id=session_id, update=update_of(session_id, raw))

    async def ask(self, session_id: str, tool_call: dict[str, Any]) -> Any:
        response = await self.conn.request_permission(
            session_id=session_id,
            tool_call=ToolCallUpdate.model_validate(tool_call),
            options=[PermissionOption.model_validate(o) for o in SCRIPT["permissionOptions"]],
        )
        outcome = response.outcome.model_dump(by_alias=True, exclude_none=True)
        report({"event": "permission", "toolCallId": tool_call["toolCallId"], "outcome": outcome})
        return outcome

    async def bad_call(self, name: str, method: str, params: dict[str, Any]) -> None:
        try:
            await self.conn._conn.send_request(method, params)
            report({"event": "error", "bad_call": name, "code": None})
        except Exception as e:  # noqa: BLE001 - the code is what we report
            report({"event": "error", "bad_call": name, "code": error_code(e)})

    async def initialize(self, protocol_version: int, client_capabilities: Any = None, client_info: Any = None, **kwargs: Any) -> InitializeResponse:
        self.caps = client_capabilities
        caps = client_capabilities.model_dump(by_alias=True, exclude_none=True) if client_capabilities else None
        report({"event": "initialize", "protocolVersion": protocol_version, "clientCapabilities": caps})
        return InitializeResponse(
            protocol_version=1,
            agent_capabilities=AgentCapabilities(
                load_session=True, prompt_capabilities=PromptCapabilities(image=True, embedded_context=True)
            ),
            agent_info=Implementation(name="py-interop-agent", version="0.12.1"),
        )

    async def new_session(self, cwd: str, mcp_servers: Any = None, **kwargs: Any) -> NewSessionResponse:
        self.sessions += 1
        session_id = f"py-session-{self.sessions}"
        self.cwd[session_id] = cwd
        return NewSessionResponse(session_id=session_id, modes=SessionModeState.model_validate(SCRIPT["modes"]))

    async def load_session(self, cwd: str, session_id: str, mcp_servers: Any = None, **kwargs: Any) -> LoadSessionResponse:
        self.cwd[session_id] = cwd
        for raw in SCRIPT["history"]:
            await self.send(session_id, raw)
        report({"event": "loaded", "sessionId": session_id})
        return LoadSessionResponse()

    async def prompt(self, prompt: list[Any], session_id: str, **kwargs: Any) -> PromptResponse:
        blocks = [b.type for b in prompt]
        words = " ".join(b.text for b in prompt if b.type == "text")
        report({"event": "prompt", "blocks": blocks, "text": words})
        if SCRIPT["prompts"]["cancel"] in words:
            return await self.cancel_turn(session_id)
        if SCRIPT["prompts"]["hold"] in words:
            return await self.hold_turn(session_id)
        return await self.work(session_id)

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        report({"event": "session_cancel", "sessionId": session_id})
        event = self.cancel_events.get(session_id)
        if event:
            event.set()

    async def work(self, session_id: str) -> PromptResponse:
        for raw in SCRIPT["updates"]:
            try:
                update = update_of(session_id, raw)
            except ValidationError:
                report({"event": "skipped", "update": raw["sessionUpdate"], "why": "not in the acp 0.12.1 schema"})
                continue
            await self.conn.session_update(session_id=session_id, update=update)
        cwd = self.cwd[session_id]
        read_path = f"{cwd}/{SCRIPT['workspace']['readFile']}"
        write_path = f"{cwd}/{SCRIPT['workspace']['writeFile']}"
        edit = {"toolCallId": "edit-1", "title": "Copy hello.txt", "kind": "edit", "status": "pending", "locations": [{"path": read_path}]}
        await self.send(session_id, {"sessionUpdate": "tool_call", **edit})
        allowed = await self.ask(session_id, edit)
        fs = self.caps.fs if self.caps else None
        if allowed["outcome"] == "selected" and allowed["optionId"].startswith("allow"):
            await self.send(session_id, {"sessionUpdate": "tool_call_update", "toolCallId": "edit-1", "status": "in_progress"})
            content = ""
            if fs and fs.read_text_file:
                content = (await self.conn.read_text_file(session_id=session_id, path=read_path)).content
                report({"event": "fs_read", "path": read_path, "content": content})
            if fs and fs.write_text_file:
                await self.conn.write_text_file(session_id=session_id, path=write_path, content=SCRIPT["workspace"]["writePrefix"] + content)
                report({"event": "fs_write", "path": write_path})
            await self.send(session_id, {"sessionUpdate": "tool_call_update", "toolCallId": "edit-1", "status": "completed", "content": [text(content)]})
        delete = {"toolCallId": "delete-1", "title": "Delete the workspace", "kind": "delete", "status": "pending"}
        await self.send(session_id, {"sessionUpdate": "tool_call", **delete})
        rejected = await self.ask(session_id, delete)
        failed = not (rejected["outcome"] == "selected" and rejected["optionId"].startswith("allow"))
        await self.send(session_id, {"sessionUpdate": "tool_call_update", "toolCallId": "delete-1", "status": "failed" if failed else "completed", "content": [text("not allowed" if failed else "deleted")]})

        if self.caps and self.caps.terminal:
            term = SCRIPT["terminal"]
            created = await self.conn.create_terminal(session_id=session_id, command=term["command"], args=term["args"], output_byte_limit=4096)
            tid = created.terminal_id
            await self.send(session_id, {"sessionUpdate": "tool_call", "toolCallId": "term-1", "title": "Run echo", "kind": "execute", "status": "in_progress", "content": [{"type": "terminal", "terminalId": tid}]})
            exit_status = await self.conn.wait_for_terminal_exit(session_id=session_id, terminal_id=tid)
            output = await self.conn.terminal_output(session_id=session_id, terminal_id=tid)
            await self.conn.release_terminal(session_id=session_id, terminal_id=tid)
            report({"event": "terminal", "output": output.output, "exitCode": exit_status.exit_code})
            await self.send(session_id, {"sessionUpdate": "tool_call_update", "toolCallId": "term-1", "status": "completed"})

        await self.bad_call("unknown_method", SCRIPT["unknownMethod"], {})
        await self.bad_call("invalid_params", "fs/read_text_file", {"sessionId": session_id})
        await self.send(session_id, {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "done"}})
        return PromptResponse(stop_reason="end_turn")

    async def cancel_turn(self, session_id: str) -> PromptResponse:
        event = asyncio.Event()
        self.cancel_events[session_id] = event
        await self.send(session_id, {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "starting a long task"}})
        long = {"toolCallId": "long-1", "title": "A long task", "kind": "execute", "status": "pending"}
        await self.send(session_id, {"sessionUpdate": "tool_call", **long})
        await self.ask(session_id, long)
        try:
            await asyncio.wait_for(event.wait(), SCRIPT["cancelWaitMs"] / 1000)
            via = "session/cancel"
        except asyncio.TimeoutError:
            via = "timeout"
        self.cancel_events.pop(session_id, None)
        report({"event": "cancelled", "via": via})
        await self.send(session_id, {"sessionUpdate": "tool_call_update", "toolCallId": "long-1", "status": "failed"})
        return PromptResponse(stop_reason="cancelled" if via == "session/cancel" else "end_turn")

    async def hold_turn(self, session_id: str) -> PromptResponse:
        await self.send(session_id, {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": SCRIPT["holdingMessage"]}})
        # acp 0.12.1 does not implement $/cancel_request: hold a while, then finish normally.
        await asyncio.sleep(SCRIPT["holdFallbackMs"] / 1000)
        report({"event": "hold_timeout"})
        return PromptResponse(stop_reason="end_turn")


def text(t: str) -> dict[str, Any]:
    return {"type": "content", "content": {"type": "text", "text": t}}


async def main() -> None:
    trace_context.install("py-interop-agent")
    try:
        await acp.run_agent(InteropAgent())
    finally:
        trace_context.shutdown()
    report({"event": "closed", "sdk": "python"})


if __name__ == "__main__":
    asyncio.run(main())
