"""Read the command-surface seed: an OpenAPI 3.1 YAML document whose newlines were flattened
to spaces, so indentation no longer shows nesting.

Nesting is recovered from what OpenAPI and JSON Schema allow where: each mapping knows its
keywords (or that its keys are names, like ``properties`` or ``paths``), and a key that its
mapping does not allow, that repeats, or whose value has the wrong shape closes the mapping.
Plain scalars cannot contain ``": "`` in YAML, so a word ending in ``:`` is always a key.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

SCHEMA_SCALAR = {
    "title", "description", "$ref", "format", "pattern", "minimum", "maximum", "minItems",
    "maxItems", "minLength", "maxLength", "contentEncoding", "contentMediaType", "multipleOf",
    "exclusiveMinimum", "exclusiveMaximum", "minProperties", "maxProperties", "readOnly",
    "writeOnly", "deprecated", "uniqueItems", "nullable",
}  # fmt: skip
SCHEMA_LIST = {"required", "enum", "oneOf", "anyOf", "allOf", "prefixItems", "examples"}
SCHEMA_MAP = {"properties", "discriminator", "$defs", "patternProperties"}
SCHEMA_SUB = {"items", "additionalProperties", "not", "propertyNames"}  # schema or boolean
SCHEMA_ANY = {"type", "const", "default", "example"}
SCHEMA_KEYS = SCHEMA_SCALAR | SCHEMA_LIST | SCHEMA_MAP | SCHEMA_SUB | SCHEMA_ANY

# ctx -> {key: child ctx}; "*" for keys that are names; "x" children are free-form.
FIXED: dict[str, dict[str, str]] = {
    "root": {
        "openapi": "", "info": "info", "paths": "paths", "components": "components",
        "tags": "tag", "servers": "x", "security": "x", "x-ess-entities": "schemas",
    },
    "info": {"title": "", "summary": "", "description": "", "version": "", "license": "x",
             "contact": "x", "termsOfService": ""},
    "tag": {"name": "", "description": "", "externalDocs": "x"},
    "pathitem": {m: "operation" for m in ("get", "put", "post", "delete", "patch", "head")}
    | {"parameters": "param", "summary": "", "description": ""},
    "operation": {"operationId": "", "summary": "", "description": "", "tags": "",
                  "parameters": "param", "requestBody": "reqbody", "responses": "responses",
                  "deprecated": "", "security": "x"},
    "param": {"name": "", "in": "", "description": "", "required": "", "schema": "schema",
              "style": "", "explode": "", "deprecated": ""},
    "reqbody": {"description": "", "required": "", "content": "content"},
    "media": {"schema": "schema", "example": "x", "examples": "x", "encoding": "x"},
    "response": {"description": "", "content": "content", "headers": "x", "links": "x"},
    "components": {"schemas": "schemas", "responses": "x", "parameters": "x",
                   "securitySchemes": "x", "headers": "x", "requestBodies": "x"},
    "disc": {"propertyName": "", "mapping": "strmap"},
}  # fmt: skip
NAMED = {"paths": "pathitem", "content": "media", "responses": "response", "schemas": "schema"}

_TOKEN = re.compile(r"\s*(?:('(?:[^']|'')*'|\"(?:[^\"\\]|\\.)*\")(:(?=\s|$))?|(\S+))")


Stack = list[tuple[str, dict[str, Any]]]


@dataclass(frozen=True, slots=True)
class Tok:
    kind: str  # key | dash | scalar | block
    text: str
    quoted: bool = False


def tokenize(text: str) -> list[Tok]:
    tokens: list[Tok] = []
    for match in _TOKEN.finditer(text):
        quoted, colon, word = match.group(1), match.group(2), match.group(3)
        if quoted is not None:
            value = quoted[1:-1].replace("''", "'") if quoted[0] == "'" else quoted[1:-1]
            tokens.append(Tok("key" if colon else "scalar", value, True))
        elif word == "-":
            tokens.append(Tok("dash", word))
        elif word in ("|-", "|", ">-", ">", "|+"):
            tokens.append(Tok("block", word))
        elif word.endswith(":") and len(word) > 1:
            tokens.append(Tok("key", word[:-1]))
        elif word:
            tokens.append(Tok("scalar", word))
    return tokens


def _plain(text: str) -> Any:
    if text in ("true", "false"):
        return text == "true"
    if text in ("null", "~"):
        return None
    if text == "{}":
        return {}
    if text == "[]":
        return []
    if re.fullmatch(r"-?\d+", text):
        return int(text)
    if re.fullmatch(r"-?\d+\.\d+", text):
        return float(text)
    return text


class _Parser:
    def __init__(self, tokens: list[Tok]) -> None:
        self.t = tokens
        self.i = 0

    def peek(self, offset: int = 0) -> Tok | None:
        j = self.i + offset
        return self.t[j] if j < len(self.t) else None

    def shape(self) -> str:
        tok = self.peek()
        if tok is None:
            return "end"
        if tok.kind == "key":
            return "map"
        if tok.kind == "dash":
            return "list"
        if tok.kind == "scalar" and not tok.quoted and tok.text in ("{}", "[]"):
            return "map" if tok.text == "{}" else "list"
        return "scalar"

    # --- values --------------------------------------------------------------------------

    def scalar(self, in_list: bool, stops: frozenset[str] = frozenset()) -> Any:
        tok = self.peek()
        assert tok is not None
        if tok.quoted:
            self.i += 1
            return tok.text
        if tok.kind == "block":
            self.i += 1
            words: list[str] = []
            while (nxt := self.peek()) is not None and not (
                nxt.kind == "key" and nxt.text in stops
            ):
                words.append(nxt.text + (":" if nxt.kind == "key" else ""))
                self.i += 1
            return " ".join(words)
        words = []
        while (nxt := self.peek()) is not None:
            if nxt.kind == "key":
                break
            if nxt.kind == "dash":
                after = self.peek(1)
                if in_list or after is None or after.kind == "key":
                    break
            if nxt.quoted and words:
                break
            words.append(nxt.text)
            self.i += 1
        return _plain(" ".join(words)) if len(words) == 1 else " ".join(words)

    def value(self, ctx: str, stack: Stack, in_list: bool = False) -> Any:
        shape = self.shape()
        if shape == "map":
            tok = self.peek()
            if tok is not None and tok.kind == "scalar":
                self.i += 1
                return {}
            return self.mapping(ctx, stack)
        if shape == "list":
            tok = self.peek()
            if tok is not None and tok.kind == "scalar":
                self.i += 1
                return []
            return self.sequence(ctx, stack)
        stops = frozenset(FIXED.get(stack[-1][0], {})) if stack else frozenset()
        return self.scalar(in_list, stops)

    def sequence(self, ctx: str, stack: Stack) -> list[Any]:
        items: list[Any] = []
        while (tok := self.peek()) is not None and tok.kind == "dash":
            self.i += 1
            items.append(self.value(ctx, stack, in_list=True))
        return items

    # --- mappings ------------------------------------------------------------------------

    def known_above(self, key: str, stack: Stack) -> bool:
        for ctx, _ in stack:
            if ctx == "schema" and (key in SCHEMA_KEYS or key.startswith("x-")):
                return True
            if key in FIXED.get(ctx, {}) or (key.startswith("x-") and ctx in FIXED):
                return True
        return False

    def mapping(self, ctx: str, stack: Stack) -> dict[str, Any]:
        result: dict[str, Any] = {}
        inner = [*stack, (ctx, result)]
        while (tok := self.peek()) is not None and tok.kind == "key":
            key = tok.text
            if key in result:
                break
            self.i += 1
            shape = self.shape()
            child = self.child(ctx, key, shape, stack, result)
            if child is None:
                self.i -= 1
                break
            result[key] = self.value(child, inner)
        return result

    def child(
        self, ctx: str, key: str, shape: str, stack: Stack, current: dict[str, Any]
    ) -> str | None:
        """The context of ``key``'s value in ``ctx``, or None when the key closes ``ctx``."""
        if (
            key.startswith("x-")
            and key not in FIXED.get(ctx, {})
            and any(key in FIXED.get(above, {}) for above, _ in stack)
        ):
            return None  # an extension a document level declares, like x-ess-entities
        if ctx == "schema" and "$ref" in current and not key.startswith("x-"):
            return None  # generated schemas annotate a reference, they never extend it
        if ctx == "schema" and key == "required" and current and shape == "list":
            # ``required`` names properties: a list naming others belongs to an outer object.
            mark = self.i
            names = self.sequence("x", stack)
            self.i = mark
            props = current.get("properties", {})
            if not isinstance(props, dict) or not all(n in props for n in names):
                return None
        # After a property's schema, these belong to the object that has the properties.
        if (
            ctx == "schema"
            and key in ("required", "additionalProperties")
            and current
            and "properties" not in current
            and current.get("type") != "object"
        ):
            return None
        if ctx == "schema":
            if key.startswith("x-"):
                return "x"
            if key in SCHEMA_SCALAR:
                return "" if shape == "scalar" else None
            if key in SCHEMA_LIST:
                return "schema" if shape == "list" else None
            if key == "properties":
                return "props" if shape == "map" else None
            if key == "discriminator":
                return "disc" if shape == "map" else None
            if key in SCHEMA_MAP:
                return "props" if shape == "map" else None
            if key in SCHEMA_SUB:
                return "schema"
            if key in SCHEMA_ANY:
                return "x" if shape != "map" or key != "type" else None
            return None
        if ctx == "props":
            if shape != "map" or key in SCHEMA_MAP | SCHEMA_SUB:
                return None
            if key.startswith("x-"):
                return None
            return "schema"
        if ctx in ("x", "strmap"):
            if (
                shape == "map"
                and current
                and not any(isinstance(v, dict) for v in current.values())
            ):
                return None  # a flat annotation (x-ess-relation) ends before a nested mapping
            parent = stack[-1][1] if stack else {}
            if self.known_above(key, stack) and key not in parent:
                return None
            if ctx == "strmap" and shape != "scalar":
                return None
            return "x"
        if ctx in NAMED:
            if self.known_above(key, stack):
                return None
            if ctx == "paths" and not key.startswith("/"):
                return None
            if ctx == "content" and not re.fullmatch(r"[\w.+*-]+/[\w.+*-]+", key):
                return None
            if ctx == "responses" and not re.fullmatch(r"\d{3}|\dXX|default", key):
                return None
            return NAMED[ctx]
        fixed = FIXED.get(ctx, {})
        if key in fixed:
            return fixed[key] or "x"
        if key.startswith("x-"):
            return "x"
        return None


def load(text: str) -> dict[str, Any]:
    """The document a flattened seed describes (leading ``#`` comment words are skipped)."""
    start = text.find("openapi:")
    parser = _Parser(tokenize(text[start:]))
    document = parser.mapping("root", [])
    if parser.i != len(parser.t):
        rest = " ".join(t.text for t in parser.t[parser.i : parser.i + 12])
        raise ValueError(f"the seed did not parse past token {parser.i}: {rest!r}")
    return document
