"""The accord side of benchmarks/langgraph_side_by_side.py runs the turn it claims (two tool
calls, then the answer; a continued conversation stays one task), and its census counts what a
turn persists. (LangGraph is a benchmark-only dependency: these tests never import it.)"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parents[2] / "benchmarks"))  # not a package

from langgraph_side_by_side import AccordRunner, census


async def test_a_two_step_turn_journals_two_answers_and_two_tool_calls(tmp_path: Path) -> None:
    runner = AccordRunner(tmp_path / "t.db", continued=False, steps=2, side="accord")
    await runner.open()
    try:
        await runner.turn()  # checks the model's final answer came back
        await runner.turn()
        commits = runner.commits()
    finally:
        await runner.close()
    found = census(runner.path)
    # per turn: 2 model answers, each tool journaled as started and then its result
    assert found.rows["events:journal"] == 2 * 6
    assert found.rows["tasks"] == 2  # a new conversation each turn
    assert commits > 0 and found.file_bytes > 0


async def test_continued_turns_stay_one_conversation(tmp_path: Path) -> None:
    runner = AccordRunner(tmp_path / "t.db", continued=True, steps=3, side="accord-idem")
    await runner.open()
    try:
        await runner.turn()
        first = runner.task_id
        await runner.turn()
        assert runner.task_id == first
    finally:
        await runner.close()
    # idempotent tools: no "started" entries, 3 answers and 4 results a turn
    assert census(runner.path).rows["events:journal"] == 2 * 7


def test_a_side_in_memory_persists_nothing(tmp_path: Path) -> None:
    assert census(tmp_path / "absent.db").rows == {}
