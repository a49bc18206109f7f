"""The dashboard's reads under /ui/api (in process, on accord's own HTTP server): who may read
what, paging, the text search's bound, the change stream and the timeline with their
resumption, and the page's files."""

from __future__ import annotations

import dataclasses
import json
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.dashboard.dashboard_agents import conversation
from tests.server.server_helpers import listening, message

import accord.dashboard
from accord.app._build import build_app
from accord.app._settings import Settings, load
from accord.contracts._wire import TRUST_URI
from accord.core.views import TaskQuery
from accord.harness._wire import COMMANDS_URI
from accord.service import _search as search
from accord.store._base import TaskPage

STATIC = Path(accord.dashboard.__file__).parent / "static"

ACME_CLIENT = "acme-client-key-0123456789"
ACME_WORKER = "acme-worker-key-0123456789"
GLOBEX_CLIENT = "globex-client-key-0123456789"
PRINCIPALS = [
    {
        "identity": "alice",
        "tenant": "acme",
        "actors": ["a2a.tasks.Client", "a2a.discovery.Client"],
        "api_key": ACME_CLIENT,
    },
    {"identity": "worker", "tenant": "acme", "actors": ["a2a.tasks.Agent"], "api_key": ACME_WORKER},
    {
        "identity": "bob",
        "tenant": "globex",
        "actors": ["a2a.tasks.Client", "a2a.discovery.Client"],
        "api_key": GLOBEX_CLIENT,
    },
]


@asynccontextmanager
async def running(agent: Any = None, **overrides: Any) -> AsyncIterator[httpx.AsyncClient]:
    settings = dataclasses.replace(Settings(store="memory://", heartbeat_s=0.5), **overrides)
    app = build_app(settings, agent)
    async with (
        listening(app) as port,
        httpx.AsyncClient(
            base_url=f"http://127.0.0.1:{port}", headers={"A2A-Version": "1.0"}, timeout=10
        ) as client,
    ):
        yield client


def key(secret: str) -> dict[str, str]:
    return {"X-API-Key": secret}


async def send(http: httpx.AsyncClient, text: str = "hi", **headers: str) -> dict[str, Any]:
    response = await http.post("/message:send", json={"message": message(text)}, headers=headers)
    assert response.status_code == 200, response.text
    task: dict[str, Any] = response.json()["task"]
    return task


async def sse(
    http: httpx.AsyncClient, path: str, count: int, headers: dict[str, str] | None = None
) -> list[dict[str, Any]]:
    """The first ``count`` events of an SSE stream (comments skipped), as {event, id, data}."""
    events: list[dict[str, Any]] = []
    current: dict[str, Any] = {}
    async with http.stream("GET", path, headers=headers or {}) as response:
        assert response.status_code == 200, await response.aread()
        assert response.headers["content-type"] == "text/event-stream"
        async for line in response.aiter_lines():
            if not line:
                if "data" in current:
                    events.append(current)
                    if len(events) == count:
                        return events
                current = {}
            elif not line.startswith(":"):
                name, _, value = line.partition(": ")
                current[name] = json.loads(value) if name == "data" else value
    return events


# --- who sees what ------------------------------------------------------------------------


async def test_credentials_are_required_when_configured() -> None:
    async with running(principals=PRINCIPALS) as http:
        refused = await http.get("/ui/api/tasks")
        assert refused.status_code == 401
        assert refused.headers["www-authenticate"] == "Bearer"
        assert (
            await http.get("/ui/api/tasks", headers=key("wrong-key-0123456789"))
        ).status_code == 401
        # The page itself holds no data and needs none.
        assert (await http.get("/ui/")).status_code == 200


async def test_a_tenant_sees_only_its_own_tasks() -> None:
    async with running(principals=PRINCIPALS) as http:
        ours = await send(http, "ours", **key(ACME_CLIENT))
        theirs = await send(http, "theirs", **key(GLOBEX_CLIENT))
        page = (await http.get("/ui/api/tasks", headers=key(ACME_CLIENT))).json()
        assert [row["id"] for row in page["rows"]] == [ours["id"]]
        assert page["total"] == 1
        # Their task by id: nothing, on every read.
        found = (await http.get(f"/ui/api/tasks?q={theirs['id']}", headers=key(ACME_CLIENT))).json()
        assert found["rows"] == []
        for path in (f"/ui/api/tasks/{theirs['id']}/events", f"/ui/api/tasks/{theirs['id']}/push"):
            assert (await http.get(path, headers=key(ACME_CLIENT))).status_code == 404
        # Naming their tenant is refused, as the API's path prefix is.
        named = await http.get("/ui/api/tasks?tenant=globex", headers=key(ACME_CLIENT))
        assert named.status_code == 403


async def test_open_mode_shows_the_tenant_named() -> None:
    async with running() as http:
        default = await send(http, "default")
        prefixed = await http.post("/acme/message:send", json={"message": message("acme")})
        acme_id = prefixed.json()["task"]["id"]
        session = (await http.get("/ui/api/session")).json()
        assert session["openMode"] is True and session["seesWholeTenant"] is True
        rows = (await http.get("/ui/api/tasks")).json()["rows"]
        assert [row["id"] for row in rows] == [default["id"]]
        rows = (await http.get("/ui/api/tasks?tenant=acme")).json()["rows"]
        assert [row["id"] for row in rows] == [acme_id]


async def test_conversations_are_shown_to_their_participants_and_to_the_agent_actor() -> None:
    async with running(conversation, principals=PRINCIPALS) as http:
        task = await send(http, "hello", **key(ACME_CLIENT))  # alice's conversation
        assert task["metadata"]["io.github.madarauchiha-314.tiny-harness/task"]
        for secret in (ACME_CLIENT, ACME_WORKER):
            rows = (await http.get("/ui/api/tasks", headers=key(secret))).json()["rows"]
            assert [row["id"] for row in rows] == [task["id"]]
            assert rows[0]["participants"][0]["id"] == "alice"
            assert rows[0]["subState"] == "awaiting-next-message"
        # The worker's key reads the timeline too (as the feed gives it every event).
        events = await sse(http, f"/ui/api/tasks/{task['id']}/events", 2, key(ACME_WORKER))
        assert events[0]["event"] == "snapshot" and events[1]["event"] == "task"


async def test_a_client_does_not_see_a_conversation_it_is_not_in() -> None:
    principals = [
        *PRINCIPALS,
        {
            "identity": "carol",
            "tenant": "acme",
            "actors": ["a2a.tasks.Client"],
            "api_key": "acme-carol-key-0123456789",
        },
    ]
    async with running(conversation, principals=principals) as http:
        task = await send(http, "hello", **key(ACME_CLIENT))
        carol = key("acme-carol-key-0123456789")
        page = (await http.get("/ui/api/tasks", headers=carol)).json()
        assert page["rows"] == [] and page["total"] is None
        assert (await http.get(f"/ui/api/tasks?q={task['id']}", headers=carol)).json()["rows"] == []
        assert (
            await http.get(f"/ui/api/tasks/{task['id']}/events", headers=carol)
        ).status_code == 404
        # As GetTask answers her.
        assert (await http.get(f"/tasks/{task['id']}", headers=carol)).status_code == 404


async def test_a_search_for_a_task_one_may_not_see_answers_as_for_no_task() -> None:
    """The search by id is no oracle: a task of the tenant the caller may not see is answered
    exactly as an id that names no task, and no answer counts the tasks it may not see."""
    carol_key = "acme-carol-key-0123456789"
    principals = [
        *PRINCIPALS,
        {"identity": "carol", "tenant": "acme", "actors": ["a2a.tasks.Client"],
         "api_key": carol_key},
    ]  # fmt: skip
    async with running(conversation, principals=principals) as http:
        alices = [(await send(http, f"alice {n}", **key(ACME_CLIENT)))["id"] for n in range(3)]
        own = (await send(http, "mine", **key(carol_key)))["id"]
        carol = key(carol_key)

        async def search(text: str) -> httpx.Response:
            response = await http.get("/ui/api/tasks", params={"q": text}, headers=carol)
            assert response.status_code == 200, response.text
            return response

        def answer(response: httpx.Response) -> tuple[int, list[tuple[str, str]], bytes]:
            shown = [(k, v) for k, v in response.headers.items() if k.lower() != "date"]
            return response.status_code, shown, response.content

        unknown = answer(await search(str(uuid.uuid4())))
        for task_id in alices:
            assert answer(await search(task_id)) == unknown
        # Only her own task was counted: nothing tells how many tasks she may not see.
        assert json.loads(unknown[2]) == {
            "rows": [], "next": "", "total": None, "scanned": 1, "exhausted": True,
        }  # fmt: skip
        page = (await http.get("/ui/api/tasks", headers=carol)).json()
        assert [row["id"] for row in page["rows"]] == [own] and page["scanned"] == 1
        # Her own task by id is still found directly.
        assert [row["id"] for row in (await search(own)).json()["rows"]] == [own]


async def test_a_principal_without_a_read_grant_is_refused() -> None:
    principals = [
        *PRINCIPALS,
        {"identity": "none", "actors": [], "api_key": "no-actors-key-0123456789"},
    ]
    async with running(principals=principals) as http:
        for path in ("/ui/api/tasks", "/ui/api/health", "/ui/api/tasks/x/events"):
            refused = await http.get(path, headers=key("no-actors-key-0123456789"))
            assert refused.status_code == 403, path


# --- the table's pages --------------------------------------------------------------------


class CountingStore:
    """The store, counting the pages the dashboard asks of it."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self.queries: list[TaskQuery] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    async def list_tasks(self, query: TaskQuery) -> TaskPage:
        self.queries.append(query)
        page: TaskPage = await self.store.list_tasks(query)
        return page


async def test_a_page_costs_one_store_page_wherever_it_is() -> None:
    """Paging is the store's keyset: every page, the first or the last, is one indexed
    query of one page, with the store's own count (no scan, whatever the number of tasks)."""
    app = build_app(Settings(store="memory://"))
    counting = CountingStore(app.service.engine.store)
    app.service.engine.store = counting
    async with (
        listening(app) as port,
        httpx.AsyncClient(
            base_url=f"http://127.0.0.1:{port}", headers={"A2A-Version": "1.0"}
        ) as http,
    ):
        ids = [(await send(http, f"task {n}"))["id"] for n in range(230)]
        seen: list[str] = []
        token = ""
        while True:
            counting.queries.clear()
            page = (await http.get(f"/ui/api/tasks?size=100&page={token}")).json()
            assert [q.page_size for q in counting.queries] == [100]
            assert page["total"] == 230 and page["exhausted"] is True
            seen += [row["id"] for row in page["rows"]]
            token = page["next"]
            if not token:
                break
    # Each once (ties in status time are ordered by id, not by creation).
    assert len(seen) == 230 and set(seen) == set(ids)


async def test_the_text_search_examines_a_bounded_number_of_tasks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(search, "SCAN_LIMIT", 150)
    async with running() as http:
        needle = (await send(http, "the needle"))["id"]
        for n in range(300):
            await send(http, f"hay {n}")
        first = (await http.get("/ui/api/tasks?q=needle&size=10")).json()
        assert first["rows"] == [] and first["scanned"] == 150 and first["exhausted"] is False
        assert first["next"]
        more = (await http.get(f"/ui/api/tasks?q=needle&size=10&page={first['next']}")).json()
        assert more["scanned"] == 150 and more["rows"] == []
        last = (await http.get(f"/ui/api/tasks?q=needle&size=10&page={more['next']}")).json()
        assert [row["id"] for row in last["rows"]] == [needle]
        assert last["exhausted"] is True and last["next"] == ""


async def test_filters_by_state_context_and_text() -> None:
    async with running(conversation) as http:
        alice = {"X-Participant-Id": "alice"}
        talk = await send(http, "plan the offsite", **alice)
        done = await send(http, "another", **alice)
        await http.post(
            "/message:send",
            json={
                "message": message(
                    "",
                    taskId=done["id"],
                    parts=[
                        {
                            "data": {"kind": "control", "action": "complete"},
                            "mediaType": "application/vnd.tiny-harness.event+json",
                        }
                    ],
                )
            },
            headers=alice,
        )

        async def ids(query: str) -> list[str]:
            answer = await http.get(f"/ui/api/tasks?{query}", headers=alice)
            assert answer.status_code == 200, answer.text
            return [row["id"] for row in answer.json()["rows"]]

        assert await ids("state=completed") == [done["id"]]
        assert await ids("state=input-required") == [talk["id"]]
        assert await ids(f"context={talk['contextId']}") == [talk["id"]]
        assert await ids("q=OFFSITE") == [talk["id"]]  # the history's text, any case
        assert await ids("q=alice") == [done["id"], talk["id"]]  # a participant
        bad = await http.get("/ui/api/tasks?state=sleeping")
        assert bad.status_code == 400 and "state" in bad.json()["error"]["message"]
        assert (await http.get("/ui/api/tasks?size=1000")).status_code == 400
        assert (await http.get("/ui/api/tasks?page=forged")).status_code == 400


# --- live ---------------------------------------------------------------------------------


async def test_the_change_stream_sends_rows_and_resumes_after_an_id() -> None:
    async with running() as http:
        before = await send(http, "before")
        [ready] = await sse(http, "/ui/api/tasks/changes", 1)
        assert ready["event"] == "ready"
        position = ready["id"]
        first = await send(http, "first")
        second = await send(http, "second")
        events = await sse(http, "/ui/api/tasks/changes", 3, {"Last-Event-ID": position})
        assert [e["event"] for e in events] == ["ready", "row", "row"]
        assert [e["data"]["id"] for e in events[1:]] == [first["id"], second["id"]]
        assert before["id"] not in {e["data"]["id"] for e in events[1:]}
        assert events[2]["data"]["state"] == "completed"
        # After the first row's id: the second only.
        resumed = await sse(http, "/ui/api/tasks/changes", 2, {"Last-Event-ID": events[1]["id"]})
        assert [e["data"]["id"] for e in resumed[1:]] == [second["id"]]


async def test_the_change_stream_says_when_a_row_leaves_the_filter() -> None:
    async with running(conversation) as http:
        alice = {"X-Participant-Id": "alice"}
        talk = await send(http, "hi", **alice)
        [ready] = await sse(http, "/ui/api/tasks/changes?state=input-required", 1)
        await http.post(f"/tasks/{talk['id']}:cancel", json={}, headers=alice)
        events = await sse(
            http,
            "/ui/api/tasks/changes?state=input-required",
            2,
            {"Last-Event-ID": ready["id"]},
        )
        assert events[1] == {"id": events[1]["id"], "event": "gone", "data": {"id": talk["id"]}}


async def test_the_timeline_carries_every_event_and_resumes_after_one() -> None:
    async with running(conversation) as http:
        alice = {"X-Participant-Id": "alice"}
        talk = await send(http, "first", **alice)
        second = message("second", taskId=talk["id"])
        assert (
            await http.post("/message:send", json={"message": second}, headers=alice)
        ).status_code == 200
        path = f"/ui/api/tasks/{talk['id']}/events"
        got = await sse(http, path, 8, {"Last-Event-ID": "0"})
        kinds = [e["event"] for e in got]
        # The participant's second message is a "message" event (SubscribeToTask has none).
        assert kinds[:2] == ["snapshot", "task"] and "message" in kinds
        logged = [int(e["id"]) for e in got if e["event"] != "snapshot"]
        # In order, each the log's sequence number (the agent's journal entries left out).
        assert logged == sorted(set(logged)) and logged[0] == 1
        message_event = next(e for e in got if e["event"] == "message")
        assert message_event["data"]["body"]["parts"] == [{"text": "second"}]
        after = int(message_event["id"])
        resumed = await sse(http, path, 2, {"Last-Event-ID": str(after)})
        assert resumed[0]["event"] == "snapshot"
        assert int(resumed[1]["id"]) == after + 1
        bad = await http.get(path, headers={"Last-Event-ID": "x1"})
        assert bad.status_code == 400 and "Last-Event-ID" in bad.json()["error"]["message"]


async def test_a_final_tasks_timeline_ends() -> None:
    async with running() as http:
        task = await send(http, "hello")
        async with http.stream("GET", f"/ui/api/tasks/{task['id']}/events") as response:
            text = (await response.aread()).decode()
        assert text.count("event: status") == 2 and text.endswith("\n\n")


async def test_health() -> None:
    async with running() as http:
        health = (await http.get("/ui/api/health")).json()
        assert health["store"] == {"kind": "memory", "ready": True}
        assert health["bus"] == {"kind": "local", "ready": True}
        assert health["recovery"]["mode"] == "at start" and health["recovery"]["recovered"] == 0
        assert health["push"]["outbox"] == 0 and health["nodes"] is None
        [event] = await sse(http, "/ui/api/health/events", 1)
        assert event["event"] == "health" and event["data"] == health


# --- the page and the setting -------------------------------------------------------------


async def test_the_page_is_served_from_the_package_with_a_strict_policy() -> None:
    async with running() as http:
        moved = await http.get("/ui")
        assert moved.status_code == 308 and moved.headers["location"] == "/ui/"
        page = await http.get("/ui/")
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        policy = page.headers["content-security-policy"]
        assert "script-src 'self'" in policy and "connect-src 'self'" in policy
        assert "frame-ancestors 'none'" in policy
        for name in ("app.js", "style.css", "net.js"):
            asset = await http.get(f"/ui/{name}")
            assert asset.status_code == 200, name
            again = await http.get(f"/ui/{name}", headers={"If-None-Match": asset.headers["etag"]})
            assert again.status_code == 304
        # Nothing is fetched from elsewhere: the only addresses in the files are names, never
        # fetched — the commands extension's URI, OpenClasp's trust extension's (a contract's
        # metadata key) and SVG's namespace (the Activity charts).
        names = (COMMANDS_URI, TRUST_URI, "http://www.w3.org/2000/svg")
        for asset in STATIC.iterdir():
            text = asset.read_text()
            for name in names:
                text = text.replace(name, "")
            assert "http://" not in text and "https://" not in text, asset.name
        assert (await http.get("/ui/missing.js")).status_code == 404
        assert (await http.post("/ui/", json={})).status_code == 405


async def test_ui_false_turns_the_dashboard_off(monkeypatch: pytest.MonkeyPatch) -> None:
    async with running(ui=False) as http:
        assert (await http.get("/ui/")).status_code == 404
        assert (await http.get("/ui/api/tasks")).status_code == 404
    monkeypatch.setenv("ACCORD_UI", "false")
    assert load().ui is False
    monkeypatch.setenv("ACCORD_UI", "sometimes")
    with pytest.raises(ValueError, match="ACCORD_UI"):
        load()


async def test_a_page_on_another_site_cannot_read_the_dashboard_api() -> None:
    async with running() as http:
        refused = await http.get("/ui/api/tasks", headers={"Origin": "https://evil.example"})
        assert refused.status_code == 403
        rebound = await http.get("/ui/api/tasks", headers={"Host": "evil.example"})
        assert rebound.status_code == 403


async def test_health_lists_the_nodes_of_a_postgresql_cluster(pg_url: str) -> None:
    """Two nodes on one database: the Health page lists both, by their LISTEN sessions, and
    marks the one answering."""
    first = build_app(Settings(store=pg_url))
    second = build_app(Settings(store=pg_url))
    async with (
        listening(first) as port,
        listening(second),
        httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as http,
    ):
        health = (await http.get("/ui/api/health")).json()
    assert health["store"] == {"kind": "postgresql", "ready": True}
    assert health["bus"] == {"kind": "postgresql", "ready": True}
    assert "every 30 s" in health["recovery"]["mode"]
    # (The database's other sessions named as nodes are listed too: tests share a database.)
    listed = {node["node"]: node["this"] for node in health["nodes"]}
    assert listed[first.service.engine.bus.node] is True  # type: ignore[attr-defined]
    assert listed[second.service.engine.bus.node] is False  # type: ignore[attr-defined]


async def test_activity_is_the_last_hour_of_the_servers_metrics() -> None:
    async with running(principals=PRINCIPALS) as http:
        assert (await http.get("/ui/api/activity")).status_code == 401
        await send(http, "counted", **key(ACME_CLIENT))
        document = (await http.get("/ui/api/activity", headers=key(ACME_CLIENT))).json()
        assert document["intervalS"] == 10 and document["windowS"] == 3600
        assert document["metrics"] is True
        now = document["points"][-1]
        assert now["partial"] and now["requests"] > 0
        assert now["latency"]["SendMessage"]["n"] == 1
        first = await sse(http, "/ui/api/activity/events", 1, key(ACME_CLIENT))
        assert first[0]["event"] == "activity" and first[0]["data"]["points"]
