#!/usr/bin/env python3
"""A loopback fake of the OpenAI Responses API (POST /v1/responses, stream: true) for Codex's
ACP adapter (a `wire_api = "responses"` provider):
every turn is one short text answer, streamed as response.created, output_text deltas,
output_item.done and response.completed. 127.0.0.1 only."""
import argparse, json, sys, time, uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, fmt, *args):
        sys.stderr.write("fake-responses: " + fmt % args + "\n")
    def do_GET(self):
        body = json.dumps({"object": "list", "data": [{"id": "fake-model", "object": "model"}]}).encode()
        self.send_response(200); self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body))); self.end_headers(); self.wfile.write(body)
    def do_POST(self):
        n = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(n)
        try:
            req = json.loads(raw or b"{}")
        except ValueError:
            req = {}
        sys.stderr.write(f"fake-responses: POST {self.path} stream={req.get('stream')} tools={len(req.get('tools') or [])}\n")
        rid = "resp_" + uuid.uuid4().hex[:12]
        mid = "msg_" + uuid.uuid4().hex[:12]
        text = "Done: a short answer from the fake Responses API."
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("connection", "close")
        self.end_headers()
        def ev(obj):
            self.wfile.write(f"event: {obj['type']}\ndata: {json.dumps(obj)}\n\n".encode()); self.wfile.flush()
        ev({"type": "response.created", "response": {"id": rid, "status": "in_progress"}})
        item = {"type": "message", "id": mid, "role": "assistant", "status": "in_progress", "content": []}
        ev({"type": "response.output_item.added", "output_index": 0, "item": item})
        for word in text.split(" "):
            ev({"type": "response.output_text.delta", "item_id": mid, "output_index": 0, "content_index": 0, "delta": word + " "})
        done = {"type": "message", "id": mid, "role": "assistant", "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}]}
        ev({"type": "response.output_item.done", "output_index": 0, "item": done})
        ev({"type": "response.completed", "response": {"id": rid, "status": "completed", "output": [done],
            "usage": {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 5,
                      "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 15}}})
        self.close_connection = True

p = argparse.ArgumentParser(); p.add_argument("--port", type=int, required=True)
a = p.parse_args()
ThreadingHTTPServer(("127.0.0.1", a.port), H).serve_forever()
