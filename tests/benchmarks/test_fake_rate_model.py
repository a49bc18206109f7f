"""The fixed-rate fake model of benchmarks/harness_scale.py (benchmarks/fake_rate_model.py),
read by the openai package and by the harness's adapter: its chunks never come faster than its
rate, a turn's first call ends in a tool call and the call after the tool's result in an
answer, ``instant`` answers at once, and one connection carries call after call."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from openai import AsyncOpenAI
from tests.harness.test_openai_streams import conversation

from accord.harness.models import TextDelta, Usage
from accord.harness.models._openai_compatible import OpenAIModel

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.append(str(BENCHMARKS))  # last: its modules shadow nothing

from fake_rate_model import MAX_BODY, Stream  # noqa: E402

RATE, TOKENS = 200.0, 5


@pytest.fixture
async def model() -> AsyncIterator[AsyncOpenAI]:
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: Stream(RATE, TOKENS), "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    client = AsyncOpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="x", max_retries=0)
    try:
        yield client
    finally:
        await client.close()
        server.close()
        await server.wait_closed()


async def call(client: AsyncOpenAI, messages: list[dict[str, Any]]) -> list[Any]:
    stream = await client.chat.completions.create(
        model="m", messages=messages, stream=True, stream_options={"include_usage": True}
    )
    return [chunk async for chunk in stream]


def texts(chunks: list[Any]) -> list[str]:
    return [c.choices[0].delta.content for c in chunks if c.choices and c.choices[0].delta.content]


async def test_a_turn_streams_at_the_rate_then_calls_the_tool_then_answers(
    model: AsyncOpenAI,
) -> None:
    first = await call(model, [{"role": "user", "content": "go"}])
    stamps = [int(text.strip("@~")) for text in texts(first)]
    assert len(stamps) == TOKENS
    # never faster than the rate: token k is written no earlier than k intervals after the first
    for k, stamp in enumerate(stamps):
        assert stamp - stamps[0] >= k * 1e9 / RATE - 1e6
    assert stamps[-1] <= time.monotonic_ns()  # the clock every process shares
    finishes = [c.choices[0].finish_reason for c in first if c.choices]
    assert finishes[-1] == "tool_calls"
    (tool,) = [
        c.choices[0].delta.tool_calls for c in first if c.choices and c.choices[0].delta.tool_calls
    ]
    assert tool[0].function.name == "create_plan"
    assert json.loads(tool[0].function.arguments) == {"steps": [{"name": "a"}]}
    assert first[-1].usage is not None

    after = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": "", "tool_calls": [{
            "id": "call_plan", "type": "function",
            "function": {"name": "create_plan", "arguments": "{}"},
        }]},
        {"role": "tool", "tool_call_id": "call_plan", "content": "done"},
    ]  # fmt: skip
    answer = await call(model, after)  # on the same kept-alive connection
    assert len(texts(answer)) == TOKENS
    assert [c.choices[0].finish_reason for c in answer if c.choices][-1] == "stop"


async def test_instant_answers_ok_at_once(model: AsyncOpenAI) -> None:
    chunks = await call(model, [{"role": "user", "content": "instant 7"}])
    assert texts(chunks) == ["ok"]
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"


async def test_a_body_over_the_bound_is_refused_unread() -> None:
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: Stream(RATE, TOKENS), "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    head = f"POST /v1/chat/completions HTTP/1.1\r\nContent-Length: {MAX_BODY + 1}\r\n\r\n"
    writer.write(head.encode())
    assert (await reader.read()).startswith(b"HTTP/1.1 413")
    writer.close()
    server.close()
    await server.wait_closed()


async def test_the_harness_adapter_reads_its_chunked_stream(model: AsyncOpenAI) -> None:
    """accord's own reader of the stream (the OpenAI-compatible adapter) over its chunked
    HTTP/1.1: the paced text, the tool call and the usage."""
    chosen = OpenAIModel("m", model)
    events = [event async for event in chosen.stream(conversation())]
    assert [type(event) for event in events[:-1]] == [TextDelta] * TOKENS
    final = events[-1]
    assert final.text == "".join(event.text for event in events[:-1])
    [call] = final.tool_calls
    assert (call.name, call.arguments) == ("create_plan", {"steps": [{"name": "a"}]})
    assert final.usage == Usage(input_tokens=10, output_tokens=5)


async def test_the_adapter_reads_each_stream_to_its_end_and_keeps_the_connection() -> None:
    connections: list[Stream] = []

    def accept() -> Stream:
        connections.append(Stream(RATE, TOKENS))
        return connections[-1]

    loop = asyncio.get_running_loop()
    server = await loop.create_server(accept, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    client = AsyncOpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="x", max_retries=0)
    try:
        chosen = OpenAIModel("m", client)
        for _ in range(3):
            events = [event async for event in chosen.stream(conversation())]
            assert events[-1].tool_calls[0].name == "create_plan"
        assert len(connections) == 1  # (a stream left unread would close its connection)
    finally:
        await client.close()
        server.close()
        await server.wait_closed()
