"""Binding behaviour: JSON-RPC envelope errors, REST paths and media types, input bounds,
strict input modes, historyLength and ListTasks paging."""

from __future__ import annotations

import json
import uuid

import httpx
import pytest
from server_helpers import Serve, message, reason, rest_reason, rpc, send_rest, violations

from accord.agents._description import CardDescription

# --- JSON-RPC envelope --------------------------------------------------------------------


async def test_malformed_json_is_a_parse_error(http: httpx.AsyncClient) -> None:
    response = await http.post("/", content=b'{"jsonrpc": "2.0", "id": 1,', headers=_json())
    assert response.status_code == 200
    body = response.json()
    assert body["error"]["code"] == -32700
    assert body["id"] is None


@pytest.mark.parametrize(
    "envelope",
    [
        {"jsonrpc": "1.0", "id": 3, "method": "GetTask", "params": {"id": "x"}},
        {"id": 3, "method": "GetTask"},
        {"jsonrpc": "2.0", "id": 3},
        {"jsonrpc": "2.0", "id": 3, "method": 5},
        [],
        "GetTask",
    ],
)
async def test_a_bad_envelope_is_an_invalid_request(
    http: httpx.AsyncClient, envelope: object
) -> None:
    response = await http.post("/", content=json.dumps(envelope), headers=_json())
    body = response.json()
    assert body["error"]["code"] == -32600
    assert body["jsonrpc"] == "2.0"
    if isinstance(envelope, dict):
        assert body["id"] == 3  # recovered whenever the request had a usable id


async def test_an_unknown_method_is_method_not_found(http: httpx.AsyncClient) -> None:
    reply = await rpc(http, "tasks/get", {"id": "x"})
    assert reply["error"]["code"] == -32601
    assert reply["id"] == 1
    assert reason(reply["error"]["data"]) == "METHOD_NOT_FOUND"


async def test_invalid_params_name_the_field(http: httpx.AsyncClient) -> None:
    reply = await rpc(http, "SendMessage", {"message": {"messageId": 5}})
    assert reply["error"]["code"] == -32602
    assert violations(reply["error"]["data"])


async def test_a_wrong_request_content_type_is_refused(http: httpx.AsyncClient) -> None:
    response = await http.post(
        "/", content=b"{'not': 'json'}", headers={"content-type": "text/plain"}
    )
    assert response.json()["error"]["code"] == -32005
    rest = await http.post(
        "/message:send", content=b"message=hi", headers={"content-type": "text/plain"}
    )
    assert rest.status_code == 415
    assert rest_reason(rest) == "CONTENT_TYPE_NOT_SUPPORTED"


async def test_jsonrpc_answers_application_json(http: httpx.AsyncClient) -> None:
    body = {"jsonrpc": "2.0", "id": "a", "method": "ListTasks", "params": {}}
    response = await http.post("/", json=body, headers={"Accept": "application/a2a+json"})
    assert response.headers["content-type"] == "application/json"
    assert response.json()["id"] == "a"


# --- REST paths and media types ----------------------------------------------------------


async def test_rest_answers_a2a_json_only_when_asked(http: httpx.AsyncClient) -> None:
    task = await send_rest(http)
    plain = await http.get(f"/tasks/{task['id']}")
    assert plain.headers["content-type"] == "application/json"
    asked = await http.get(
        f"/tasks/{task['id']}", headers={"Accept": "application/a2a+json, application/json"}
    )
    assert asked.headers["content-type"] == "application/a2a+json"
    assert asked.json()["id"] == task["id"]
    missing = await http.get("/tasks/nope", headers={"Accept": "application/a2a+json"})
    assert missing.status_code == 404
    assert missing.headers["content-type"] == "application/a2a+json"
    assert (await http.get("/tasks/nope")).headers["content-type"] == "application/json"


async def test_rest_accepts_a2a_json_request_bodies(http: httpx.AsyncClient) -> None:
    response = await http.post(
        "/message:send",
        content=json.dumps({"message": message()}),
        headers={"content-type": "application/a2a+json"},
    )
    assert response.status_code == 200


async def test_every_path_works_under_a_tenant_prefix(http: httpx.AsyncClient) -> None:
    sent = await http.post("/acme/message:send", json={"message": message("hello")})
    assert sent.status_code == 200, sent.text
    task_id = sent.json()["task"]["id"]
    assert (await http.get(f"/acme/tasks/{task_id}")).json()["id"] == task_id
    listed = (await http.get("/acme/tasks")).json()
    assert [t["id"] for t in listed["tasks"]] == [task_id]
    # The tenant is a namespace: the same id does not exist without the prefix.
    assert (await http.get(f"/tasks/{task_id}")).status_code == 404
    assert (await http.get("/tasks")).json()["tasks"] == []
    created = await http.post(
        f"/acme/tasks/{task_id}/pushNotificationConfigs",
        json={"id": "c1", "url": "https://example.com/hook"},
    )
    assert created.status_code == 200, created.text
    assert (await http.get(f"/acme/tasks/{task_id}/pushNotificationConfigs/c1")).status_code == 200
    configs = (await http.get(f"/acme/tasks/{task_id}/pushNotificationConfigs")).json()
    assert [c["id"] for c in configs["configs"]] == ["c1"]
    deleted = await http.delete(f"/acme/tasks/{task_id}/pushNotificationConfigs/c1")
    assert deleted.status_code == 200
    canceled = await http.post(f"/acme/tasks/{task_id}:cancel", json={})
    assert rest_reason(canceled) == "TASK_NOT_CANCELABLE"
    subscribed = await http.post(f"/acme/tasks/{task_id}:subscribe")
    assert rest_reason(subscribed) == "UNSUPPORTED_OPERATION"


async def test_subscribe_by_get_and_post(http: httpx.AsyncClient) -> None:
    task = await send_rest(http)
    for method in ("GET", "POST"):
        response = await http.request(method, f"/tasks/{task['id']}:subscribe")
        assert rest_reason(response) == "UNSUPPORTED_OPERATION"  # the task is terminal


async def test_unknown_paths_are_not_found(http: httpx.AsyncClient) -> None:
    for method, path in [("GET", "/nope"), ("PUT", "/tasks/x"), ("POST", "/a/b/c/d/e")]:
        response = await http.request(method, path)
        assert response.status_code == 404
        assert rest_reason(response) == "METHOD_NOT_FOUND"


async def test_get_query_parameters_are_camel_case(http: httpx.AsyncClient) -> None:
    task = await send_rest(http)
    response = await http.get(f"/tasks/{task['id']}", params={"historyLength": "0"})
    assert "history" not in response.json()


# --- bounds ------------------------------------------------------------------------------


async def test_a_body_past_the_limit_is_refused(serve: Serve) -> None:
    async with serve(max_body_bytes=2000) as http:
        big = {"message": message("x" * 5000)}
        rest = await http.post("/message:send", json=big)
        assert rest.status_code == 413
        assert rest_reason(rest) == "PAYLOAD_TOO_LARGE"
        reply = await rpc(http, "SendMessage", big)
        assert reply["error"]["code"] == -32602
        assert reason(reply["error"]["data"]) == "PAYLOAD_TOO_LARGE"
        small = await http.post("/message:send", json={"message": message("x" * 100)})
        assert small.status_code == 200


async def test_too_many_parts_is_invalid_params(serve: Serve) -> None:
    async with serve(max_parts=3) as http:
        msg = message()
        msg["parts"] = [{"text": str(i)} for i in range(4)]
        response = await http.post("/message:send", json={"message": msg})
        assert response.status_code == 400
        assert rest_reason(response) == "INVALID_PARAMS"
        assert violations(response.json()["error"]["details"]) == ["message.parts"]
        reply = await rpc(http, "SendStreamingMessage", {"message": msg})
        assert reply["error"]["code"] == -32602
        msg["parts"] = msg["parts"][:3]
        assert (await http.post("/message:send", json={"message": msg})).status_code == 200


async def test_nesting_past_the_limit_is_invalid_params(serve: Serve) -> None:
    async with serve(max_depth=4) as http:
        deep: object = "leaf"
        for _ in range(6):
            deep = {"k": deep}
        msg = message()
        msg["parts"] = [{"data": deep}]
        response = await http.post("/message:send", json={"message": msg})
        assert response.status_code == 400
        assert violations(response.json()["error"]["details"]) == ["message.parts[0].data"]
        msg = message(metadata={"a": [[[[["x"]]]]]})
        reply = await rpc(http, "SendMessage", {"message": msg})
        assert reply["error"]["code"] == -32602
        assert violations(reply["error"]["data"]) == ["message.metadata"]


async def test_strict_input_modes_refuse_other_media_types(serve: Serve) -> None:
    card = CardDescription(default_input_modes=["text/plain"])
    async with serve(strict_input_modes=True, card=card) as http:
        msg = message()
        msg["parts"] = [{"raw": "aGk=", "mediaType": "image/png"}]
        response = await http.post("/message:send", json={"message": msg})
        assert response.status_code == 400
        assert rest_reason(response) == "CONTENT_TYPE_NOT_SUPPORTED"
        reply = await rpc(http, "SendMessage", {"message": msg})
        assert reply["error"]["code"] == -32005
        assert (await http.post("/message:send", json={"message": message()})).status_code == 200


async def test_input_modes_are_advisory_by_default(http: httpx.AsyncClient) -> None:
    msg = message()
    msg["parts"] = [{"raw": "aGk=", "mediaType": "application/x-unusual"}]
    response = await http.post("/message:send", json={"message": msg})
    assert response.status_code == 200


# --- historyLength and paging -----------------------------------------------------------


async def test_negative_history_length_is_invalid_params(http: httpx.AsyncClient) -> None:
    task = await send_rest(http)
    response = await http.get(f"/tasks/{task['id']}", params={"historyLength": "-1"})
    assert response.status_code == 400
    assert rest_reason(response) == "INVALID_PARAMS"
    reply = await rpc(http, "GetTask", {"id": task["id"], "historyLength": -1})
    assert reply["error"]["code"] == -32602
    send = await rpc(
        http, "SendMessage", {"message": message(), "configuration": {"historyLength": -2}}
    )
    assert send["error"]["code"] == -32602


async def test_history_length_zero_and_absent_differ(http: httpx.AsyncClient) -> None:
    task = await send_rest(http)
    whole = await rpc(http, "GetTask", {"id": task["id"]})
    assert len(whole["result"]["history"]) == 1
    none = await rpc(http, "GetTask", {"id": task["id"], "historyLength": 0})
    assert "history" not in none["result"]


async def test_list_tasks_pages_newest_first(http: httpx.AsyncClient) -> None:
    context = str(uuid.uuid4())
    ids = []
    for i in range(5):
        sent = await http.post(
            "/message:send", json={"message": message(str(i), contextId=context)}
        )
        ids.append(sent.json()["task"]["id"])
    first = (await http.get("/tasks", params={"contextId": context, "pageSize": "2"})).json()
    assert first["pageSize"] == 2
    assert first["totalSize"] == 5
    assert first["nextPageToken"]
    assert "artifacts" not in first["tasks"][0]  # includeArtifacts defaults to false
    pages = [first]
    while pages[-1]["nextPageToken"]:
        reply = await rpc(
            http,
            "ListTasks",
            {"contextId": context, "pageSize": 2, "pageToken": pages[-1]["nextPageToken"]},
        )
        pages.append(reply["result"])
    assert [len(p["tasks"]) for p in pages] == [2, 2, 1]
    assert pages[-1]["nextPageToken"] == ""
    listed = [t["id"] for p in pages for t in p["tasks"]]
    assert sorted(listed) == sorted(ids)
    stamps = [t["status"]["timestamp"] for p in pages for t in p["tasks"]]
    assert stamps == sorted(stamps, reverse=True)  # newest first


async def test_list_tasks_defaults_and_empty_results(http: httpx.AsyncClient) -> None:
    reply = await rpc(http, "ListTasks", {"contextId": "nothing-here"})
    assert reply["result"] == {"tasks": [], "nextPageToken": "", "pageSize": 50, "totalSize": 0}


@pytest.mark.parametrize("page_size", [0, -1, 101, 10_000])
async def test_page_size_outside_1_to_100_is_invalid(
    http: httpx.AsyncClient, page_size: int
) -> None:
    reply = await rpc(http, "ListTasks", {"pageSize": page_size})
    assert reply["error"]["code"] == -32602
    response = await http.get("/tasks", params={"pageSize": str(page_size)})
    assert response.status_code == 400


async def test_a_bad_page_token_is_invalid_params(http: httpx.AsyncClient) -> None:
    reply = await rpc(http, "ListTasks", {"pageToken": "not-a-token"})
    assert reply["error"]["code"] == -32602
    response = await http.get("/tasks", params={"pageToken": "%%%"})
    assert response.status_code == 400


async def test_list_filters_by_state_and_timestamp(http: httpx.AsyncClient) -> None:
    context = str(uuid.uuid4())
    sent = await http.post("/message:send", json={"message": message(contextId=context)})
    stamp = sent.json()["task"]["status"]["timestamp"]
    done = await rpc(http, "ListTasks", {"contextId": context, "status": "TASK_STATE_COMPLETED"})
    assert done["result"]["totalSize"] == 1
    working = await rpc(http, "ListTasks", {"contextId": context, "status": "TASK_STATE_WORKING"})
    assert working["result"]["totalSize"] == 0
    since = await http.get("/tasks", params={"contextId": context, "statusTimestampAfter": stamp})
    assert since.json()["totalSize"] == 1  # inclusive
    later = await http.get(
        "/tasks", params={"contextId": context, "statusTimestampAfter": "2999-01-01T00:00:00Z"}
    )
    assert later.json()["totalSize"] == 0


def _json() -> dict[str, str]:
    return {"content-type": "application/json"}


async def test_json_nested_past_the_parser_limit_is_refused(http: httpx.AsyncClient) -> None:
    deep_value = b"[" * 5000 + b"]" * 5000
    params = b'{"jsonrpc":"2.0","id":4,"method":"SendMessage","params":{"metadata":' + deep_value
    reply = await http.post("/", content=params + b"}}", headers=_json())
    assert reply.json()["error"]["code"] in (-32600, -32602)
    rest = await http.post(
        "/message:send", content=b'{"metadata":' + deep_value + b"}", headers=_json()
    )
    assert rest.status_code == 400
    assert rest_reason(rest) == "INVALID_PARAMS"
