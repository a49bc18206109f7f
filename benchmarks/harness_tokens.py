"""The model-driven turn's own numbers, on SQLite:

    python3 benchmarks/harness_tokens.py --no-venv      # (or in benchmarks/.venv, as run.py)

1. **Token latency**: ``accord serve --agent harness`` on a fake OpenAI-compatible server
   (tests/harness/fake_openai.py: real HTTP, real streaming) whose answer comes in chunks
   20 ms apart; a client streams each turn (SendStreamingMessage over JSON-RPC). For every
   chunk, the time from the fake server writing it to the client reading it: p50 and p99.
   (The target: p50 within 5 ms on this machine.) With ``--tool-call`` each turn is two
   model calls: the first streams its text and calls a tool of the harness's own
   (``create_plan``), the second streams the answer; the chunks of both are measured, and
   the turn sends its step events (docs/harness.md, "Visible work") — a model call and a
   tool call — between them (``--step-events off``: without them, to compare).
2. **The harness's work per model step**, with the scripted model: in process, a turn of
   N steps (each a call of an idempotent tool of the harness's own, then an answer) against a
   turn of one step, on SQLite: the time each step adds, p50, and steps per second.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from run import ensure_venv, load, machine  # noqa: E402


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


TOKEN = re.compile(r"t(\d+) ")  # a chunk of the fake model's: "t<its index in the turn> "
STEP_MEDIA_TYPE = "application/vnd.accord.step+json"


def token_latency(
    turns: int, chunks: int, tool_call: bool = False, step_events: bool = True
) -> tuple[list[float], int]:
    """The latency of every chunk of ``turns`` streamed turns, and how many step events the
    client saw."""
    import httpx
    from tests.harness.fake_openai import FakeOpenAI, Reply
    from tests.harness.harness_proc import start

    latencies: list[float] = []
    events = 0
    env = {} if step_events else {"ACCORD_HARNESS_STEP_EVENTS": "0"}
    with tempfile.TemporaryDirectory() as tmp, FakeOpenAI() as fake:
        work = Path(tmp)
        config = work / "harness.toml"
        config.write_text(
            f'[harness]\nmodel = "openai:bench"\n[harness.openai]\nbase_url = "{fake.base_url}"\n'
        )
        server = start(work, f"sqlite:///{work / 't.db'}", config, grpc=False, env=env)
        headers = {"A2A-Version": "1.0", "X-Participant-Id": "bench"}
        try:
            for turn in range(turns):
                # (every chunk unique in its turn: the client finds which one a text holds)
                texts = [f"t{n} " for n in range(chunks * (2 if tool_call else 1))]
                if tool_call:
                    plan = {"steps": [{"name": "look"}]}
                    call = (f"call-{turn}", "create_plan", plan)
                    fake.replies.append(Reply(texts[:chunks], [call], pause_s=0.02))
                    fake.replies.append(Reply(texts[chunks:], pause_s=0.02))
                else:
                    fake.replies.append(Reply(texts, pause_s=0.02))
                first = len(fake.sent_at)
                body = {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "SendStreamingMessage",
                    "params": {
                        "message": {
                            "messageId": uuid.uuid4().hex,
                            "role": "ROLE_USER",
                            "parts": [{"text": "go"}],
                        }
                    },
                }
                with httpx.stream("POST", server.url, json=body, headers=headers, timeout=60) as r:
                    for line in r.iter_lines():
                        if not line.startswith("data:"):
                            continue
                        event = json.loads(line[5:])["result"]
                        status = event.get("statusUpdate", {}).get("status", {})
                        parts = status.get("message", {}).get("parts", [])
                        events += any(p.get("mediaType") == STEP_MEDIA_TYPE for p in parts)
                        update = event.get("artifactUpdate")
                        if update is None:
                            continue
                        arrived = time.monotonic()
                        # (the harness holds a chunk's last character back until the next
                        # comes: the text that arrives with chunk n shows "t<n>")
                        text = update["artifact"]["parts"][0].get("text", "") + " "
                        for found in TOKEN.findall(text):
                            latencies.append(arrived - fake.sent_at[first + int(found)])
        finally:
            server.stop()
    return latencies, events


async def step_cost(steps: int, turns: int) -> tuple[list[float], list[float]]:
    """Per-turn times of ``steps``-step turns and of one-step turns (in process, SQLite)."""
    from accord.core._caller import Caller
    from accord.engine import Engine
    from accord.harness import HarnessAgent, HarnessSettings, ModelResponse, ToolCall
    from accord.harness.models import FunctionModel
    from accord.store import SqliteStore
    from accord.wire._model import Message, Part, Role, SendMessageRequest

    async def run(per_turn: int) -> list[float]:
        async def model(conversation: Any) -> Any:
            if len(conversation.steps) // 2 < per_turn - 1:
                plan = {"steps": [{"name": "a"}]}
                return ModelResponse("", (ToolCall("create_plan", plan),))
            return "done"

        with tempfile.TemporaryDirectory() as tmp:
            agent = HarnessAgent(
                HarnessSettings(model="m", max_steps=per_turn + 1), {"m": FunctionModel(model)}
            )
            engine = Engine(SqliteStore(str(Path(tmp) / "t.db")), agent)
            await engine.start()
            caller = Caller(participant="bench")
            times = []
            try:
                task_id = ""
                for n in range(turns):
                    message = Message(
                        message_id=f"m{n}", role=Role.USER, parts=[Part(text="go")], task_id=task_id
                    )
                    began = time.perf_counter()
                    answer = await engine.send_message(SendMessageRequest(message=message), caller)
                    times.append(time.perf_counter() - began)
                    task_id = getattr(answer, "id", "") if n % 20 else ""  # fresh task now and then
            finally:
                await engine.stop()
            return times

    return await run(steps), await run(1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--chunks", type=int, default=40)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument(
        "--tool-call", action="store_true", help="two model calls a turn, a tool call between"
    )
    parser.add_argument("--step-events", choices=("on", "off"), default="on")
    parser.add_argument("--tokens-only", action="store_true", help="token latency only")
    parser.add_argument("--no-venv", action="store_true", help="use this interpreter as is")
    args = parser.parse_args()
    if not args.no_venv:
        ensure_venv(__file__)
    print(f"machine: {machine()}  load: {load()}", flush=True)
    on = args.step_events == "on"
    latencies, events = token_latency(args.turns, args.chunks, args.tool_call, on)
    print(
        f"token latency over {len(latencies)} tokens: p50 {percentile(latencies, 0.5) * 1e3:.2f} ms"
        f"  p99 {percentile(latencies, 0.99) * 1e3:.2f} ms"
        f"  (step events {args.step_events}: {events} seen)"
    )
    if args.tokens_only:
        return
    many, one = asyncio.run(step_cost(args.steps, 200))
    added = (statistics.median(many) - statistics.median(one)) / (args.steps - 1)
    print(
        f"a turn of {args.steps} steps: p50 {statistics.median(many) * 1e3:.2f} ms; of one step: "
        f"p50 {statistics.median(one) * 1e3:.2f} ms; each step adds {added * 1e3:.2f} ms "
        f"({1 / added:.0f} steps/s)"
    )


if __name__ == "__main__":
    main()
