"""Inputs that used to end in ``internal error`` with a traceback — a ``Last-Event-ID`` that
``str.isdigit`` accepts but ``int`` refuses, page tokens forged or out of range — are each
the binding's validation error, naming the header or field."""

from __future__ import annotations

import base64
from typing import Any

import httpx
import pytest
from server_helpers import message, rpc, send_rest, violations

# Each one: a Last-Event-ID this server never sent.
BAD_EVENT_IDS: list[bytes] = [
    b"\xb2",  # a superscript two: str.isdigit says yes, int says no
    b"9" * 5000,  # int refuses more than 4,300 digits
    b"9223372036854775808",  # 2**63: no store holds it
    b"12abc",
    b"-1",
]


def _ids(value: bytes) -> str:
    return value[:12].decode("latin-1")


@pytest.mark.parametrize("value", BAD_EVENT_IDS, ids=_ids)
async def test_a_bad_last_event_id_is_invalid_params_on_json_rpc(
    http: httpx.AsyncClient, value: bytes
) -> None:
    task = await send_rest(http)
    for method, params in (
        ("GetTask", {"id": task["id"]}),
        ("SubscribeToTask", {"id": task["id"]}),
        ("ListTasks", {}),
        ("SendMessage", {"message": message()}),
    ):
        answer = await rpc(http, method, params, headers={"Last-Event-ID": value})
        error = answer["error"]
        assert error["code"] == -32602, (method, error)
        assert violations(error["data"]) == ["Last-Event-ID"]


@pytest.mark.parametrize("value", BAD_EVENT_IDS, ids=_ids)
async def test_a_bad_last_event_id_is_invalid_params_on_http_json(
    http: httpx.AsyncClient, value: bytes
) -> None:
    task = await send_rest(http)
    headers = {"Last-Event-ID": value}
    for response in (
        await http.get(f"/tasks/{task['id']}", headers=headers),
        await http.post(f"/tasks/{task['id']}:subscribe", headers=headers),
        await http.get("/tasks", headers=headers),
    ):
        assert response.status_code == 400, response.text
        assert violations(response.json()["error"]["details"]) == ["Last-Event-ID"]


async def test_the_largest_event_id_still_resumes(http: httpx.AsyncClient) -> None:
    task = await send_rest(http)  # the echo agent: completed
    async with http.stream(
        "POST",
        f"/tasks/{task['id']}:subscribe",
        headers={"Last-Event-ID": str(2**63 - 1)},
    ) as response:
        assert response.status_code == 200
        assert (await response.aread()).strip() == b""  # nothing after it: the stream ends


def _token(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


async def _list(http: httpx.AsyncClient, token: str) -> dict[str, Any]:
    answer = await rpc(http, "ListTasks", {"pageSize": 1, "pageToken": token})
    return answer


@pytest.mark.parametrize("store", ["memory", "sqlite"])
async def test_page_tokens_are_the_servers_own(serve: Any, store: str, tmp_path: Any) -> None:
    url = "memory://" if store == "memory" else f"sqlite:///{tmp_path / 'tasks.db'}"
    async with serve(store=url) as http:
        for text in ("a", "b", "c"):
            await send_rest(http, text)
        first = (await _list(http, ""))["result"]
        issued = first["nextPageToken"]
        assert (await _list(http, issued))["result"]["tasks"]  # the server's own: the next page
        body, _, mac = issued.partition(".")
        for forged in (
            body,  # unsigned, as tokens once were
            _token(b"99999999999999999999999:x"),  # past int64: SQLite raised OverflowError
            f"{_token(b'99999999999999999999999:x')}.{mac}",  # another token's signature
            "!!",
        ):
            error = (await _list(http, forged))["error"]
            assert error["code"] == -32602
            assert violations(error["data"]) == ["pageToken"]
        response = await http.get("/tasks", params={"pageToken": body})
        assert response.status_code == 400
        assert violations(response.json()["error"]["details"]) == ["pageToken"]
