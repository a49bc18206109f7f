"""Dropping a stream mid-task and resuming it with ``Last-Event-ID``: the resumed stream holds
exactly the events the dropped one missed (accord's extension of the SSE streams; see
docs/server.md)."""

from __future__ import annotations

import time
import uuid
from typing import Any

import httpx
import pytest
from accord_server_proc import AccordServer
from sse_events import Event, events, payload

HEADERS = {"A2A-Version": "1.0", "Accept": "text/event-stream"}


def message_body(text: str) -> dict[str, Any]:
    return {
        "message": {
            "messageId": str(uuid.uuid4()),
            "role": "ROLE_USER",
            "parts": [{"text": text}],
        }
    }


class Rest:
    def __init__(self, url: str) -> None:
        self.url = url

    def send_streaming(self, http: httpx.Client, text: str) -> Any:
        return http.stream("POST", f"{self.url}/message:stream", json=message_body(text))

    def subscribe(self, http: httpx.Client, task_id: str, last_event_id: int) -> Any:
        return http.stream(
            "POST",
            f"{self.url}/tasks/{task_id}:subscribe",
            headers={"Last-Event-ID": str(last_event_id)},
        )


class JsonRpc:
    def __init__(self, url: str) -> None:
        self.url = url

    def _call(self, http: httpx.Client, method: str, params: Any, **kw: Any) -> Any:
        body = {"jsonrpc": "2.0", "id": 7, "method": method, "params": params}
        return http.stream("POST", self.url, json=body, **kw)

    def send_streaming(self, http: httpx.Client, text: str) -> Any:
        return self._call(http, "SendStreamingMessage", message_body(text))

    def subscribe(self, http: httpx.Client, task_id: str, last_event_id: int) -> Any:
        headers = {"Last-Event-ID": str(last_event_id)}
        return self._call(http, "SubscribeToTask", {"id": task_id}, headers=headers)


@pytest.fixture(params=["HTTP+JSON", "JSONRPC"])
def binding(request: pytest.FixtureRequest, accord_server: AccordServer) -> Rest | JsonRpc:
    return Rest(accord_server.url) if request.param == "HTTP+JSON" else JsonRpc(accord_server.url)


def read_until_end(stream: Any) -> list[Event]:
    with stream as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        return list(events(response))


def drop_after_two(binding: Rest | JsonRpc, http: httpx.Client, text: str) -> list[Event]:
    with binding.send_streaming(http, text) as response:
        assert response.status_code == 200
        received = []
        for event in events(response):
            received.append(event)
            if len(received) == 2:
                break
    # Leaving the block closes the connection with the task still running.
    return received


def task_id_of(event: Event) -> str:
    task = payload(event)["task"]
    return str(task["id"])


def wait_until_terminal(url: str, task_id: str) -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        state = httpx.get(f"{url}/tasks/{task_id}", headers={"A2A-Version": "1.0"}).json()
        if state["status"]["state"] in ("TASK_STATE_COMPLETED", "TASK_STATE_FAILED"):
            return
        time.sleep(0.05)
    raise AssertionError(f"task {task_id} did not finish")


def test_resume_gets_exactly_the_missing_events(binding: Rest | JsonRpc) -> None:
    with httpx.Client(headers=HEADERS, timeout=20) as http:
        dropped = drop_after_two(binding, http, "tick 8 0.1")
        first, last = dropped
        task_id = task_id_of(first)
        assert last.id > first.id

        # The reference: an uninterrupted subscriber from the first event on.
        reference = read_until_end(binding.subscribe(http, task_id, first.id))
        resumed = read_until_end(binding.subscribe(http, task_id, last.id))

    assert [e.id for e in resumed] == [e.id for e in reference if e.id > last.id]
    assert [payload(e) for e in resumed] == [payload(e) for e in reference if e.id > last.id]
    # Nothing lost, nothing repeated: what the dropped stream saw and the resumed stream
    # together are the reference, in order.
    assert [payload(e) for e in dropped[1:] + resumed] == [payload(e) for e in reference]
    ids = [e.id for e in dropped + resumed]
    assert ids == sorted(set(ids))
    final = payload(resumed[-1])
    assert final["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    chunks = [
        p["text"]
        for e in dropped + resumed
        if "artifactUpdate" in payload(e)
        for p in payload(e)["artifactUpdate"]["artifact"]["parts"]
    ]
    assert chunks == [f"chunk {i};" for i in range(8)]


def test_resume_after_the_task_finished_replays_what_was_missed(
    binding: Rest | JsonRpc, accord_server: AccordServer
) -> None:
    with httpx.Client(headers=HEADERS, timeout=20) as http:
        dropped = drop_after_two(binding, http, "tick 4 0.02")
        task_id = task_id_of(dropped[0])
        wait_until_terminal(accord_server.url, task_id)
        resumed = read_until_end(binding.subscribe(http, task_id, dropped[-1].id))

    assert resumed, "the events after the drop are still delivered"
    assert resumed[0].id > dropped[-1].id
    last = payload(resumed[-1])
    assert last["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    chunks = [
        p["text"]
        for e in dropped + resumed
        if "artifactUpdate" in payload(e)
        for p in payload(e)["artifactUpdate"]["artifact"]["parts"]
    ]
    assert chunks == [f"chunk {i};" for i in range(4)]


def test_resume_after_the_final_event_ends_at_once(
    binding: Rest | JsonRpc, accord_server: AccordServer
) -> None:
    with httpx.Client(headers=HEADERS, timeout=5) as http:
        dropped = drop_after_two(binding, http, "tick 2 0.01")
        task_id = task_id_of(dropped[0])
        wait_until_terminal(accord_server.url, task_id)
        everything = read_until_end(binding.subscribe(http, task_id, dropped[0].id))
        final = everything[-1].id
        # Nothing follows the final event: the stream ends instead of waiting (the read
        # timeout above turns a hang into a failure).
        assert read_until_end(binding.subscribe(http, task_id, final)) == []
        assert read_until_end(binding.subscribe(http, task_id, final + 1000)) == []


def test_a_last_event_id_past_the_end_of_a_live_task_follows_it(
    binding: Rest | JsonRpc,
) -> None:
    with httpx.Client(headers=HEADERS, timeout=10) as http:
        dropped = drop_after_two(binding, http, "tick 5 0.1")
        task_id = task_id_of(dropped[0])
        resumed = read_until_end(binding.subscribe(http, task_id, 10**9))
    assert resumed, "the task's later events are delivered"
    final = payload(resumed[-1])
    assert final["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"


def test_subscribers_see_the_same_events_and_one_leaving_disturbs_no_other(
    binding: Rest | JsonRpc,
) -> None:
    with httpx.Client(headers=HEADERS, timeout=20) as http:
        dropped = drop_after_two(binding, http, "tick 6 0.1")
        task_id = task_id_of(dropped[0])
        with (
            binding.subscribe(http, task_id, dropped[0].id) as one,
            binding.subscribe(http, task_id, dropped[0].id) as two,
            binding.subscribe(http, task_id, dropped[0].id) as leaving,
        ):
            first_of_leaving = next(events(leaving))
            leaving.close()  # goes away mid-task
            seen_one = list(events(one))
            seen_two = list(events(two))
    assert [e.id for e in seen_one] == [e.id for e in seen_two]
    assert [payload(e) for e in seen_one] == [payload(e) for e in seen_two]
    assert seen_one[0].id == first_of_leaving.id
    final = payload(seen_one[-1])
    assert final["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
