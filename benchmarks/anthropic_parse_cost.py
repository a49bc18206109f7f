"""What reading a Messages API stream costs the harness per streamed event, in process: the
``anthropic`` package's way beside accord's own (accord.harness.models._anthropic_stream,
which the adapter uses):

    python3 benchmarks/anthropic_parse_cost.py          # --events 20000 --repeat 5

- an event, the package's way: ``construct_type`` of a ``RawMessageStreamEvent`` (what the
  package's stream does to every event), against ``json.loads`` of the same text;
- an event, accord's way: the whole of it — its SSE lines found in the bytes read, decoded
  with msgspec, added to the answer and turned into a ``TextDelta`` (``message_events`` over
  a stream of such events, one a read, as the network hands them over).

Each is timed ``--repeat`` times; the p50 and the worst (p99 of so few) of the per-event
means are printed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from collections.abc import AsyncIterator
from typing import Any

from anthropic._models import construct_type
from anthropic.types import RawMessageStreamEvent

from accord.harness.models._anthropic_stream import MessageAnswer, message_events
from accord.harness.models._base import TextDelta

EVENT: dict[str, Any] = {
    "type": "content_block_delta",
    "index": 0,
    "delta": {"type": "text_delta", "text": "@5931456958217~"},
}
START = {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}


def sse(value: dict[str, Any]) -> bytes:
    return f"event: {value['type']}\ndata: {json.dumps(value)}\n\n".encode()


def per_call_us(count: int, call: Any) -> float:
    began = time.perf_counter()
    for _ in range(count):
        call()
    return (time.perf_counter() - began) / count * 1e6


async def accord_event_us(count: int) -> float:
    line = sse(EVENT)

    async def received() -> AsyncIterator[bytes]:
        yield sse(START)
        for _ in range(count):
            yield line
        yield sse({"type": "message_stop"})

    began = time.perf_counter()
    answer = MessageAnswer()
    deltas = sum([isinstance(e, TextDelta) async for e in message_events(received(), answer)])
    took = time.perf_counter() - began
    assert deltas == count
    return took / count * 1e6


def summary(values: list[float]) -> str:
    ordered = sorted(values)
    return f"p50 {statistics.median(ordered):.1f} / p99 {ordered[-1]:.1f} us"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    raw = json.dumps(EVENT)
    typed, plain, ours = [], [], []
    for _ in range(args.repeat):  # (alternated, so that the load of the machine hits all three)
        typed.append(
            per_call_us(
                args.events, lambda: construct_type(type_=RawMessageStreamEvent, value=EVENT)
            )
        )
        plain.append(per_call_us(args.events, lambda: json.loads(raw)))
        ours.append(asyncio.run(accord_event_us(args.events)))
    ratio = statistics.median(typed) / statistics.median(ours)
    print(
        f"an event: the package's construct_type {summary(typed)} (json.loads {summary(plain)}); "
        f"accord's whole read (SSE, msgspec, the answer, its TextDelta) {summary(ours)}; "
        f"package / accord at p50 {ratio:.1f}x"
    )


if __name__ == "__main__":
    main()
