"""A fake OpenAI-compatible model that streams at a fixed rate, for load: its own process, a
bare asyncio HTTP/1.1 server (keep-alive, chunked), no framework, so that a thousand streams
cost it little.

    python3 benchmarks/fake_rate_model.py --port 8199 --rate 30 --tokens 20

``POST /v1/chat/completions`` (streamed Chat Completions) answers every call with ``--tokens``
text chunks, one every ``1 / --rate`` seconds, each chunk's text ``@<ns>~`` where ``<ns>`` is
``time.monotonic_ns()`` as it is written (the clock every process of the machine shares: a
client reading the token subtracts it). A call whose last message is not a tool result ends
with one call of the harness's ``create_plan``; one that answers a tool result ends the turn
(``stop``). A call whose first user text starts with ``instant`` answers ``ok`` at once, no
tool call: what the benchmark uses to park many conversations fast.

benchmarks/harness_scale.py starts it; tests/benchmarks/test_fake_rate_model.py checks its
pacing and its shapes.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from typing import Any, cast

MAX_HEAD = 16 * 1024
MAX_BODY = 8 * 1024 * 1024
PLAN = json.dumps({"steps": [{"name": "a"}]})


def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    """One SSE event of a Chat Completions stream, framed as an HTTP/1.1 chunk."""
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    event = {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m"}
    return framed(b"data: " + json.dumps({**event, "choices": [choice]}).encode() + b"\n\n")


def framed(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


USAGE = framed(
    b'data: {"id":"c","object":"chat.completion.chunk","created":0,"model":"m","choices":[],'
    b'"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}\n\n'
) + framed(b"data: [DONE]\n\n")
HEAD = (
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
    b"transfer-encoding: chunked\r\ncache-control: no-cache\r\n\r\n"
)
TOOL_CALL = chunk(
    {
        "tool_calls": [
            {
                "index": 0,
                "id": "call_plan",
                "type": "function",
                "function": {"name": "create_plan", "arguments": PLAN},
            }
        ]
    }
)


def kind(body: dict[str, Any]) -> str:
    """``instant``, ``answer`` (after a tool result) or ``tool`` (stream, then call a tool)."""
    messages = body.get("messages") or []
    if messages and messages[-1].get("role") == "tool":
        return "answer"
    for message in messages:
        if message.get("role") == "user":
            content = message.get("content")
            text = content if isinstance(content, str) else json.dumps(content)
            if "instant" in text[:200]:
                return "instant"
            break
    return "tool"


class Stream(asyncio.Protocol):
    """One client connection: requests in turn, each answered by a paced stream."""

    def __init__(self, rate: float, tokens: int) -> None:
        self.interval = 1.0 / rate
        self.tokens = tokens
        self.buffer = b""
        self.busy = False
        self.transport: asyncio.Transport | None = None
        self.loop = asyncio.get_running_loop()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's is not a subclass

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        if len(self.buffer) > MAX_HEAD + MAX_BODY:
            self.fail(b"413 Content Too Large")
        elif not self.busy:
            self.next_request()

    def fail(self, status: bytes) -> None:
        if self.transport is not None:
            self.transport.write(b"HTTP/1.1 " + status + b"\r\ncontent-length: 0\r\n\r\n")
            self.transport.close()

    def next_request(self) -> None:
        end = self.buffer.find(b"\r\n\r\n")
        if end < 0:
            if len(self.buffer) > MAX_HEAD:
                self.fail(b"431 Request Header Fields Too Large")
            return
        head = self.buffer[:end].decode("latin-1").split("\r\n")
        length = 0
        for line in head[1:]:
            name, _, value = line.partition(":")
            if name.strip().lower() == "content-length":
                length = int(value.strip())
        if length > MAX_BODY:
            self.fail(b"413 Content Too Large")
            return
        if len(self.buffer) < end + 4 + length:
            return
        body, self.buffer = self.buffer[end + 4 : end + 4 + length], self.buffer[end + 4 + length :]
        if not head[0].startswith("POST /v1/chat/completions"):
            self.fail(b"404 Not Found")
            return
        try:
            asked = json.loads(body)
        except ValueError:
            self.fail(b"400 Bad Request")
            return
        self.busy = True
        assert self.transport is not None
        self.transport.write(HEAD + chunk({"role": "assistant", "content": ""}))
        what = kind(asked if isinstance(asked, dict) else {})
        if what == "instant":
            self.transport.write(chunk({"content": "ok"}) + chunk({}, "stop") + USAGE)
            self.done()
        else:
            self.send(what, 0, time.monotonic())

    def send(self, what: str, sent: int, began: float) -> None:
        """Write token ``sent`` now, and plan the next one on the rate's grid."""
        if self.transport is None:
            return
        self.transport.write(chunk({"content": f"@{time.monotonic_ns()}~"}))
        sent += 1
        if sent < self.tokens:
            self.loop.call_at(began + sent * self.interval, self.send, what, sent, began)
            return
        end = TOOL_CALL + chunk({}, "tool_calls") if what == "tool" else chunk({}, "stop")
        self.transport.write(end + USAGE)
        self.done()

    def done(self) -> None:
        assert self.transport is not None
        self.transport.write(b"0\r\n\r\n")
        self.busy = False
        if self.buffer:
            self.next_request()


async def serve(port: int, rate: float, tokens: int) -> None:
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: Stream(rate, tokens), "127.0.0.1", port, backlog=4096)
    print(f"serving on {port}", flush=True)
    async with server:
        await server.serve_forever()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--rate", type=float, default=30.0, help="tokens per second per stream")
    parser.add_argument("--tokens", type=int, default=20, help="text chunks per model call")
    args = parser.parse_args()
    try:
        import uvloop

        uvloop.install()
    except ImportError:
        pass
    asyncio.run(serve(args.port, args.rate, args.tokens))


if __name__ == "__main__":
    main()
