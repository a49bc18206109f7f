"""benchmarks/harness_turn_cpu.py's ``--render``: the conversation it renders is the one its
turns store (a participant's messages owed their turn, the model's numbered answers), and it
takes the transcript's plain path, so the count is of that path (``--general``: the other)."""

from __future__ import annotations

import sys
from pathlib import Path

from accord.harness import _transcript as transcript

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.append(str(BENCHMARKS))  # last: its modules shadow nothing

from harness_turn_cpu import running  # noqa: E402


def test_the_rendered_conversation_takes_the_plain_path() -> None:
    task = running(22)
    plain = transcript._plain_entries(task, "accord")
    assert plain is not None
    assert plain == transcript.entries(task, "accord", plain=False)
    assert [entry.role for entry in plain] == ["user", "agent"] * 11
    assert plain[0] == transcript.Entry("bench", "user", "turn 0", 0)
    assert plain[-1] == transcript.Entry("accord", "agent", "ok", 21)
