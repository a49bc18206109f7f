"""Tools a harness turn's model may call: MCP servers' tools, Python functions, and the
harness's own intrinsic tools. Each is a :class:`Tool`: its spec (what the model is told),
whether it is safe to run twice, and an async call that returns a :class:`ToolOutcome`."""

from accord.harness.tools._base import Tool, ToolContext, ToolOutcome, ToolSet
from accord.harness.tools._functions import FunctionTool, function_tool

__all__ = [
    "FunctionTool",
    "Tool",
    "ToolContext",
    "ToolOutcome",
    "ToolSet",
    "function_tool",
]
