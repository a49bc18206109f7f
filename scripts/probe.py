"""Probe ``accord serve`` the way a hostile client would, and say what holds.

    python scripts/probe.py             # every probe; exit status 1 if any fails
    python scripts/probe.py --list      # the probes, by name
    python scripts/probe.py body-stall deep-json   # some of them

Each probe prints one line, ``PASS`` or ``FAIL``, its name and what it saw. The script starts
its own servers (``python -m accord serve`` on free loopback ports, SQLite stores in a
temporary directory, logs kept there) and talks to nothing else. Every probe has a time
limit, so a server that hangs is a FAIL, not a hung script.

The probes cover the security review's points: grants on every binding (1), the head decided
before the body (2), slow and numerous clients (3), open mode and web pages (4), inputs that
gave internal errors (5), webhook secrets (6), page tokens and feed positions (7).

Adding a probe: a coroutine taking a :class:`Target`, registered with ``@probe(name, point,
settings=...)``; it raises :class:`ProbeFailed` (``check``) to fail and returns what it saw.
Probes that share the same settings share one server, in registration order.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import httpx

from accord.wire._codec import encode
from accord.wire._model import AuthenticationInfo, TaskPushNotificationConfig
from accord.wire._proto import a2a_pb2 as pb

HOST = "127.0.0.1"
A2A = {"A2A-Version": "1.0"}
DEEP = "[" * 1100 + "]" * 1100  # past any recursive JSON parser's limit
SECRET = "s3cret-d41d8cd9"
# What a JSON-RPC request's head needs for the server to go on and read its body (a head it
# refuses is answered at once, body unread).
HEAD_PASSES = "Content-Type: application/json\r\nA2A-Version: 1.0\r\n"

# The server most probes share: short timeouts, so that slow clients are cut within seconds.
BASE: dict[str, Any] = {
    "body_timeout_s": 1.0,
    "body_min_rate": 500,
    "keep_alive_s": 1.0,
    "max_connections": 1024,
    "push_allow_hosts": [HOST],
    "push_poll_interval_s": 0.5,
    "push_max_attempts": 2,
    "push_retry_base_s": 0.1,
}


class ProbeFailed(AssertionError):
    """What a probe saw that it should not have."""


def check(condition: object, message: str) -> None:
    if not condition:
        raise ProbeFailed(message)


@dataclass(frozen=True)
class Target:
    """A running ``accord serve``."""

    port: int
    grpc_port: int
    store_path: Path
    log_path: Path

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def http(self, **options: Any) -> httpx.AsyncClient:
        # A connection per request: the probes' server closes an idle one after a second, and
        # one the client reused just as the server closed it would fail a probe for nothing.
        options.setdefault("limits", httpx.Limits(max_keepalive_connections=0))
        return httpx.AsyncClient(base_url=self.url, headers=A2A, timeout=10, **options)


@dataclass(frozen=True)
class Probe:
    name: str
    point: str  # the issue point it checks
    run: Callable[[Target], Awaitable[str]]
    settings: tuple[tuple[str, Any], ...]
    timeout_s: float


PROBES: list[Probe] = []


def probe(
    name: str, point: str, *, settings: dict[str, Any] | None = None, timeout_s: float = 60.0
) -> Callable[[Callable[[Target], Awaitable[str]]], Callable[[Target], Awaitable[str]]]:
    def register(run: Callable[[Target], Awaitable[str]]) -> Callable[[Target], Awaitable[str]]:
        merged = {**BASE, **(settings or {})}
        frozen = tuple(sorted((k, json.dumps(v)) for k, v in merged.items()))
        PROBES.append(Probe(name, point, run, frozen, timeout_s))
        return run

    return register


# --- helpers -------------------------------------------------------------------------------


async def connect(target: Target) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    return await asyncio.open_connection(HOST, target.port)


async def until_closed(reader: asyncio.StreamReader, timeout_s: float) -> bytes | None:
    """What the server sent before closing, or None if it is still open after the time."""
    data = b""
    try:
        async with asyncio.timeout(timeout_s):
            while chunk := await reader.read(4096):
                data += chunk
    except TimeoutError:
        return None
    except ConnectionError:
        pass
    return data


async def new_task(target: Target) -> str:
    async with target.http() as http:
        message = {
            "messageId": f"m-{time.monotonic_ns()}",
            "role": "ROLE_USER",
            "parts": [{"text": "probe"}],
        }
        response = await http.post("/message:send", json={"message": message})
        check(response.status_code == 200, f"message:send answered {response.status_code}")
        return str(response.json()["task"]["id"])


def field_violations(details: list[dict[str, Any]]) -> list[str]:
    return [
        v["field"]
        for d in details
        if d.get("@type", "").endswith("BadRequest")
        for v in d.get("fieldViolations", [])
    ]


async def jsonrpc(
    http: httpx.AsyncClient, method: str, params: dict[str, Any], headers: Any = None
) -> dict[str, Any]:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    response = await http.post("/", json=body, headers=headers)
    check(response.status_code == 200, f"JSON-RPC {method} answered HTTP {response.status_code}")
    answer: dict[str, Any] = response.json()
    return answer


def expect_invalid_params(answer: dict[str, Any], field: str, what: str) -> None:
    error = answer.get("error")
    check(error is not None, f"{what}: answered {answer.get('result')!r:.80}")
    assert error is not None
    check(error["code"] == -32602, f"{what}: error {error['code']} {error['message']!r:.80}")
    got = field_violations(error.get("data", []))
    check(got == [field], f"{what}: field violations {got}, wanted [{field!r}]")


def expect_rest_invalid(response: httpx.Response, field: str, what: str) -> None:
    check(response.status_code == 400, f"{what}: HTTP {response.status_code} {response.text:.80}")
    got = field_violations(response.json()["error"].get("details", []))
    check(got == [field], f"{what}: field violations {got}, wanted [{field!r}]")


async def grpc_failure(target: Target, method: str, request: Any, metadata: Any) -> grpc.StatusCode:
    async with grpc.aio.insecure_channel(f"{HOST}:{target.grpc_port}") as channel:
        call = channel.unary_unary(
            f"/lf.a2a.v1.A2AService/{method}",
            request_serializer=lambda m: m.SerializeToString(),
            response_deserializer=lambda b: b,
        )
        try:
            await call(request, metadata=metadata, timeout=10)
        except grpc.aio.AioRpcError as error:
            return error.code()
    return grpc.StatusCode.OK


def token(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


# --- point 3: slow and numerous clients ----------------------------------------------------


@probe("body-stall", "3")
async def body_stall(target: Target) -> str:
    """100 connections send a head and one body byte, then nothing."""
    connections = [await connect(target) for _ in range(100)]
    for _, writer in connections:
        head = f"POST / HTTP/1.1\r\nHost: {HOST}\r\n{HEAD_PASSES}Content-Length: 100\r\n\r\n"
        writer.write(head.encode() + b"{")
    answers = await asyncio.gather(*(until_closed(r, 20) for r, _ in connections))
    for _, writer in connections:
        writer.close()
    still_open = sum(answer is None for answer in answers)
    told = sum(bool(answer and answer.startswith(b"HTTP/1.1 408")) for answer in answers)
    check(still_open == 0, f"{still_open} of 100 still open after 20 s")
    check(told == 100, f"{told} of 100 answered 408")
    return "100 of 100 answered 408 and closed"


@probe("body-trickle", "3")
async def body_trickle(target: Target) -> str:
    """A body that never pauses for long but comes at a few bytes a second."""
    reader, writer = await connect(target)
    writer.write(
        f"POST / HTTP/1.1\r\nHost: {HOST}\r\n{HEAD_PASSES}Content-Length: 100000\r\n\r\n".encode()
    )
    answer = b""
    reset = False
    for _ in range(200):  # 20 s at most
        if not answer:  # (as a client does: once answered, it stops sending)
            with contextlib.suppress(ConnectionError):
                writer.write(b" ")
                await writer.drain()
        try:
            answer += await asyncio.wait_for(reader.read(1024), 0.1)
        except TimeoutError:
            pass
        except ConnectionError:
            reset = True  # (a byte that crossed the server's close: the cut, all the same)
        if reader.at_eof() or reset:
            break
    writer.close()
    check(reader.at_eof() or reset, "still open after 20 s of a byte every 0.1 s")
    check(answer.startswith(b"HTTP/1.1 408"), f"answered {answer[:40]!r}")
    return "cut with 408 under the minimum rate"


@probe("head-slowloris", "3")
async def head_slowloris(target: Target) -> str:
    connections = [await connect(target) for _ in range(20)]
    for _, writer in connections:
        writer.write(f"GET / HTTP/1.1\r\nHost: {HOST}\r\n".encode())

    async def trickle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        for _ in range(100):  # 10 s at most
            with contextlib.suppress(ConnectionError):
                writer.write(b"X")
            with contextlib.suppress(TimeoutError, ConnectionError):
                await asyncio.wait_for(reader.read(1024), 0.1)
            if reader.at_eof():
                return True
        return False

    cut = await asyncio.gather(*(trickle(r, w) for r, w in connections))
    for _, writer in connections:
        writer.close()
    check(all(cut), f"{cut.count(False)} of 20 heads still open after 10 s")
    return "20 of 20 trickled heads cut"


@probe("connection-cap", "3", settings={"max_connections": 50, "keep_alive_s": 60.0})
async def connection_cap(target: Target) -> str:
    held = [await connect(target) for _ in range(50)]
    extra = [await connect(target) for _ in range(10)]
    answers = await asyncio.gather(*(until_closed(r, 10) for r, _ in extra))
    refused = sum(a is not None and (a == b"" or a.startswith(b"HTTP/1.1 503")) for a in answers)
    for _, writer in extra:
        writer.close()
    _, writer = held.pop()
    writer.close()
    served = False
    for _ in range(100):  # once the server has seen that close, a new one is served
        async with target.http() as http:
            with contextlib.suppress(httpx.TransportError):
                response = await http.get("/.well-known/agent-card.json")
                if response.status_code == 200:
                    served = True
                    break
        await asyncio.sleep(0.05)
    for _, held_writer in held:
        held_writer.close()
    check(refused == 10, f"{refused} of 10 connections past the cap refused")
    check(served, "no connection served after one of the 50 closed")
    return "10 of 10 past max_connections=50 refused; served again once one closed"


# --- point 5: inputs that were internal errors ---------------------------------------------


@probe("last-event-id", "5")
async def last_event_id(target: Target) -> str:
    task_id = await new_task(target)
    checked = 0
    for value in (b"\xb2", b"9" * 4301, b"9223372036854775808"):
        headers = {b"Last-Event-ID": value}
        async with target.http() as http:
            for method in ("GetTask", "SubscribeToTask"):
                answer = await jsonrpc(http, method, {"id": task_id}, headers)
                expect_invalid_params(answer, "Last-Event-ID", f"JSON-RPC {method}")
                checked += 1
            for response in (
                await http.get(f"/tasks/{task_id}", headers=headers),
                await http.post(f"/tasks/{task_id}:subscribe", headers=headers),
            ):
                expect_rest_invalid(response, "Last-Event-ID", "HTTP+JSON")
                checked += 1
        if value.isascii():  # gRPC metadata carries ASCII only
            metadata = (("a2a-version", "1.0"), ("last-event-id", value.decode()))
            code = await grpc_failure(target, "GetTask", pb.GetTaskRequest(id=task_id), metadata)
            check(code == grpc.StatusCode.INVALID_ARGUMENT, f"gRPC GetTask: {code}")
            checked += 1
    return f"{checked} requests, each a validation error naming Last-Event-ID"


@probe("page-token-range", "5")
async def page_token_range(target: Target) -> str:
    forged = token(b"99999999999999999999999:x")  # was SQLite's OverflowError
    async with target.http() as http:
        answer = await jsonrpc(http, "ListTasks", {"pageToken": forged})
        expect_invalid_params(answer, "pageToken", "JSON-RPC ListTasks")
        response = await http.get("/tasks", params={"pageToken": forged})
        expect_rest_invalid(response, "pageToken", "HTTP+JSON ListTasks")
    code = await grpc_failure(
        target, "ListTasks", pb.ListTasksRequest(page_token=forged), (("a2a-version", "1.0"),)
    )
    check(code == grpc.StatusCode.INVALID_ARGUMENT, f"gRPC ListTasks: {code}")
    return "an out-of-range page token is InvalidParams on every binding (SQLite store)"


DEEP_BODIES = {
    "/tasks/commands/tasks:work": (
        '{"id": "t", "status_message": {"messageId": "m", "role": "ROLE_AGENT", "parts": [],'
        f' "metadata": {{"a": {DEEP}}}}}}}',
        "status_message.metadata",
    ),
    "/tasks/commands/tasks:update_artifact": (
        '{"id": "t", "append": false, "last_chunk": true, "artifact": {"artifactId": "a",'
        f' "parts": [], "metadata": {{"a": {DEEP}}}}}}}',
        "artifact.metadata",
    ),
    "/tasks/commands/pushNotificationConfigs:create": (
        f'{{"task_id": "t", "url": "https://h.example/", "authentication": {DEEP}}}',
        "authentication",
    ),
}


@probe("deep-json", "5")
async def deep_json(target: Target) -> str:
    async with target.http() as http:
        for path, (body, expected) in DEEP_BODIES.items():
            response = await http.post(
                path, content=body, headers={"Content-Type": "application/json"}
            )
            check(response.status_code == 422, f"{path}: HTTP {response.status_code}")
            fields = [e["field"] for e in response.json().get("errors", [])]
            check(fields == [expected], f"{path}: fields {fields}, wanted [{expected!r}]")
    return "JSON nested 1,100 deep in free-form fields: 422 naming the field"


@probe("no-traceback-flood", "5")
async def no_traceback_flood(target: Target) -> str:
    """The inputs above, 600 times: the server log stays small and holds no traceback."""
    before = target.log_path.stat().st_size
    body, _ = DEEP_BODIES["/tasks/commands/tasks:work"]
    async with target.http() as http:
        for _ in range(200):
            await http.post(
                "/",
                json={"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}},
                headers={b"Last-Event-ID": b"\xb2"},
            )
            await http.get("/tasks", params={"pageToken": token(b"99999999999999999999999:x")})
            await http.post(
                "/tasks/commands/tasks:work",
                content=body,
                headers={"Content-Type": "application/json"},
            )
    grown = target.log_path.stat().st_size - before
    check("Traceback" not in target.log(), "the server log holds a traceback")
    check(grown < 16 * 1024, f"the server log grew {grown} bytes for 600 requests")
    return f"600 hostile requests: log grew {grown} bytes, no traceback"


# --- point 6: webhook secrets --------------------------------------------------------------

UNSENDABLE = {
    "CR LF": f"{SECRET}\r\nX-Injected: 1",
    "NUL": f"{SECRET}\x00",
    "non-ASCII": f"{SECRET}-é",
}


@probe("push-secret-refused", "6")
async def push_secret_refused(target: Target) -> str:
    task_id = await new_task(target)
    url = f"http://{HOST}:9/hook"
    checked = 0
    async with target.http() as http:
        for what, value in UNSENDABLE.items():
            for field, config in (
                ("token", {"url": url, "token": value}),
                (
                    "authentication.credentials",
                    {"url": url, "authentication": {"scheme": "Bearer", "credentials": value}},
                ),
            ):
                response = await http.post(f"/tasks/{task_id}/pushNotificationConfigs", json=config)
                expect_rest_invalid(response, field, f"CreateTaskPushNotificationConfig {what}")
                check(SECRET not in response.text, f"the refusal of {field} quotes the secret")
                message = {
                    "messageId": f"m-{checked}",
                    "role": "ROLE_USER",
                    "parts": [{"text": "x"}],
                }
                answer = await jsonrpc(
                    http,
                    "SendMessage",
                    {
                        "message": message,
                        "configuration": {"taskPushNotificationConfig": config},
                    },
                )
                expect_invalid_params(
                    answer, f"configuration.taskPushNotificationConfig.{field}", "inline"
                )
                checked += 2
    return f"{checked} registrations with CR/LF, NUL or non-ASCII refused, naming the field"


@contextlib.asynccontextmanager
async def webhook_receiver() -> AsyncIterator[tuple[int, list[bytes]]]:
    """A loopback webhook that answers 200 to anything: what a delivery reaches, if sent."""
    heads: list[bytes] = []

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(Exception):
            heads.append(await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10))
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n")
            await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, HOST, 0)
    try:
        yield server.sockets[0].getsockname()[1], heads
    finally:
        server.close()


@dataclass(frozen=True)
class Delivery:
    state: str
    failures: int
    last_error: str


def delivery_of(path: Path, task_id: str, config_id: str) -> Delivery | None:
    with contextlib.closing(sqlite3.connect(path, timeout=10)) as db:
        row = db.execute(
            "SELECT delivery_state, failures, last_error FROM push_configs"
            " WHERE task_id = ? AND config_id = ?",
            (task_id, config_id),
        ).fetchone()
    return Delivery(*row) if row else None


@probe("push-secret-stored-before", "6")
async def push_secret_stored_before(target: Target) -> str:
    """A config an older accord accepted, put straight into the store: delivery gives up on
    it, and neither the log nor ``accord admin push-deliveries`` shows the secret."""
    task_id = await new_task(target)
    async with webhook_receiver() as (port, heads):
        config = TaskPushNotificationConfig(
            url=f"http://{HOST}:{port}/hook",
            id="older",
            task_id=task_id,
            token=UNSENDABLE["CR LF"],
            authentication=AuthenticationInfo(scheme="Bearer", credentials=UNSENDABLE["NUL"]),
        )
        # Written beside the running server (which holds the file: accord's own store would
        # refuse to open it), as the row an older accord stored.
        with contextlib.closing(sqlite3.connect(target.store_path, timeout=10)) as db, db:
            db.execute(
                "INSERT INTO push_configs (task_id, config_id, tenant, created_ms, body)"
                " VALUES (?, ?, '', 0, ?)",
                (task_id, "older", encode(config)),
            )
        failing = None
        for _ in range(200):  # the server's poll claims it within a second; 20 s at most
            failing = await asyncio.to_thread(delivery_of, target.store_path, task_id, "older")
            if failing is not None and failing.state == "failing":
                break
            await asyncio.sleep(0.1)
    check(failing is not None and failing.state == "failing", f"delivery state: {failing}")
    assert failing is not None
    check(not heads, "a request with the injected header reached the webhook")
    check(SECRET not in failing.last_error, "the stored error quotes the secret")
    admin = [
        sys.executable,
        "-m",
        "accord",
        "admin",
        "push-deliveries",
        "--store",
        f"sqlite:///{target.store_path}",
    ]
    shown = ""
    for extra in ([], ["--json"]):
        done = subprocess.run([*admin, *extra], capture_output=True, text=True, timeout=60)
        check(done.returncode == 0, f"accord admin: exit {done.returncode} {done.stderr:.80}")
        shown += done.stdout + done.stderr
    check("older" in shown, "accord admin does not list the failing config")
    check(SECRET not in shown, "accord admin shows the secret")
    check(SECRET not in target.log(), "the server log shows the secret")
    return f"failing after {failing.failures} attempt(s), nothing sent, no secret shown"


# --- point 7: page tokens and feed positions -----------------------------------------------


@probe("page-token-signed", "7")
async def page_token_signed(target: Target) -> str:
    for _ in range(3):
        await new_task(target)
    async with target.http() as http:
        first = (await jsonrpc(http, "ListTasks", {"pageSize": 1}))["result"]
        issued = first["nextPageToken"]
        last = first["tasks"][0]
        check(issued, "no nextPageToken on a first page of one")
        own = await jsonrpc(http, "ListTasks", {"pageSize": 1, "pageToken": issued})
        check("result" in own, f"the server refused its own token: {own.get('error')}")
        # Well formed, as tokens were before they were signed: a position the client chose.
        unsigned = token(f"{10**15}:{last['id']}".encode())
        answer = await jsonrpc(http, "ListTasks", {"pageToken": unsigned})
        expect_invalid_params(answer, "pageToken", "an unsigned page token")
    return "its own token pages on; a well-formed unsigned one is refused"


@probe("feed-position-int64", "7")
async def feed_position_int64(target: Target) -> str:
    async with target.http() as http:
        for value in (str(2**63), f"{2**63 - 1}-{2**63}", "9" * 30):
            response = await http.get("/tasks/events", headers={"Last-Event-ID": value})
            check(
                response.status_code == 422, f"Last-Event-ID {value[:24]}: {response.status_code}"
            )
    return "feed positions past int64 answered 422 (the stream used to end silently)"


# --- running -------------------------------------------------------------------------------


# --- point 1: grants on every binding ------------------------------------------------------

WORKER_KEY = "probe-worker-key-0123456789"  # a remote worker's key: the Agent actor only
CLIENT_KEY = "probe-client-key-0123456789"  # a client's key
GRANTED = {
    "require_auth": True,
    "extended_card": True,
    "principals": [
        {"identity": "worker", "actors": ["a2a.tasks.Agent"], "api_key": WORKER_KEY},
        {
            "identity": "client",
            "actors": ["a2a.tasks.Client", "a2a.discovery.Client"],
            "api_key": CLIENT_KEY,
        },
    ],
}


async def _count_tasks(http: httpx.AsyncClient) -> int:
    answer = await jsonrpc(http, "ListTasks", {}, {"X-API-Key": CLIENT_KEY})
    return int(answer["result"].get("totalSize", 0))


@probe("grants-every-binding", "1", settings=GRANTED)
async def grants_every_binding(target: Target) -> str:
    worker = {"X-API-Key": WORKER_KEY, "Content-Type": "application/json"}
    message = {"messageId": "m-grant", "role": "ROLE_USER", "parts": [{"text": "hi"}]}
    async with target.http() as http:
        before = await _count_tasks(http)
        mine = await jsonrpc(http, "SendMessage", {"message": message}, {"X-API-Key": CLIENT_KEY})
        task_id = mine["result"]["task"]["id"]
        refused = []
        for method, params in (
            ("SendMessage", {"message": {**message, "messageId": "m-grant-2"}}),
            ("CancelTask", {"id": task_id}),
            ("GetTask", {"id": task_id}),
            ("CreateTaskPushNotificationConfig", {"taskId": task_id, "url": "https://x.example/h"}),
            ("ListTaskPushNotificationConfigs", {"taskId": task_id}),
            ("GetExtendedAgentCard", {}),
        ):
            answer = await jsonrpc(http, method, params, worker)
            check(
                answer.get("error", {}).get("code") == -32013, f"JSON-RPC {method}: {answer!r:.120}"
            )
            refused.append(method)
        for verb, path, body in (
            ("POST", "/message:send", {"message": {**message, "messageId": "m-grant-3"}}),
            ("POST", f"/tasks/{task_id}:cancel", {}),
            ("GET", f"/tasks/{task_id}", None),
            ("GET", "/extendedAgentCard", None),
        ):
            response = await http.request(verb, path, json=body, headers=worker)
            check(response.status_code == 403, f"HTTP+JSON {verb} {path}: {response.status_code}")
        code = await grpc_failure(
            target,
            "SendMessage",
            pb.SendMessageRequest(
                message=pb.Message(
                    message_id="m-grant-4", role=pb.ROLE_USER, parts=[pb.Part(text="x")]
                )
            ),
            (("x-api-key", WORKER_KEY), ("a2a-version", "1.0")),
        )
        check(code is grpc.StatusCode.PERMISSION_DENIED, f"gRPC SendMessage: {code}")
        after = await _count_tasks(http)
        check(after == before + 1, f"tasks {before} -> {after}: the worker's sends created tasks")
        state = await jsonrpc(http, "GetTask", {"id": task_id}, {"X-API-Key": CLIENT_KEY})
        check(state["result"]["status"]["state"] != "TASK_STATE_CANCELED", "the worker canceled")
    operations = f"{len(refused)} JSON-RPC, 4 HTTP+JSON and gRPC operations"
    return f"a worker key refused on {operations}; nothing changed"


# --- point 2: the head decides before the body is read -------------------------------------


@probe("auth-before-body", "2", settings=GRANTED)
async def auth_before_body(target: Target) -> str:
    seen = []
    for path in ("/", "/message:send", "/tasks/commands/message:send"):
        reader, writer = await connect(target)
        writer.write(
            f"POST {path} HTTP/1.1\r\nHost: {HOST}\r\n{HEAD_PASSES}"
            f"Content-Length: {10 * 1024 * 1024}\r\n\r\n".encode()
        )
        await writer.drain()
        try:
            async with asyncio.timeout(5):
                head = await reader.readuntil(b"\r\n\r\n")
                status = int(head.split()[1])
                length = int(
                    next(
                        line.split(b":")[1]
                        for line in head.split(b"\r\n")
                        if line.lower().startswith(b"content-length")
                    )
                )
                body = await reader.readexactly(length)
        except TimeoutError:
            raise ProbeFailed(
                f"{path}: no answer to an anonymous head (was the body awaited?)"
            ) from None
        finally:
            writer.close()
        refused = status == 401 or (status == 200 and b"-32012" in body)
        check(refused, f"{path}: HTTP {status} {body[:80]!r}")
        seen.append(f"{path} {status}")
    return "an anonymous 10 MiB head answered before any body byte: " + ", ".join(seen)


# --- point 4: open mode and web pages ------------------------------------------------------


@probe("open-mode-browsers", "4")
async def open_mode_browsers(target: Target) -> str:
    rpc = {"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {}}
    async with target.http() as http:
        rebinding = await http.post("/", json=rpc, headers={"Host": "evil.example"})
        check(
            b"-32013" in rebinding.content or rebinding.status_code == 403,
            f"Host evil.example: {rebinding.status_code}",
        )
        cross = await http.post("/", json=rpc, headers={"Origin": "https://evil.example"})
        check(
            b"-32013" in cross.content or cross.status_code == 403,
            f"cross-site Origin: {cross.status_code}",
        )
        for path in ("/", "/message:send", "/tasks/commands/message:send"):
            blind = await http.post(
                path + "?A2A-Version=1.0",
                content=json.dumps(rpc).encode(),
                headers={"Content-Type": "text/plain"},
            )
            check(
                blind.status_code == 415 or b"-32005" in blind.content,
                f"text/plain POST {path}: {blind.status_code}",
            )
        preflight = await http.options(
            "/",
            headers={"Origin": "https://evil.example", "Access-Control-Request-Method": "POST"},
        )
        check("access-control-allow-origin" not in preflight.headers, "a preflight was granted")
    return "a rebinding Host, a cross-site Origin, text/plain POSTs and preflights all refused"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def toml_value(value: Any) -> str:
    return json.dumps(value)  # numbers, strings and lists of strings read the same in TOML


def toml_text(settings: dict[str, Any]) -> str:
    """The settings file: plain values first, then lists of tables (``[[principals]]``)."""
    tables = {
        k: v for k, v in settings.items() if isinstance(v, list) and v and isinstance(v[0], dict)
    }
    lines = [f"{k} = {toml_value(v)}" for k, v in settings.items() if k not in tables]
    for name, rows in tables.items():
        for row in rows:
            lines.append(f"[[{name}]]")
            lines.extend(f"{k} = {toml_value(v)}" for k, v in row.items())
    return "\n".join(lines) + "\n"


@contextlib.contextmanager
def accord_serve(workdir: Path, settings: dict[str, Any]) -> Iterator[Target]:
    port, grpc_port = free_port(), free_port()
    config = workdir / "accord.toml"
    config.write_text(toml_text(settings))
    store_path = workdir / "tasks.db"
    log_path = workdir / "server.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACCORD_")}
    command = [
        sys.executable,
        "-m",
        "accord",
        "serve",
        "--host",
        HOST,
        "--port",
        str(port),
        "--grpc-port",
        str(grpc_port),
        "--store",
        f"sqlite:///{store_path}",
        "--config",
        str(config),
        "--log-level",
        "info",
    ]
    with log_path.open("wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
    try:
        deadline = time.monotonic() + 30
        while True:
            check(process.poll() is None, f"accord serve exited: {log_path.read_text()[-400:]}")
            check(time.monotonic() < deadline, "accord serve did not start within 30 s")
            with contextlib.suppress(httpx.TransportError):
                if httpx.get(f"http://{HOST}:{port}/.well-known/agent-card.json").is_success:
                    break
            time.sleep(0.1)
        yield Target(port, grpc_port, store_path, log_path)
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


async def run_one(item: Probe, target: Target) -> tuple[bool, str]:
    try:
        async with asyncio.timeout(item.timeout_s):
            return True, await item.run(target)
    except TimeoutError:
        return False, f"no answer within {item.timeout_s:g} s"
    except ProbeFailed as failure:
        return False, str(failure)
    except Exception as exc:  # a probe that breaks is a failure too, with its reason
        return False, f"{type(exc).__name__}: {exc}"


def run(selected: list[Probe], out: Any = sys.stdout) -> bool:
    groups: dict[tuple[tuple[str, Any], ...], list[Probe]] = {}
    for item in selected:
        groups.setdefault(item.settings, []).append(item)
    passed = True
    with tempfile.TemporaryDirectory(prefix="accord-probe-") as tmp:
        for number, (frozen, items) in enumerate(groups.items()):
            workdir = Path(tmp) / f"server-{number}"
            workdir.mkdir()
            settings = {k: json.loads(v) for k, v in frozen}
            try:
                with accord_serve(workdir, settings) as target:
                    for item in items:
                        ok, seen = asyncio.run(run_one(item, target))
                        passed &= ok
                        print(
                            f"{'PASS' if ok else 'FAIL'} [{item.point}] {item.name}: {seen}",
                            file=out,
                            flush=True,
                        )
            except ProbeFailed as failure:
                passed = False
                for item in items:
                    print(f"FAIL [{item.point}] {item.name}: {failure}", file=out, flush=True)
    return passed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help="probes to run (default: all)")
    parser.add_argument("--list", dest="list_only", action="store_true", help="list the probes")
    args = parser.parse_args(argv)
    if args.list_only:
        for item in PROBES:
            print(f"[{item.point}] {item.name}")
        return 0
    unknown = set(args.names) - {item.name for item in PROBES}
    if unknown:
        parser.error(f"no probe named {', '.join(sorted(unknown))}")
    selected = [item for item in PROBES if not args.names or item.name in args.names]
    return 0 if run(selected) else 1


if __name__ == "__main__":
    sys.exit(main())
