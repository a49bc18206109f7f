"""A small ASGI agent whose streams break on purpose, to test stream resumption.

It speaks just enough JSON-RPC and HTTP+JSON for SendStreamingMessage, SubscribeToTask and
GetTask. One task, six events; the first stream sends three of them and then drops the
connection. What the following SubscribeToTask sends depends on ``mode``:

* ``ids``: SSE ids on every event; resubscribing with ``Last-Event-ID`` gets what follows.
* ``ids_twice``: like ``ids``, but the first resubscription breaks again after one event.
* ``clean_eof``: like ``ids``, but the first stream ends cleanly (no error) mid-task.
* ``stall``: like ``ids``, but the first stream goes silent for a while instead of breaking,
  then sends the rest (a client that did not time out never resubscribes).
* ``snapshot``: no ids; the SDK's behaviour: a Task snapshot, then the live events.
* ``replay``: no ids; every event again from the start.
* ``finished``: the task ended while the client was away: subscribe is refused, GetTask works.
* ``always``: every resubscription breaks again before sending anything.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn
from tests.processes import free_port

TASK_ID = "task-1"
CONTEXT_ID = "ctx-1"

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


def _ts(second: int) -> str:
    return f"2026-01-01T00:00:{second:02d}.000Z"


def _status(state: str, second: int) -> dict[str, Any]:
    return {
        "statusUpdate": {
            "taskId": TASK_ID,
            "contextId": CONTEXT_ID,
            "status": {"state": state, "timestamp": _ts(second)},
        }
    }


def _chunk(text: str, *, append: bool, last: bool = False) -> dict[str, Any]:
    return {
        "artifactUpdate": {
            "taskId": TASK_ID,
            "contextId": CONTEXT_ID,
            "artifact": {"artifactId": "a1", "parts": [{"text": text}]},
            "append": append,
            "lastChunk": last,
        }
    }


def _task(state: str, texts: list[str], second: int | None = None) -> dict[str, Any]:
    status: dict[str, Any] = {"state": state}
    if second is not None:
        status["timestamp"] = _ts(second)
    task: dict[str, Any] = {"id": TASK_ID, "contextId": CONTEXT_ID, "status": status}
    if texts:
        task["artifacts"] = [{"artifactId": "a1", "parts": [{"text": t} for t in texts]}]
    return task


EVENTS: list[dict[str, Any]] = [
    {"task": _task("TASK_STATE_SUBMITTED", [])},
    _status("TASK_STATE_WORKING", 1),
    _chunk("a", append=False),
    _chunk("b", append=True),
    _chunk("c", append=True, last=True),
    _status("TASK_STATE_COMPLETED", 2),
]
BREAK_AFTER = 3  # events sent before the first stream breaks
STALL_SECONDS = 2.0  # how long a stalled stream stays silent


class Dropped(Exception):
    """Raised inside the app to make the server cut the connection mid-response."""


class BreakingAgent:
    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.subscribes: list[str | None] = []  # the Last-Event-ID of each resubscription
        self.authorizations: list[str | None] = []  # the Authorization header of each request

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                else:
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        path: str = scope["path"]
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        self.authorizations.append(headers.get("authorization"))
        rpc = path == "/rpc"
        request_id = None
        if rpc:
            envelope = json.loads(body)
            request_id = envelope["id"]
            operation = envelope["method"]
        elif path.endswith("/message:stream"):
            operation = "SendStreamingMessage"
        elif path.endswith(":subscribe"):
            operation = "SubscribeToTask"
        else:
            operation = "GetTask"

        def wrap(event: dict[str, Any]) -> dict[str, Any]:
            return {"jsonrpc": "2.0", "id": request_id, "result": event} if rpc else event

        if operation == "SendStreamingMessage":
            with_ids = self.mode in ("ids", "ids_twice", "clean_eof", "stall", "always")
            numbered = list(enumerate(EVENTS[:BREAK_AFTER], 1))
            if self.mode == "stall":
                everything = list(enumerate(EVENTS, 1))
                await self._sse(send, everything, wrap, with_ids, stall=STALL_SECONDS)
            else:
                await self._sse(send, numbered, wrap, with_ids, drop=self.mode != "clean_eof")
        elif operation == "SubscribeToTask":
            last_id = headers.get("last-event-id")
            self.subscribes.append(last_id)
            await self._subscribe(send, wrap, last_id)
        else:
            task = _task("TASK_STATE_COMPLETED", ["a", "b", "c"], 2)
            await self._json(send, 200, wrap(task))

    async def _subscribe(
        self, send: Send, wrap: Callable[[dict[str, Any]], dict[str, Any]], last_id: str | None
    ) -> None:
        numbered = list(enumerate(EVENTS, 1))
        if self.mode in ("ids", "clean_eof", "ids_twice", "stall"):
            after = int(last_id or 0)
            rest = [(n, e) for n, e in numbered if n > after]
            drop = self.mode == "ids_twice" and len(self.subscribes) == 1
            await self._sse(send, rest[:1] if drop else rest, wrap, True, drop=drop)
        elif self.mode == "always":
            await self._sse(send, [], wrap, True, drop=True)
        elif self.mode == "snapshot":
            snapshot = {"task": _task("TASK_STATE_WORKING", ["a", "b"], 1)}
            await self._sse(send, [(0, snapshot), (0, EVENTS[4]), (0, EVENTS[5])], wrap, False)
        elif self.mode == "replay":
            await self._sse(send, numbered, wrap, False)
        elif self.mode == "finished":
            error = {
                "code": -32004,
                "message": "Task is in a terminal state",
                "data": [
                    {
                        "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                        "reason": "UNSUPPORTED_OPERATION",
                        "domain": "a2a-protocol.org",
                    }
                ],
            }
            if wrap({}) == {}:  # REST
                rest_error = {"error": {"code": 400, "status": "FAILED_PRECONDITION", **error}}
                rest_error["error"]["details"] = rest_error["error"].pop("data")
                await self._json(send, 400, rest_error)
            else:
                await self._json(
                    send, 200, {"jsonrpc": "2.0", "id": wrap({})["id"], "error": error}
                )

    @staticmethod
    async def _json(send: Send, status: int, body: dict[str, Any]) -> None:
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [(b"content-type", b"application/json")],
            }
        )
        await send({"type": "http.response.body", "body": json.dumps(body).encode()})

    @staticmethod
    async def _sse(
        send: Send,
        events: list[tuple[int, dict[str, Any]]],
        wrap: Callable[[dict[str, Any]], dict[str, Any]],
        with_ids: bool,
        *,
        drop: bool = False,
        stall: float = 0.0,
    ) -> None:
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"text/event-stream")],
            }
        )
        for number, event in events:
            if stall and number == BREAK_AFTER + 1:
                await asyncio.sleep(stall)
            frame = f"id: {number}\n" if with_ids else ""
            frame += f"data: {json.dumps(wrap(event))}\n\n"
            await send({"type": "http.response.body", "body": frame.encode(), "more_body": True})
        if drop:
            raise Dropped("cutting the connection mid-stream")
        await send({"type": "http.response.body", "body": b"", "more_body": False})


@contextmanager
def serve(agent: BreakingAgent) -> Iterator[str]:
    """Run ``agent`` with uvicorn in a background thread; yields its base URL."""
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(agent, host="127.0.0.1", port=port, log_level="critical", lifespan="on")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("breaking server did not start")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
