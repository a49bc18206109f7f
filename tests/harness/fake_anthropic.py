"""A fake Anthropic Messages API for the tests: real HTTP, real streaming (SSE) with the
events the API sends, scripted answers.

A request to ``POST /v1/messages`` takes the next :class:`Reply`
(tests/harness/fake_model_server.py) and streams it as Anthropic does: ``message_start``
(with the input usage), a ``ping``, a ``thinking`` block if the reply has one
(``thinking_delta``, ``signature_delta``), a ``text`` block whose ``text_delta`` events are the
reply's chunks, one ``tool_use`` block per tool call (its input in two ``input_json_delta``
pieces), each opened by ``content_block_start`` and closed by ``content_block_stop``; then
``message_delta`` (the stop reason and the usage, as running totals) and ``message_stop``.
A reply with a status answers it with an error as the API shapes them (``{"type": "error",
"error": {"type": "rate_limit_error", …}}``, the ``retry-after`` header if asked); one with
``fail_after`` sends an ``error`` event (``overloaded_error``) on the stream; one
``unfinished`` ends the stream before its ``message_delta``.

    with FakeAnthropic() as fake:
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

__all__ = ["FakeAnthropic", "Reply"]

# The error types of the Messages API, by the status that carries them
ERRORS = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}
TOO_LONG = "prompt is too long: 208000 tokens > 200000 maximum"


class FakeAnthropic(FakeModelServer):
    name = "Anthropic"

    def __init__(self) -> None:
        super().__init__([Route("/v1/messages", self._messages, methods=["POST"])])

    @property
    def base_url(self) -> str:
        return self.root  # (the server's root: the anthropic package adds /v1/messages)

    def _refusal(self, reply: Reply) -> Response:
        kind = ERRORS.get(reply.status, "api_error")
        message = reply.error or f"fake failure {reply.status}"
        body = {"type": "error", "error": {"type": kind, "message": message}}
        body["request_id"] = "req_fake"
        return JSONResponse(body, status_code=reply.status, headers=self.refusal_headers(reply))

    async def _messages(self, request: Request) -> Response:
        body, reply = await self._take(request)
        if reply.status != 200:
            return self._refusal(reply)
        if reply.raw is not None:
            return self._raw(reply.raw, reply.pause_s)
        return StreamingResponse(self._events(body, reply), media_type="text/event-stream")

    async def _events(self, body: dict[str, Any], reply: Reply) -> AsyncIterator[bytes]:
        used_in, used_out, cached = reply.usage
        usage = {
            "input_tokens": used_in - cached - reply.cache_write,
            "cache_read_input_tokens": cached,
            "cache_creation_input_tokens": reply.cache_write,
        }
        message = {
            "id": "msg_fake",
            "type": "message",
            "role": "assistant",
            "model": body.get("model", "fake"),
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {**usage, "output_tokens": 1},
        }
        yield event("message_start", message=message)
        yield event("ping")
        index = 0
        if reply.thinking:
            yield event("content_block_start", index=index, content_block=THINKING)
            delta = {"type": "thinking_delta", "thinking": reply.thinking}
            yield event("content_block_delta", index=index, delta=delta)
            delta = {"type": "signature_delta", "signature": f"sig:{reply.thinking}"}
            yield event("content_block_delta", index=index, delta=delta)
            yield event("content_block_stop", index=index)
            index += 1
        if reply.chunks:
            yield event("content_block_start", index=index, content_block=TEXT)
            sent = 0
            async for text in self._text(reply):
                if reply.fail_after is not None and sent >= reply.fail_after:
                    break
                if text is None:
                    raise ConnectionResetError("cut by the test")
                delta = {"type": "text_delta", "text": text}
                yield event("content_block_delta", index=index, delta=delta)
                sent += 1
            if reply.fail_after is not None:
                error = {"type": "overloaded_error", "message": "Overloaded"}
                yield event("error", error=error)
                return
            yield event("content_block_stop", index=index)
            index += 1
        for call_id, name, arguments in reply.tool_calls:
            whole = arguments if reply.input_at_start else {}
            block = {"type": "tool_use", "id": call_id, "name": name, "input": whole}
            yield event("content_block_start", index=index, content_block=block)
            encoded = "" if reply.input_at_start else json.dumps(arguments)
            half = len(encoded) // 2
            for piece in ("", encoded[:half], encoded[half:]):
                delta = {"type": "input_json_delta", "partial_json": piece}
                yield event("content_block_delta", index=index, delta=delta)
            yield event("content_block_stop", index=index)
            index += 1
        if reply.unfinished:
            return
        stop = reply.stop_reason or ("tool_use" if reply.tool_calls else "end_turn")
        ended = {"stop_reason": stop, "stop_sequence": None}
        yield event("message_delta", delta=ended, usage={**usage, "output_tokens": used_out})
        yield event("message_stop")


TEXT = {"type": "text", "text": ""}
THINKING = {"type": "thinking", "thinking": "", "signature": ""}


def event(kind: str, **fields: Any) -> bytes:
    return sse({"type": kind, **fields}, kind)
