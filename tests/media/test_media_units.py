"""The pieces of media on their own: a task's files go with the task (retention), a WAV's
length, ranges, a safe Content-Disposition, names, media types and the [media] table."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from tests.marks import POSTGRES
from tests.store.records import new_task

from accord.config import ConfigError
from accord.media import MediaFile, MediaSettings, media_store, parse_media
from accord.media._endpoint import byte_range, content_disposition
from accord.media._ingest import file_type, safe_filename, wav_seconds
from accord.store import MemoryStore, SqliteStore, TaskStore
from accord.store._postgres import PostgresStore


def _file(media_id: str, task_id: str = "", size: int = 600_000) -> MediaFile:
    return MediaFile(media_id, "t1", task_id, "id:alice", "image/png", "a.png", size, "x", 1)


@pytest.mark.parametrize("backend", ("memory", "sqlite", POSTGRES))
async def test_a_tasks_files_go_with_the_task(
    request: pytest.FixtureRequest, tmp_path: Path, backend: str
) -> None:
    store: TaskStore
    if backend == "memory":
        store = MemoryStore()
    elif backend == "sqlite":
        store = SqliteStore(str(tmp_path / "t.db"))
    else:
        store = PostgresStore(request.getfixturevalue("pg_url"))
    files = media_store(store)
    await store.open()
    try:
        data = bytes(range(256)) * 2400  # three chunks
        for task_id, at, moves in (("old", 1000, ("complete",)), ("kept", 1000, ("work",))):
            await new_task(store, task_id, now_ms=at, moves=moves)
            await files.put(_file(f"file-of-{task_id}-000000"), data)
            await files.bind("t1", [f"file-of-{task_id}-000000"], task_id)
        await files.put(_file("never-taken-0000000"), b"abc")
        got = b"".join([c async for c in files.read("file-of-kept-000000", 262140, 262150)])
        assert got == data[262140:262150]
        assert (await files.get("t1", "file-of-old-000000")) is not None
        assert (await files.get("t2", "file-of-old-000000")) is None  # another tenant
        assert await store.delete_terminal_before(3000) == 1  # retention
        assert (await files.get("t1", "file-of-old-000000")) is None
        assert [c async for c in files.read("file-of-old-000000", 0, 10)] == []
        assert (await files.get("t1", "file-of-kept-000000")) is not None
        assert await files.forget_unbound(2) == 1
        assert (await files.get("t1", "never-taken-0000000")) is None
    finally:
        await store.close()


def _wav(seconds: float, rate: int = 8000) -> bytes:
    samples = int(seconds * rate)
    fmt = struct.pack("<HHIIHH", 1, 1, rate, rate, 1, 8)
    return (
        b"RIFF" + struct.pack("<I", 36 + samples) + b"WAVE"
        + b"fmt " + struct.pack("<I", 16) + fmt
        + b"data" + struct.pack("<I", samples) + b"\x80" * samples
    )  # fmt: skip


def test_a_wavs_length_comes_from_its_header() -> None:
    assert wav_seconds(_wav(2.5)) == 2.5
    assert wav_seconds(b"ID3 not a wav") is None


def test_ranges() -> None:
    assert byte_range(None, 100) is None
    assert byte_range("bytes=10-19", 100) == (10, 20)
    assert byte_range("bytes=90-", 100) == (90, 100)
    assert byte_range("bytes=-5", 100) == (95, 100)
    assert byte_range("bytes=50-999", 100) == (50, 100)
    assert byte_range("bytes=100-", 100) is False
    assert byte_range("bytes=20-10", 100) is False
    assert byte_range("bytes=0-1,5-6", 100) is None  # several: the whole file
    assert byte_range("items=0-1", 100) is None


def test_disposition_names_and_types() -> None:
    svg = MediaFile("i", "", "t", "o", "image/svg+xml", 'évil"\r\nx.svg', 1, "s", 1)
    assert content_disposition(svg) == (
        b"attachment; filename=\"_vil___x.svg\"; filename*=UTF-8''%C3%A9vil%22%0D%0Ax.svg"
    )
    assert safe_filename("../../etc/passwd") == "passwd"
    assert safe_filename('a\x00b"c.txt') == "abc.txt"
    assert file_type("", "notes.txt") == "text/plain"
    assert file_type("IMAGE/PNG; x=1", "a.bin") == "image/png"
    assert file_type("not a type", "") == "application/octet-stream"
    assert MediaSettings().accepts("text/markdown")
    assert not MediaSettings().accepts("application/x-msdownload")


def test_the_media_table() -> None:
    parsed = parse_media({"max_file_bytes": 10, "accepted": ["image/*"], "enabled": True})
    assert (parsed.max_file_bytes, parsed.accepted, parsed.enabled) == (10, ("image/*",), True)
    assert parsed.accepts("image/heic") and not parsed.accepts("text/plain")
    with pytest.raises(ConfigError, match=r"media.max_file_bytes: must be more than 0"):
        parse_media({"max_file_bytes": 0})
    with pytest.raises(ConfigError, match="media"):
        parse_media({"unknown": 1})
