"""The benchmark's wrk scripts (benchmarks/lua.py), run in LuaJIT as wrk runs them.

The requests a script generates are answered by accord in-process (the echo agent on the
SQLite store the benchmark fills) or by the bare ASGI echo, and every answer must pass the
script's check; answers that are wrong the way a broken server could be wrong must fail it,
and ``done()`` must report them. A check that could not fail would let the benchmark count
errors as served requests.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.benchmarks.wrk_stub import latency, new_runtime, result_line, summary
from tests.server.server_helpers import serve_settings

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.append(str(BENCHMARKS))  # last: its modules shadow nothing

from asgi_echo import app as echo_app  # noqa: E402  (benchmarks/ is not a package)
from lua import script  # noqa: E402
from populate_accord import populate  # noqa: E402

STORED = 60  # tasks stored: GetTask picks among them; ListTasks pages 50 and reports them all


class Script:
    """One scenario's script loaded in Lua, as one wrk thread runs it."""

    def __init__(self, scenario: str, binding: str) -> None:
        self.runtime = new_runtime()
        text = script(scenario, binding, run="test", stored=STORED, total=STORED, connections=1)
        self.runtime.execute(text)
        self.lua = self.runtime.globals()
        self.lua.setup(self.lua.one_thread)

    def request(self) -> tuple[str, str, bytes | None, dict[str, str]]:
        parts = self.lua.request()
        body = parts["body"]
        headers = dict(self.lua.wrk.headers.items())
        return parts["method"], parts["path"], body.encode() if body else None, headers

    def response(self, status: int, body: bytes) -> None:
        self.lua.response(status, self.runtime.table(), body)

    @property
    def bad(self) -> int:
        return int(self.lua.bad)

    def done(self, requests: int) -> dict[str, Any]:
        """The RESULT line done() prints, as run.py reads it (each request took 250 µs)."""
        histogram = latency(self.runtime, {250: requests})
        self.lua.done(summary(self.runtime, requests, 1_000_000), histogram, None)
        return result_line(self.runtime)


@pytest.fixture
async def accord(tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    """accord's echo agent on a SQLite store filled the way the benchmark fills it."""
    db = tmp_path / "bench.db"
    await populate(str(db), first=1, count=STORED, concurrency=4)
    async with serve_settings(store=f"sqlite:///{db}") as client:
        yield client


async def answer(http: httpx.AsyncClient, checked: Script) -> tuple[int, bytes]:
    method, path, body, headers = checked.request()
    response = await http.request(method, path, content=body, headers=headers)
    return response.status_code, response.content


SCENARIOS = [
    (scenario, binding)
    for scenario in ("send", "stream", "get", "list")
    for binding in ("jsonrpc", "rest")
]


@pytest.mark.parametrize(("scenario", "binding"), SCENARIOS)
async def test_accords_answers_pass_the_check(
    accord: httpx.AsyncClient, scenario: str, binding: str
) -> None:
    checked = Script(scenario, binding)
    for _ in range(5):
        status, body = await answer(accord, checked)
        checked.response(status, body)
    assert checked.bad == 0, checked.lua.first_bad
    assert checked.done(5)["bad"] == 0


def _not_completed(body: bytes) -> bytes:
    return body.replace(b"TASK_STATE_COMPLETED", b"TASK_STATE_WORKING")


def _no_artifact(body: bytes) -> bytes:
    return body.replace(b"echo: hello", b"something else")


def _an_error(body: bytes) -> bytes:
    return b'{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"internal"}}'


def _last_event_dropped(body: bytes) -> bytes:
    events = body.rstrip(b"\n").split(b"\n\n")
    return b"\n\n".join(events[:-1]) + b"\n\n"


def _first_event_dropped(body: bytes) -> bytes:
    return b"\n\n".join(body.split(b"\n\n")[1:])


def _other_total(body: bytes) -> bytes:
    return body.replace(b'"totalSize":%d' % STORED, b'"totalSize":%d' % (STORED + 1))


def _first_task_only(body: bytes) -> bytes:
    document = json.loads(body)
    page = document.get("result", document)
    page["tasks"] = page["tasks"][:1]
    return json.dumps(document).encode()


WRONG: list[tuple[str, str, Callable[[bytes], bytes], int]] = [
    ("send", "jsonrpc", _not_completed, 200),
    ("send", "jsonrpc", _no_artifact, 200),
    ("send", "jsonrpc", _an_error, 200),
    ("send", "rest", _not_completed, 200),
    ("send", "rest", lambda body: body, 500),
    ("stream", "jsonrpc", _last_event_dropped, 200),
    ("stream", "jsonrpc", _no_artifact, 200),
    ("stream", "jsonrpc", _first_event_dropped, 200),
    ("stream", "rest", _last_event_dropped, 200),
    ("get", "jsonrpc", _not_completed, 200),
    ("get", "jsonrpc", _an_error, 200),
    ("get", "rest", _no_artifact, 200),
    ("get", "rest", lambda body: body, 404),
    ("list", "jsonrpc", _other_total, 200),
    ("list", "jsonrpc", _first_task_only, 200),
    ("list", "rest", _first_task_only, 200),
]


@pytest.mark.parametrize(("scenario", "binding", "spoil", "status"), WRONG)
async def test_a_wrong_answer_fails_the_check_and_is_reported(
    accord: httpx.AsyncClient,
    scenario: str,
    binding: str,
    spoil: Callable[[bytes], bytes],
    status: int,
) -> None:
    checked = Script(scenario, binding)
    good_status, body = await answer(accord, checked)
    checked.response(good_status, body)
    assert checked.bad == 0
    wrong = spoil(body)
    assert wrong != body or status != good_status  # the spoiler changed something
    checked.response(status, wrong)
    assert checked.bad == 1
    assert checked.done(2)["bad"] == 1


async def test_the_echo_check_passes_the_echo_and_fails_other_answers() -> None:
    checked = Script("get", "echo")
    transport = httpx.ASGITransport(app=echo_app)
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as http:
        for _ in range(3):
            status, body = await answer(http, checked)
            checked.response(status, body)
    assert checked.bad == 0, checked.lua.first_bad
    checked.response(200, _an_error(b""))
    checked.response(503, body)
    assert checked.bad == 2
