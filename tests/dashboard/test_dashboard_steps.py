"""Visible work in the dashboard, in a real browser (headless Chromium through Playwright)
against ``accord serve --agent harness`` on a fake OpenAI-compatible server (real HTTP, real
streaming, known token usage) and the demo's MCP orders server: a turn's tool calls are one
collapsed entry of the timeline — how many, how many tokens — that opens to each call's name,
arguments, result or error, live as the turn runs and again from the task's history; a turn
without a tool call shows its tokens on its answer."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect
from tests.dashboard.server_proc import serve
from tests.dashboard.test_dashboard_browser import WAIT_MS, send
from tests.harness.fake_openai import FakeOpenAI, Reply
from tests.harness.orders_mcp import ORDERS

pytestmark = pytest.mark.processes
ALICE = {"X-Participant-Id": "alice"}
ANSWER = ["48213 arrived cracked; ", "there is no order 99."]


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


def config(tmp_path: Path, fake: FakeOpenAI) -> str:
    return (
        '[harness]\nagent_id = "accord"\nmodel = "openai:fake-model"\n'
        f'[harness.openai]\nbase_url = "{fake.base_url}"\n'
        '[[harness.mcp]]\nname = "orders"\n'
        f'command = ["{sys.executable}", "{ORDERS}"]\n'
        f'env = {{ ORDERS_LEDGER = "{tmp_path / "ledger.jsonl"}" }}\n'
    )


def test_a_turns_tool_calls_are_one_collapsed_entry_live_and_from_history(
    tmp_path: Path, fake: FakeOpenAI, page: Page, screenshots: Path
) -> None:
    looked_up = ("call_a", "orders_get_order", {"order_id": 48213})
    missing = ("call_b", "orders_get_order", {"order_id": 99})
    answering = threading.Event()
    fake.replies.extend(
        [
            Reply(["Hello."], usage=(10, 5, 0)),
            Reply([], tool_calls=[looked_up, missing], usage=(1_000, 200, 34)),
            Reply(ANSWER, usage=(1_300, 40, 1_000), held_until=answering),
        ]
    )
    with serve(tmp_path, "harness", config(tmp_path, fake)) as server:
        task = send(server, "hello", headers=ALICE)
        page.goto(f"{server.url}/ui/#/task/{task['id']}")
        timeline = page.locator("#timeline")
        # A turn without a tool call: its tokens on its answer, no work entry.
        expect(timeline.locator(".usage")).to_have_text(
            "tokens: 10 in (0 cached) · 5 out", timeout=WAIT_MS
        )
        expect(timeline.locator('li[data-kind="steps"]')).to_have_count(0)
        # Live: the next turn's two tool calls while its answer is being written, then the
        # answer's tokens join them.
        question = "what about orders 48213 and 99?"
        send(server, question, task_id=task["id"], headers=ALICE, wait=False)
        work = page.locator('#timeline li[data-kind="steps"]')
        expect(work.locator("summary")).to_have_text("2 tool calls · 1,200 tokens", timeout=WAIT_MS)
        answering.set()
        check_work(page, screenshots)
        # From the history: the page opened afresh shows the same, collapsed again.
        page.reload()
        check_work(page, None)
    assert [r["model"] for r in fake.requests] == ["fake-model"] * 3


def check_work(page: Page, screenshots: Path | None) -> None:
    work = page.locator('#timeline li[data-kind="steps"]')
    expect(work).to_have_count(1, timeout=WAIT_MS)
    summary = work.locator("details.steps > summary")
    # two tool calls; 1,200 tokens for the call that asked for them, 1,340 for the answer's
    expect(summary).to_have_text("2 tool calls · 2,540 tokens", timeout=WAIT_MS)
    tools = work.locator('.step[data-step-kind="tool_call"]')
    expect(tools).to_have_count(2)
    expect(tools.first).to_be_hidden()  # collapsed until opened
    expect(work.locator(".step.model").first).to_be_hidden()
    summary.click()
    expect(tools.first).to_be_visible()
    found, failed = tools.nth(0), tools.nth(1)
    expect(found.locator(".tool-name")).to_have_text("orders_get_order")
    expect(found.locator(".arguments")).to_have_text('{\n  "order_id": 48213\n}')
    expect(found.locator(".result")).to_contain_text('"note": "arrived cracked"')
    expect(found.locator(".outcome")).to_contain_text("done")
    expect(failed.locator(".arguments")).to_have_text('{\n  "order_id": 99\n}')
    expect(failed.locator(".outcome")).to_contain_text("failed")
    expect(failed.locator(".result")).to_contain_text("no order 99")
    models = work.locator(".step.model")
    expect(models).to_have_count(2)
    expect(models.nth(0)).to_contain_text("1,000 in (34 cached) · 200 out tokens")
    expect(models.nth(1)).to_contain_text("1,300 in (1,000 cached) · 40 out tokens")
    expect(page.locator("#timeline")).to_contain_text("".join(ANSWER))
    if screenshots is not None:
        page.locator("#timeline").screenshot(path=screenshots / "steps.png")
