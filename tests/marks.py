"""The suite's marks, and a check that they tell the truth.

Every test carries one or more of ``processes`` (it starts ``accord serve``, an SDK server, a
worker, the CLI or any other program), ``postgres`` (it needs the PostgreSQL server at
``ACCORD_TEST_PG``) and ``browser`` (it drives Chromium), or else ``unit``: the fast part,
``pytest -m unit`` (``make test-fast``), which needs no other process, server or browser.

A test says what it needs where it needs it: a module whose tests start processes says
``pytestmark = pytest.mark.processes`` (one test: ``@pytest.mark.processes``), a parametrized
backend lists :data:`POSTGRES` (``pytest.param("postgres", marks=pytest.mark.postgres)``), and
the fixtures of :data:`BY_FIXTURE` mark every test that uses them, at collection.

The check: while a test runs (its set-up and its call), an audit hook watches for a
program started (``subprocess``, ``fork``, ``exec``…) by a test marked neither ``processes``
nor ``browser``, and for a connection to the PostgreSQL port by a test not marked
``postgres``. That operation raises where it happens, and the test fails naming what it did
and the mark it needs. (The connections of a server process are its own, not seen here: a
test that hands a server a PostgreSQL store is marked by the fixture it takes the DSN from.
Not the teardown: there the last test of a session or module also ends the fixtures of others,
such as the test database.)
"""

from __future__ import annotations

import os
import sys
from collections.abc import Generator, Iterable
from typing import Any
from urllib.parse import urlsplit

import pytest

SLOW = ("processes", "postgres", "browser")

BY_FIXTURE = {
    "pg_database": "postgres",
    "pg_module_url": "postgres",
    "pg_url": "postgres",
    "accord_server": "processes",  # tests/client and tests/interop: `accord serve`
    "sdk_server": "processes",  # tests/client: the a2a-sdk echo server
    "js_sdk": "processes",  # the official JS SDK: `npm ci`, node (tests/js)
    "playwright": "browser",  # tests/dashboard (its `browser` and `page` use it)
}

# The PostgreSQL case of a parametrized backend: ("memory", "sqlite", POSTGRES).
POSTGRES = pytest.param("postgres", marks=pytest.mark.postgres)
STORES = ("memory", "sqlite", POSTGRES)

# What starts another program (the audit events of the standard library).
_SPAWNS = frozenset(
    [
        "subprocess.Popen",
        "os.posix_spawn",
        "os.fork",
        "os.forkpty",
        "os.exec",
        "os.spawn",
        "os.system",
    ]
)
# Programs a library starts once to learn about the machine (the openai client asks
# platform.processor(), which runs `uname -p`): not a process a test starts.
_FACTS = frozenset({"uname"})


def mark(items: Iterable[pytest.Item]) -> None:
    """Add the marks of :data:`BY_FIXTURE`, and ``unit`` to the tests with none of ``SLOW``."""
    for item in items:
        for fixture in getattr(item, "fixturenames", ()):
            wanted = BY_FIXTURE.get(fixture)
            if wanted is not None and item.get_closest_marker(wanted) is None:
                item.add_marker(wanted)
        if not any(item.get_closest_marker(name) for name in SLOW):
            item.add_marker("unit")


class UnmarkedNeed(RuntimeError):
    """A test did what its marks say it does not (raised where it did it)."""


class Watch:
    """The audit hook's state: what the running test's marks allow, and what it did beyond."""

    def __init__(self, pg_port: int) -> None:
        self.pg_port = pg_port
        self.spawns_ok = self.postgres_ok = True  # between tests: anything goes
        self.seen: list[str] = []

    def audit(self, event: str, args: tuple[Any, ...]) -> None:
        # Called for every audited event of the process: cheap. Raising stops the operation.
        if event in _SPAWNS:
            if not self.spawns_ok and _program(event, args) not in _FACTS:
                self._refuse(f"it started a program ({event} {_shown(args)}): mark it processes")
        elif event == "socket.connect" and not self.postgres_ok and self._postgres(args):
            self._refuse(f"it connected to PostgreSQL ({args[1]!r}): mark it postgres")

    def _postgres(self, args: tuple[Any, ...]) -> bool:
        address = args[1] if len(args) == 2 else None
        if isinstance(address, tuple) and len(address) >= 2:
            return bool(address[1] == self.pg_port)
        return ".s.PGSQL." in str(address)  # a Unix socket

    def _refuse(self, what: str) -> None:
        # Remembered too: the test fails after the phase even if its code swallows the error.
        self.seen.append(what)
        raise UnmarkedNeed(what)

    def during(self, item: pytest.Item) -> Generator[None, object, object]:
        """A hook wrapper's body: watch ``item`` while one of its phases runs; fail it after."""
        marked = {name for name in SLOW if item.get_closest_marker(name) is not None}
        self.spawns_ok = bool(marked & {"processes", "browser"})
        self.postgres_ok = "postgres" in marked
        self.seen = []
        try:
            outcome = yield
        finally:
            self.spawns_ok = self.postgres_ok = True
        if self.seen:
            pytest.fail(f"{item.nodeid}: {'; '.join(dict.fromkeys(self.seen))}", pytrace=False)
        return outcome


def _program(event: str, args: tuple[Any, ...]) -> str:
    """The name of the program a spawn event starts ('' when it does not say)."""
    if event != "subprocess.Popen" or len(args) < 2:
        return ""
    executable, command = args[0], args[1]
    if not executable and isinstance(command, (list, tuple)) and command:
        executable = command[0]
    elif not executable and isinstance(command, (str, bytes)):
        executable = command.split()[0] if command.split() else ""
    return os.path.basename(os.fsdecode(executable or ""))


def _shown(args: tuple[Any, ...]) -> str:
    text = repr(args[1] if len(args) > 1 else args)
    return text if len(text) < 120 else text[:117] + "..."


# --- the plugin (tests/conftest.py lists it) -----------------------------------------------

watch: Watch | None = None  # one per process: an audit hook stays for the process's life


def pytest_configure(config: pytest.Config) -> None:
    global watch
    if watch is None:
        watch = Watch(urlsplit(os.environ.get("ACCORD_TEST_PG", "")).port or 5432)
        sys.addaudithook(watch.audit)


@pytest.hookimpl(tryfirst=True)  # before -m selects by the marks
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    mark(items)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, object, object]:
    return (yield from _watched(item))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, object, object]:
    return (yield from _watched(item))


def _watched(item: pytest.Item) -> Generator[None, object, object]:
    assert watch is not None
    return (yield from watch.during(item))
