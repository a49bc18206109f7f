"""The dashboard's compose box uploads a file (headless Chromium through Playwright against
``accord serve``): it goes with the next message as a url part, and its link in the
timeline downloads it with the session's participant."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import httpx
from playwright.sync_api import Page, expect
from tests.dashboard.server_proc import serve
from tests.dashboard.test_dashboard_browser import WAIT_MS, open_as, send


def test_the_compose_box_uploads_a_file(tmp_path: Path, page: Page) -> None:
    photo = tmp_path / f"photo-{uuid.uuid4().hex[:6]}.png"
    photo.write_bytes(os.urandom(5000))
    with serve(tmp_path, "dashboard_agents:conversation", "[media]\nenabled = true\n") as server:
        alice = {"X-Participant-Id": "alice"}
        task = send(server, "let's plan the offsite", headers=alice)
        open_as(page, server, "alice", task["id"])
        timeline = page.locator("#timeline")
        expect(timeline).to_contain_text("heard alice: let's plan the offsite", timeout=WAIT_MS)
        page.set_input_files("#compose-file", str(photo))
        expect(page.locator("#compose-files")).to_have_text(
            f"attached: {photo.name}", timeout=WAIT_MS
        )
        page.locator("#compose-text").fill("the venue")
        page.click("#send")
        expect(timeline).to_contain_text("heard alice: the venue", timeout=WAIT_MS)
        expect(page.locator("#compose-files")).to_have_text("")
        history = httpx.get(
            f"{server.url}/tasks/{task['id']}", headers={"A2A-Version": "1.0", **alice}
        ).json()["history"]
        [said] = [m for m in history if m["parts"][0] == {"text": "the venue"}]
        [file] = said["parts"][1:]
        assert file["filename"] == photo.name and file["mediaType"] == "image/png"
        got = httpx.get(file["url"], headers=alice)
        assert got.content == photo.read_bytes()
        # The timeline's link downloads it as alice (a plain link would carry no participant).
        with page.expect_download(timeout=WAIT_MS) as download:
            timeline.get_by_role("link", name=photo.name).click()
        saved = tmp_path / "saved.png"
        download.value.save_as(saved)
        assert saved.read_bytes() == photo.read_bytes()
