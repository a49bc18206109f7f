"""Two ``accord serve`` processes for the delegation tests: A, whose harness delegates, and B,
whose harness (or the official SDK's server) works on A's sub-tasks; both with API keys.

B's card lists JSON-RPC first; :class:`CardServer` serves copies of it that prefer another
binding, so that A's roster can name B once per binding."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
from tests.harness.harness_proc import write_settings

KEYS = {"alice": "alice-key-0123456789", "bob": "bob-key-0123456789"}
A_AT_B = "a-at-b-key-0123456789"  # A's key at B: its identity there is accord-a
A_ENV = {"B_KEY": A_AT_B}
ALICE = {"X-API-Key": KEYS["alice"]}
HEADERS = {"A2A-Version": "1.0", "Content-Type": "application/json"}
FAST = "[harness.delivery]\nretry_base_s = 0.1\nretry_max_s = 0.5\npoll_interval_s = 0.2\n"


def principals(keys: dict[str, str]) -> str:
    return "".join(
        f'[[principals]]\nidentity = "{who}"\nactors = ["a2a.tasks.Client"]\napi_key = "{key}"\n'
        for who, key in keys.items()
    )


def b_config(workdir: Path, script: list[dict[str, Any]], top: str = "") -> Path:
    """B: a harness answering with ``script``, A known as ``accord-a``; ``top``: settings
    outside the ``[harness]`` table."""
    folder = workdir / "b"
    folder.mkdir(exist_ok=True)
    config = write_settings(folder, "", script=script)
    config.write_text(top + config.read_text() + principals({"accord-a": A_AT_B}))
    return config


def a_config(
    workdir: Path,
    script: list[dict[str, Any]],
    agents: dict[str, str],
    credentials: str = '{ api_key_env = "B_KEY" }',
    *,
    harness: str = "",
    delivery: str = FAST,
    top: str = "",
) -> Path:
    """A: a harness answering with ``script``, whose roster names each of ``agents`` (id:
    card URL) with ``credentials``; alice and bob are its users. ``harness``: more of the
    ``[harness]`` table, ``delivery`` its ``[harness.delivery]``, ``top`` settings outside."""
    folder = workdir / "a"
    folder.mkdir(exist_ok=True)
    roster = "".join(
        f'[[harness.agents]]\nid = "{agent}"\ncard = "{card}"\ncredentials = {credentials}\n'
        for agent, card in agents.items()
    )
    config = write_settings(folder, harness + roster + delivery, script=script)
    config.write_text(top + config.read_text() + principals(KEYS))
    return config


class CardServer:
    """Serves agent cards at ``/<name>.json`` (a thread of this process)."""

    def __init__(self) -> None:
        self.cards: dict[str, bytes] = {}
        cards = self.cards

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                body = cards.get(self.path.lstrip("/"))
                self.send_response(200 if body is not None else 404)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body or b"")))
                self.end_headers()
                self.wfile.write(body or b"")

            def log_message(self, *args: Any) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/{name}.json"

    def prefer(self, base_url: str, binding: str) -> str:
        """B's card (at ``base_url``) with ``binding`` listed first; its URL here."""
        card = httpx.get(f"{base_url}/.well-known/agent-card.json", timeout=10).json()
        interfaces = card["supportedInterfaces"]
        card["supportedInterfaces"] = sorted(
            interfaces, key=lambda i: i["protocolBinding"] != binding
        )
        name = binding.replace("+", "-").lower()
        self.cards[f"{name}.json"] = json.dumps(card).encode()
        return self.url(name)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@contextmanager
def card_server() -> Iterator[CardServer]:
    server = CardServer()
    try:
        yield server
    finally:
        server.close()


def rpc(url: str, method: str, params: dict[str, Any], headers: dict[str, str]) -> Any:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    answer = httpx.post(url, json=body, headers={**HEADERS, **headers}, timeout=30).json()
    assert "result" in answer, answer
    return answer["result"]
