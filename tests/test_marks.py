"""The suite's marks tell the truth (tests/marks.py): a test not marked ``processes`` that
starts a program, or not marked ``postgres`` that reaches PostgreSQL, fails where it does so;
what is marked nothing else is the fast part, ``unit``."""

from __future__ import annotations

import socket
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from tests import marks


@contextmanager
def refused(match: str) -> Iterator[None]:
    """The block raises where its test did what its marks do not allow."""
    assert marks.watch is not None
    with pytest.raises(marks.UnmarkedNeed, match=match):
        yield
    # Remembered, so that the test fails after its call even had it swallowed the error;
    # not this one, which did it on purpose.
    assert marks.watch.seen
    marks.watch.seen.clear()


def test_a_test_without_processes_cannot_start_a_program(request: pytest.FixtureRequest) -> None:
    assert request.node.get_closest_marker("unit") is not None
    with refused(r"started a program \(subprocess.Popen \['true'\]\): mark it processes"):
        subprocess.run(["true"], check=True)


def test_a_test_without_postgres_cannot_connect_to_it() -> None:
    assert marks.watch is not None
    with refused(r"connected to PostgreSQL .*: mark it postgres"):
        socket.create_connection(("127.0.0.1", marks.watch.pg_port), timeout=5).close()


def test_what_a_library_asks_the_machine_is_no_process() -> None:
    subprocess.run(["uname", "-p"], check=True, capture_output=True)


@pytest.mark.processes
def test_a_test_marked_processes_starts_what_it_likes(request: pytest.FixtureRequest) -> None:
    assert request.node.get_closest_marker("unit") is None
    subprocess.run(["true"], check=True)
