"""The dashboard in a real browser (headless Chromium through Playwright) against a running
``accord serve``: what a person sees. Tasks made through the API appear in the table while it
is open, a reply's tokens appear in the timeline as they are written, the compose box talks
to the agent, a second tenant's task never shows, a timeline resumes after the server
restarts, and the Health page reports the store and bus. Screenshots are saved
(conftest.py)."""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

import httpx
from playwright.sync_api import Page, expect
from tests.dashboard.dashboard_agents import FIRST_TOKENS, LAST_TOKENS
from tests.dashboard.server_proc import Server, serve

EVENT_TYPE = "application/vnd.tiny-harness.event+json"
WAIT_MS = 15_000  # how long an expectation may wait (a bound, not a measurement)
ACME_KEY = "acme-key-0123456789abcdef"
GLOBEX_KEY = "globex-key-0123456789abcdef"
TENANTS = f"""
[[principals]]
identity = "alice"
tenant = "acme"
actors = ["a2a.tasks.Client", "a2a.discovery.Client"]
api_key = "{ACME_KEY}"

[[principals]]
identity = "bob"
tenant = "globex"
actors = ["a2a.tasks.Client", "a2a.discovery.Client"]
api_key = "{GLOBEX_KEY}"
"""


def send(
    server: Server,
    text: str,
    *,
    task_id: str = "",
    headers: dict[str, str] | None = None,
    parts: list[dict[str, Any]] | None = None,
    wait: bool = True,
) -> dict[str, Any]:
    message: dict[str, Any] = {
        "messageId": str(uuid.uuid4()),
        "role": "ROLE_USER",
        "parts": parts or [{"text": text}],
    }
    if task_id:
        message["taskId"] = task_id
    body: dict[str, Any] = {"message": message}
    if not wait:
        body["configuration"] = {"returnImmediately": True}
    response = httpx.post(
        f"{server.url}/message:send",
        json=body,
        headers={"A2A-Version": "1.0", **(headers or {})},
        timeout=30,
    )
    assert response.status_code == 200, response.text
    task: dict[str, Any] = response.json()["task"]
    return task


def open_as(page: Page, server: Server, participant: str, task_id: str) -> None:
    """The task's page, speaking as ``participant`` (open mode's header field)."""
    page.goto(f"{server.url}/ui/")
    page.fill("#participant", participant)
    page.locator("#participant").dispatch_event("change")
    page.goto(f"{server.url}/ui/#/task/{task_id}")


def row(page: Page, task_id: str) -> Any:
    return page.locator(f'#tasks tr[data-task-id="{task_id}"]')


def test_a_task_created_through_the_api_appears_in_the_open_table(
    tmp_path: Path, page: Page, screenshots: Path
) -> None:
    with serve(tmp_path) as server:
        send(server, "already there")
        lists: list[str] = []
        page.on("request", lambda r: lists.append(r.url) if "/ui/api/tasks?" in r.url else None)
        page.goto(f"{server.url}/ui/")
        expect(page.locator("#tasks tbody tr")).to_have_count(1, timeout=WAIT_MS)
        expect(page.locator("#live")).to_have_text("live", timeout=WAIT_MS)
        started = time.monotonic()
        task = send(server, "made through the API")
        expect(row(page, task["id"])).to_be_visible(timeout=WAIT_MS)
        print(f"the new task showed {time.monotonic() - started:.3f} s after its answer")
        expect(row(page, task["id"]).locator("[data-state]")).to_have_text("completed")
        # It came over the change stream: the page read its table once, and never again.
        assert len(lists) == 1, lists
        page.screenshot(path=screenshots / "tasks.png")


def test_the_tasks_table_filters_and_pages(tmp_path: Path, page: Page) -> None:
    with serve(tmp_path) as server:
        ids = [send(server, f"number {n}")["id"] for n in range(55)]
        page.goto(f"{server.url}/ui/")
        expect(page.locator("#count")).to_have_text("1\u201350 of 55", timeout=WAIT_MS)
        page.get_by_role("button", name="Older →").click()
        expect(page.locator("#count")).to_have_text("51\u201355 of 55", timeout=WAIT_MS)
        page.get_by_role("button", name="← Newer").click()
        expect(page.locator("#count")).to_have_text("1\u201350 of 55", timeout=WAIT_MS)
        page.fill('input[name="q"]', "number 7")
        expect(page.locator("#tasks tbody tr")).to_have_count(1, timeout=WAIT_MS)
        expect(row(page, ids[7])).to_be_visible()
        page.fill('input[name="q"]', "")
        page.select_option('select[name="state"]', "failed")
        expect(page.locator("#tasks tbody")).to_contain_text("No tasks.", timeout=WAIT_MS)
        assert "state=failed" in page.url


def test_a_reply_streams_into_the_timeline_token_by_token(
    tmp_path: Path, page: Page, screenshots: Path
) -> None:
    gate = tmp_path / "gate"
    with serve(tmp_path, "dashboard_agents:streamer") as server:
        task = send(server, f"gate:{gate}", wait=False)
        page.goto(f"{server.url}/ui/#/task/{task['id']}")
        reply = page.locator('#timeline li[data-artifact-id="reply"] .artifact-body')
        # Half written: the first tokens, in one growing text, still marked as streaming.
        expect(reply).to_have_text("".join(FIRST_TOKENS), timeout=WAIT_MS)
        expect(reply).to_have_class("artifact-body streaming")
        expect(page.locator("#task-state [data-state]")).to_have_text("working")
        page.screenshot(path=screenshots / "streaming.png")
        gate.touch()
        expect(reply).to_have_text("".join(FIRST_TOKENS + LAST_TOKENS), timeout=WAIT_MS)
        expect(reply).to_have_class("artifact-body")
        expect(page.locator("#task-state [data-state]")).to_have_text("completed")
        expect(page.locator('#timeline li[data-kind="artifact"]')).to_have_count(1)


def test_the_compose_box_talks_to_the_agent(tmp_path: Path, page: Page, screenshots: Path) -> None:
    with serve(tmp_path, "dashboard_agents:conversation") as server:
        alice = {"X-Participant-Id": "alice"}
        task = send(server, "let's plan the offsite", headers=alice)
        open_as(page, server, "alice", task["id"])
        timeline = page.locator("#timeline")
        expect(timeline).to_contain_text("heard alice: let's plan the offsite", timeout=WAIT_MS)
        expect(page.locator("#task-state [data-sub-state]")).to_have_text("· awaiting-next-message")
        # The card's commands complete after "/".
        text = page.locator("#compose-text")
        text.fill("/su")
        text.dispatch_event("input")
        expect(page.locator("#suggest li")).to_have_count(1)
        expect(page.locator("#suggest li")).to_contain_text("/sub-task")
        text.press("Tab")
        expect(text).to_have_value("/sub-task ")
        # A message from the box reaches the agent, which answers it.
        text.fill("two days in June")
        page.click("#send")
        expect(timeline).to_contain_text("heard alice: two days in June", timeout=WAIT_MS)
        history = httpx.get(
            f"{server.url}/tasks/{task['id']}", headers={"A2A-Version": "1.0", **alice}
        ).json()["history"]
        said = [m for m in history if m["parts"] == [{"text": "two days in June"}]]
        assert said and said[0]["metadata"]["participant_id"] == "alice"
        expect(page.locator('#timeline li[data-kind="message"]')).to_have_count(1)
        page.screenshot(path=screenshots / "conversation.png", full_page=True)
        page.click("#complete")
        expect(page.locator("#task-state [data-state]")).to_have_text("completed", timeout=WAIT_MS)
        expect(timeline).to_contain_text("completed by alice")
        expect(page.locator("#compose-text")).to_have_count(0)


def test_cancel_asks_first(tmp_path: Path, page: Page) -> None:
    with serve(tmp_path, "dashboard_agents:conversation") as server:
        alice = {"X-Participant-Id": "alice"}
        task = send(server, "hello", headers=alice)
        open_as(page, server, "alice", task["id"])
        expect(page.locator("#cancel")).to_be_visible(timeout=WAIT_MS)
        page.once("dialog", lambda dialog: dialog.dismiss())
        page.click("#cancel")
        expect(page.locator("#task-state [data-state]")).to_have_text("input-required")
        page.once("dialog", lambda dialog: dialog.accept())
        page.click("#cancel")
        expect(page.locator("#task-state [data-state]")).to_have_text("canceled", timeout=WAIT_MS)


def test_a_second_tenants_task_never_shows(tmp_path: Path, page: Page, screenshots: Path) -> None:
    with serve(tmp_path, config=TENANTS) as server:
        theirs = send(server, "globex's secret plan", headers={"X-API-Key": GLOBEX_KEY})
        page.goto(f"{server.url}/ui/")
        expect(page.locator("form")).to_contain_text("Credentials", timeout=WAIT_MS)
        page.screenshot(path=screenshots / "signin.png")
        page.fill('input[name="token"]', ACME_KEY)
        page.select_option('select[name="kind"]', "apiKey")
        page.click('button[type="submit"]')
        expect(page.locator("#who")).to_contain_text("alice @ acme", timeout=WAIT_MS)
        expect(page.locator("#live")).to_have_text("live", timeout=WAIT_MS)
        send(server, "more of globex", headers={"X-API-Key": GLOBEX_KEY})
        ours = send(server, "acme's task", headers={"X-API-Key": ACME_KEY})
        expect(row(page, ours["id"])).to_be_visible(timeout=WAIT_MS)
        expect(page.locator("#tasks tbody tr")).to_have_count(1)
        assert "globex" not in page.locator("#tasks").inner_text()
        page.fill('input[name="q"]', theirs["id"])
        expect(page.locator("#tasks tbody")).to_contain_text("No tasks.", timeout=WAIT_MS)
        page.goto(f"{server.url}/ui/#/task/{theirs['id']}")
        expect(page.locator("main")).to_contain_text("not found", timeout=WAIT_MS)
        assert "secret plan" not in page.content()
        # The credentials were entered once: a reload keeps the session.
        page.reload()
        expect(page.locator("#who")).to_contain_text("alice @ acme", timeout=WAIT_MS)


def test_the_timeline_resumes_after_the_server_restarts(tmp_path: Path, page: Page) -> None:
    with serve(tmp_path, "dashboard_agents:conversation") as server:
        alice = {"X-Participant-Id": "alice"}
        task = send(server, "first words", headers=alice)
        page.goto(f"{server.url}/ui/#/task/{task['id']}")
        timeline = page.locator("#timeline")
        expect(timeline).to_contain_text("heard alice: first words", timeout=WAIT_MS)
        server.stop()
        expect(page.locator("#live")).to_have_text("offline", timeout=WAIT_MS)
        server.start()  # the same port and store
        send(server, "after the restart", task_id=task["id"], headers=alice)
        expect(timeline).to_contain_text("heard alice: after the restart", timeout=WAIT_MS)
        expect(page.locator("#live")).to_have_text("live", timeout=WAIT_MS)
        # Resumed after the last event seen: nothing shown twice.
        entries = page.locator("#timeline > li")
        texts = entries.all_inner_texts()
        assert sum("heard alice: first words" in t for t in texts) == 1, texts
        assert sum("heard alice: after the restart" in t for t in texts) == 1, texts


def test_the_health_page(tmp_path: Path, page: Page, screenshots: Path) -> None:
    with serve(tmp_path) as server:
        send(server, "hello")
        page.goto(f"{server.url}/ui/#/health")
        expect(page.locator("#store")).to_contain_text("sqlite", timeout=WAIT_MS)
        expect(page.locator("#store")).to_contain_text("ready")
        expect(page.locator("#bus")).to_contain_text("local")
        expect(page.locator("#recovery")).to_contain_text("at start")
        expect(page.locator("#outbox")).to_have_text("0 webhooks behind")
        page.screenshot(path=screenshots / "health.png")
