"""The HTTP command surface: ``POST /tasks/commands/…``, ``POST /discovery/commands/…``,
``GET /tasks/views/…``, the Agent feed ``GET /tasks/events``, worker claims
``POST /tasks/claims`` and ``GET /openapi.json``.

Order of checks for a command: authenticate (401 when credentials are configured and missing
or wrong), the caller's rate limit (429 with ``Retry-After``, docs/server.md), the grant (403
standard refusal, from accord.core._grants), a JSON Content-Type (415), version and
extensions for the A2A client commands (502 outcomes) — all from the head, before the body is
read — then the Input (422) and the command. Every outcome is answered
with the status code the seed declares for it.
"""

from __future__ import annotations

import asyncio
import logging
from functools import cache
from typing import Any

import msgspec

from accord.agents import Access
from accord.core import Caller, granted
from accord.engine import Claims
from accord.server import JSON, Authenticator, Binding, Request, Send, log_unexpected, respond
from accord.service import Call, Service, negotiate
from accord.surface import _contract as contract
from accord.surface import _views as views
from accord.surface._feed import follow, parse_last_event_id
from accord.surface._handlers import HANDLERS, NEGOTIATED, Context, InputError, Result, Unfinished
from accord.wire import A2AError, ErrorKind, Task, encode

log = logging.getLogger("accord.surface")

PREFIXES = ("/tasks/commands/", "/discovery/commands/", "/tasks/views/")
EXACT = ("/tasks/events", "/tasks/claims", "/openapi.json")


def handles(path: str) -> bool:
    return path.startswith(PREFIXES) or path in EXACT


@cache
def _error_names(operation: str, outcome: str) -> str | None:
    schemas = contract.seed_document()["components"]["schemas"]
    schema = schemas.get(f"{operation}.{outcome}.Response", {})
    error = schema.get("properties", {}).get("error", {}).get("const")
    return error if isinstance(error, str) else None


def _json(value: Any) -> bytes:
    return encode(value)


class SurfaceApp:
    def __init__(
        self,
        service: Service,
        auth: Authenticator,
        *,
        require_auth: bool = True,
        claims: Claims | None = None,
        api_key: bool = False,
        bearer: bool = False,
    ) -> None:
        self.service = service
        self.auth = auth
        self.binding = Binding(service, auth, require_auth)
        self.claims = claims
        self._document = _json(contract.served_document(auth.configured, api_key, bearer))

    # --- entry -------------------------------------------------------------------------------

    def handles(self, path: str) -> bool:
        return handles(path)

    def refusal_body(self, message: str) -> bytes:
        """A request a browser check refused, in the surface's own shape."""
        return _json({"refused": message})

    async def handle(self, request: Request, send: Send) -> None:
        path, method = request.path, request.method
        try:
            if path == "/openapi.json" and method in ("GET", "HEAD"):
                await respond(send, 200, self._document, JSON)
                return
            caller = self._authenticate(request)
            if caller is None:
                await self._answer(send, 401, {"refused": "missing or invalid credentials"})
                return
            try:
                await self.binding.limit(caller, request)
            except A2AError as limited:  # the rate limit, as on the A2A bindings
                wait = limited.retry_after_s or 1
                await respond(
                    send,
                    429,
                    _json({"refused": limited.message, "retryAfter": wait}),
                    JSON,
                    [(b"retry-after", b"%d" % wait)],
                )
                return
            if path == "/tasks/events" and method == "GET":
                await self._feed(request, send, caller)
            elif path == "/tasks/claims" and method == "POST":
                await self._claim(request, send, caller)
            else:
                await self._operation(request, send, caller)
        except A2AError as error:  # a body past the size limit, or not declared JSON
            status = 415 if error.kind is ErrorKind.UNSUPPORTED_MEDIA_TYPE else 422
            await self._answer(send, status, {"refused": error.message})
        except Exception:
            log_unexpected(log, "%s %s failed", method, path)
            await self._answer(send, 500, {"refused": "internal error"})

    def _authenticate(self, request: Request) -> Caller | None:
        try:
            return self.binding.authenticate(request)
        except A2AError:
            return None

    async def _answer(self, send: Send, status: int, body: Any) -> None:
        headers = [(b"www-authenticate", b"Bearer")] if status == 401 else []
        await respond(send, status, _json(body), JSON, headers)

    async def _refuse_grant(self, send: Send, caller: Caller) -> None:
        actor = min(caller.actors) if caller.actors else None
        await self._answer(send, 403, {"refused": "not granted", "actor": actor})

    # --- commands and views ------------------------------------------------------------------

    async def _operation(self, request: Request, send: Send, caller: Caller) -> None:
        op = contract.operations().get(request.path)
        if op is None:
            await self._answer(send, 404, {"refused": f"no command or view at {request.path}"})
            return
        if request.method != op.method:
            await self._answer(send, 405, {"refused": f"{request.path} takes {op.method}"})
            return
        if not granted(caller, op.name):
            await self._refuse_grant(send, caller)
            return
        if op.is_view:
            await self._view(request, send, caller, op.name)
            return
        request.require_json()
        try:
            call = Call(caller=caller)
            refused = self._negotiate(request, op.name, call)
            if refused is not None:
                result = refused
            else:
                body = await request.body(self.service.bounds.max_body_bytes)
                ctx = Context(service=self.service, claims=self.claims, call=call, body=body)
                result = await HANDLERS[op.name](ctx)
        except InputError as error:
            await self._answer(send, 422, {"refused": str(error), "errors": error.errors})
            return
        except Unfinished as error:
            await self._answer(send, 501, {"refused": str(error), "committed": error.committed})
            return
        except A2AError as error:
            if error.kind in (
                ErrorKind.INVALID_PARAMS,
                ErrorKind.INVALID_REQUEST,
                ErrorKind.PAYLOAD_TOO_LARGE,
            ):
                errors = [{"field": v.field, "message": v.description} for v in error.violations]
                await self._answer(send, 422, {"refused": error.message, "errors": errors})
                return
            refusal = self._tenant_refusal(op, error)
            if refusal is None:
                log.info("%s unfinished: %s", op.name, error.message)
                await self._answer(send, 501, {"refused": error.message, "committed": False})
                return
            result = refusal
        status = op.statuses.get(result.outcome)
        if status is None:
            await self._answer(
                send, 501, {"refused": f"undeclared outcome {result.outcome}", "committed": False}
            )
            return
        body_out: dict[str, Any] = {
            "outcome": result.outcome,
            "published": [{"event": p.event, "payload": p.payload} for p in result.published],
        }
        error_name = _error_names(op.name, result.outcome)
        if error_name is not None:
            body_out["error"] = error_name
            if result.payload is not None:
                body_out["payload"] = result.payload
        elif result.response is not None:
            body_out["response"] = result.response
        await respond(send, status, _json(body_out), JSON)

    @staticmethod
    def _tenant_refusal(op: contract.Operation, error: A2AError) -> Result | None:
        """An authenticated caller naming another tenant: that tenant's tasks are not its."""
        if error.kind is not ErrorKind.PERMISSION_DENIED:
            return None
        for name in ("other-tenant", "task-not-found", "not-found"):
            if name in op.statuses:
                return Result(name)
        return None

    def _negotiate(self, request: Request, name: str, call: Call) -> Result | None:
        """For an A2A client command: the outcome refusing its version or extensions, or
        None (with the activated extensions in ``call``)."""
        if name not in NEGOTIATED:
            return None
        try:
            call.extensions = negotiate(
                self.service,
                request.service_parameter("a2a-version"),
                request.service_parameter("a2a-extensions"),
            )
        except A2AError as error:
            if error.kind is ErrorKind.VERSION_NOT_SUPPORTED:
                return Result("version-not-supported")
            return Result("extension-required")
        return None

    async def _view(self, request: Request, send: Send, caller: Caller, name: str) -> None:
        params = dict(request.query)
        engine = self.service.engine
        store = engine.store

        def allows(operation: Access, task: Task) -> bool:
            return engine.allows(operation, task, caller)

        try:
            if name == "a2a.tasks.Tasks":
                rows = await views.tasks_view(store, caller, params, allows)
            elif name == "a2a.tasks.AllTasks":
                rows = await views.all_tasks_view(store, caller)
            elif name == "a2a.tasks.TaskPushNotificationConfigs":
                rows = await views.task_push_configs_view(store, caller, params, allows)
            else:
                rows = await views.all_push_configs_view(store, caller)
        except InputError as error:
            await self._answer(send, 422, {"refused": str(error), "errors": error.errors})
            return
        await respond(send, 200, _json({"rows": rows}), JSON)

    # --- remote agents -----------------------------------------------------------------------

    async def _feed(self, request: Request, send: Send, caller: Caller) -> None:
        if not granted(caller, "accord.remote.Feed"):
            await self._refuse_grant(send, caller)
            return
        try:
            after = parse_last_event_id(
                request.headers.get("last-event-id") or request.query_value("after")
            )
        except ValueError as exc:
            await self._answer(send, 422, {"refused": str(exc)})
            return
        service = self.service
        frames = follow(service.engine, service.hub, caller.tenant, after, service.heartbeat_s)
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [
                    (b"content-type", b"text/event-stream"),
                    (b"cache-control", b"no-cache"),
                    (b"x-accel-buffering", b"no"),
                ],
            }
        )

        async def pump() -> None:
            await send({"type": "http.response.body", "body": b": feed\n\n", "more_body": True})
            async for frame in frames:
                await send({"type": "http.response.body", "body": frame, "more_body": True})

        # A server may swallow writes to a closed connection, so the feed also watches for the
        # disconnect itself: nothing keeps following for a worker that went away.
        writer = asyncio.ensure_future(pump())
        watcher = asyncio.ensure_future(_disconnected(request))
        try:
            await asyncio.wait({writer, watcher}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (writer, watcher):
                task.cancel()
            await asyncio.gather(writer, watcher, return_exceptions=True)
            await frames.aclose()  # type: ignore[attr-defined]

    async def _claim(self, request: Request, send: Send, caller: Caller) -> None:
        if not granted(caller, "accord.remote.Claim"):
            await self._refuse_grant(send, caller)
            return
        request.require_json()
        if self.claims is None:
            await self._answer(
                send,
                501,
                {"refused": "claims exist in --agent remote mode only", "committed": False},
            )
            return
        try:
            data = msgspec.json.decode(await request.body(65536), type=_ClaimInput)
        except (msgspec.ValidationError, msgspec.DecodeError) as exc:
            await self._answer(send, 422, {"refused": str(exc)})
            return
        result = await self.claims.claim(data.taskId, caller, data.worker)
        if result.outcome == "not-found":
            await self._answer(send, 404, {"refused": "no such task", "taskId": data.taskId})
            return
        if result.outcome in ("held", "task-terminal"):
            words = "claimed by another worker" if result.outcome == "held" else "task is terminal"
            await self._answer(send, 409, {"refused": words, "taskId": data.taskId})
            return
        assert result.claim is not None and result.record is not None
        body = {
            "outcome": result.outcome,
            "taskId": data.taskId,
            "holder": result.claim.holder,
            "leaseMs": self.claims.lease_ms,
            "task": result.record.task,
        }
        await respond(send, 200, _json(body), JSON)


async def _disconnected(request: Request) -> None:
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            return


class _ClaimInput(msgspec.Struct, forbid_unknown_fields=True):
    taskId: str
    worker: str = ""
