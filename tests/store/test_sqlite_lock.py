"""One process per SQLite file: a store that opens a file another process holds is refused,
with the holder's pid; the OS lets go when the holder dies, even by SIGKILL; a reader that
does not hold the file (accord admin) opens it beside the holder."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from accord.store import FileInUse, SqliteStore, open_store
from accord.store._sqlite_lock import lock_path

from .records import new_task

pytestmark = pytest.mark.processes

HOLDER = """
import sys
from accord.store import FileInUse, _sqlite_lock as sqlite_lock
try:
    sqlite_lock.hold(sys.argv[1])
except FileInUse:
    print("refused", flush=True)
else:
    print("held", flush=True)
sys.stdin.read()  # until the test closes our stdin (or kills us)
"""


def another_process_can_hold(path: Path) -> bool:
    answer = subprocess.run(
        [sys.executable, "-c", HOLDER, str(path)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return answer.stdout == "held\n"


@contextmanager
def held_elsewhere(path: Path) -> Iterator[subprocess.Popen[str]]:
    """Another process holding ``path`` until the block ends."""
    process = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None and process.stdout.readline() == "held\n"
        yield process
    finally:
        if process.poll() is None:
            assert process.stdin is not None
            process.stdin.close()
        process.wait(timeout=30)


async def test_a_file_held_by_another_process_is_refused_with_its_pid(tmp_path: Path) -> None:
    path = tmp_path / "accord.db"
    with held_elsewhere(path) as holder:
        with pytest.raises(FileInUse) as refused:
            await SqliteStore(str(path)).open()
        assert str(refused.value) == (
            f"{path} is in use by python (pid {holder.pid}); "
            "use another --store, or PostgreSQL for several nodes"
        )
        # Refused before anything was written: no database was created.
        assert not path.exists()
    # Released when the holder ends: the file is ours now.
    store = SqliteStore(str(path))
    await store.open()
    await store.close()


async def test_a_killed_holder_leaves_no_stale_lock(tmp_path: Path) -> None:
    path = tmp_path / "accord.db"
    with held_elsewhere(path) as holder:
        holder.kill()
        holder.wait()
    assert Path(lock_path(str(path))).exists()  # the file stays; its lock went with the holder
    store = SqliteStore(str(path))
    await store.open()
    await store.close()


async def test_a_reader_opens_the_file_beside_its_holder(tmp_path: Path) -> None:
    path = tmp_path / "accord.db"
    seeded = SqliteStore(str(path))
    await seeded.open()
    task = await new_task(seeded, "kept")
    await seeded.close()
    with held_elsewhere(path):
        reader = open_store(f"sqlite:///{path}", exclusive=False)
        await reader.open()
        try:
            assert await reader.get_task("kept", None) == task
        finally:
            await reader.close()


async def test_stores_of_one_process_share_its_hold(tmp_path: Path) -> None:
    path = tmp_path / "accord.db"
    first, second = SqliteStore(str(path)), SqliteStore(str(path))
    await first.open()
    await second.open()
    await first.close()
    assert not another_process_can_hold(path)  # still held, by the second store
    await second.close()
    assert another_process_can_hold(path)
