"""The seed document as accord reads it (flattened YAML) and as /openapi.json serves it."""

from __future__ import annotations

import json
import re
from typing import Any

import jsonschema_rs
import pytest

from accord.surface._contract import operations, seed_document, served_document
from accord.surface._flatyaml import load


def test_the_seed_reads_completely_and_every_reference_resolves() -> None:
    document = seed_document()
    assert document["openapi"] == "3.1.0"
    assert len(document["paths"]) == 21
    schemas = document["components"]["schemas"]
    assert len(schemas) == 173
    text = json.dumps(document)
    for ref in set(re.findall(r'"\$ref": "#/([^"]+)"', text)):
        node: Any = document
        for part in ref.split("/"):
            node = node[part]
        assert isinstance(node, dict), ref


def test_every_schema_is_sound() -> None:
    """``required`` names only declared properties, a ``$ref`` has no sibling keywords, and
    each response schema compiles."""
    document = seed_document()

    def walk(node: Any, where: str) -> None:
        if isinstance(node, dict):
            if isinstance(node.get("required"), list) and "properties" in node:
                assert set(node["required"]) <= set(node["properties"]), where
            if "$ref" in node and not where.endswith("x-ess-relation"):
                assert all(k == "$ref" or k.startswith("x-") for k in node), where
            for key, value in node.items():
                walk(value, f"{where}/{key}")
        elif isinstance(node, list):
            for index, value in enumerate(node):
                walk(value, f"{where}/{index}")

    walk(document, "")
    for name in document["components"]["schemas"]:
        schema = {
            "$ref": f"#/components/schemas/{name}",
            "components": document["components"],
            "x-ess-entities": document["x-ess-entities"],
        }
        jsonschema_rs.validator_for(schema)


def test_statuses_come_from_the_seed() -> None:
    ops = operations()
    complete = ops["/tasks/commands/tasks:complete"]
    assert complete.statuses == {"moved": 202, "not-found": 404, "wrong-state": 409}
    send = ops["/tasks/commands/message:send"]
    assert send.statuses["task-created"] == 200 and send.statuses["task-limit"] == 502
    assert ops["/tasks/views/allTasks"].is_view
    assert ops["/tasks/commands/pushNotificationConfigs:create"].statuses["task-not-found"] == 409


def test_served_document_adds_only_what_accord_answers_besides() -> None:
    seed = seed_document()
    served = served_document(auth_configured=True, api_key=True, bearer=True)
    assert served["components"]["schemas"] == seed["components"]["schemas"]
    assert set(served["paths"]) == set(seed["paths"])
    for path, item in served["paths"].items():
        for method, op in item.items():
            declared = seed["paths"][path][method]["responses"]
            for code, response in declared.items():
                assert op["responses"][code] == response
            assert set(op["responses"]) - set(declared) <= {"401", "415", "422"}
    assert served["components"]["securitySchemes"]["apiKey"]["name"] == "X-API-Key"
    open_doc = served_document(auth_configured=False, api_key=False, bearer=False)
    assert "securitySchemes" not in open_doc["components"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "openapi: 3.1.0 info: title: t version: v1",
            {"openapi": "3.1.0", "info": {"title": "t", "version": "v1"}},
        ),
        (
            "openapi: 3.1.0 components: schemas: A: type: object properties: required: "
            "type: boolean description: type: string required: - required "
            "additionalProperties: false",
            {
                "openapi": "3.1.0",
                "components": {
                    "schemas": {
                        "A": {
                            "type": "object",
                            "properties": {
                                "required": {"type": "boolean"},
                                "description": {"type": "string"},
                            },
                            "required": ["required"],
                            "additionalProperties": False,
                        }
                    }
                },
            },
        ),
    ],
)
def test_flat_yaml_nesting_is_recovered(text: str, expected: dict[str, Any]) -> None:
    assert load(text) == expected
