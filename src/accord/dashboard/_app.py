"""The dashboard at ``/ui``: its page and files, and the reads its page makes under
``/ui/api/`` (everything it changes — messages, completions, cancels — goes through the A2A
API itself, as the caller).

- ``GET /ui`` (redirected to ``/ui/``), ``/ui/``, ``/ui/<file>``: the page and its files;
- ``GET /ui/api/session``: who the credentials are (identity, tenant, actors, mode);
- ``GET /ui/api/tasks?state=&context=&q=&page=&size=``: a page of the table (listing);
- ``GET /ui/api/tasks/changes?state=&context=&q=``: the table's changes, SSE (changes);
- ``GET /ui/api/tasks/{id}/events``: a task's timeline, SSE (timeline);
- ``GET /ui/api/tasks/{id}/push``: its push configs and their delivery (deliveries);
- ``GET /ui/api/health``, ``/ui/api/health/events``: the Health page, once or as SSE;
- ``GET /ui/api/activity``, ``/ui/api/activity/events``: the Activity page (the last hour of
  the server's own metrics), once or as SSE.

Each read authenticates as the API does and reads through accord.service (its reads apply
the rules the A2A operations apply: tenant, grants, the agent's access check; see
accord.service._access); every query value is checked and bounded (400 naming it). The page's
files need no credentials: they hold no data.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any

from accord.core.views import MAX_PAGE_SIZE
from accord.dashboard import _activity as activity
from accord.dashboard import _changes as changes
from accord.dashboard import _timeline as timeline
from accord.dashboard._assets import SECURITY_HEADERS, Assets
from accord.dashboard._changes import ROW_KINDS
from accord.dashboard._deliveries import webhook_row
from accord.dashboard._health import HealthReport
from accord.dashboard._rows import STATES, Filters, row
from accord.errors import AccordError
from accord.server import (
    JSON,
    STREAM_HEADERS,
    Authenticator,
    Binding,
    Request,
    Send,
    event_number,
    log_unexpected,
    respond,
    until_disconnected,
)
from accord.service import Reader, Service, search
from accord.service import _reads as reads
from accord.telemetry import ActivityHistory
from accord.wire import A2AError, encode

log = logging.getLogger("accord.dashboard")

PREFIX = "/ui"
API = "/ui/api/"
MAX_QUERY_VALUE = 1000  # characters of a filter, a tenant or a page token
MAX_TEXT = 200  # characters of the text filter
DEFAULT_SIZE = 50  # rows of a page


def handles(path: str) -> bool:
    return path == PREFIX or path.startswith(PREFIX + "/")


class BadQuery(AccordError, ValueError):
    """A query value the dashboard's API refuses (400, naming it)."""


class DashboardApp:
    def __init__(
        self,
        service: Service,
        auth: Authenticator,
        *,
        require_auth: bool = True,
        activity: ActivityHistory | None = None,
    ) -> None:
        self.service = service
        self.activity = activity
        self.binding = Binding(service, auth, require_auth)
        self.auth = auth
        self.assets = Assets()
        self.health = HealthReport(service)

    # --- entry -------------------------------------------------------------------------------

    def handles(self, path: str) -> bool:
        return handles(path)

    async def handle(self, request: Request, send: Send) -> None:
        path, method = request.path, request.method
        if method not in ("GET", "HEAD"):
            await _error(send, 405, f"{path} takes GET")
            return
        if not path.startswith(API):
            await self._page(request, send, path)
            return
        try:
            reader = self.service.reader(self.binding.caller(request), _query(request, "tenant"))
            await self._api(request, send, reader, path[len(API) :])
        except A2AError as error:
            await _error(send, error.kind.http_status, error.message)
        except BadQuery as error:
            await _error(send, 400, str(error))
        except Exception:
            log_unexpected(log, "GET %s failed", path)
            await _error(send, 500, "internal error")

    async def _page(self, request: Request, send: Send, path: str) -> None:
        if path == PREFIX:
            headers = [(b"location", b"/ui/"), *SECURITY_HEADERS]
            await respond(send, 308, b"", b"text/plain", headers)
            return
        name = path[len(PREFIX) + 1 :] or "index.html"
        if not await self.assets.serve(request, send, name):
            await _error(send, 404, f"no dashboard file {path}")

    # --- the API -----------------------------------------------------------------------------

    async def _api(self, request: Request, send: Send, reader: Reader, route: str) -> None:
        if route == "session":
            await _json(send, self._session(reader))
            return
        if route == "health":
            await _json(send, await self.health.document(reader))
            return
        if route == "health/events":
            frames = await self.health.follow(reader, self.service.heartbeat_s)
            await _stream(request, send, frames)
            return
        if route in ("activity", "activity/events"):
            # (server-wide numbers, as /metrics gives any valid credentials: no tenant's data)
            if self.activity is None:
                await _error(send, 404, "the dashboard's activity is off on this server")
            elif route == "activity":
                await _json(send, self.activity.document())
            else:
                frames = activity.frames(self.activity, self.service.heartbeat_s)
                await _stream(request, send, frames)
            return
        if route in ("tasks", "tasks/changes"):
            reader.require("tasks")  # (refused before its query is read)
            filters = _filters(request)
            if route == "tasks":
                await _json(send, await self._tasks(request, reader, filters))
                return
            found = await reads.changes(self.service, reader, _last_event_id(request), ROW_KINDS)
            await _stream(request, send, changes.frames(found, filters))
            return
        if route.startswith("tasks/"):
            task_id, _, what = route[len("tasks/") :].rpartition("/")
            if task_id and what == "events":
                task = await reads.visible_task(self.service, reader, task_id)
                after = _last_event_id(request) or 0
                frames = timeline.frames(reads.timeline(self.service, task, after))
                await _stream(request, send, frames)
                return
            if task_id and what == "push":
                webhooks = await reads.webhooks(self.service, reader, task_id)
                await _json(send, {"configs": [webhook_row(w) for w in webhooks]})
                return
        await _error(send, 404, f"no dashboard API at {request.path}")

    def _session(self, reader: Reader) -> dict[str, Any]:
        caller = reader.caller
        return {
            "identity": caller.identity,
            "tenant": caller.tenant,
            "authenticated": caller.authenticated,
            "actors": sorted(caller.actors),
            "openMode": not self.auth.configured,
            "seesWholeTenant": reader.sees_whole_tenant,
        }

    async def _tasks(self, request: Request, reader: Reader, filters: Filters) -> dict[str, Any]:
        size = _integer(request, "size", DEFAULT_SIZE, 1, MAX_PAGE_SIZE)
        token = _query(request, "page") or ""
        found = await search(self.service, reader, filters, size=size, token=token)
        return {
            "rows": [row(record) for record in found.records],
            "next": found.next_token,
            "total": found.total,
            "scanned": found.scanned,
            "exhausted": found.exhausted,
        }


# --- requests ------------------------------------------------------------------------------


def _query(request: Request, name: str) -> str | None:
    value = request.query_value(name)
    if value is not None and len(value) > MAX_QUERY_VALUE:
        raise BadQuery(f"{name}: at most {MAX_QUERY_VALUE} characters")
    return value


def _integer(request: Request, name: str, default: int, low: int, high: int) -> int:
    value = _query(request, name)
    if not value:
        return default
    if not (value.isascii() and value.isdigit()) or not low <= int(value[:6]) <= high:
        raise BadQuery(f"{name}: expected a number from {low} to {high}, got {value[:20]!r}")
    return int(value)


def _filters(request: Request) -> Filters:
    state_name = _query(request, "state") or ""
    state = STATES.get(state_name) if state_name else None
    if state_name and state is None:
        raise BadQuery(f"state: expected one of {', '.join(STATES)}, got {state_name[:40]!r}")
    text = (_query(request, "q") or "").strip()
    if len(text) > MAX_TEXT:
        raise BadQuery(f"q: at most {MAX_TEXT} characters")
    return Filters(state=state, context_id=_query(request, "context") or "", text=text)


def _last_event_id(request: Request) -> int | None:
    """Where a stream resumes: the ``Last-Event-ID`` header, else the ``after`` parameter."""
    value = request.headers.get("last-event-id") or _query(request, "after")
    if not value or not value.strip():
        return None
    try:
        return event_number(value.strip())
    except ValueError as exc:
        raise BadQuery(f"Last-Event-ID: not an event id this server sent: {exc}") from None


# --- answers -------------------------------------------------------------------------------


async def _json(send: Send, body: Any) -> None:
    await respond(send, 200, encode(body), JSON, [(b"cache-control", b"no-store")])


async def _error(send: Send, status: int, message: str) -> None:
    headers = [(b"cache-control", b"no-store")]
    if status == 401:
        headers.append((b"www-authenticate", b"Bearer"))
    body = encode({"error": {"status": status, "message": message}})
    await respond(send, status, body, JSON, headers)


async def _stream(request: Request, send: Send, frames: AsyncIterator[bytes]) -> None:
    """Write ``frames`` as an SSE response until they end or the client goes away."""
    await send({"type": "http.response.start", "status": 200, "headers": STREAM_HEADERS})

    async def pump() -> None:
        try:
            async for chunk in frames:
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        except OSError:
            return  # the client went away
        finally:
            await frames.aclose()  # type: ignore[attr-defined]

    await until_disconnected(request.receive, pump())


__all__ = ["PREFIX", "DashboardApp", "handles"]
