"""A2UI end to end through the official a2a-sdk client against ``accord serve --agent
harness`` (a scripted model calling ``emit_ui``), over JSON-RPC, HTTP+JSON and gRPC: the card
lists the A2UI extension and media type; the surface streams as an artifact named ``a2ui``
(``a2ui:<seq>``, parts of ``application/a2ui+json``) and is on the task; a press of its button
is accepted and answered; an action on a surface the task did not create is InvalidParams."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import httpx
import pytest
from a2a.client import ClientConfig, create_client
from a2a.types import a2a_pb2 as pb
from a2a.utils.errors import InvalidParamsError
from google.protobuf import json_format, struct_pb2
from tests.harness import a2ui_kit as kit
from tests.harness.harness_proc import HarnessServer, start, write_settings
from tests.harness.test_harness_sdk import as_, message
from tests.harness.tiny_harness_a2ui import check_artifacts

pytestmark = pytest.mark.processes

A2UI_URI = "https://a2ui.org/a2a-extension/a2ui/v0.9.1"
MEDIA = "application/a2ui+json"
SCRIPT: list[dict[str, Any]] = []
for n in range(3):  # one conversation a binding: a form, a question, an answer to the press
    SCRIPT += [
        {"text": "", "tool_calls": [{"name": "emit_ui", "arguments": {"messages": kit.form()}}]},
        {"text": f"Choose a remedy ({n})."},
        {"text": f"Replacement on its way ({n})."},
    ]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HarnessServer]:
    workdir: Path = tmp_path_factory.mktemp("a2ui")
    config = write_settings(workdir, script=SCRIPT)
    started = start(workdir, f"sqlite:///{workdir / 'tasks.db'}", config)
    try:
        yield started
    finally:
        started.stop()


def test_the_card_lists_a2ui_with_the_basic_catalog(server: HarnessServer) -> None:
    card = httpx.get(f"{server.url}/.well-known/agent-card.json", timeout=10).json()
    [a2ui] = [e for e in card["capabilities"]["extensions"] if e["uri"] == A2UI_URI]
    assert a2ui["params"] == {
        "supportedCatalogIds": [kit.BASIC_CATALOG_ID],
        "acceptsInlineCatalogs": False,
    }
    assert not a2ui.get("required", False)
    assert MEDIA in card["defaultInputModes"] and MEDIA in card["defaultOutputModes"]
    # A client that asks for the extension (as tiny-harness's does) has it activated.
    asked = httpx.get(
        f"{server.url}/tasks",
        headers={"A2A-Version": "1.0", "A2A-Extensions": A2UI_URI, "X-Participant-Id": "alice"},
        timeout=10,
    )
    assert asked.status_code == 200, asked.text
    assert A2UI_URI in asked.headers["a2a-extensions"]


def a2ui_part(value: dict[str, Any]) -> pb.Part:
    data = struct_pb2.Value()
    json_format.ParseDict(value, data)
    return pb.Part(data=data, media_type=MEDIA)


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON", "GRPC"])
async def test_a_surface_streams_and_its_button_press_is_answered(
    server: HarnessServer, binding: str
) -> None:
    config = ClientConfig(
        streaming=True,
        supported_protocol_bindings=[binding],
        grpc_channel_factory=grpc.aio.insecure_channel,
    )
    async with await create_client(server.url, client_config=config) as client:
        events = [
            e
            async for e in client.send_message(
                message(pb.Part(text="my blender arrived cracked")), context=as_("alice")
            )
        ]
        [update] = [e.artifact_update for e in events if e.HasField("artifact_update")]
        assert update.artifact.name == "a2ui" and update.artifact.artifact_id == "a2ui:1"
        assert update.last_chunk
        assert [p.media_type for p in update.artifact.parts] == [MEDIA] * 3
        sent = [json_format.MessageToDict(p.data) for p in update.artifact.parts]
        assert sent == kit.form()
        task_id = update.task_id
        assert events[-1].status_update.status.message.parts[0].text.startswith("Choose a remedy")
        task = await client.get_task(pb.GetTaskRequest(id=task_id), context=as_("alice"))
        assert [a.artifact_id for a in task.artifacts] == ["a2ui:1"]
        # As tiny-harness's TUI parses them (tests/harness/tiny_harness_a2ui.py).
        assert check_artifacts(json_format.MessageToDict(task)["artifacts"]) == 3

        # The button's press is accepted and answered.
        pressed = [
            e
            async for e in client.send_message(
                message(a2ui_part(kit.action()), task_id=task_id), context=as_("alice")
            )
        ]
        answer = pressed[-1].status_update.status.message.parts[0].text
        assert answer.startswith("Replacement on its way")
        # An action on a surface this task never created is refused, naming why.
        with pytest.raises(InvalidParamsError) as refused:
            async for _ in client.send_message(
                message(a2ui_part(kit.action(surface="other")), task_id=task_id),
                context=as_("alice"),
            ):
                pass
        assert "this task has no surface 'other'" in str(refused.value)
