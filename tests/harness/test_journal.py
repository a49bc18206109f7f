"""The turn journal's typed entries: what is recorded (today's shapes plus a version), entries
written before they had a version read as version 1 — a turn cut with such a journal still
resumes — and an entry this accord cannot read (a newer version, an unknown kind) is an
error naming it, which fails the turn it would resume."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from tests.harness.test_turn_tools import Script as ScriptModel
from tests.harness.test_turn_tools import agent_with, hanging_refund, parked, said, say

from accord.engine import Engine
from accord.harness import ToolCall
from accord.harness._journal import (
    JournalCall,
    JournalError,
    ModelAnswered,
    ToolFinished,
    ToolStarted,
    decode,
    encode,
)
from accord.harness._steps import INTERRUPTED, Journal
from accord.harness._transcript import ToolResult
from accord.harness.models import Usage
from accord.store import SqliteStore
from accord.wire._model import TaskState

# A cut turn's journal as accord wrote it before entries had a version (plain dicts, in the
# key order the harness wrote them).
TODAYS: list[dict[str, Any]] = [
    {
        "turn": "m-1",
        "from": 0,
        "kind": "model",
        "step": 0,
        "seen": 1,
        "text": "",
        "tool_calls": [{"id": "c1", "name": "refund", "arguments": {"order_id": 7}}],
        "usage": {"input_tokens": 10, "output_tokens": 2, "cached_tokens": 0},
    },
    {"turn": "m-1", "from": 0, "kind": "tool-start", "call_id": "c1", "name": "refund"},
    {
        "turn": "m-1",
        "from": 0,
        "kind": "tool-result",
        "call_id": "c0",
        "name": "lookup",
        "content": "order 7: paid",
        "error": False,
    },
]


def test_an_entry_is_recorded_as_before_with_its_version() -> None:
    answered = ModelAnswered(
        turn="m-1",
        first_step=0,
        step=0,
        seen=1,
        text="",
        tool_calls=[JournalCall("c1", "refund", {"order_id": 7})],
        usage=Usage(10, 2, 0),
    )
    started = ToolStarted(turn="m-1", first_step=0, call_id="c1", name="refund")
    finished = ToolFinished(
        turn="m-1", first_step=0, call_id="c0", name="lookup", content="order 7: paid"
    )
    recorded = [encode(entry) for entry in (answered, started, finished)]
    assert recorded == [{**data, "version": 1} for data in TODAYS]
    assert [decode(data) for data in recorded] == [answered, started, finished]


def test_entries_without_a_version_are_version_1() -> None:
    read = [decode(data) for data in TODAYS]
    assert [entry.version for entry in read] == [1, 1, 1]
    journal = Journal.resumed(list(enumerate(TODAYS, start=3)), fresh="unused")
    assert (journal.turn, journal.first_step, journal.started) == ("m-1", 0, {"c1"})
    response = journal.models[0].response()
    assert [(c.id, c.name, c.arguments) for c in response.tool_calls] == [
        ("c1", "refund", {"order_id": 7})
    ]
    assert response.usage == Usage(10, 2, 0)
    assert journal.results["c0"].content == "order 7: paid"


@pytest.mark.parametrize(
    ("data", "said"),
    [
        ({**TODAYS[0], "version": 2}, "a journal entry of version 2 (kind 'model'): this accord "
         "reads versions up to 1; a newer accord wrote it"),
        ({"turn": "m-1", "kind": "plan", "version": 1}, "a journal entry of the unknown kind "
         "'plan' (this accord knows model, tool-start, tool-result)"),
        ({**TODAYS[1], "version": "one"}, "a journal entry with the version 'one', which is "
         "none"),
        ({**TODAYS[0], "step": "zero"}, "a journal entry of kind 'model' that cannot be read: "
         "Expected `int`, got `str` - at `$.step`"),
    ],
)  # fmt: skip
def test_an_entry_this_accord_cannot_read_is_an_error_naming_it(
    data: dict[str, Any], said: str
) -> None:
    with pytest.raises(JournalError) as unreadable:
        decode(data)
    assert str(unreadable.value) == said
    with pytest.raises(JournalError):
        Journal.resumed([(3, TODAYS[0]), (4, data)], fresh="unused")


async def _cut_turn(path: str) -> tuple[ScriptModel, list[int], Any]:
    """A turn stopped while its non-idempotent refund runs: its model, the refund's runs,
    and the refund tool."""
    refund, runs, started = hanging_refund()
    model = ScriptModel([ToolCall("refund", {"order_id": 48213})], "I could not confirm it")
    engine = Engine(SqliteStore(path), agent_with(model, tools=(refund,)))
    await engine.start()
    turn = asyncio.ensure_future(say(engine, "refund it"))
    await asyncio.wait_for(started.wait(), 5)
    await engine.stop()  # as a crash would, the turn stops where it is
    turn.cancel()
    return model, runs, refund


def _rewrite_journal(path: str, change: Any) -> int:
    """Rewrite every journal entry stored in the SQLite file as ``change(data)``; how many."""
    with sqlite3.connect(path) as db:
        rows = db.execute("SELECT task_id, seq, body FROM events WHERE kind = 'journal'")
        found = rows.fetchall()
        for task_id, seq, body in found:
            data = change(json.loads(body)["data"])
            new = json.dumps({"data": data}).encode()
            db.execute(
                "UPDATE events SET body = ? WHERE task_id = ? AND seq = ?", (new, task_id, seq)
            )
    return len(found)


def _as_written_before(data: dict[str, Any]) -> dict[str, Any]:
    """An entry as the harness wrote it before entries had a version: the same keys, in its
    order (turn, from, kind, then the kind's own), no version."""
    rest = {k: v for k, v in data.items() if k not in ("turn", "from", "kind", "version")}
    return {"turn": data["turn"], "from": data["from"], "kind": data["kind"], **rest}


async def test_a_turn_cut_with_a_journal_written_before_versions_resumes(tmp_path: Path) -> None:
    path = str(tmp_path / "tasks.db")
    model, runs, refund = await _cut_turn(path)
    assert _rewrite_journal(path, _as_written_before) == 2  # the answer, the refund's start

    engine = Engine(SqliteStore(path), agent_with(model, tools=(refund,)))
    await engine.start()  # recovery resumes the turn
    try:
        [stored] = await engine.store.tasks_in_states(frozenset(TaskState), 10, "")
        task = await parked(engine, stored.id)
        assert said(task) == "I could not confirm it"
        assert runs == [48213]  # never run again
        assert len(model.asked) == 2  # the first answer came from the journal
        [result] = [s for s in model.asked[-1].steps if isinstance(s, ToolResult)]
        assert result.error and result.content == INTERRUPTED
    finally:
        await engine.stop()


async def test_a_turn_whose_journal_a_newer_accord_wrote_fails_saying_so(tmp_path: Path) -> None:
    path = str(tmp_path / "tasks.db")
    model, runs, refund = await _cut_turn(path)
    assert _rewrite_journal(path, lambda data: {**data, "version": 2}) == 2

    engine = Engine(SqliteStore(path), agent_with(model, tools=(refund,)))
    await engine.start()
    try:
        [stored] = await engine.store.tasks_in_states(frozenset(TaskState), 10, "")
        for _ in range(100):
            record = await engine.store.get_task(stored.id, None)
            assert record is not None
            if record.task.status.state is TaskState.FAILED:
                break
            await asyncio.sleep(0.05)
        assert record.task.status.state is TaskState.FAILED
        assert said(record.task) == (
            "this turn cannot resume from its journal: a journal entry of version 2 (kind "
            "'model'): this accord reads versions up to 1; a newer accord wrote it"
        )
        assert runs == [48213] and len(model.asked) == 1  # nothing replayed, nothing asked
    finally:
        await engine.stop()
