"""The A2UI checks on their own: the basic catalog's components and functions, the four server
messages against a task's surfaces, the bounds, a participant's action, and the surfaces a
task's artifacts leave."""

from __future__ import annotations

import copy
import random
from typing import Any

import pytest
from tests.harness import a2ui_kit as kit
from tests.harness import tiny_harness_a2ui as tiny_harness

from accord.harness.a2ui import (
    A2UI_MEDIA_TYPE,
    MAX_MESSAGES,
    MAX_SURFACES,
    A2uiError,
    Surfaces,
    check_client,
    check_messages,
    parse_client,
)
from accord.wire import Artifact, Part


def refused(messages: Any, surfaces: Surfaces | None = None) -> str:
    with pytest.raises(A2uiError) as caught:
        check_messages(messages, surfaces or Surfaces())
    return str(caught.value)


def test_a_whole_form_is_accepted_and_leaves_its_surface() -> None:
    after = check_messages(kit.form(), Surfaces())
    assert set(after.live) == {kit.SURFACE}
    assert after.live[kit.SURFACE]["confirm"] == "confirm"
    assert after.live[kit.SURFACE]["title"] is None
    gone = check_messages([{"version": "v0.9", "deleteSurface": {"surfaceId": kit.SURFACE}}], after)
    assert gone.live == {} and kit.SURFACE in after.live  # (the registry given is unchanged)


def test_every_basic_catalog_component_and_a_function_call() -> None:
    parts = [
        {
            "id": "root",
            "component": "Row",
            "children": {"componentId": "t", "path": "/items"},
            "justify": "start",
        },
        {
            "id": "t",
            "component": "Text",
            "text": {
                "call": "formatCurrency",
                "args": {"value": {"path": "/p"}, "currency": "EUR"},
                "returnType": "string",
            },
        },
        {"id": "i", "component": "Image", "url": "https://example.org/a.png", "fit": "cover"},
        {"id": "ic", "component": "Icon", "name": "check"},
        {"id": "v", "component": "Video", "url": "https://example.org/v.mp4"},
        {"id": "a", "component": "AudioPlayer", "url": "https://example.org/a.mp3"},
        {"id": "l", "component": "List", "children": ["t"], "direction": "horizontal"},
        {"id": "tb", "component": "Tabs", "tabs": [{"title": "One", "child": "t"}]},
        {"id": "m", "component": "Modal", "trigger": "t", "content": "i"},
        {"id": "d", "component": "Divider", "axis": "vertical"},
        {"id": "cb", "component": "CheckBox", "label": "ok", "value": True},
        {"id": "s", "component": "Slider", "value": 3, "max": 10, "min": 0},
        {
            "id": "dt",
            "component": "DateTimeInput",
            "value": {"path": "/when"},
            "min": {"path": "/start"},
            "enableTime": False,
        },
        {
            "id": "tf",
            "component": "TextField",
            "label": "Mail",
            "value": {"path": "/mail"},
            "checks": [
                {
                    "condition": {"call": "email", "args": {"value": {"path": "/mail"}}},
                    "message": "a mail address",
                }
            ],
        },
        {
            "id": "b",
            "component": "Button",
            "child": "t",
            "action": {"functionCall": {"call": "openUrl", "args": {"url": "https://example.org"}}},
        },
    ]
    message = {"version": "v0.9.1", "updateComponents": {"surfaceId": "s", "components": parts}}
    after = check_messages([kit.create("s"), message], Surfaces())
    assert len(after.live["s"]) == len(parts)


@pytest.mark.parametrize(
    ("change", "named"),
    [
        (
            lambda c: c[1]["updateComponents"]["components"][2].update(component="Marquee"),
            "components[2].component: expected a basic catalog component",
        ),
        (
            lambda c: c[1]["updateComponents"]["components"][2].pop("text"),
            "messages[1].updateComponents.components[2].text: required",
        ),
        (
            lambda c: c[1]["updateComponents"]["components"][2].update(colour="red"),
            "messages[1].updateComponents.components[2].colour: unknown property",
        ),
        (
            lambda c: c[1]["updateComponents"]["components"][2].update(variant="h9"),
            "components[2].variant: expected one of h1",
        ),
        (
            lambda c: c[1]["updateComponents"]["components"][6]["action"]["event"].pop("name"),
            "components[6].action.event.name: required",
        ),
        (
            lambda c: c[1]["updateComponents"]["components"][2].update(
                text={"call": "email", "args": {"value": "x"}}
            ),
            "components[2].text.call: email returns boolean, not string",
        ),
        (
            lambda c: c[1]["updateComponents"]["components"][2].update(
                text={"call": "eval", "args": {}}
            ),
            "components[2].text.call: expected one of the catalog's functions",
        ),
        (
            lambda c: c[1]["updateComponents"]["components"].append(
                {"id": "root", "component": "Divider"}
            ),
            "components[7].id: 'root' twice in one message",
        ),
        (
            lambda c: c[0]["createSurface"].update(catalogId="https://evil.example/catalog.json"),
            "messages[0].createSurface.catalogId: required: the basic catalog",
        ),
        (lambda c: c[0].update(version="v1.0"), "messages[0].version: expected v0.9 or v0.9.1"),
        (
            lambda c: c[0].update(deleteSurface={"surfaceId": "x"}),
            "messages[0]: expected exactly one of",
        ),
        (
            lambda c: c[2]["updateDataModel"].update(path="remedy"),
            "messages[2].updateDataModel.path: expected a JSON pointer",
        ),
        (
            lambda c: c[1]["updateComponents"].update(surfaceId="other"),
            "messages[1].updateComponents.surfaceId: no surface 'other': createSurface it first",
        ),
        (
            lambda c: c.append(kit.create()),
            "messages[3].createSurface.surfaceId: surface 'refund-form' exists",
        ),
        (
            lambda c: c[0]["createSurface"].update(theme={"primaryColor": "red"}),
            "createSurface.theme.primaryColor: expected a colour",
        ),
        # (as the official schema has them, and tiny-harness's clients read it)
        (
            lambda c: c[1]["updateComponents"]["components"].append(
                {"id": "t", "component": "Tabs", "tabs": []}
            ),
            "components[7].tabs: expected 1 to 200 items",
        ),
        (
            lambda c: c[1]["updateComponents"]["components"][2].update(
                text={"call": "and", "args": {"values": [True]}}
            ),
            "components[2].text.args.values: expected 2 to 200 items",
        ),
        (
            lambda c: c[1]["updateComponents"]["components"][6].update(
                checks=[
                    {
                        "condition": {"call": "length", "args": {"value": "x", "min": -1}},
                        "message": "m",
                    }
                ]
            ),
            "components[6].checks[0].condition.args.min: expected an integer of at least 0",
        ),
        (
            lambda c: c[1]["updateComponents"]["components"].append(
                {"id": "d", "component": "DateTimeInput", "value": "", "min": "2026-01-01"}
            ),
            "components[7].min: bind it to the data model",
        ),
    ],
)
def test_a_message_that_breaks_a_rule_is_refused_naming_the_value(change: Any, named: str) -> None:
    messages = copy.deepcopy(kit.form())
    change(messages)
    assert named in refused(messages)


def test_the_bounds() -> None:
    assert "at most" in refused([kit.create()] * (MAX_MESSAGES + 1))
    many = [kit.create(f"s{n}") for n in range(MAX_SURFACES + 1)]
    assert f"at most {MAX_SURFACES} surfaces" in refused(many)
    deep: Any = "x"
    for _ in range(40):
        deep = {"a": deep}
    value = {"version": "v0.9.1", "updateDataModel": {"surfaceId": kit.SURFACE, "value": deep}}
    assert "nested deeper than" in refused([kit.create(), value])
    long = {
        "version": "v0.9.1",
        "updateDataModel": {"surfaceId": kit.SURFACE, "value": "x" * 20_000},
    }
    assert "longer than" in refused([kit.create(), long])
    assert "bytes; at most" in refused([kit.create(), long, long] * 8)
    assert refused([]) == "messages: expected a non-empty array of A2UI messages"
    assert "expected JSON" in refused([kit.create(), {**kit.data_model(), "x": float("nan")}])


def artifacts(*calls: list[dict[str, Any]]) -> list[Artifact]:
    return [
        Artifact(
            artifact_id=f"a2ui:{n}",
            name="a2ui",
            parts=[Part(data=m, media_type=A2UI_MEDIA_TYPE) for m in messages],
        )
        for n, messages in enumerate(calls, 1)
    ]


def test_the_surfaces_are_folded_from_the_tasks_a2ui_artifacts() -> None:
    other = Artifact(
        artifact_id="x",
        name="report",
        parts=[Part(data=kit.create("fake"), media_type=A2UI_MEDIA_TYPE)],
    )
    surfaces = Surfaces.of([*artifacts(kit.form(), [kit.create("second")]), other])
    assert set(surfaces.live) == {kit.SURFACE, "second"}
    deleted = [{"version": "v0.9.1", "deleteSurface": {"surfaceId": "second"}}]
    assert set(Surfaces.of(artifacts(kit.form(), [kit.create("second")], deleted)).live) == {
        kit.SURFACE
    }


def test_an_action_is_accepted_only_from_a_button_on_a_surface_of_the_task() -> None:
    surfaces = Surfaces.of(artifacts(kit.form()))

    def judged(data: Any) -> str:
        try:
            check_client(parse_client(data, "data"), surfaces, "data")
        except A2uiError as refused:
            return str(refused)
        return "accepted"

    assert judged(kit.action()) == "accepted"
    assert (
        judged(kit.action(surface="elsewhere"))
        == "data.action.surfaceId: this task has no surface 'elsewhere'"
    )
    assert (
        judged(kit.action(source="ghost"))
        == "data.action.sourceComponentId: surface 'refund-form' has no component 'ghost'"
    )
    assert (
        judged(kit.action(source="title"))
        == "data.action.sourceComponentId: component 'title' sends no action"
    )
    assert (
        judged(kit.action(name="refund_all"))
        == "data.action.name: component 'confirm' sends 'confirm'"
    )
    late = kit.action()
    late["action"]["timestamp"] = "yesterday"
    assert judged(late) == "data.action.timestamp: expected an ISO 8601 date-time"
    late["action"]["timestamp"] = "2026-12-04T19:03:01.123456+00:00"  # (tiny-harness's TUI's)
    assert judged(late) == "accepted"
    assert judged({**kit.action(), "extra": 1}).startswith("data.extra: unknown property")
    assert "bytes; at most" in judged(kit.action(context={"blob": "x" * 40_000}))
    error = {
        "version": "v0.9.1",
        "error": {"code": "RENDER", "surfaceId": kit.SURFACE, "message": "no"},
    }
    assert judged(error) == "accepted"


MUTANTS: list[Any] = [
    None, -1, 0, 1.5, True, "", "x", "2026-01-01", [], ["a"], {}, {"path": "/a"},
    {"call": "formatString", "args": {"value": "x"}}, {"call": "and", "args": {"values": [True]}},
]  # fmt: skip


def _places(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [path]
    items = (
        value.items()
        if isinstance(value, dict)
        else enumerate(value)
        if isinstance(value, list)
        else ()
    )
    for key, item in items:
        found += _places(item, (*path, key))
    return found


def test_what_the_checks_accept_tiny_harness_can_draw() -> None:
    """Three hundred random one-value changes of the form: every change the checks accept is a
    surface tiny-harness's TUI parses (tests/harness/tiny_harness_a2ui.py)."""
    chance = random.Random(37)
    accepted = 0
    for _ in range(300):
        messages = copy.deepcopy(kit.form())
        message = chance.choice(messages)
        place = chance.choice(_places(message)[1:])
        parent = message
        for key in place[:-1]:
            parent = parent[key]
        if isinstance(parent, dict) and chance.random() < 0.3:
            del parent[place[-1]]
        else:
            parent[place[-1]] = copy.deepcopy(chance.choice(MUTANTS))
        try:
            check_messages(messages, Surfaces())
        except A2uiError:
            continue
        accepted += 1
        for each in messages:
            tiny_harness.VALIDATOR.validate(each)
    assert accepted > 20  # (the changes the checks accept are drawn too)
