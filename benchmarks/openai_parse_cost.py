"""What reading an OpenAI-compatible stream costs the harness per streamed chunk and per
request, in process: the ``openai`` package's way beside accord's own
(accord.harness.models._openai_stream, which the adapter uses):

    python3 benchmarks/openai_parse_cost.py          # --chunks 20000 --requests 500

- a chunk, the package's way: ``construct_type`` of a ``ChatCompletionChunk`` (what the
  package does to every streamed event), against ``json.loads`` of the same text;
- a chunk, accord's way: the whole of it — its SSE line found in the bytes read, decoded
  with msgspec, added to the answer and turned into a ``TextDelta`` (``chat_events`` over a
  stream of such chunks, one a read, as the network hands them over);
- a request, the package's way: ``async_maybe_transform`` of a Chat Completions request (a
  system prompt, 12 messages with tool calls and results, the harness's own tools), which
  ``create`` runs on every call;
- a request, accord's way: the same transform of what the adapter gives the package's
  signature (the model, no messages, ``stream``), the body going in ``extra_body`` as built.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections.abc import AsyncIterator
from typing import Any

from openai._models import construct_type
from openai._utils import async_maybe_transform
from openai.types.chat import ChatCompletionChunk
from openai.types.chat.completion_create_params import CompletionCreateParamsStreaming

from accord.harness.models._base import TextDelta
from accord.harness.models._openai_stream import chat_events
from accord.harness.models._prompt import chat_tools
from accord.harness.tools._intrinsic import INTRINSICS

CHUNK: dict[str, Any] = {
    "id": "c",
    "object": "chat.completion.chunk",
    "created": 0,
    "model": "m",
    "choices": [{"index": 0, "delta": {"content": "@5931456958217~"}, "finish_reason": None}],
}


def per_call_us(count: int, call: Any) -> float:
    began = time.perf_counter()
    for _ in range(count):
        call()
    return (time.perf_counter() - began) / count * 1e6


def request() -> dict[str, Any]:
    step = [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": "@1~" * 20,
            "tool_calls": [
                {
                    "id": "c",
                    "type": "function",
                    "function": {"name": "create_plan", "arguments": "{}"},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c", "content": "ok"},
    ]
    return {
        "model": "m",
        "messages": [{"role": "system", "content": "x" * 2000}, *step * 4],
        "tools": chat_tools(tuple(tool.spec for tool in INTRINSICS)),
        "stream": True,
        "stream_options": {"include_usage": True},
    }


async def transform_us(count: int, body: dict[str, Any]) -> float:
    began = time.perf_counter()
    for _ in range(count):
        await async_maybe_transform(body, CompletionCreateParamsStreaming)
    return (time.perf_counter() - began) / count * 1e6


async def accord_chunk_us(count: int) -> float:
    line = b"data: " + json.dumps(CHUNK).encode() + b"\n\n"

    async def received() -> AsyncIterator[bytes]:
        for _ in range(count):
            yield line
        yield b"data: [DONE]\n\n"

    began = time.perf_counter()
    deltas = sum([isinstance(event, TextDelta) async for event in chat_events(received())])
    took = time.perf_counter() - began
    assert deltas == count
    return took / count * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunks", type=int, default=20_000)
    parser.add_argument("--requests", type=int, default=500)
    args = parser.parse_args()
    raw = json.dumps(CHUNK)
    typed = per_call_us(args.chunks, lambda: construct_type(type_=ChatCompletionChunk, value=CHUNK))
    plain = per_call_us(args.chunks, lambda: json.loads(raw))
    ours = asyncio.run(accord_chunk_us(args.chunks))
    print(
        f"a chunk: the package's construct_type {typed:.1f} us (json.loads {plain:.1f} us); "
        f"accord's whole read (SSE, msgspec, the answer, its TextDelta) {ours:.1f} us"
    )
    walked = asyncio.run(transform_us(args.requests, request()))
    given = asyncio.run(transform_us(args.requests, {"model": "m", "messages": [], "stream": True}))
    print(
        f"a request: the package's async_maybe_transform of the whole request {walked:.0f} us; "
        f"of what accord gives it (the body in extra_body) {given:.0f} us"
    )


if __name__ == "__main__":
    main()
