#!/usr/bin/env python3
"""A loopback fake of three model APIs, enough to drive real ACP agents offline.

    python3 fake_model_api.py --vendor anthropic|openai|gemini --port N [--log FILE]

It listens on 127.0.0.1 only and answers streaming requests in the vendor's SSE format:

* Anthropic Messages API   POST /v1/messages                       (stream: true)
* OpenAI Chat Completions  POST /v1/chat/completions (or /chat/completions, stream: true)
* Gemini API               POST /v1beta/models/M:streamGenerateContent?alt=sse
                           POST /v1beta/models/M:generateContent, :countTokens

Every turn follows one small script, decided from the request alone (the fake keeps no
state), so any agent gets the same conversation:

1. the user's last text asks for a "long task" (acp check's cancel prompts): first a call
   of the write tool on long.txt (permission is asked, so a cancel can land then), then a slow text
   stream, one chunk every 0.5 s for at most 40 chunks, so the turn can be cancelled;
2. no tool result yet in this turn: call the agent's read tool on hello.txt;
3. one tool result: call the agent's write tool on note.txt (a permission-requiring tool),
   or on NAME.txt when the user's text says "write NAME.txt";
4. otherwise: a short text answer.

Tools are found by name in the request's tool list and their required arguments filled in
by name (paths get the absolute path in the session's working directory, found in the
system prompt; text arguments get a short text). A step whose tool the agent lacks is
skipped. Side requests (non-streaming, titles, JSON-schema checks) get a short answer.
"""

import argparse
import json
import re
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

READ_NAMES = ["mcp__acp__Read", "Read", "read_file", "ReadFile", "read"]
WRITE_NAMES = ["mcp__acp__Write", "Write", "write_file", "WriteFile", "write"]
NOTE = "note.txt"
NOTE_TEXT = "written by the fake model through the agent's write tool\n"
FINAL_TEXT = "Done: I read hello.txt and wrote note.txt."
SLOW_CHUNKS = 40
SLOW_PAUSE = 0.5

LOG_LOCK = threading.Lock()
LOG_PATH = None


def log(kind, **fields):
    if not LOG_PATH:
        return
    with LOG_LOCK, open(LOG_PATH, "a") as f:
        f.write(json.dumps({"t": round(time.time(), 3), "kind": kind, **fields}) + "\n")


CWD_PATTERNS = [
    r"Working directory:\s*(/[^\s`'\"]+)",
    r"working directory[^/\n]{0,40}(/[^\s`'\"]+)",
    r"current working directory[^/\n]{0,40}(/[^\s`'\"]+)",
    r"working in the directory:?\s*(/[^\s`'\"]+)",
]


def find_cwd(text):
    for pattern in CWD_PATTERNS:
        m = re.search(pattern, text, re.IGNORECASE)
        if m:
            return m.group(1).rstrip(".,:;)")
    return None


def fill_args(schema, cwd, file_name, text):
    """Arguments for a tool: every required property (and `content`) filled by its name."""
    props = (schema or {}).get("properties", {}) or {}
    required = (schema or {}).get("required", []) or list(props)
    path = f"{cwd}/{file_name}" if cwd else file_name
    args = {}
    for name in required:
        lname = name.lower()
        kind = (props.get(name) or {}).get("type")
        if "path" in lname or lname in ("file", "filename"):
            args[name] = path
        elif lname in ("content", "contents", "text", "new_string"):
            args[name] = text
        elif kind in ("integer", "number"):
            args[name] = 1
        elif kind == "boolean":
            args[name] = False
        else:
            args[name] = text
    if "content" in props and "content" not in args and text:
        args["content"] = text
    return args


def plan(last_user_text, tool_results, tools, cwd):
    """The next step: ("slow",), ("tool", name, args) or ("text", words)."""
    m = re.search(r"\bwrite ([\w.-]+\.txt)\b", last_user_text or "")
    write_to = m.group(1) if m else NOTE
    if "long task" in (last_user_text or "").lower():
        # A permission-requiring call first (a cancel can land while permission is
        # asked), then a slow stream (a cancel can land mid-stream).
        for n in WRITE_NAMES:
            if n in tools and tool_results == 0:
                name = write_to if m else "long.txt"
                return ("tool", n, fill_args(tools[n], cwd, name, "long task\n"))
        return ("slow",)
    if (last_user_text or "").lstrip().startswith("[SUGGESTION MODE"):
        return ("text", "")
    steps = []
    for names, file_name, text in (
        (READ_NAMES, "hello.txt", ""),
        (WRITE_NAMES, write_to, NOTE_TEXT),
    ):
        for n in names:
            if n in tools:
                steps.append(("tool", n, fill_args(tools[n], cwd, file_name, text)))
                break
    if tool_results < len(steps):
        return steps[tool_results]
    return ("text", FINAL_TEXT)


def slow_words():
    for i in range(SLOW_CHUNKS):
        yield f"working {i} "
        time.sleep(SLOW_PAUSE)


# --- request readers ------------------------------------------------------------------


def text_of(content):
    if isinstance(content, str):
        return content
    out = []
    for part in content or []:
        if isinstance(part, dict):
            if isinstance(part.get("text"), str):
                out.append(part["text"])
            elif isinstance(part.get("content"), (str, list)) and part.get("type") != "tool_result":
                out.append(text_of(part["content"]))
    return "\n".join(out)


def read_anthropic(body):
    msgs = body.get("messages", [])
    results = 0
    last_text = ""
    for m in reversed(msgs):
        if m.get("role") != "user":
            continue
        content = m.get("content")
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
        if any(isinstance(b, dict) and b.get("type") == "tool_result" for b in blocks):
            results += 1
            continue
        last_text = text_of(content)
        break
    tools = {t["name"]: t.get("input_schema") for t in body.get("tools", []) if "name" in t}
    system = body.get("system")
    everything = text_of(system) + "\n" + "\n".join(text_of(m.get("content")) for m in msgs)
    return last_text, results, tools, find_cwd(everything)


def read_openai(body):
    msgs = body.get("messages", [])
    results = 0
    last_text = ""
    for m in reversed(msgs):
        if m.get("role") == "tool":
            results += 1
        elif m.get("role") == "user":
            last_text = text_of(m.get("content"))
            break
    tools = {}
    for t in body.get("tools", []) or []:
        f = t.get("function", {})
        if "name" in f:
            tools[f["name"]] = f.get("parameters")
    everything = "\n".join(text_of(m.get("content")) for m in msgs)
    return last_text, results, tools, find_cwd(everything)


def read_gemini(body):
    contents = body.get("contents", [])
    results = 0
    last_text = ""
    for c in reversed(contents):
        if c.get("role", "user") != "user":
            continue
        parts = c.get("parts", [])
        if any("functionResponse" in p for p in parts):
            results += 1
            continue
        last_text = text_of(parts)
        break
    tools = {}
    for t in body.get("tools", []) or []:
        for f in t.get("functionDeclarations", []) or []:
            tools[f["name"]] = f.get("parametersJsonSchema") or f.get("parameters")
    system = body.get("systemInstruction") or body.get("system_instruction") or {}
    everything = text_of(system.get("parts", [])) + "\n" + "\n".join(
        text_of(c.get("parts", [])) for c in contents
    )
    return last_text, results, tools, find_cwd(everything)


# --- the server -----------------------------------------------------------------------


class Handler(BaseHTTPRequestHandler):
    vendor = "anthropic"

    def log_message(self, fmt, *args):
        pass

    def do_GET(self):
        log("get", path=self.path)
        if self.vendor == "openai" and self.path.rstrip("/").endswith("/models"):
            return self.json({"object": "list", "data": [{"id": "fake-model", "object": "model"}]})
        if self.vendor == "gemini" and "/models" in self.path:
            return self.json({"models": [{"name": "models/gemini-2.5-pro"}]})
        self.json({"ok": True})

    def do_HEAD(self):
        self.send_response(200)
        self.end_headers()

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {}
        path = self.path
        try:
            if self.vendor == "anthropic":
                self.anthropic(path, body)
            elif self.vendor == "openai":
                self.openai(path, body)
            else:
                self.gemini(path, body)
        except (BrokenPipeError, ConnectionResetError):
            log("client_gone", path=path)

    # helpers

    def json(self, obj, status=200):
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def sse_start(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()

    def sse(self, data, event=None):
        chunk = ""
        if event:
            chunk += f"event: {event}\n"
        chunk += f"data: {data if isinstance(data, str) else json.dumps(data)}\n\n"
        self.wfile.write(chunk.encode())
        self.wfile.flush()

    # Anthropic

    def anthropic(self, path, body):
        if "count_tokens" in path:
            return self.json({"input_tokens": 100})
        if not path.split("?")[0].endswith("/messages"):
            log("other", path=path)
            return self.json({"type": "error", "error": {"type": "not_found_error", "message": path}}, 404)
        last, results, tools, cwd = read_anthropic(body)
        step = plan(last, results, tools, cwd) if body.get("tools") else ("text", "Fake title")
        log("request", vendor="anthropic", path=path, stream=body.get("stream"), model=body.get("model"),
            last=last[:200], results=results, tools=sorted(tools), cwd=cwd, step=step[:2])
        model = body.get("model", "claude-fake")
        msg_id = "msg_" + uuid.uuid4().hex[:20]
        usage = {"input_tokens": 10, "output_tokens": 5, "cache_creation_input_tokens": 0,
                 "cache_read_input_tokens": 0}
        if not body.get("stream"):
            text = FINAL_TEXT if step[0] != "tool" else "ok"
            return self.json({"id": msg_id, "type": "message", "role": "assistant", "model": model,
                              "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
                              "stop_sequence": None, "usage": usage})
        self.sse_start()
        self.sse({"type": "message_start", "message": {
            "id": msg_id, "type": "message", "role": "assistant", "model": model, "content": [],
            "stop_reason": None, "stop_sequence": None, "usage": usage}}, "message_start")
        stop = "end_turn"
        if step[0] == "tool":
            _, name, args = step
            self.sse({"type": "content_block_start", "index": 0, "content_block": {
                "type": "tool_use", "id": "toolu_" + uuid.uuid4().hex[:20], "name": name, "input": {}}},
                "content_block_start")
            self.sse({"type": "content_block_delta", "index": 0, "delta": {
                "type": "input_json_delta", "partial_json": json.dumps(args)}}, "content_block_delta")
            stop = "tool_use"
        else:
            self.sse({"type": "content_block_start", "index": 0,
                      "content_block": {"type": "text", "text": ""}}, "content_block_start")
            words = slow_words() if step[0] == "slow" else [step[1]]
            for w in words:
                self.sse({"type": "content_block_delta", "index": 0,
                          "delta": {"type": "text_delta", "text": w}}, "content_block_delta")
        self.sse({"type": "content_block_stop", "index": 0}, "content_block_stop")
        self.sse({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                  "usage": {"output_tokens": 5}}, "message_delta")
        self.sse({"type": "message_stop"}, "message_stop")

    # OpenAI

    def openai(self, path, body):
        if not path.split("?")[0].endswith("/chat/completions"):
            log("other", path=path)
            return self.json({"error": {"message": f"no route {path}", "type": "invalid_request_error"}}, 404)
        last, results, tools, cwd = read_openai(body)
        step = plan(last, results, tools, cwd) if tools else ("text", FINAL_TEXT)
        log("request", vendor="openai", path=path, stream=body.get("stream"), model=body.get("model"),
            last=last[:200], results=results, tools=sorted(tools), cwd=cwd, step=step[:2])
        model = body.get("model", "fake-model")
        cid = "chatcmpl-" + uuid.uuid4().hex[:20]
        created = int(time.time())
        usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
        if not body.get("stream"):
            text = step[1] if step[0] == "text" else "ok"
            if body.get("response_format", {}).get("type") in ("json_object", "json_schema"):
                text = "{}"
            return self.json({"id": cid, "object": "chat.completion", "created": created, "model": model,
                              "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                           "finish_reason": "stop"}], "usage": usage})

        def chunk(delta, finish=None, with_usage=False):
            c = {"id": cid, "object": "chat.completion.chunk", "created": created, "model": model,
                 "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
            if with_usage:
                c["usage"] = usage
            self.sse(c)

        self.sse_start()
        chunk({"role": "assistant", "content": ""})
        if step[0] == "tool":
            _, name, args = step
            chunk({"tool_calls": [{"index": 0, "id": "call_" + uuid.uuid4().hex[:20], "type": "function",
                                   "function": {"name": name, "arguments": json.dumps(args)}}]})
            chunk({}, "tool_calls", True)
        else:
            words = slow_words() if step[0] == "slow" else [step[1]]
            for w in words:
                chunk({"content": w})
            chunk({}, "stop", True)
        self.sse("[DONE]")

    # Gemini

    def gemini(self, path, body):
        route = path.split("?")[0]
        if route.endswith(":countTokens"):
            return self.json({"totalTokens": 100})
        if not (route.endswith(":streamGenerateContent") or route.endswith(":generateContent")):
            log("other", path=path)
            return self.json({"error": {"code": 404, "message": f"no route {path}", "status": "NOT_FOUND"}}, 404)
        last, results, tools, cwd = read_gemini(body)
        cfg = body.get("generationConfig") or {}
        step = plan(last, results, tools, cwd) if tools else ("text", FINAL_TEXT)
        log("request", vendor="gemini", path=path, last=last[:200], results=results, tools=sorted(tools),
            cwd=cwd, step=step[:2], mime=cfg.get("responseMimeType"))
        usage = {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15}

        def response(parts, finish=None):
            cand = {"content": {"role": "model", "parts": parts}, "index": 0}
            if finish:
                cand["finishReason"] = finish
            return {"candidates": [cand], "usageMetadata": usage, "modelVersion": "gemini-fake"}

        if route.endswith(":generateContent"):
            if cfg.get("responseMimeType") == "application/json" or cfg.get("responseJsonSchema") or cfg.get("responseSchema"):
                text = json.dumps(json_for(cfg))
            else:
                text = step[1] if step[0] == "text" else "ok"
            return self.json(response([{"text": text}], "STOP"))
        self.sse_start()
        if step[0] == "tool":
            _, name, args = step
            self.sse(response([{"functionCall": {"name": name, "args": args}}], "STOP"))
        else:
            words = slow_words() if step[0] == "slow" else [step[1]]
            for w in words:
                self.sse(response([{"text": w}]))
            self.sse(response([{"text": ""}], "STOP"))


def json_for(cfg):
    """A plausible answer to a JSON-schema side request (gemini's next-speaker check etc.)."""
    schema = cfg.get("responseJsonSchema") or cfg.get("responseSchema") or {}
    props = schema.get("properties", {}) or {}
    out = {}
    for name, p in props.items():
        t = (p.get("type") or "").lower()
        if name == "next_speaker":
            out[name] = "user"
        elif "enum" in p:
            out[name] = p["enum"][0]
        elif t == "boolean":
            out[name] = False
        elif t in ("integer", "number"):
            out[name] = 0
        elif t == "array":
            out[name] = []
        elif t == "object":
            out[name] = {}
        else:
            out[name] = "fake"
    return out


def main():
    global LOG_PATH
    ap = argparse.ArgumentParser()
    ap.add_argument("--vendor", choices=["anthropic", "openai", "gemini"], required=True)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--log")
    a = ap.parse_args()
    LOG_PATH = a.log
    Handler.vendor = a.vendor
    server = ThreadingHTTPServer(("127.0.0.1", a.port), Handler)
    server.daemon_threads = True
    print(f"fake {a.vendor} API on http://127.0.0.1:{a.port}", file=sys.stderr, flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
