"""What a turn decides once and then reuses: whether a model class streams, and a task's
extension decoded from one metadata value."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import msgspec
import pytest

from accord.harness import Conversation
from accord.harness._steps import streams
from accord.harness._wire import TASK_KEY
from accord.harness.core._state import DECODED, extension_of
from accord.harness.models import ModelEvent, ModelResponse, ScriptedModel
from accord.wire import Task, TaskState, TaskStatus


class Streaming:
    async def respond(self, conversation: Conversation) -> ModelResponse:
        return ModelResponse(text="whole")

    async def stream(self, conversation: Conversation) -> AsyncIterator[ModelEvent]:
        yield ModelResponse(text="streamed")


def test_a_model_streams_by_its_class() -> None:
    assert streams(Streaming()) and streams(Streaming())  # (the second from what was decided)
    plain = ScriptedModel((ModelResponse(text="ok"),))
    assert not streams(plain)
    plain.stream = Streaming().stream  # type: ignore[attr-defined]
    assert not streams(plain)  # an instance's attribute does not make its class stream


def task_with(extension: Any) -> Task:
    return Task(id="t1", status=TaskStatus(state=TaskState.WORKING), metadata={TASK_KEY: extension})


def test_one_metadata_value_is_decoded_once_and_a_new_one_anew() -> None:
    raw = {"name": "offsite", "goal": "a plan"}
    first = extension_of(task_with(raw))
    assert first is not None and first.name == "offsite"
    assert extension_of(task_with(raw)) is first  # the same value: the same decoding
    changed = extension_of(task_with({"name": "offsite", "goal": "a date"}))
    assert changed is not None and changed.goal == "a date"
    assert extension_of(task_with(raw)) is first


def test_an_invalid_extension_is_refused_every_time() -> None:
    raw = {"name": "offsite", "goal": "a plan", "surprise": 1}
    for _ in range(2):
        with pytest.raises(msgspec.ValidationError):
            extension_of(task_with(raw))


def test_the_decodings_kept_are_bounded_and_still_right() -> None:
    values = [{"name": f"n{n}", "goal": "g"} for n in range(DECODED * 2)]
    for value in values:
        extension = extension_of(task_with(value))
        assert extension is not None and extension.name == value["name"]
    first = extension_of(task_with(values[0]))  # long gone from what is kept: decoded again
    assert first is not None and first.name == "n0"
