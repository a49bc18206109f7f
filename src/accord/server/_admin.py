"""The operators' HTTP API: ``POST /admin/tasks/{id}:purge`` deletes an ended task now.

Authenticated like every request and granted to the ``accord.admin.Operator`` actor only
(``accord.admin.PurgeTask``); the caller acts in its own tenant. Answers ``200
{"purged": id}``; a task the caller's tenant does not hold is ``404`` TaskNotFound (another
tenant's task included); a task that has not ended ``409`` TaskStateConflict. Errors have the
HTTP+JSON binding's shape (``google.rpc.Status`` with ErrorInfo).
"""

from __future__ import annotations

import re

from accord.server._binding import Binding
from accord.server._errors import rest_error
from accord.server._http import JSON, Request, Send, respond
from accord.service import PURGE_GRANT, purge_task
from accord.wire import A2AError, ErrorKind, encode

PREFIX = "/admin/"
_PURGE = re.compile(r"/admin/tasks/(?P<id>[^/]{1,256}):purge")


class AdminEndpoint:
    def __init__(self, binding: Binding) -> None:
        self.binding = binding

    def handles(self, path: str) -> bool:
        return path.startswith(PREFIX) and _PURGE.fullmatch(path) is not None

    async def handle(self, request: Request, send: Send) -> None:
        try:
            if request.method != "POST":
                raise A2AError(
                    ErrorKind.METHOD_NOT_FOUND, f"no operation at {request.method} {request.path}"
                )
            caller = self.binding.authenticate(request)
            self.binding.authorize(caller, PURGE_GRANT)
            matched = _PURGE.fullmatch(request.path)
            assert matched is not None
            task_id = matched.group("id")  # (ASGI paths come decoded)
            await purge_task(self.binding.service, caller, task_id)
        except A2AError as error:
            await respond(send, error.kind.http_status, encode(rest_error(error)), JSON)
            return
        await respond(send, 200, encode({"purged": task_id}), JSON)
