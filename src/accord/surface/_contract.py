"""The command surface's contract: the seed document, read once, and what it decides here
(each outcome's status code), plus the document ``/openapi.json`` serves. Who may invoke what
is accord.core._grants, the table every binding checks, which agrees with the seed's
``x-ess-may-invoke`` and ``x-ess-may-read``.

The served document is the seed's, with what this realization adds and nothing changed: a
``401`` where authentication is configured, a ``415`` for a body not declared JSON, a ``422``
for a body that does not match the command's Input schema, and the security schemes. The
accord-only paths for remote workers (``GET /tasks/events``, ``POST /tasks/claims``) are
documented in docs/remote-agents.md, not here: they are not part of the seed's contract.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from accord.surface._flatyaml import load

SEED = "seed.openapi.txt"


@dataclass(frozen=True, slots=True)
class Operation:
    path: str
    method: str
    name: str  # operationId, e.g. a2a.tasks.CompleteTask
    statuses: dict[str, int]  # outcome name -> status code
    is_view: bool


def _outcomes(schema: dict[str, Any]) -> list[str]:
    mapping = schema.get("discriminator", {}).get("mapping")
    if mapping:
        return list(mapping)
    ref = schema.get("$ref", "")
    if ref:
        return [ref.rsplit("/", 1)[1].split(".")[-2]]
    return []


@cache
def seed_document() -> dict[str, Any]:
    text = resources.files("accord.surface").joinpath(SEED).read_text(encoding="utf-8")
    return load(text)


@cache
def operations() -> dict[str, Operation]:
    """Every operation of the seed by path."""
    found: dict[str, Operation] = {}
    for path, item in seed_document()["paths"].items():
        for method, op in item.items():
            statuses: dict[str, int] = {}
            for code, response in op["responses"].items():
                if code in ("403", "501"):
                    continue
                schema = response["content"]["application/json"]["schema"]
                for outcome in _outcomes(schema):
                    statuses[outcome] = int(code)
            found[path] = Operation(
                path=path,
                method=method.upper(),
                name=op["operationId"],
                statuses=statuses,
                is_view=method == "get",
            )
    return found


_REFUSAL = {
    "type": "object",
    "additionalProperties": False,
    "required": ["refused"],
    "properties": {
        "refused": {"type": "string", "description": "Why, in words."},
        "errors": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"field": {"type": "string"}, "message": {"type": "string"}},
            },
        },
    },
}


def served_document(auth_configured: bool, api_key: bool, bearer: bool) -> dict[str, Any]:
    """The seed's document with this realization's additions (see the module docstring)."""
    document = copy.deepcopy(seed_document())
    document["servers"] = [{"url": "/"}]
    for item in document["paths"].values():
        for op in item.values():
            responses = op["responses"]
            if "requestBody" in op:
                responses["415"] = {
                    "description": "accord: the request does not declare a JSON Content-Type "
                    "(application/json); nothing was read or written.",
                    "content": {"application/json": {"schema": _REFUSAL}},
                }
            if "requestBody" in op or "parameters" in op:
                responses["422"] = {
                    "description": "accord: the request does not match the command's Input "
                    "schema or the view's parameters; nothing was read or written.",
                    "content": {"application/json": {"schema": _REFUSAL}},
                }
            if auth_configured:
                responses["401"] = {
                    "description": "accord: the request carries no valid credentials.",
                    "content": {"application/json": {"schema": _REFUSAL}},
                }
    schemes: dict[str, Any] = {}
    if api_key:
        schemes["apiKey"] = {"type": "apiKey", "in": "header", "name": "X-API-Key"}
    if bearer:
        schemes["bearer"] = {"type": "http", "scheme": "bearer", "bearerFormat": "JWT"}
    if schemes:
        document.setdefault("components", {})["securitySchemes"] = schemes
        document["security"] = [{name: []} for name in schemes]
    return document
