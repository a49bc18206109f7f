"""A fake OpenAI-compatible server for the tests: real HTTP, real streaming (SSE) in the wire
format of both Chat Completions and the Responses API, scripted answers.

A test queues :class:`Reply` objects; each request takes the next one (an empty queue answers
"ok"). A reply streams its text in chunks (with a pause between them if asked), then its tool
calls, then usage; or fails with an HTTP status before streaming; or cuts its stream after some
chunks; or streams the raw bytes a test wrote (``Reply.raw``). Every request's JSON body is
kept in ``requests`` for the test to inspect (the plumbing, and :class:`Reply`, are
tests/harness/fake_model_server.py's).

    with FakeOpenAI() as fake:
        fake.replies.append(Reply(["Hel", "lo"], usage=(10, 2, 4)))
        ...  base_url=fake.base_url
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from tests.harness.fake_model_server import FakeModelServer, Reply, sse

__all__ = ["FakeOpenAI", "Reply"]


class FakeOpenAI(FakeModelServer):
    name = "OpenAI"

    def __init__(self, port: int = 0) -> None:
        super().__init__(
            [
                Route("/v1/chat/completions", self._chat, methods=["POST"]),
                Route("/v1/responses", self._responses, methods=["POST"]),
            ],
            port,
        )

    @property
    def base_url(self) -> str:
        return f"{self.root}/v1"

    def _refusal(self, reply: Reply) -> Response:
        message = reply.error or f"fake failure {reply.status}"
        error = {"error": {"message": message, "type": "server_error"}}
        return JSONResponse(error, status_code=reply.status, headers=self.refusal_headers(reply))

    # --- Chat Completions ------------------------------------------------------------------

    async def _chat(self, request: Request) -> Response:
        body, reply = await self._take(request)
        if reply.status != 200:
            return self._refusal(reply)
        if reply.raw is not None:
            return self._raw(reply.raw, reply.pause_s)
        model = body.get("model", "fake")

        def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
            return sse(
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
            yield sse(
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
        if reply.raw is not None:
            return self._raw(reply.raw, reply.pause_s)
        model = body.get("model", "fake")
        base = {"id": "resp_fake", "object": "response", "created_at": 0, "model": model}
        sequence = iter(range(1_000_000))

        def event(kind: str, **fields: Any) -> bytes:
            return sse({"type": kind, "sequence_number": next(sequence), **fields}, kind)

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
