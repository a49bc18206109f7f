"""A small real disk that a test fills and empties: a tmpfs mounted in a temporary folder
(mounting needs root; tests skip, saying so, where the mount is refused)."""

from __future__ import annotations

import contextlib
import errno
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

CHUNK = b"\0" * 65536


class SmallDisk:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._filler = path / "filler"

    def fill(self) -> None:
        """Take every free byte (the next write that needs space fails: ENOSPC)."""
        with self._filler.open("ab", buffering=0) as file:
            while True:
                try:
                    file.write(CHUNK)  # (a partial write takes the last bytes)
                except OSError as exc:
                    if exc.errno != errno.ENOSPC:
                        raise
                    return

    def free(self) -> None:
        self._filler.unlink(missing_ok=True)


@contextlib.contextmanager
def small_disk(folder: Path, size: str = "8m") -> Iterator[SmallDisk]:
    """A tmpfs of ``size`` mounted at ``folder/disk`` for the duration."""
    mount = folder / "disk"
    mount.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
        check=False,
    )
    if mounted.returncode != 0:
        why = mounted.stderr.strip() or f"exit status {mounted.returncode}"
        pytest.skip(f"cannot mount a tmpfs to fill (needs root): {why}")
    try:
        yield SmallDisk(mount)
    finally:
        subprocess.run(["umount", "--lazy", str(mount)], capture_output=True, check=False)
