"""A remote hook server over real HTTP for tests: JSON-RPC 2.0 on POST, one behaviour per
path, every request kept."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class HookServer:
    url: str
    requests: list[dict[str, Any]] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)

    def at(self, path: str) -> str:
        return f"{self.url}/{path}"


def _answer(path: str, request: dict[str, Any]) -> tuple[int, bytes]:
    """What ``path`` answers to ``request``: (HTTP status, body)."""
    context = request["params"]["context"]
    reply: dict[str, Any] = {"jsonrpc": "2.0", "id": request["id"]}
    if path == "/pass":
        reply["result"] = None
    elif path == "/abort":
        reply["result"] = {"abort": {"reason": "policy", "message": "closed for the day"}}
    elif path == "/abort-odd":
        reply["result"] = {"abort": {"reason": "because"}}
    elif path == "/replace":  # message.received: shout it; command.invoked.in: answer
        if "message" in context:
            parts = [{"text": p.get("text", "").upper()} for p in context["message"]["parts"]]
            context["message"]["parts"] = parts
        else:
            args = context["arguments"]
            context["result"] = {"reply": f"remote says {args}", "settings": {"model": "other"}}
        reply["result"] = {"context": context}
    elif path == "/bad-context":
        reply["result"] = {"context": {**context, "unknown": 1}}
    elif path == "/error":
        reply["error"] = {"code": -32000, "message": "internal trouble"}
    elif path == "/wrong-id":
        reply["id"] = -1
        reply["result"] = None
    elif path == "/garbage":
        return 200, b"<html>not json</html>"
    elif path == "/http500":
        return 500, b"{}"
    else:
        return 404, b""
    return 200, json.dumps(reply).encode()


@contextmanager
def hook_server() -> Iterator[HookServer]:
    server_ref: list[HookServer] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", 0))
            request = json.loads(self.rfile.read(length))
            hooks = server_ref[0]
            hooks.requests.append({"path": self.path, **request})
            if self.path == "/slow":
                hooks.release.wait(30)
                status, body = (
                    200,
                    json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": None}).encode(),
                )
            else:
                status, body = _answer(self.path, request)
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            return None

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    hooks = HookServer(f"http://127.0.0.1:{server.server_address[1]}")
    server_ref.append(hooks)
    try:
        yield hooks
    finally:
        hooks.release.set()
        server.shutdown()
        server.server_close()
