"""Python functions as tools: the spec comes from the function's name, docstring and
annotated parameters (str, int, float, bool, list, dict)."""

from __future__ import annotations

import inspect
import json
from collections.abc import Awaitable, Callable
from typing import Any, get_type_hints

from accord.harness._transcript import ToolSpec
from accord.harness.tools._base import ToolContext, ToolOutcome

JSON_TYPES: dict[Any, str] = {
    str: "string",
    int: "integer",
    float: "number",
    bool: "boolean",
    list: "array",
    dict: "object",
}


class FunctionTool:
    def __init__(
        self,
        function: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        idempotent: bool = False,
    ) -> None:
        self.function = function
        self.idempotent = idempotent
        self.spec = ToolSpec(
            name=name or function.__name__,
            description=description or inspect.getdoc(function) or "",
            parameters=_schema(function),
        )

    async def call(self, arguments: dict[str, Any], context: ToolContext) -> ToolOutcome:
        try:
            bound = inspect.signature(self.function).bind(**arguments)
        except TypeError as exc:
            return ToolOutcome(f"bad arguments for {self.spec.name}: {exc}", error=True)
        try:
            result = self.function(*bound.args, **bound.kwargs)
            if inspect.isawaitable(result):
                result = await result
        except Exception as exc:  # the tool's own failure: the model is told, the turn goes on
            return ToolOutcome(f"{type(exc).__name__}: {exc}", error=True)
        text = result if isinstance(result, str) else json.dumps(result, default=str)
        return ToolOutcome(text).bounded()


def function_tool(
    *, name: str | None = None, description: str | None = None, idempotent: bool = False
) -> Callable[[Callable[..., Awaitable[Any] | Any]], FunctionTool]:
    """Decorator: ``@function_tool(idempotent=True)`` makes a FunctionTool of a function."""

    def make(function: Callable[..., Any]) -> FunctionTool:
        return FunctionTool(function, name=name, description=description, idempotent=idempotent)

    return make


def _schema(function: Callable[..., Any]) -> dict[str, Any]:
    hints = get_type_hints(function)
    properties: dict[str, Any] = {}
    required: list[str] = []
    for parameter in inspect.signature(function).parameters.values():
        kind = hints.get(parameter.name)
        origin = getattr(kind, "__origin__", kind)
        properties[parameter.name] = {"type": JSON_TYPES.get(origin, "string")}
        if parameter.default is inspect.Parameter.empty:
            required.append(parameter.name)
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return schema
