"""The channel part is checked against the extension's schema exactly, through SendMessage:
every field of ``ChannelMessageData`` good and bad, each refusal InvalidParams naming the
field (``message.parts[0].data.<field>``); and, over random data, the harness accepts
exactly what the schema itself (tests/harness/channel_schema.json, the seed's text) accepts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.harness.channel_kit import channel
from tests.harness.engine_kit import ALICE, brief, running, send

from accord.harness._wire import CHANNEL_MEDIA_TYPE
from accord.harness.channels import _data as channel_data
from accord.wire._errors import A2AError, ErrorKind
from accord.wire._model import Part

SCHEMA = json.loads((Path(__file__).parent / "channel_schema.json").read_text())
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)
TASK = "TASK"  # replaced by the task's id: the default channel


def on(task_id: str, **fields: Any) -> dict[str, Any]:
    data = {"channel_id": TASK, "sender": "alice", **fields}
    return {k: (task_id if v == TASK else v) for k, v in data.items()}


GOOD: list[dict[str, Any]] = [
    {},
    {"kind": "message"},
    {"kind": "help_request"},
    {"kind": "help_reply"},
    {"text": ""},
    {"text": "hello"},
    {"parts": []},
    {"parts": [{"kind": "text"}]},
    {"parts": [{"kind": "text", "text": "x", "data": None, "media_type": None}]},
    {"parts": [{"kind": "data", "data": {"a": [1, 2.5, True, None, {"b": "c"}]}}]},
    {"parts": [{"kind": "data", "data": {}, "media_type": "application/json"}]},
    {"parts": [{"kind": "text", "text": "x", "note": "open"}]},  # (a content part is open)
    {"in_reply_to": None},
    {"in_reply_to": "m-1"},
]

BAD: list[tuple[dict[str, Any], str]] = [
    ({"channel_id": None}, "channel_id"),
    ({"channel_id": 7}, "channel_id"),
    ({"sender": ["alice"]}, "sender"),
    ({"sender": None}, "sender"),
    ({"kind": "shout"}, "kind"),
    ({"kind": None}, "kind"),
    ({"kind": 1}, "kind"),
    ({"text": None}, "text"),
    ({"text": 3}, "text"),
    ({"parts": None}, "parts"),
    ({"parts": {"kind": "text"}}, "parts"),
    ({"parts": ["hello"]}, "parts[0]"),
    ({"parts": [{}]}, "parts[0].kind"),
    ({"parts": [{"kind": "media"}]}, "parts[0].kind"),
    ({"parts": [{"kind": "text", "text": 5}]}, "parts[0].text"),
    ({"parts": [{"kind": "text"}, {"kind": "data", "data": [1]}]}, "parts[1].data"),
    ({"parts": [{"kind": "data", "data": "x"}]}, "parts[0].data"),
    ({"parts": [{"kind": "data", "media_type": False}]}, "parts[0].media_type"),
    ({"in_reply_to": 12}, "in_reply_to"),
    ({"in_reply_to": {"id": "m"}}, "in_reply_to"),
    ({"to": "bob"}, "to"),  # additionalProperties: false
    ({"metadata": {}}, "metadata"),
]


async def test_every_field_good_and_bad_through_send_message() -> None:
    async with running() as (engine, _):
        task = await send(engine, ALICE, brief({"alice": "admin"}))
        for fields in GOOD:
            data = on(task.id, **fields)
            assert VALIDATOR.is_valid(data), fields  # (the schema agrees it is good)
            answered = await send(engine, ALICE, [channel(**data)], task.id)
            relayed = answered.history[-1] if fields.get("kind") == "help_reply" else None
            assert answered.id == task.id and (relayed is None or relayed.parts)
        for fields, field in BAD:
            data = on(task.id, **fields)
            assert not VALIDATOR.is_valid(data), fields
            with pytest.raises(A2AError) as refused:
                await send(engine, ALICE, [channel(**data)], task.id)
            assert refused.value.kind is ErrorKind.INVALID_PARAMS, fields
            assert [v.field for v in refused.value.violations] == [
                f"message.parts[0].data.{field}"
            ], fields
        for missing in ("channel_id", "sender"):
            data = on(task.id)
            del data[missing]
            with pytest.raises(A2AError) as refused:
                await send(engine, ALICE, [channel(**data)], task.id)
            assert refused.value.violations[0].field == f"message.parts[0].data.{missing}"


async def test_a_channel_part_that_is_no_json_object_or_comes_twice_is_refused() -> None:
    async with running() as (engine, _):
        task = await send(engine, ALICE, brief({"alice": "admin"}))
        cases = [
            ([Part(data=["x"], media_type=CHANNEL_MEDIA_TYPE)], "message.parts[0].data"),
            ([Part(text="hi", media_type=CHANNEL_MEDIA_TYPE)], "message.parts[0]"),
            ([Part(text="hi"), channel(**on(task.id)), channel(**on(task.id))], "message.parts[2]"),
        ]
        for parts, field in cases:
            with pytest.raises(A2AError) as refused:
                await send(engine, ALICE, parts, task.id)
            assert refused.value.kind is ErrorKind.INVALID_PARAMS
            assert refused.value.violations[0].field == field


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=3),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=6,
)
content_parts = st.one_of(
    json_values,
    st.fixed_dictionaries(
        {},
        optional={
            "kind": st.sampled_from(["text", "data", "media"]) | json_values,
            "text": st.none() | st.text(max_size=3) | json_values,
            "data": st.none() | st.dictionaries(st.text(max_size=3), json_values) | json_values,
            "media_type": st.none() | st.text(max_size=3) | json_values,
            "extra": json_values,
        },
    ),
)
channel_objects = st.fixed_dictionaries(
    {},
    optional={
        "channel_id": st.text(max_size=3) | json_values,
        "sender": st.text(max_size=3) | json_values,
        "kind": st.sampled_from(["message", "help_request", "help_reply", "other"]) | json_values,
        "text": st.text(max_size=3) | json_values,
        "parts": st.lists(content_parts, max_size=3) | json_values,
        "in_reply_to": st.none() | st.text(max_size=3) | json_values,
        "to": json_values,
    },
)


@settings(max_examples=500, deadline=None)
@given(value=channel_objects | json_values)
def test_the_harness_accepts_exactly_what_the_schema_accepts(value: Any) -> None:
    try:
        channel_data.parse(value, "message.parts[0].data")
        accepted = True
    except A2AError as exc:
        assert exc.kind is ErrorKind.INVALID_PARAMS
        accepted = False
    assert accepted == VALIDATOR.is_valid(value)
