"""One accord process per SQLite file: a lock on a side file, ``<database>.lock``.

A process that serves a SQLite file must be its only writer: its start-up recovery fails every
task it finds SUBMITTED or WORKING, which on a shared file would be another process's running
tasks. So the process holds an exclusive ``flock`` on ``<database>.lock`` while its store is
open (``accord serve`` takes it before anything else and keeps it until it exits). The OS
releases the lock when its holder ends, however it ends (``kill -9`` too), so a lock is never
stale; the file itself stays, holding the pid and program of its last holder for the refusal
message. (It is never deleted: a process could otherwise lock a file another one is about to
delete, while a third locks the new one.)

Within one process every store on the file shares one hold, counted: the lock is about
processes, not stores. Readers beside a running server (``accord admin``) take no lock.
"""

from __future__ import annotations

import fcntl
import os
import sys
import threading
from dataclasses import dataclass

from accord.store._base import StoreError


class FileInUse(StoreError):
    """Another process holds the SQLite file."""


@dataclass
class _Hold:
    fd: int
    count: int


_holds: dict[str, _Hold] = {}  # by the database's real path
_guard = threading.Lock()


def cannot_open(db_path: str, exc: BaseException) -> str:
    """Why ``db_path`` cannot be opened: its directory missing is said as such, with the
    ``sqlite:///`` (relative) against ``sqlite:////`` (absolute) rule a relative path may
    have got wrong; else the error as it came."""
    directory = os.path.dirname(db_path)
    if not directory or os.path.isdir(directory):
        return f"cannot open {db_path}: {exc}"
    reason = f"cannot open {db_path}: the directory {directory} does not exist"
    if os.path.isabs(db_path):
        return f"{reason} (create it first)"
    return (
        f"{reason} (sqlite:///{db_path} is a path relative to the working directory, "
        f"{os.getcwd()}; an absolute path takes four slashes: sqlite:////{db_path})"
    )


def lock_path(db_path: str) -> str:
    return f"{db_path}.lock"


def hold(db_path: str) -> None:
    """Hold ``db_path`` for this process (again, if it does already); raises FileInUse when
    another process holds it, StoreError when the lock file cannot be opened."""
    key = os.path.realpath(db_path)
    with _guard:
        held = _holds.get(key)
        if held is not None:
            held.count += 1
            return
        try:
            fd = os.open(lock_path(db_path), os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise StoreError(cannot_open(db_path, exc)) from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = _read_holder(fd)
            os.close(fd)
            raise FileInUse(_in_use_message(db_path, holder)) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()} {program()}\n".encode(), 0)
        _holds[key] = _Hold(fd, 1)


def release(db_path: str) -> None:
    """Let go of one hold of ``db_path``; the last one unlocks the file."""
    key = os.path.realpath(db_path)
    with _guard:
        held = _holds.get(key)
        if held is None:
            return
        held.count -= 1
        if held.count == 0:
            del _holds[key]
            os.close(held.fd)  # closing the descriptor releases the flock


def program() -> str:
    """What this process is, as another one's refusal names it: ``accord serve`` for the
    command line (its subcommand only: the rest may hold secrets), else the program's name."""
    argv = sys.argv
    if not argv or not argv[0] or argv[0] == "-c":
        return "python"
    name = os.path.basename(argv[0])
    if name == "accord" or argv[0].endswith(os.path.join("accord", "__main__.py")):
        subcommand = argv[1] if len(argv) > 1 else ""
        return f"accord {subcommand}" if subcommand.isalpha() else "accord"
    return name


def _read_holder(fd: int) -> tuple[int, str] | None:
    """The pid and program the holder wrote (None while it has not written them yet)."""
    try:
        pid, _, name = os.pread(fd, 256, 0).decode(errors="replace").strip().partition(" ")
    except OSError:
        return None
    return (int(pid), name or "another process") if pid.isdigit() else None


def _in_use_message(db_path: str, holder: tuple[int, str] | None) -> str:
    by = f"{holder[1]} (pid {holder[0]})" if holder is not None else "another process"
    return f"{db_path} is in use by {by}; use another --store, or PostgreSQL for several nodes"
