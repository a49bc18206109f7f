"""Sub-tasks on the dashboard, one on another agent and one local (two ``accord serve``
processes with authentication on, the harness on both, Chromium on A's dashboard): each is a
link to its page with its state and the agent it runs on — never an object's name or a raw
address."""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import Page, expect
from tests.harness.delegation_proc import A_ENV, KEYS, a_config, b_config
from tests.harness.harness_proc import start
from tests.harness.test_delegation_processes import B_SCRIPT, brief, send, spawn_call

WAIT_MS = 15_000  # how long an expectation may wait (a bound, not a measurement)


def test_each_sub_task_links_to_its_page_with_its_state_and_agent(
    tmp_path: Path, page: Page
) -> None:
    b = start(tmp_path, f"sqlite:///{tmp_path / 'b.db'}", b_config(tmp_path, B_SCRIPT), name="b")
    script = [{"text": "", "tool_calls": [spawn_call("venue", "book a venue", "b")]},
              {"text": "B is on it."}]  # fmt: skip
    a_settings = a_config(tmp_path, script, {"b": b.url})
    a = start(tmp_path, f"sqlite:///{tmp_path / 'a.db'}", a_settings, name="a", env=A_ENV)
    try:
        parent = send(a.url, [{"text": "plan"}, brief()])
        remote, local = f"{parent['id']}.1", f"{parent['id']}.2"
        send(a.url, [{"text": "/sub-task a side chat"}], parent["id"])
        page.goto(f"{a.url}/ui/")
        page.fill('input[name="token"]', KEYS["alice"])
        page.select_option('select[name="kind"]', "apiKey")
        page.click('button[type="submit"]')
        expect(page.locator("#who")).to_contain_text("alice", timeout=WAIT_MS)
        page.goto(f"{a.url}/ui/#/task/{parent['id']}")
        there = page.locator(f'#sub-tasks [data-task-ref="{remote}"]')
        here = page.locator(f'#sub-tasks [data-task-ref="{local}"]')
        expect(there).to_contain_text("on b", timeout=WAIT_MS)
        expect(there).to_contain_text("input-required", timeout=WAIT_MS)
        expect(here).to_contain_text("on this agent")
        expect(here.locator("a")).to_have_attribute("href", f"#/task/{local}")
        text = page.locator("#sub-tasks").inner_text()
        assert "[object" not in text and "http" not in text, text
        there.locator("a").click()
        expect(page.locator("#task-id")).to_have_text(remote, timeout=WAIT_MS)
        expect(page.locator("h1")).to_contain_text("venue")
    finally:
        a.stop()
        b.stop()
