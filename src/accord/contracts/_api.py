"""The operators' HTTP API for interaction contracts, under ``/contracts``.

| request | does |
|---|---|
| ``GET /contracts?status=&pageSize=&pageToken=`` | the tenant's contracts, newest first |
| ``POST /contracts`` ``{"responder", "terms", "expiresAt"?}`` | propose (201) |
| ``GET /contracts/{id}`` | one contract and its log |
| ``POST /contracts/{id}:accept`` | accept (the responder) |
| ``POST /contracts/{id}:reject`` ``{"reason"?}`` | reject (the responder) |
| ``POST /contracts/{id}:cancel`` ``{"reason"?}`` | withdraw a proposal, or cancel |
| ``POST /contracts/{id}:complete`` | this party's completion |
| ``POST /contracts/{id}:approve`` ``{"taskId"}`` | approve a task parked for approval |

Authenticated like every other request, scoped to the caller's tenant, and granted to the
``accord.contracts.Operator`` actor only. Refusals are ``{"error": {"code", "status",
"message", "details"}}`` with ErrorInfo (``reason`` the refusal code upper-cased, domain
``accord``, ``metadata.contractReason``) and field violations for invalid input.
"""

from __future__ import annotations

import json
import logging
import re
from typing import TYPE_CHECKING, Any

from accord.contracts._errors import ContractRefusal
from accord.contracts._schema import STATUSES, UUID
from accord.contracts._wire import MAX_REASON
from accord.core import Caller
from accord.server import JSON, Binding, Request, Send, respond, rest_error
from accord.wire import (
    BAD_REQUEST_TYPE,
    ERROR_INFO_TYPE,
    A2AError,
    ErrorKind,
    format_timestamp,
    invalid_params,
)

if TYPE_CHECKING:  # the app imports this module for handles(); the service comes with it
    from accord.contracts._service import ContractService

log = logging.getLogger("accord.contracts")

GRANT = "accord.contracts.Operate"
PREFIX = "/contracts"
VERBS = ("accept", "reject", "cancel", "complete", "approve")
MAX_PAGE = 100
DEFAULT_PAGE = 50
STATUS_OF = {  # refusal code -> HTTP status, google.rpc code name
    "invalid_document": (400, "INVALID_ARGUMENT"),
    "terms_hash_mismatch": (400, "INVALID_ARGUMENT"),
    "invalid_acceptance": (400, "INVALID_ARGUMENT"),
    "invalid_signature": (400, "INVALID_ARGUMENT"),
    "not_a_party": (403, "PERMISSION_DENIED"),
    "not_permitted": (403, "PERMISSION_DENIED"),
    "contract_unknown": (404, "NOT_FOUND"),
    "contract_conflict": (409, "FAILED_PRECONDITION"),
    "contract_exists": (409, "ALREADY_EXISTS"),
    "contract_expired": (409, "FAILED_PRECONDITION"),
    "peer_refused": (409, "FAILED_PRECONDITION"),
    "peer_unreachable": (502, "UNAVAILABLE"),
}
_PATH = re.compile(r"/contracts(?:/(?P<id>[0-9A-Fa-f-]{36})(?::(?P<verb>[a-z]+))?)?")


def handles(path: str) -> bool:
    """Whether ``path`` is this API's (``/contracts``, ``/contracts/{uuid}[:verb]``): other
    paths under ``/contracts/`` stay a tenant prefix of the HTTP+JSON binding."""
    matched = _PATH.fullmatch(path.rstrip("/"))
    if matched is None:
        return False
    found = matched.group("id")
    return found is None or UUID.fullmatch(found) is not None


def refusal_body(refusal: ContractRefusal) -> tuple[int, dict[str, Any]]:
    status, code_name = STATUS_OF.get(refusal.code, (409, "FAILED_PRECONDITION"))
    metadata = {"contractReason": refusal.code}
    if refusal.interaction_id:
        metadata["interactionId"] = refusal.interaction_id
    details: list[dict[str, Any]] = [
        {
            "@type": ERROR_INFO_TYPE,
            "reason": refusal.code.upper(),
            "domain": "accord",
            "metadata": metadata,
        }
    ]
    if refusal.violations:
        details.append(
            {
                "@type": BAD_REQUEST_TYPE,
                "fieldViolations": [
                    {"field": v.field, "description": v.description} for v in refusal.violations
                ],
            }
        )
    return status, {
        "error": {"code": status, "status": code_name, "message": str(refusal), "details": details}
    }


class ContractApi:
    def __init__(self, service: ContractService, binding: Binding, max_body: int) -> None:
        self.service = service
        self.binding = binding
        self.max_body = max_body

    def handles(self, path: str) -> bool:
        return handles(path)

    async def handle(self, request: Request, send: Send) -> None:
        try:
            caller = self.binding.authenticate(request)
            self.binding.authorize(caller, GRANT)
            status, body = await self._route(request, caller, self.service)
        except ContractRefusal as refusal:
            status, body = refusal_body(refusal)
        except A2AError as error:
            status, body = error.kind.http_status, rest_error(error)
        await respond(send, status, json.dumps(body, ensure_ascii=False).encode(), JSON)

    async def _route(
        self, request: Request, caller: Caller, service: ContractService
    ) -> tuple[int, dict[str, Any]]:
        path = request.path.rstrip("/")
        matched = _PATH.fullmatch(path)
        assert matched is not None
        interaction_id, verb = matched.group("id"), matched.group("verb")
        method = request.method
        tenant = caller.tenant
        if interaction_id is None:
            if method == "GET":
                return 200, await self._list(request, caller, service)
            if method == "POST":
                body = await self._body(request)
                record = await service.propose(
                    tenant,
                    responder=_text(body, "responder", required=True),
                    terms=body.get("terms"),
                    expires_at=_text(body, "expiresAt") or None,
                )
                return 201, record.as_json()
            raise _not_here(method, path)
        if verb is None:
            if method != "GET":
                raise _not_here(method, path)
            record = await service.get(tenant, interaction_id)
            events = await service.events(tenant, interaction_id)
            shown = [
                {
                    "version": e.version,
                    "kind": e.kind,
                    "at": format_timestamp(e.at_ms),
                    "actor": e.actor,
                    **({"detail": e.detail} if e.detail else {}),
                }
                for e in events
            ]
            decisions = [d.as_json() for d in service.decisions.last(tenant, interaction_id)]
            return 200, {**record.as_json(), "events": shown, "decisions": decisions}
        if method != "POST" or verb not in VERBS:
            raise _not_here(method, path)
        body = await self._body(request)
        if verb == "accept":
            record = await service.accept(tenant, interaction_id)
        elif verb == "reject":
            record = await service.reject(tenant, interaction_id, _text(body, "reason"))
        elif verb == "cancel":
            record = await service.cancel(tenant, interaction_id, _text(body, "reason"))
        elif verb == "complete":
            record = await service.complete(tenant, interaction_id)
        else:
            task_id = _text(body, "taskId", required=True)
            record = await service.approve(tenant, interaction_id, task_id, caller.identity)
        log.info("contract %s: %s by operator %s", interaction_id, verb, caller.identity)
        return 200, record.as_json()

    async def _list(
        self, request: Request, caller: Caller, service: ContractService
    ) -> dict[str, Any]:
        status = request.query_value("status") or None
        if status is not None and status not in STATUSES:
            raise _bad("status", f"expected one of {', '.join(STATUSES)}")
        size_text = request.query_value("pageSize") or str(DEFAULT_PAGE)
        if not size_text.isdigit() or not 1 <= int(size_text) <= MAX_PAGE:
            raise _bad("pageSize", f"expected a number from 1 to {MAX_PAGE}")
        size = int(size_text)
        token = request.query_value("pageToken") or ""
        if token and UUID.fullmatch(token) is None:
            raise _bad("pageToken", "not a page token this API gave")
        records = await service.store.list_contracts(caller.tenant, status, size + 1, token)
        page = records[:size]
        out: dict[str, Any] = {"contracts": [r.as_json() for r in page]}
        if len(records) > size:
            out["nextPageToken"] = page[-1].interaction_id
        return out

    async def _body(self, request: Request) -> dict[str, Any]:
        request.require_json()
        raw = await request.body(self.max_body)
        if not raw.strip():
            return {}
        try:
            body = json.loads(raw)
        except (ValueError, UnicodeDecodeError) as exc:
            raise A2AError(ErrorKind.PARSE_ERROR, f"the body is not JSON: {exc}") from None
        if not isinstance(body, dict):
            raise _bad("", "the body must be a JSON object")
        return body


def _text(body: dict[str, Any], name: str, *, required: bool = False) -> str:
    value = body.get(name)
    if value is None and not required:
        return ""
    if not isinstance(value, str) or (required and not value):
        raise _bad(name, "expected a non-empty string" if required else "expected a string")
    if len(value) > MAX_REASON:
        raise _bad(name, f"at most {MAX_REASON} characters")
    return value


def _bad(field: str, description: str) -> A2AError:
    return invalid_params(field, description)


def _not_here(method: str, path: str) -> A2AError:
    return A2AError(ErrorKind.METHOD_NOT_FOUND, f"no operation at {method} {path}")
