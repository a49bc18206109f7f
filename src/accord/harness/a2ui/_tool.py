"""``emit_ui``: the model shows a participant a surface of the A2UI basic catalog.

Its messages are checked, in order, against the schema, the catalog, the bounds and the
task's surfaces; an error goes back to the model naming the value that fails. Checked, they
become one artifact named ``a2ui`` (id ``a2ui:<seq>``), a part of media type
``application/a2ui+json`` a message, as tiny-harness emits them: an event of the task's log
that streams and push deliver. Not idempotent: a turn resumed after a crash never emits twice.
"""

from __future__ import annotations

from typing import Any

from accord.harness._transcript import ToolSpec
from accord.harness.a2ui._limits import MAX_MESSAGES, A2uiError
from accord.harness.a2ui._messages import (
    A2UI_MEDIA_TYPE,
    ARTIFACT_NAME,
    BASIC_CATALOG_ID,
    Surfaces,
    check_messages,
    next_artifact_id,
)
from accord.harness.tools._base import ToolContext, ToolOutcome
from accord.wire import Part

DESCRIPTION = (
    "Show the participants a UI surface (A2UI v0.9, basic catalog), or change or remove one. "
    'messages: in order, each {"version": "v0.9.1", <one of>}: '
    f'createSurface {{surfaceId, catalogId: "{BASIC_CATALOG_ID}"}}; '
    "updateComponents {surfaceId, components: [{id, component, ...}]} (one component has id "
    '"root"; components: Text {text, variant?}, Image {url}, Row/Column/List {children: '
    "[ids]}, Card {child}, Button {child: a Text's id, action: {event: {name, context?}}}, "
    "TextField {label, value?: {path}}, CheckBox {label, value}, ChoicePicker {label?, "
    "options: [{label, value}], value: {path}}, Divider, Tabs, Slider, DateTimeInput); "
    "updateDataModel {surfaceId, path?, value?}; deleteSurface {surfaceId}. "
    "A participant's button press comes back as a [ui action from <id>] message."
)

SPEC = ToolSpec(
    "emit_ui",
    DESCRIPTION,
    {
        "type": "object",
        "properties": {
            "messages": {
                "type": "array",
                "minItems": 1,
                "maxItems": MAX_MESSAGES,
                "items": {"type": "object"},
                "description": "A2UI v0.9 server messages, applied in order",
            }
        },
        "required": ["messages"],
        "additionalProperties": False,
    },
)


class EmitUi:
    spec = SPEC
    idempotent = False  # (a surface shown twice is shown twice)

    async def call(self, arguments: dict[str, Any], context: ToolContext) -> ToolOutcome:
        unknown = sorted(set(arguments) - {"messages"})
        if unknown:
            return ToolOutcome(f"emit_ui: unknown argument {unknown[0]!r}", error=True)
        if context.task is None:
            return ToolOutcome("emit_ui needs the task", error=True)
        current = await context.task.current()
        artifacts = current.artifacts or []
        messages = arguments.get("messages")
        try:
            after = check_messages(messages, Surfaces.of(artifacts))
        except A2uiError as refused:
            return ToolOutcome(f"emit_ui: {refused} (nothing was shown)", error=True)
        assert isinstance(messages, list)
        artifact_id = next_artifact_id(artifacts)
        await context.task.update_artifact(
            parts=[Part(data=message, media_type=A2UI_MEDIA_TYPE) for message in messages],
            artifact_id=artifact_id,
            name=ARTIFACT_NAME,
            last_chunk=True,
        )
        live = ", ".join(sorted(after.live)) or "none"
        return ToolOutcome(f"shown as {artifact_id}; the task's surfaces: {live}")


__all__ = ["SPEC", "EmitUi"]
