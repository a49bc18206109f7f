"""A participant's image reaches the model as an image input, a text file as text, any
other file as a reference it can name: through a harness server to the fake OpenAI (Chat
Completions and Responses) and Anthropic servers, over real HTTP."""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.harness.fake_anthropic import FakeAnthropic
from tests.harness.fake_openai import FakeOpenAI
from tests.harness.model_clients import anthropic_client, model_client, openai_client
from tests.media.media_kit import ALICE, PNG, harness_server, send

from accord.harness.models import AnthropicModel, Model
from accord.harness.models._openai_compatible import OpenAIModel

__all__ = ["model_client"]  # (the autouse fixture: every test here runs over both clients)
DATA_URL = "data:image/png;base64," + base64.b64encode(PNG).decode()


def files_message() -> dict[str, Any]:
    def raw(data: bytes, name: str, media_type: str) -> dict[str, Any]:
        encoded = base64.b64encode(data).decode()
        return {"raw": encoded, "filename": name, "mediaType": media_type}

    return {
        "messageId": uuid.uuid4().hex,
        "role": "ROLE_USER",
        "parts": [
            {"text": "what is in these?"},
            raw(PNG, "dot.png", "image/png"),
            raw(b"order 48213: one blender", "notes.txt", "text/plain"),
            raw(b"%PDF-1.4 binary", "invoice.pdf", "application/pdf"),
        ],
    }


@pytest.fixture
def openai_fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


@pytest.fixture
def anthropic_fake() -> Iterator[FakeAnthropic]:
    with FakeAnthropic() as server:
        yield server


async def turn_with_files(tmp_path: Path, model: Model) -> dict[str, Any]:
    async with harness_server(f"sqlite:///{tmp_path / 'm.db'}", model) as http:
        return await send(http, files_message(), ALICE)


@pytest.mark.parametrize("api", ["chat", "responses"])
async def test_openai_is_sent_the_image_and_the_text_file(
    tmp_path: Path, openai_fake: FakeOpenAI, api: str
) -> None:
    client = openai_client(openai_fake.base_url)
    task = await turn_with_files(tmp_path, OpenAIModel("fake-model", client, api=api))  # type: ignore[arg-type]
    assert task["status"]["message"]["parts"][0]["text"] == "ok"
    [body] = openai_fake.requests
    if api == "chat":
        [user] = [m for m in body["messages"] if m["role"] == "user"]
        text, image = user["content"]
        assert image == {"type": "image_url", "image_url": {"url": DATA_URL}}
    else:
        [user] = [m for m in body["input"] if m.get("role") == "user"]
        text, image = user["content"]
        assert image == {"type": "input_image", "image_url": DATA_URL}
    said = text["text"]
    assert said.startswith("[alice] what is in these?")
    assert '<untrusted source="file:notes.txt">\norder 48213: one blender' in said
    # the PDF: a reference the model can name (its name, type and URL on this server)
    assert "[file invoice.pdf from alice, application/pdf, at http://localhost/media/" in said
    assert "%PDF" not in json.dumps(body)


async def test_anthropic_is_sent_an_image_block(
    tmp_path: Path, anthropic_fake: FakeAnthropic
) -> None:
    client = anthropic_client(anthropic_fake.base_url)
    await turn_with_files(tmp_path, AnthropicModel("claude-fake", client))
    [body] = anthropic_fake.requests
    [user] = [m for m in body["messages"] if m["role"] == "user"]
    text, image = user["content"]
    assert text["type"] == "text" and "order 48213" in text["text"]
    image.pop("cache_control", None)  # (the adapter marks the prefix's end for caching)
    assert image == {
        "type": "image",
        "source": {
            "type": "base64",
            "media_type": "image/png",
            "data": base64.b64encode(PNG).decode(),
        },
    }
