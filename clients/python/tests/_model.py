"""A stand-in for an OpenAI-compatible chat model as the server's fact
extractor calls it, on a free loopback port: it reads the turn and the
known facts the extractor sends (the user message's JSON) and answers
decisions computed from them. "I live in X" in a user message adds
"Lives in X.", or supersedes the known fact of another city; anything
else is ignored. While ``down`` is set it answers 503 (with Retry-After:
0, so that the server's retries do not wait), as a model that is
overloaded.
"""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict, List


def decide(turn: List[Dict[str, Any]], known: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """The decisions for a turn, given the user's known facts."""
    out: List[Dict[str, Any]] = []
    for msg in turn:
        m = re.search(r"I live in (\w+)", str(msg.get("content", "")))
        if msg.get("role") != "user" or not m:
            continue
        text = f"Lives in {m.group(1)}."
        d: Dict[str, Any] = {"action": "add", "text": text}
        for f in known:
            if str(f.get("text", "")).startswith("Lives in ") and f.get("text") != text:
                d = {"action": "supersede", "id": f["id"], "text": text, "confidence": 0.9}
        out.append(d)
    return out or [{"action": "ignore"}]


class Model:
    """The stand-in model, serving until stop()."""

    def __init__(self) -> None:
        self.down = False
        self.calls = 0
        model = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def do_POST(self) -> None:
                model.calls += 1
                req = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"{}")
                if model.down:
                    self.send_json(503, {"error": {"message": "overloaded"}})
                    return
                try:
                    given = json.loads(req["messages"][1]["content"])
                except (KeyError, IndexError, ValueError):
                    self.send_json(400, {"error": {"message": "not an extraction"}})
                    return
                answer = json.dumps({"decisions": decide(given.get("turn") or [], given.get("known_facts") or [])})
                self.send_json(200, {"id": "chatcmpl-1", "object": "chat.completion", "model": "stand-in",
                                     "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": answer}}]})

            def send_json(self, status: int, body: Any) -> None:
                raw = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                if status == 503:
                    self.send_header("Retry-After", "0")  # the client's retries go at once
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        #: The base URL to give serve --llm-base-url.
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(10)
