"""A durable agent turn side by side: accord's harness on SQLite against LangGraph with its
SQLite checkpointer, in one process, rounds alternated in one run.

    .venv/bin/pip install -e '.[bench]'      # benchmark-only: langgraph, its SQLite saver
    .venv/bin/python benchmarks/langgraph_side_by_side.py     # --turns 40 --rounds 6

The same turn on both: a scripted model (no network, no model latency) that answers its first
step with two tool calls (``lookup`` and ``weigh``, two plain local functions), then answers
with text. Turns of 1, 2 and 3 model steps (a 3-step turn calls both tools twice) isolate
what a model step costs; the 2-step turn is also run continuing one conversation (thread)
for 20 turns before starting the next.

- ``accord``: HarnessAgent on an in-process Engine, SqliteStore with synchronous=FULL (as
  ``accord serve`` runs it): every model answer and tool result is journaled, durable, before
  the harness acts on it.
- ``accord-idem``: the same with both tools declared idempotent: no "started" journal entry
  before each call, and a turn resumed after a crash may run a tool again, as LangGraph does
  (it keeps no record of a tool call until the tools' super-step is done).
- ``lg-sync``: LangGraph, an explicit ReAct StateGraph (agent node, ``ToolNode``,
  ``tools_condition``) over ``GenericFakeChatModel``, ``SqliteSaver`` (its connection set
  to ``PRAGMA synchronous=FULL``, which is also this SQLite's WAL default), invoked with
  ``durability="sync"``: each super-step's checkpoint is committed before the next step
  starts, the like-for-like of accord's journal.
- ``lg-async``: the same graph on ``AsyncSqliteSaver`` (aiosqlite), ``ainvoke``,
  ``durability="sync"``: what an asyncio server would run.
- ``lg-default``: ``SqliteSaver`` with LangGraph's default ``durability="async"``
  (a checkpoint is written while the next step runs: a crash can lose the last step).
- ``accord-mem`` and ``lg-mem``: the same turns with nothing on disk (accord's MemoryStore,
  LangGraph's ``InMemorySaver`` with ``durability="sync"``): subtracted from ``accord`` and
  ``lg-sync``, what durability itself adds per model step.

Per side and scenario: wall time per turn p50/p99, process CPU per turn (all threads), per
model step, commits (fsyncs) per turn, and what is persisted per turn: rows per table
(accord's events by kind), their bytes, and the file's growth (after a WAL checkpoint).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import sqlite3
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from harness_step_events import ALICE, request  # noqa: E402

from accord.engine import Engine  # noqa: E402
from accord.harness import HarnessAgent, HarnessSettings, ModelResponse, ToolCall  # noqa: E402
from accord.harness.models import FunctionModel  # noqa: E402
from accord.harness.tools import FunctionTool  # noqa: E402
from accord.store import MemoryStore, SqliteStore  # noqa: E402

CHAIN = 20  # a continued conversation runs this many turns before the next one starts
QUESTION = "where is order 1?"
ANSWER = "order 1 shipped, 2 kg"
SCENARIOS = (("new", 1), ("new", 2), ("new", 3), ("continued", 2))
SIDES = ("accord", "accord-idem", "lg-sync", "lg-async", "lg-default", "accord-mem", "lg-mem")
BASELINES = {"accord": "accord-mem", "lg-sync": "lg-mem"}  # the same turn, nothing on disk


def lookup(order_id: int) -> str:
    """Where an order is."""
    return f"order {order_id}: shipped"


def weigh(order_id: int) -> str:
    """What an order weighs."""
    return f"order {order_id}: 2 kg"


def calls_of(step: int) -> list[tuple[str, dict[str, Any]]]:
    """The two tool calls the model asks for in its ``step``-th answer (from 0)."""
    return [("lookup", {"order_id": step + 1}), ("weigh", {"order_id": step + 1})]


class Runner(Protocol):
    path: Path

    async def open(self) -> None: ...
    async def turn(self) -> None: ...
    def commits(self) -> int: ...
    async def close(self) -> None: ...


class AccordRunner:
    def __init__(self, path: Path, continued: bool, steps: int, side: str) -> None:
        async def model(conversation: Any) -> ModelResponse:
            done = sum(1 for step in conversation.steps if hasattr(step, "calls"))
            if done < steps - 1:
                return ModelResponse("", tuple(ToolCall(n, a) for n, a in calls_of(done)))
            return ModelResponse(ANSWER)

        agent = HarnessAgent(
            HarnessSettings(model="m", max_steps=steps + 1), {"m": FunctionModel(model)}
        )
        idempotent = side == "accord-idem"
        agent.extra_tools.extend(FunctionTool(f, idempotent=idempotent) for f in (lookup, weigh))
        memory = side == "accord-mem"
        self.path = path
        self.store = MemoryStore() if memory else SqliteStore(str(path))  # FULL, as served
        self.engine = Engine(self.store, agent)
        self.continued = continued
        self.task_id = ""
        self.done = 0

    async def open(self) -> None:
        await self.engine.start()

    async def turn(self) -> None:
        task_id = self.task_id if self.continued and self.done % CHAIN else ""
        answer = await self.engine.send_message(request(QUESTION, task_id), ALICE)
        text = answer.status.message.parts[0].text if answer.status.message else ""  # type: ignore[union-attr]
        if ANSWER not in text:
            raise SystemExit(f"accord: unexpected answer {answer}")
        self.task_id = answer.id  # type: ignore[union-attr]
        self.done += 1

    def commits(self) -> int:
        return 0 if isinstance(self.store, MemoryStore) else self.store.commit_stats.commits

    async def close(self) -> None:
        await self.engine.stop()


def react_graph(steps: int, saver: Any) -> Any:
    """The ReAct loop as a StateGraph: the fake model, then its tools, until it answers."""
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage
    from langchain_core.runnables import RunnableLambda
    from langchain_core.tools import StructuredTool
    from langgraph.graph import START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode, tools_condition

    ids = itertools.count()
    responses = [
        AIMessage(
            "",
            tool_calls=[
                {"name": n, "args": a, "id": f"call_{next(ids)}", "type": "tool_call"}
                for n, a in calls_of(step)
            ],
        )
        for step in range(steps - 1)
    ] + [AIMessage(ANSWER)]
    # One turn per cycle; each answer a fresh message (as a real model's), so that its id,
    # set on the way out, is new: the thread appends it instead of replacing an earlier one.
    model = GenericFakeChatModel(messages=(r.model_copy() for r in itertools.cycle(responses)))

    def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    async def agent_async(state: MessagesState) -> dict[str, Any]:
        return {"messages": [await model.ainvoke(state["messages"])]}

    tools = [StructuredTool.from_function(lookup), StructuredTool.from_function(weigh)]
    builder = StateGraph(MessagesState)
    builder.add_node("agent", RunnableLambda(agent, afunc=agent_async))
    builder.add_node("tools", ToolNode(tools))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")
    return builder.compile(checkpointer=saver)


class GraphRunner:
    def __init__(self, path: Path, continued: bool, steps: int, kind: str) -> None:
        self.path = path
        self.continued = continued
        self.steps = steps
        self.kind = kind  # lg-sync, lg-async or lg-default
        self.durability = "async" if kind == "lg-default" else "sync"
        self.done = 0
        self.committed = 0
        self.conn: Any = None
        self.graph: Any = None

    def _count(self, statement: str) -> None:
        if statement.upper().startswith("COMMIT"):
            self.committed += 1

    async def open(self) -> None:
        if self.kind == "lg-async":
            import aiosqlite
            from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

            self.conn = await aiosqlite.connect(str(self.path))
            await self.conn.execute("PRAGMA synchronous = FULL")
            await self.conn.set_trace_callback(self._count)
            saver: Any = AsyncSqliteSaver(self.conn)
            await saver.setup()
        elif self.kind == "lg-mem":
            from langgraph.checkpoint.memory import InMemorySaver

            saver = InMemorySaver()
        else:
            from langgraph.checkpoint.sqlite import SqliteSaver

            self.conn = sqlite3.connect(str(self.path), check_same_thread=False)
            self.conn.execute("PRAGMA synchronous = FULL")
            self.conn.set_trace_callback(self._count)
            saver = SqliteSaver(self.conn)
            saver.setup()
        self.graph = react_graph(self.steps, saver)
        self.committed = 0

    async def turn(self) -> None:
        from langchain_core.messages import HumanMessage

        thread = self.done // CHAIN if self.continued else self.done
        config = {"configurable": {"thread_id": f"t{thread}"}}
        state = {"messages": [HumanMessage(QUESTION)]}
        if self.kind == "lg-async":
            out = await self.graph.ainvoke(state, config, durability=self.durability)
        else:
            out = self.graph.invoke(state, config, durability=self.durability)
        if out["messages"][-1].content != ANSWER:
            raise SystemExit(f"{self.kind}: unexpected answer {out['messages'][-1]}")
        self.done += 1

    def commits(self) -> int:
        return self.committed

    async def close(self) -> None:
        if self.kind == "lg-async":
            await self.conn.close()
        elif self.conn is not None:
            self.conn.close()


@dataclass
class Census:
    """What a database holds: rows and their bytes per table (``events`` also per kind)."""

    rows: dict[str, int] = field(default_factory=dict)
    payload: dict[str, int] = field(default_factory=dict)
    file_bytes: int = 0


def census(path: Path) -> Census:
    if not path.exists():  # a side in memory
        return Census()
    conn = sqlite3.connect(str(path))
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        found = Census()
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        for table in tables:
            if table.startswith("sqlite_"):
                continue
            columns = [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]
            size = " + ".join(f"COALESCE(LENGTH({c}), 0)" for c in columns)
            n, payload = conn.execute(f"SELECT COUNT(*), SUM({size}) FROM {table}").fetchone()
            found.rows[table] = n
            found.payload[table] = payload or 0
            if table == "events":
                for kind, k, b in conn.execute(
                    "SELECT kind, COUNT(*), SUM(LENGTH(body)) FROM events GROUP BY kind"
                ):
                    found.rows[f"events:{kind}"] = k
                    found.payload[f"events:{kind}"] = b
        page_size, pages = (
            conn.execute(f"PRAGMA {p}").fetchone()[0] for p in ("page_size", "page_count")
        )
        found.file_bytes = page_size * pages
        return found
    finally:
        conn.close()


def make(side: str, path: Path, continued: bool, steps: int) -> Runner:
    if side.startswith("accord"):
        return AccordRunner(path, continued, steps, side)
    return GraphRunner(path, continued, steps, side)


@dataclass
class Measured:
    wall: list[float] = field(default_factory=list)  # ms per turn
    cpu: list[float] = field(default_factory=list)  # ms per turn
    commits: int = 0
    stored: Census = field(default_factory=Census)
    empty: Census = field(default_factory=Census)


def p99(values: list[float]) -> float:
    return statistics.quantiles(values, n=100)[98]


async def empty_census(side: str, folder: Path) -> Census:
    runner = make(side, folder / f"empty-{side}.db", False, 1)
    await runner.open()
    await runner.close()
    return census(runner.path)


async def run(
    turns: int, rounds: int, sides: tuple[str, ...]
) -> dict[tuple[str, str, int], Measured]:
    results: dict[tuple[str, str, int], Measured] = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        runners: dict[tuple[str, str, int], Runner] = {}
        for side in sides:
            empty = await empty_census(side, folder)
            for mode, steps in SCENARIOS:
                key = (side, mode, steps)
                runners[key] = make(
                    side, folder / f"{side}-{mode}-{steps}.db", mode == "continued", steps
                )
                await runners[key].open()
                await runners[key].turn()  # warm up (not counted: census subtracts it below)
                results[key] = Measured(empty=empty)
        for number in range(rounds):
            order = sides[number % len(sides) :] + sides[: number % len(sides)]
            for mode, steps in SCENARIOS:
                for side in order:
                    key = (side, mode, steps)
                    runner, measured = runners[key], results[key]
                    commits = runner.commits()
                    for _ in range(turns):
                        wall, cpu = time.perf_counter(), time.process_time()
                        await runner.turn()
                        measured.cpu.append((time.process_time() - cpu) * 1e3)
                        measured.wall.append((time.perf_counter() - wall) * 1e3)
                    measured.commits += runner.commits() - commits
            print(f"round {number + 1}/{rounds} done", flush=True)
        for key, runner in runners.items():
            await runner.close()
            results[key].stored = census(runner.path)
    return results


def table(header: list[str], rows: list[list[str]]) -> None:
    print("| " + " | ".join(header) + " |")
    print("|---|---|" + "---:|" * (len(header) - 2))
    for row in rows:
        print("| " + " | ".join(row) + " |")


def cells(spec: str, *values: float) -> list[str]:
    return [format(value, spec) for value in values]


def stored(m: Measured, part: str) -> tuple[float, float]:
    """Rows and bytes per turn of a table (every table: ``part`` empty), the empty db's off."""
    n = len(m.wall) + 1  # + the warm-up turn, which the census includes

    def total(values: dict[str, int]) -> int:
        return sum(v for k, v in values.items() if (k == part if part else ":" not in k))

    rows = total(m.stored.rows) - total(m.empty.rows)
    payload = total(m.stored.payload) - total(m.empty.payload)
    return rows / n, payload / n


def report(results: dict[tuple[str, str, int], Measured], sides: tuple[str, ...]) -> None:
    print("\n## per turn")
    lines = []
    for mode, steps in SCENARIOS:
        for side in sides:
            m = results[(side, mode, steps)]
            rows, payload = stored(m, "")
            growth = (m.stored.file_bytes - m.empty.file_bytes) / (len(m.wall) + 1)
            times = cells(".2f", statistics.median(m.wall), p99(m.wall), statistics.fmean(m.cpu))
            counts = cells(".1f", m.commits / len(m.wall), rows)
            name = [f"{mode} {steps}-step", side, str(len(m.wall))]
            lines.append(name + times + counts + cells(",.0f", payload, growth))
    header = "scenario,side,turns,p50 ms,p99 ms,CPU ms (mean),commits,rows,row bytes,file bytes"
    table(header.split(","), lines)
    print("\n## per model step (ms; added step: (3-step turn - 1-step turn) / 2)")
    per_step: dict[str, tuple[float, float]] = {}
    lines = []
    for side in sides:
        one, two, three = (results[(side, "new", s)] for s in (1, 2, 3))
        added = (statistics.median(three.wall) - statistics.median(one.wall)) / 2
        cpu = (statistics.fmean(three.cpu) - statistics.fmean(one.cpu)) / 2
        commits = (three.commits / len(three.wall) - one.commits / len(one.wall)) / 2
        per_step[side] = added, cpu
        halves = (statistics.median(two.wall) / 2, statistics.fmean(two.cpu) / 2)
        lines.append([side, *cells(".2f", *halves, added, cpu), *cells(".1f", commits)])
    header = "side,2-step p50 / 2,2-step CPU / 2,added step p50,added step CPU,commits per step"
    table(header.split(","), lines)
    for side in sides:
        if "accord" in per_step and side.startswith("lg-") and side != "lg-mem":
            wall, cpu = (a / b for a, b in zip(per_step["accord"], per_step[side], strict=True))
            print(f"accord / {side} per added step: wall {wall:.2f}, CPU {cpu:.2f}")
    for side, baseline in BASELINES.items():
        if side in per_step and baseline in per_step:
            wall, cpu = (a - b for a, b in zip(per_step[side], per_step[baseline], strict=True))
            print(f"durable work per step, {side} - {baseline}: {wall:.2f} ms, CPU {cpu:.2f} ms")
    print("\n## what is persisted per turn (2-step turns), rows and their bytes")
    for side in sides:
        for mode in ("new", "continued"):
            m = results[(side, mode, 2)]
            parts = []
            for part in sorted(m.stored.rows):
                rows, payload = stored(m, part)
                if rows:
                    parts.append(f"{part} {rows:.1f} rows {payload:,.0f} B")
            if parts:
                print(f"- {side} {mode}: " + "; ".join(parts))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=40, help="turns per scenario per round")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--sides", default=",".join(SIDES))
    args = parser.parse_args()
    sides = tuple(args.sides.split(","))
    import os

    print(f"load: {os.getloadavg()}  sqlite {sqlite3.sqlite_version}", flush=True)
    results = asyncio.run(run(args.turns, args.rounds, sides))
    report(results, sides)


if __name__ == "__main__":
    main()
