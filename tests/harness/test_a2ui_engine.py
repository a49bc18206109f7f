"""``emit_ui`` and actions on the engine: the surface is an ``a2ui`` artifact of the task, a
broken message goes back to the model naming what failed (nothing shown), a participant's
button press reaches the model as a framed event, and an action on a surface the task did not
create — or a malformed one — is refused with InvalidParams naming why."""

from __future__ import annotations

from typing import Any

import pytest
from tests.harness import a2ui_kit as kit
from tests.harness.engine_kit import ALICE, BOB, brief, send
from tests.harness.test_turn_tools import Script

from accord.engine import Engine
from accord.harness import HarnessAgent, HarnessSettings, ToolCall
from accord.harness._transcript import ToolResult
from accord.harness.a2ui import A2UI_MEDIA_TYPE
from accord.harness.models import FunctionModel
from accord.store._memory import MemoryStore
from accord.wire import A2AError, ErrorKind, Part, Task


def engine_for(model: Script) -> Engine:
    agent = HarnessAgent(HarnessSettings(model="main"), {"main": FunctionModel(model)})
    return Engine(MemoryStore(), agent)


def a2ui_parts(task: Task) -> list[tuple[str, str, list[Any]]]:
    return [
        (a.artifact_id, a.name, [p.data for p in a.parts if p.media_type == A2UI_MEDIA_TYPE])
        for a in task.artifacts or []
    ]


def action_part(data: dict[str, Any]) -> Part:
    return Part(data=data, media_type=A2UI_MEDIA_TYPE)


async def test_a_surface_is_an_artifact_and_a_button_press_reaches_the_model() -> None:
    broken = [
        *kit.form()[:1],
        {"version": "v0.9.1", "updateComponents": {"surfaceId": "nope", "components": []}},
    ]
    model = Script(
        [ToolCall("emit_ui", {"messages": broken})],
        [ToolCall("emit_ui", {"messages": kit.form()})],
        "Please choose.",
        "Replacement it is.",
    )
    engine = engine_for(model)
    await engine.start()
    try:
        task = await send(engine, ALICE, brief({"bob": "reporter"}, "my blender is cracked"))
        # The first call was refused, naming the value, and showed nothing.
        results = [s for s in model.asked[1].steps if isinstance(s, ToolResult)]
        assert results[0].error
        assert results[0].content == (
            "emit_ui: messages[1].updateComponents.surfaceId: no surface 'nope': "
            "createSurface it first (nothing was shown)"
        )
        results = [s for s in model.asked[2].steps if isinstance(s, ToolResult)]
        assert results[-1].content == "shown as a2ui:1; the task's surfaces: refund-form"
        assert a2ui_parts(task) == [("a2ui:1", "a2ui", kit.form())]
        # Bob presses Confirm: the model reads the action as a framed event.
        pressed = await send(engine, BOB, [action_part(kit.action())], task.id)
        assert pressed.status.message is not None
        last = model.asked[-1].entries[-1]
        assert last.sender == "bob"
        assert last.text == (
            '[ui action from bob] {"context": {"note": "asap", "remedy": ["replace"]}, '
            '"name": "confirm", "sourceComponentId": "confirm", "surfaceId": "refund-form"}'
        )
    finally:
        await engine.stop()


@pytest.mark.parametrize(
    ("parts", "named"),
    [
        (
            [action_part(kit.action(surface="phish"))],
            "message.parts[0].data.action.surfaceId: this task has no surface 'phish'",
        ),
        (
            [Part(text="see"), action_part(kit.action(source="title"))],
            "message.parts[1].data.action.sourceComponentId: component 'title' sends no action",
        ),
        (
            [action_part({"version": "v0.9.1", "action": {"name": "confirm"}})],
            "message.parts[0].data.action.surfaceId: required text",
        ),
        (
            [Part(text="x", media_type=A2UI_MEDIA_TYPE)],
            "message.parts[0]: an A2UI message is a data part",
        ),
        (
            [action_part(kit.action()), action_part(kit.action())],
            "message.parts[1]: a message carries at most one A2UI message",
        ),
    ],
)
async def test_an_action_outside_the_tasks_surfaces_is_refused(
    parts: list[Part], named: str
) -> None:
    model = Script([ToolCall("emit_ui", {"messages": kit.form()})], "Please choose.")
    engine = engine_for(model)
    await engine.start()
    try:
        task = await send(engine, ALICE, "hello")
        asked = len(model.asked)
        with pytest.raises(A2AError) as refused:
            await send(engine, ALICE, parts, task.id)
        assert refused.value.kind is ErrorKind.INVALID_PARAMS
        assert refused.value.message == named
        assert len(model.asked) == asked  # (nothing stored, no turn)
        stored = await engine.get_task(task.id, ALICE)
        assert len(stored.history or []) == len(task.history or [])
    finally:
        await engine.stop()


async def test_an_action_that_starts_a_task_is_refused() -> None:
    engine = engine_for(Script())
    await engine.start()
    try:
        with pytest.raises(A2AError) as refused:
            await send(engine, ALICE, [action_part(kit.action())])
        assert refused.value.message == (
            "message.parts[0].data: an A2UI action answers a surface of an existing task"
        )
    finally:
        await engine.stop()
