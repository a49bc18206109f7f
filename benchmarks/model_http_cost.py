"""What a streamed model call costs the harness's process in CPU, through accord's own HTTP
client (``client = "accord"``) against the ``openai`` package's (``client = "package"``),
in one run against one local fake model (benchmarks/fake_rate_model.py, its own process):

    python3 benchmarks/model_http_cost.py --no-venv
        [--calls 300 --streams 100 --tokens 50 --rate 200 --rounds 3]

The call is the harness's: ``OpenAIModel.stream`` (Chat Completions), the body built and the
stream read by accord either way; only the HTTP client differs. Two measures, the clients
alternated in each round (both on uvloop, as ``accord serve`` runs):

- **per call**: ``--calls`` calls one after the other, each answered at once (one text chunk);
  the CPU of this process per call, and each call's wall time (p50, p99);
- **per token**: ``--streams`` calls at once, each streaming ``--tokens`` chunks at
  ``--rate`` a second (each its own write, so its own read); this process's CPU over the
  batch, less the per-call cost, per token.

Each round prints one line per client; the summary gives medians over the rounds and the
ratios accord / package of the same rounds.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from run import fake_model, load, machine, parse_in_venv  # noqa: E402

CLIENTS = ("accord", "package")


def conversation(text: str) -> Any:
    from accord.harness._transcript import Conversation, Entry
    from accord.harness._wire import Participant, Role, TaskExtension
    from accord.wire._model import Task, TaskState, TaskStatus

    extension = TaskExtension(
        name="bench",
        goal="a plan",
        participants=(Participant(id="alice", kind="human", role=Role.REPORTER),),
    )
    return Conversation(
        task=Task(id="t1", status=TaskStatus(state=TaskState.WORKING)),
        extension=extension,
        agent_id="accord",
        entries=(Entry("alice", "user", text),),
        model_calls=0,
        system_prompt="Be brief.",
    )


def model(kind: str, base_url: str) -> Any:
    from accord.harness.models._clients import endpoint_client
    from accord.harness.models._endpoint import Endpoint
    from accord.harness.models._openai_compatible import OpenAIModel, Retry

    client = endpoint_client(Endpoint(base_url=base_url, client=kind))  # type: ignore[arg-type]
    return OpenAIModel("m", client, retry=Retry(attempts=1))


async def one_call(chosen: Any, view: Any) -> int:
    events = 0
    async for _ in chosen.stream(view):
        events += 1
    return events


async def per_call(chosen: Any, calls: int) -> tuple[float, list[float]]:
    """CPU seconds per call, and each call's wall time (s)."""
    view = conversation("instant")
    for _ in range(20):  # (warm: the connection, imports, caches)
        await one_call(chosen, view)
    walls: list[float] = []
    cpu = time.process_time()
    for _ in range(calls):
        began = time.perf_counter()
        await one_call(chosen, view)
        walls.append(time.perf_counter() - began)
    return (time.process_time() - cpu) / calls, walls


async def per_token(chosen: Any, streams: int, tokens: int, call_cpu: float) -> float:
    """CPU seconds per streamed token, the per-call cost taken out."""
    view = conversation("stream")
    await asyncio.gather(*(one_call(chosen, view) for _ in range(streams)))  # (warm)
    cpu = time.process_time()
    counts = await asyncio.gather(*(one_call(chosen, view) for _ in range(streams)))
    spent = time.process_time() - cpu
    assert all(c >= tokens for c in counts), counts
    return (spent - streams * call_cpu) / (streams * tokens)


def pct(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


async def round_of(kind: str, base_url: str, args: argparse.Namespace) -> dict[str, float]:
    chosen = model(kind, base_url)
    call_cpu, walls = await per_call(chosen, args.calls)
    token_cpu = await per_token(chosen, args.streams, args.tokens, call_cpu)
    from accord.harness.models._clients import close_client

    await close_client(chosen.client)
    return {
        "call_cpu_us": call_cpu * 1e6,
        "call_p50_us": pct(walls, 0.5) * 1e6,
        "call_p99_us": pct(walls, 0.99) * 1e6,
        "token_cpu_us": token_cpu * 1e6,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=300, help="calls one after the other")
    parser.add_argument("--streams", type=int, default=100, help="streamed calls at once")
    parser.add_argument("--tokens", type=int, default=50, help="chunks per streamed call")
    parser.add_argument("--rate", type=float, default=200.0, help="chunks per second per call")
    parser.add_argument("--rounds", type=int, default=3)
    args = parse_in_venv(parser, __file__)
    with contextlib.suppress(ImportError):
        import uvloop

        asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    print(f"machine: {machine()}  load: {load()}", flush=True)
    results: dict[str, list[dict[str, float]]] = {kind: [] for kind in CLIENTS}
    with (
        tempfile.TemporaryDirectory() as work,
        fake_model(Path(work), "--rate", str(args.rate), "--tokens", str(args.tokens)) as (url, _),
    ):
        for number in range(args.rounds):
            order = CLIENTS if number % 2 == 0 else CLIENTS[::-1]
            for kind in order:
                got = asyncio.run(round_of(kind, url, args))
                results[kind].append(got)
                print(
                    f"round {number + 1} {kind:8} per call: CPU {got['call_cpu_us']:6.0f} us, "
                    f"wall p50 {got['call_p50_us']:6.0f} us p99 {got['call_p99_us']:6.0f} us | "
                    f"per token: CPU {got['token_cpu_us']:5.1f} us",
                    flush=True,
                )
    print(f"load at end: {load()}")
    print(f"\nmedians of {args.rounds} rounds (ratio: accord / package, same rounds)")
    for key, label in (
        ("call_cpu_us", "CPU per call (us)"),
        ("call_p50_us", "call wall p50 (us)"),
        ("call_p99_us", "call wall p99 (us)"),
        ("token_cpu_us", "CPU per token (us)"),
    ):
        ours = statistics.median(r[key] for r in results["accord"])
        theirs = statistics.median(r[key] for r in results["package"])
        ratios = [
            a[key] / p[key] for a, p in zip(results["accord"], results["package"], strict=True)
        ]
        print(
            f"  {label:22} accord {ours:8.1f}  package {theirs:8.1f}  ratio "
            f"{statistics.median(ratios):.2f} (rounds {', '.join(f'{r:.2f}' for r in ratios)})"
        )


if __name__ == "__main__":
    main()
