"""The dashboard's pages as a first-time reader sees them (headless Chromium through
Playwright against a running ``accord serve``): a conversation's timeline says each thing
once, a wrong address says so, the Health page prints no stray ``null``, an admin invites, the
Activity page draws the server's metrics, the raw view shows the JSON-RPC exchange."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import httpx
from playwright.sync_api import Page, expect
from tests.dashboard.server_proc import Server, serve
from tests.dashboard.test_dashboard_browser import open_as

EVENT_TYPE = "application/vnd.tiny-harness.event+json"
TASK_KEY = "io.github.madarauchiha-314.tiny-harness/task"
WAIT_MS = 15_000  # how long an expectation may wait (a bound, not a measurement)


def send(
    server: Server, parts: list[dict[str, Any]], *, who: str = "alice", task_id: str = ""
) -> dict[str, Any]:
    message: dict[str, Any] = {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": parts}
    if task_id:
        message["taskId"] = task_id
    response = httpx.post(
        f"{server.url}/message:send",
        json={"message": message},
        headers={"A2A-Version": "1.0", "X-Participant-Id": who},
        timeout=30,
    )
    assert response.status_code == 200, response.text
    task: dict[str, Any] = response.json()["task"]
    return task


def brief(name: str, participants: list[dict[str, str]]) -> dict[str, Any]:
    payload = {"name": name, "goal": name, "participants": participants}
    return {"data": {"kind": "task", "payload": payload}, "mediaType": EVENT_TYPE}


def test_a_conversations_timeline_says_each_thing_once(tmp_path: Path, page: Page) -> None:
    with serve(tmp_path, "dashboard_agents:talker") as server:
        alice = {"id": "alice", "kind": "human", "role": "admin"}
        task = send(server, [brief("offsite", [alice]), {"text": "hello there"}])
        members = task["metadata"][TASK_KEY]["participants"]
        bob = {"id": "bob", "kind": "human", "role": "watcher"}
        change = {"kind": "task", "payload": {"participants": [*members, bob]}}
        send(server, [{"data": change, "mediaType": EVENT_TYPE}], task_id=task["id"])
        send(server, [{"text": "second"}], task_id=task["id"])
        open_as(page, server, "alice", task["id"])
        timeline = page.locator("#timeline")
        expect(timeline).to_contain_text("heard alice: second", timeout=WAIT_MS)
        # One creation; the admin's change (a whole task snapshot in the log) shown as what
        # it changed, without the history again.
        expect(timeline.locator('li[data-event="created"]')).to_have_count(1)
        updated = timeline.locator('li[data-event="updated"]')
        expect(updated).to_have_count(1)
        expect(updated).to_contain_text("task updated")
        expect(updated).to_contain_text("bob joined as watcher")
        assert "hello there" not in updated.inner_text()
        assert "task · created" not in timeline.inner_text()
        # Each answer once: the streamed reply, not again as the turn's status message.
        texts = timeline.locator("> li").all_inner_texts()
        for answer in ("heard alice: hello there", "heard alice: second"):
            assert sum(answer in t for t in texts) == 1, texts
        expect(timeline.locator('li[data-answer="true"]')).to_have_count(3)
        expect(timeline.locator('li[data-kind="status"]').last).to_contain_text("input-required")


def test_an_unknown_address_says_so(tmp_path: Path, page: Page) -> None:
    with serve(tmp_path) as server:
        task_id = send(server, [{"text": "hello"}])["id"]
        page.goto(f"{server.url}/ui/#/tasks/{task_id}")
        expect(page.locator("#not-found")).to_contain_text("No such page", timeout=WAIT_MS)
        expect(page.locator("#tasks")).to_have_count(0)
        page.locator("#not-found a").click()
        expect(page.locator("#task-id")).to_have_text(task_id, timeout=WAIT_MS)


def test_the_health_page_prints_no_null(tmp_path: Path, page: Page) -> None:
    with serve(tmp_path) as server:
        page.goto(f"{server.url}/ui/#/health")
        expect(page.locator("#store")).to_contain_text("ready", timeout=WAIT_MS)
        assert "null" not in page.locator("#health").inner_text()


def test_an_admin_invites_a_participant_from_the_page(tmp_path: Path, page: Page) -> None:
    with serve(tmp_path, "dashboard_agents:conversation") as server:
        alice = {"id": "alice", "kind": "human", "role": "admin"}
        carol = {"id": "carol", "kind": "human", "role": "reporter"}
        task = send(server, [brief("offsite", [alice, carol]), {"text": "hello"}])
        # Not an admin: no invite control.
        open_as(page, server, "carol", task["id"])
        expect(page.locator("#timeline")).to_contain_text("heard", timeout=WAIT_MS)
        expect(page.locator("#invite")).to_be_hidden()
        open_as(page, server, "alice", task["id"])
        expect(page.locator("#invite")).to_be_visible(timeout=WAIT_MS)
        page.fill("#invite-id", "bob")
        page.select_option("#invite-role", "watcher")
        page.click("#invite-send")
        expect(page.locator("#invite-status")).to_have_text(
            "invited bob as watcher", timeout=WAIT_MS
        )
        expect(page.locator("#timeline")).to_contain_text("bob joined as watcher", timeout=WAIT_MS)
        members = httpx.get(
            f"{server.url}/tasks/{task['id']}",
            headers={"A2A-Version": "1.0", "X-Participant-Id": "bob"},
        ).json()["metadata"][TASK_KEY]["participants"]
        assert {"id": "bob", "kind": "human", "role": "watcher"}.items() <= members[-1].items()
        # Someone there already is not invited again.
        page.fill("#invite-id", "carol")
        page.click("#invite-send")
        expect(page.locator("#invite-status")).to_have_text("carol is a participant already")


def test_the_activity_page_draws_the_servers_metrics_live(
    tmp_path: Path, page: Page, screenshots: Path
) -> None:
    refused: list[str] = []
    page.on("console", lambda m: refused.append(m.text) if "Content Security" in m.text else None)
    with serve(tmp_path, "dashboard_agents:conversation") as server:
        task = send(server, [{"text": "hello"}])
        for n in range(5):
            send(server, [{"text": f"more {n}"}], task_id=task["id"])
        page.goto(f"{server.url}/ui/#/activity")
        requests = page.locator('[data-chart="requests"]')
        expect(requests.locator("svg.spark")).to_be_visible(timeout=WAIT_MS)
        rate = requests.locator('[data-series="requests"] strong')
        assert float(rate.inner_text()) > 0
        expect(page.locator('[data-chart="turns"] svg.spark')).to_be_visible()
        operation = page.locator('[data-chart="op-SendMessage"]')
        expect(operation.locator('[data-series="p99"] strong')).to_contain_text("ms")
        expect(page.locator("#nav a.current")).to_have_text("Activity")
        # Live: the sampler's next point replaces the partial one the page opened with.
        first = page.locator("#activity").get_attribute("data-last") or ""
        assert first.endswith("partial"), first
        send(server, [{"text": "later"}], task_id=task["id"])
        expect(page.locator("#activity")).not_to_have_attribute("data-last", first, timeout=WAIT_MS)
        assert not (page.locator("#activity").get_attribute("data-last") or "").endswith("partial")
        page.screenshot(path=screenshots / "activity.png", full_page=True)
    assert not refused, refused


def test_the_raw_view_shows_the_json_rpc_exchange_and_the_cards_warnings(
    tmp_path: Path, page: Page, screenshots: Path
) -> None:
    with serve(tmp_path, "dashboard_agents:talker") as server:
        task = send(server, [{"text": "hello there"}])
        open_as(page, server, "alice", task["id"])
        page.click("#raw-link")
        assert page.url.endswith(f"#/raw/{task['id']}")
        get = page.locator('[data-method="GetTask"]')
        expect(get).to_contain_text('"method": "GetTask"', timeout=WAIT_MS)
        expect(get).to_contain_text("X-Participant-Id: alice")
        expect(get.locator(".response")).to_contain_text("HTTP 200", timeout=WAIT_MS)
        expect(get.locator(".response")).to_contain_text('"jsonrpc": "2.0"')
        # The subscription's frames as they come: the conversation replayed, then live.
        frames = page.locator("#frames")
        expect(frames.locator('[data-frame="task"]').first).to_be_visible(timeout=WAIT_MS)
        expect(frames).to_contain_text('"artifactUpdate"')
        send(server, [{"text": "second"}], task_id=task["id"])
        expect(frames).to_contain_text("heard alice: second", timeout=WAIT_MS)
        expect(frames.locator('[data-frame="statusUpdate"]').last).to_contain_text(
            "TASK_STATE_INPUT_REQUIRED"
        )
        # The card, with what a client would warn about (this one is unsigned).
        expect(page.locator("#card-warnings")).to_contain_text("signatures: none")
        expect(page.locator("#raw-card pre")).to_contain_text('"supportedInterfaces"')
        page.screenshot(path=screenshots / "raw.png")
