"""Kill a process writing through the SQLite store with SIGKILL at some point, reopen the
file, and check that everything the store acknowledged is there and every log is whole."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from accord.core._events import fold
from accord.store import SqliteStore
from accord.wire._model import TaskState

pytestmark = pytest.mark.processes

ROOT = Path(__file__).resolve().parents[2]
ALL_STATES = frozenset(TaskState) - {TaskState.UNSPECIFIED}


@pytest.mark.parametrize(
    ("synchronous", "seed"), [("FULL", 1), ("FULL", 2), ("FULL", 3), ("NORMAL", 4)]
)
async def test_acknowledged_writes_survive_sigkill(
    tmp_path: Path, synchronous: str, seed: int
) -> None:
    path = str(tmp_path / "accord.db")
    kill_after = random.Random(seed).randrange(20, 2000)  # acknowledgements before the kill
    child = subprocess.Popen(
        [sys.executable, "-m", "tests.store.crash_writer", path, synchronous],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'src'}"},
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    acked: dict[str, int] = {}
    try:
        for count, line in enumerate(child.stdout, start=1):
            task_id, seq = line.split()
            acked[task_id] = max(acked.get(task_id, 0), int(seq))
            if count == kill_after:
                child.send_signal(signal.SIGKILL)
                break
        # Lines already written before the kill were acknowledged too.
        for line in child.stdout:
            task_id, seq = line.split()
            acked[task_id] = max(acked.get(task_id, 0), int(seq))
    finally:
        child.kill()
        child.wait()
    assert child.returncode == -signal.SIGKILL  # it was killed, not finished or crashed
    assert len(acked) > 0

    store = SqliteStore(path)
    await store.open()
    try:
        for task_id, seq in acked.items():
            record = await store.get_task(task_id, None)
            assert record is not None, f"acknowledged task {task_id} is missing"
            assert record.seq >= seq, f"{task_id}: seq {seq} was acknowledged, {record.seq} kept"
        scanned = []
        after = ""
        while page := await store.tasks_in_states(ALL_STATES, limit=500, after_id=after):
            scanned += page
            after = page[-1].id
        for record in scanned:
            events = await store.read_events(record.id, 0)
            assert [e.seq for e in events] == list(range(1, record.seq + 1)), record.id
            assert fold(events) == record.task, record.id
        assert await store.count_tasks("t1") == len(scanned)
    finally:
        await store.close()
