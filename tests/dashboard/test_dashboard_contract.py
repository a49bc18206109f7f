"""A task under an interaction contract shows its contract on its page (headless Chromium
against two ``accord serve`` processes that negotiated one): status, parties, terms hash and
the last enforcement decisions, this task's marked."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from playwright.sync_api import Page, expect
from tests.contracts.test_contracts_processes import (
    OPERATOR_B,
    Pair,
    negotiate,
    pair,
    refused_with,
    send_as_a,
)

from accord.wire._model import Task, TaskState

__all__ = ["pair"]  # (the two servers: the contract tests' fixture)
WAIT_MS = 15_000  # how long an expectation may wait (a bound, not a measurement)


def run(coroutine: Any) -> Any:
    """An async client call, off this thread (Playwright's sync API runs a loop in it)."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


def test_a_tasks_page_shows_its_contract(
    pair: Pair, tmp_path: Path, page: Page, screenshots: Path
) -> None:
    document = negotiate(pair, tmp_path)
    parked = run(send_as_a(pair, document, "buy the report", action="purchase"))
    assert isinstance(parked, Task) and parked.status.state is TaskState.INPUT_REQUIRED
    run(refused_with("action_outside_contract", pair, document, "wipe", action="delete"))
    page.goto(f"{pair.b.url}/ui/")
    page.fill('input[name="token"]', OPERATOR_B)
    page.select_option('select[name="kind"]', "apiKey")
    page.click('button[type="submit"]')
    expect(page.locator("#who")).to_contain_text("op-b", timeout=WAIT_MS)
    page.goto(f"{pair.b.url}/ui/#/task/{parked.id}")
    shown = page.locator("#contract")
    expect(shown.locator("#contract-status")).to_have_text("active", timeout=WAIT_MS)
    expect(shown).to_contain_text("agent:a")
    expect(shown).to_contain_text("agent:b (this agent)")
    expect(shown.locator("#terms-hash")).to_have_text(document["termsHash"])
    decisions = shown.locator("#decisions > li")
    expect(decisions.first).to_contain_text("refused")
    expect(decisions.first).to_contain_text("action_outside_contract")
    ours = shown.locator("#decisions > li.this-task")
    expect(ours).to_have_count(1)
    expect(ours).to_contain_text("parked")
    expect(ours).to_contain_text("purchase")
    page.screenshot(path=screenshots / "contract.png", full_page=True)
