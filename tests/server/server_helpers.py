"""Request and response helpers shared by the server tests."""

from __future__ import annotations

import uuid
from typing import Any

import httpx


def message(text: str = "hi", **fields: Any) -> dict[str, Any]:
    return {
        "messageId": str(uuid.uuid4()),
        "role": "ROLE_USER",
        "parts": [{"text": text}],
        **fields,
    }


async def rpc(
    http: httpx.AsyncClient, method: str, params: Any = None, **kw: Any
) -> dict[str, Any]:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}}
    response = await http.post("/", json=body, **kw)
    assert response.status_code == 200
    result: dict[str, Any] = response.json()
    return result


async def send_rest(http: httpx.AsyncClient, text: str = "hi", **kw: Any) -> dict[str, Any]:
    response = await http.post("/message:send", json={"message": message(text)}, **kw)
    assert response.status_code == 200, response.text
    task: dict[str, Any] = response.json()["task"]
    return task


def reason(details: list[dict[str, Any]]) -> str:
    [info] = [d for d in details if d["@type"].endswith("google.rpc.ErrorInfo")]
    return str(info["reason"])


def violations(details: list[dict[str, Any]]) -> list[str]:
    return [
        v["field"]
        for d in details
        if d["@type"].endswith("google.rpc.BadRequest")
        for v in d["fieldViolations"]
    ]


def rest_reason(response: httpx.Response) -> str:
    error = response.json()["error"]
    assert error["code"] == response.status_code
    return reason(error["details"])
