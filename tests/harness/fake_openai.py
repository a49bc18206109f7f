"""A fake OpenAI-compatible server for the tests: real HTTP, real streaming (SSE) in the wire
format of both Chat Completions and the Responses API, scripted answers.

A test queues :class:`Reply` objects; each request takes the next one (an empty queue answers
"ok"). A reply streams its text in chunks (with a pause between them if asked), then its tool
calls, then usage; or fails with an HTTP status before streaming; or cuts its stream after some
chunks. Every request's JSON body is kept in ``requests`` for the test to inspect.

    with FakeOpenAI() as fake:
        fake.replies.append(Reply(["Hel", "lo"], usage=(10, 2, 4)))
        ...  base_url=fake.base_url
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route


@dataclass
class Reply:
    chunks: list[str] = field(default_factory=lambda: ["ok"])
    tool_calls: list[tuple[str, str, dict[str, Any]]] = field(
        default_factory=list
    )  # id, name, args
    usage: tuple[int, int, int] = (10, 5, 0)  # in, out, cached
    status: int = 200  # not 200: answer this status (and a JSON error) instead of a stream
    pause_s: float = 0.0  # between chunks
    cut_after: int | None = None  # end the connection after this many text chunks
    # Set by the test: the chunks after the first wait for it (the client saw the first one)
    held_until: threading.Event | None = None


def _sse(data: dict[str, Any], event: str | None = None) -> bytes:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(data)}\n\n".encode()


class FakeOpenAI:
    def __init__(self) -> None:
        self.replies: deque[Reply] = deque()
        self.requests: list[dict[str, Any]] = []
        self.sent_at: list[float] = []  # time.monotonic() as each text chunk was written
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = int(sock.getsockname()[1])
        app = Starlette(
            routes=[
                Route("/v1/chat/completions", self._chat, methods=["POST"]),
                Route("/v1/responses", self._responses, methods=["POST"]),
            ]
        )
        config = uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> FakeOpenAI:
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("the fake OpenAI server did not start")
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(10)

    async def _take(self, request: Request) -> tuple[dict[str, Any], Reply]:
        body = await request.json()
        self.requests.append(body)
        reply = self.replies.popleft() if self.replies else Reply()
        return body, reply

    @staticmethod
    def _refusal(reply: Reply) -> Response:
        error = {"error": {"message": f"fake failure {reply.status}", "type": "server_error"}}
        return JSONResponse(error, status_code=reply.status)

    async def _text(self, reply: Reply) -> AsyncIterator[str | None]:
        """The reply's text chunks, paced; None where the stream must be cut."""
        for index, chunk in enumerate(reply.chunks):
            if reply.cut_after is not None and index >= reply.cut_after:
                yield None
                return
            if index == 1 and reply.held_until is not None:
                await asyncio.to_thread(reply.held_until.wait, 30)
            if index and reply.pause_s:
                await asyncio.sleep(reply.pause_s)
            self.sent_at.append(time.monotonic())
            yield chunk

    # --- Chat Completions ------------------------------------------------------------------

    async def _chat(self, request: Request) -> Response:
        body, reply = await self._take(request)
        if reply.status != 200:
            return self._refusal(reply)
        model = body.get("model", "fake")

        def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
            return _sse(
                {
                    "id": "chatcmpl-fake",
                    "object": "chat.completion.chunk",
                    "created": 0,
                    "model": model,
                    "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
                }
            )

        async def events() -> AsyncIterator[bytes]:
            yield chunk({"role": "assistant", "content": ""})
            async for text in self._text(reply):
                if text is None:
                    raise ConnectionResetError("cut by the test")
                yield chunk({"content": text})
            for index, (call_id, name, arguments) in enumerate(reply.tool_calls):
                encoded = json.dumps(arguments)
                half = len(encoded) // 2
                yield chunk(
                    {
                        "tool_calls": [
                            {
                                "index": index,
                                "id": call_id,
                                "type": "function",
                                "function": {"name": name, "arguments": encoded[:half]},
                            }
                        ]
                    }
                )
                yield chunk(
                    {"tool_calls": [{"index": index, "function": {"arguments": encoded[half:]}}]}
                )
            yield chunk({}, "tool_calls" if reply.tool_calls else "stop")
            used_in, used_out, cached = reply.usage
            yield _sse(
                {
                    "id": "chatcmpl-fake",
                    "object": "chat.completion.chunk",
                    "created": 0,
                    "model": model,
                    "choices": [],
                    "usage": {
                        "prompt_tokens": used_in,
                        "completion_tokens": used_out,
                        "total_tokens": used_in + used_out,
                        "prompt_tokens_details": {"cached_tokens": cached},
                    },
                }
            )
            yield b"data: [DONE]\n\n"

        return StreamingResponse(events(), media_type="text/event-stream")

    # --- Responses -------------------------------------------------------------------------

    async def _responses(self, request: Request) -> Response:
        body, reply = await self._take(request)
        if reply.status != 200:
            return self._refusal(reply)
        model = body.get("model", "fake")
        base = {"id": "resp_fake", "object": "response", "created_at": 0, "model": model}
        sequence = iter(range(1_000_000))

        def event(kind: str, **fields: Any) -> bytes:
            return _sse({"type": kind, "sequence_number": next(sequence), **fields}, kind)

        async def events() -> AsyncIterator[bytes]:
            yield event(
                "response.created", response={**base, "status": "in_progress", "output": []}
            )
            async for text in self._text(reply):
                if text is None:
                    raise ConnectionResetError("cut by the test")
                yield event(
                    "response.output_text.delta",
                    item_id="msg_fake",
                    output_index=0,
                    content_index=0,
                    delta=text,
                    logprobs=[],
                )
            for index, (call_id, name, arguments) in enumerate(reply.tool_calls, start=1):
                item = {
                    "type": "function_call",
                    "id": f"fc_{index}",
                    "call_id": call_id,
                    "name": name,
                    "arguments": json.dumps(arguments),
                    "status": "completed",
                }
                yield event("response.output_item.done", output_index=index, item=item)
            used_in, used_out, cached = reply.usage
            usage = {
                "input_tokens": used_in,
                "output_tokens": used_out,
                "total_tokens": used_in + used_out,
                "input_tokens_details": {"cached_tokens": cached},
                "output_tokens_details": {"reasoning_tokens": 0},
            }
            done = {**base, "status": "completed", "output": [], "usage": usage}
            yield event("response.completed", response=done)

        return StreamingResponse(events(), media_type="text/event-stream")
