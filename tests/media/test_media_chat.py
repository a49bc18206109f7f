"""``/attach PATH`` in ``accord chat``: the file goes with the next message, the harness
stores it, and alice reads it back from the URL the message now carries."""

from __future__ import annotations

import os
from pathlib import Path

import httpx
from tests.chat.test_chat import chat, running, say, texts, until

from accord.harness import HarnessSettings, from_settings
from accord.harness.models import FunctionModel


async def test_attach_sends_the_file_with_the_next_message(tmp_path: Path) -> None:
    photo = tmp_path / "photo.png"
    photo.write_bytes(os.urandom(2048))
    agent = from_settings(
        HarnessSettings(model="main"), {"main": FunctionModel(lambda c: f"saw {c.text}")}
    )
    async with running(agent) as url:
        app = chat(url)
        async with app.run_test() as pilot:
            await until(pilot, lambda: app.client is not None, "connected")
            await say(pilot, f"/attach {tmp_path / 'missing.png'}")
            await until(pilot, lambda: any("cannot attach" in t for t in texts(app)), "refusal")
            await say(pilot, f"/attach {photo}")
            await until(
                pilot,
                lambda: any(t.startswith("attached photo.png (image/png") for t in texts(app)),
                "attached",
            )
            await say(pilot, "here it is")
            await until(
                pilot, lambda: any(t.startswith("saw here it is") for t in texts(app)), "reply"
            )
            assert app.client is not None
            task = await app.client.get_task(app.conversation.task_id)
            [file] = [p for p in task.history[0].parts if isinstance(p.url, str)]
            assert file.filename == "photo.png"
            async with httpx.AsyncClient() as http:
                got = await http.get(file.url, headers={"X-Participant-Id": "alice"})
            assert got.content == photo.read_bytes()
            assert app.attachments.parts == []
