"""A2UI surfaces in the dashboard, in a real browser (headless Chromium through Playwright)
against ``accord serve --agent harness`` with a scripted model that calls ``emit_ui``: the
task page draws the basic catalog (a card, a column, text, a choice, a text field, a button,
an image), a person fills it and presses the button, and the action goes back to the task —
accepted, the model answers it; a surface's text never becomes markup."""

from __future__ import annotations

import base64
import json
import uuid
from pathlib import Path
from typing import Any

import httpx
from playwright.sync_api import Page, expect
from tests.dashboard.server_proc import serve
from tests.harness import a2ui_kit as kit

WAIT_MS = 15_000  # how long an expectation may wait (a bound, not a measurement)
PNG = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c6360f80f0000010101005c2a8f2d0000000049454e44ae426082"
    )
).decode()


def surface_messages() -> list[dict[str, Any]]:
    messages = kit.form()
    components = messages[1]["updateComponents"]["components"]
    components[1]["children"] += ["picture", "remote", "trap"]
    components += [
        {
            "id": "picture",
            "component": "Image",
            "url": f"data:image/png;base64,{PNG}",
            "description": "the crack",
        },
        {
            "id": "remote",
            "component": "Image",
            "url": "https://example.org/photo.jpg",
            "description": "remote photo",
        },
        {"id": "trap", "component": "Text", "text": "<img src=x onerror=alert(1)>"},
    ]
    return messages


def config(tmp_path: Path) -> str:
    script = [
        {
            "text": "",
            "tool_calls": [{"name": "emit_ui", "arguments": {"messages": surface_messages()}}],
        },
        {"text": "Please choose a remedy."},
        {"text": "A replacement is on its way."},
    ]
    path = tmp_path / "script.json"
    path.write_text(json.dumps(script))
    return f'[harness]\nagent_id = "accord"\nmodel = "scripted:{path}"\n'


def test_a_surface_is_drawn_and_its_button_sends_the_action_back(
    tmp_path: Path, page: Page, screenshots: Path
) -> None:
    with serve(tmp_path, "harness", config(tmp_path)) as server:
        alice = {"X-Participant-Id": "alice", "A2A-Version": "1.0"}
        body = {
            "message": {
                "messageId": str(uuid.uuid4()),
                "role": "ROLE_USER",
                "parts": [{"text": "my blender is cracked"}],
            }
        }
        task = httpx.post(f"{server.url}/message:send", json=body, headers=alice, timeout=30)
        task_id = task.json()["task"]["id"]
        page.goto(f"{server.url}/ui/")
        page.fill("#participant", "alice")
        page.locator("#participant").dispatch_event("change")
        page.goto(f"{server.url}/ui/#/task/{task_id}")
        surface = page.locator('#a2ui [data-surface-id="refund-form"]')
        expect(surface).to_be_visible(timeout=WAIT_MS)
        expect(surface.locator('[data-component-id="title"]')).to_have_text(
            "Order #48213: how shall we fix it?"
        )
        # Untrusted text stays text; a data: image is drawn, an https one is a link.
        expect(surface.locator('[data-component-id="trap"]')).to_have_text(
            "<img src=x onerror=alert(1)>"
        )
        assert surface.locator('[data-component-id="trap"] img').count() == 0
        picture = surface.locator('img[data-component-id="picture"]')
        expect(picture).to_have_attribute("alt", "the crack")
        remote = surface.locator('a[data-component-id="remote"]')
        expect(remote).to_have_attribute("href", "https://example.org/photo.jpg")
        expect(remote).to_have_text("image: remote photo")
        # The data model's values are in the fields; a person changes them.
        refund = surface.locator('input[type="radio"][value="refund"]')
        expect(refund).to_be_checked()
        surface.locator('input[type="radio"][value="replace"]').check()
        surface.locator('[data-component-id="note"] input').fill("before Friday, please")
        page.screenshot(path=screenshots / "a2ui-surface.png", full_page=True)
        surface.locator('button[data-component-id="confirm"]').click()
        timeline = page.locator("#timeline")
        expect(timeline).to_contain_text("A replacement is on its way.", timeout=WAIT_MS)
        history = httpx.get(f"{server.url}/tasks/{task_id}", headers=alice).json()["history"]
        [pressed] = [
            m for m in history if any(p.get("mediaType") == kit.A2UI_MEDIA_TYPE for p in m["parts"])
        ]
        action = pressed["parts"][0]["data"]["action"]
        assert pressed["metadata"]["participant_id"] == "alice"
        assert (action["name"], action["surfaceId"], action["sourceComponentId"]) == (
            "confirm",
            "refund-form",
            "confirm",
        )
        assert action["context"] == {"remedy": ["replace"], "note": "before Friday, please"}
