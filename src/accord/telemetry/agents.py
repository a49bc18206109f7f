"""What agents report about their own work: turns, model calls, tokens, tool calls, hook
aborts — as Prometheus metrics and, with tracing on, as spans that follow the OpenTelemetry
GenAI semantic conventions (``invoke_agent``, ``chat``, ``execute_tool``).

The harness reports through this module, and so may any agent::

    from accord.telemetry import agents

    with agents.turn("accord", conversation_id=ctx.context_id):
        with agents.model_call("gpt-x", provider="openai") as call:
            response = await model.respond(view)
            call.tokens(input=response.input_tokens, output=response.output_tokens)
        with agents.tool_call("search", call_id="c1"):
            ...
    agents.hook_aborted("pre_tool_use")

A block that raises is counted with outcome ``error`` (``cancelled`` for a cancellation) and
its span gets the error; the exception goes on. Label values (models, tools, hooks) are
bounded: past 64 distinct ones the rest count as ``other``. The counters live in this process
(one set for every server in it) and every application's ``/metrics`` shows them.
"""

from __future__ import annotations

import asyncio
import contextvars
import time
from abc import ABC, abstractmethod
from collections.abc import Iterator
from types import TracebackType
from typing import Any

from opentelemetry.trace import Span, SpanKind, Status, StatusCode, use_span
from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily, Metric

from accord.telemetry import _tracing as tracing
from accord.telemetry._metrics import Histogram, LabelCounter, LabelHistograms


class AgentStats:
    def __init__(self) -> None:
        self.turns = LabelCounter(1)  # (outcome,)
        self.turn_duration = Histogram()
        self.model_calls = LabelCounter(2)  # (model, outcome)
        self.model_duration = LabelHistograms(1)  # (model,)
        self.tokens = LabelCounter(2)  # (model, direction)
        self.tool_calls = LabelCounter(2)  # (tool, outcome)
        self.tool_duration = LabelHistograms(1)  # (tool,)
        self.hook_aborts = LabelCounter(1)  # (hook,)


STATS = AgentStats()
# The model call in progress in this context: a model adapter running inside a call the
# harness opened reports its usage with tokens() without holding the call object.
_current_call: contextvars.ContextVar[model_call | None] = contextvars.ContextVar(
    "accord_model_call", default=None
)


def _outcome(exc: BaseException | None) -> str:
    if exc is None:
        return "ok"
    return "cancelled" if isinstance(exc, asyncio.CancelledError) else "error"


class _Timed(ABC):
    """A timed block with an optional span (only while tracing is on)."""

    name: str = ""
    kind: SpanKind = SpanKind.INTERNAL

    def __init__(self, attributes: dict[str, Any]) -> None:
        self.attributes = attributes
        self.span: Span | None = None
        self._scope: Any = None
        self._started = 0.0

    def __enter__(self) -> Any:
        tracer = tracing.tracer
        if tracer is not None:
            self.span = tracer.start_span(self.name, kind=self.kind, attributes=self.attributes)
            self._scope = use_span(self.span, end_on_exit=False)
            self._scope.__enter__()
        self._started = time.perf_counter()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        seconds = time.perf_counter() - self._started
        outcome = _outcome(exc)
        self.record(outcome, seconds)
        span = self.span
        if span is not None:
            if exc is not None:
                span.set_attribute("error.type", type(exc).__qualname__)
                span.set_status(Status(StatusCode.ERROR, str(exc)[:200]))
            self._scope.__exit__(exc_type, exc, tb)
            span.end()

    @abstractmethod
    def record(self, outcome: str, seconds: float) -> None:
        """Count the block's outcome and time."""


class turn(_Timed):
    """One turn of an agent (a span ``invoke_agent {agent}``)."""

    def __init__(self, agent: str, *, conversation_id: str = "", task_id: str = "") -> None:
        self.name = f"invoke_agent {agent}"
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": agent,
        }
        if conversation_id:
            attributes["gen_ai.conversation.id"] = conversation_id
        if task_id:
            attributes["a2a.task.id"] = task_id
        super().__init__(attributes)

    def record(self, outcome: str, seconds: float) -> None:
        STATS.turns.add((outcome,))
        STATS.turn_duration.observe(seconds)


class model_call(_Timed):
    """One call to a model (a span ``chat {model}``); report usage with :meth:`tokens`."""

    kind = SpanKind.CLIENT

    def __init__(
        self, model: str, *, provider: str = "", operation: str = "chat", conversation_id: str = ""
    ) -> None:
        self.model = model
        self.name = f"{operation} {model}"
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": operation,
            "gen_ai.request.model": model,
        }
        if provider:
            attributes["gen_ai.provider.name"] = provider
        if conversation_id:
            attributes["gen_ai.conversation.id"] = conversation_id
        super().__init__(attributes)
        self._token: contextvars.Token[model_call | None] | None = None

    def __enter__(self) -> model_call:
        super().__enter__()
        self._token = _current_call.set(self)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._token is not None:
            _current_call.reset(self._token)
        super().__exit__(exc_type, exc, tb)

    def tokens(self, *, input: int = 0, output: int = 0) -> None:
        """Tokens the call consumed (``gen_ai.usage.input_tokens`` / ``output_tokens``)."""
        if input:
            STATS.tokens.add((self.model, "input"), input)
        if output:
            STATS.tokens.add((self.model, "output"), output)
        if self.span is not None:
            self.span.set_attribute("gen_ai.usage.input_tokens", input)
            self.span.set_attribute("gen_ai.usage.output_tokens", output)

    def finished(self, *, response_model: str = "", finish_reasons: tuple[str, ...] = ()) -> None:
        """What the model said of its answer (span attributes only)."""
        if self.span is not None:
            if response_model:
                self.span.set_attribute("gen_ai.response.model", response_model)
            if finish_reasons:
                self.span.set_attribute("gen_ai.response.finish_reasons", list(finish_reasons))

    def record(self, outcome: str, seconds: float) -> None:
        STATS.model_calls.add((self.model, outcome))
        STATS.model_duration.observe((self.model,), seconds)


class tool_call(_Timed):
    """One tool call (a span ``execute_tool {tool}``)."""

    def __init__(self, tool: str, *, call_id: str = "", tool_type: str = "function") -> None:
        self.tool = tool
        self.name = f"execute_tool {tool}"
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": tool,
            "gen_ai.tool.type": tool_type,
        }
        if call_id:
            attributes["gen_ai.tool.call.id"] = call_id
        super().__init__(attributes)

    def record(self, outcome: str, seconds: float) -> None:
        STATS.tool_calls.add((self.tool, outcome))
        STATS.tool_duration.observe((self.tool,), seconds)


def tokens(*, input: int = 0, output: int = 0) -> None:
    """Report the usage of the model call in progress (the innermost :class:`model_call` of
    this context); outside one, it counts under the model ``unknown``."""
    call = _current_call.get()
    if call is not None:
        call.tokens(input=input, output=output)
        return
    if input:
        STATS.tokens.add(("unknown", "input"), input)
    if output:
        STATS.tokens.add(("unknown", "output"), output)


def hook_aborted(hook: str) -> None:
    """A hook stopped what it guarded (a tool call, a turn); counted by hook name."""
    STATS.hook_aborts.add((hook,))
    tracer = tracing.tracer
    if tracer is not None:
        from opentelemetry import trace

        trace.get_current_span().add_event("accord.hook_aborted", {"accord.hook_name": hook})


# --- exposition ----------------------------------------------------------------------------


def collect() -> Iterator[Metric]:
    """The harness families for ``/metrics``."""
    stats = STATS
    turns = CounterMetricFamily(
        "accord_harness_turns", "Agent turns, by outcome.", labels=["outcome"]
    )
    _counts(turns, stats.turns)
    duration = HistogramMetricFamily(
        "accord_harness_turn_duration_seconds", "Time of one agent turn."
    )
    duration.add_metric([], stats.turn_duration.cumulative(), stats.turn_duration.sum)
    calls = CounterMetricFamily(
        "accord_harness_model_calls",
        "Model calls, by model and outcome.",
        labels=["model", "outcome"],
    )
    _counts(calls, stats.model_calls)
    call_duration = HistogramMetricFamily(
        "accord_harness_model_call_duration_seconds", "Time of one model call.", labels=["model"]
    )
    _histograms(call_duration, stats.model_duration)
    tokens = CounterMetricFamily(
        "accord_harness_tokens",
        "Tokens in (input) and out (output) of model calls, by model.",
        labels=["model", "direction"],
    )
    _counts(tokens, stats.tokens)
    tools = CounterMetricFamily(
        "accord_harness_tool_calls", "Tool calls, by tool and outcome.", labels=["tool", "outcome"]
    )
    _counts(tools, stats.tool_calls)
    tool_duration = HistogramMetricFamily(
        "accord_harness_tool_call_duration_seconds", "Time of one tool call.", labels=["tool"]
    )
    _histograms(tool_duration, stats.tool_duration)
    aborts = CounterMetricFamily(
        "accord_harness_hook_aborts", "Hooks that stopped what they guarded.", labels=["hook"]
    )
    _counts(aborts, stats.hook_aborts)
    yield from (turns, duration, calls, call_duration, tokens, tools, tool_duration, aborts)


def _counts(family: CounterMetricFamily, counter: LabelCounter) -> None:
    for key, value in sorted(counter.counts.items()):
        family.add_metric(list(key), value)


def _histograms(family: HistogramMetricFamily, histograms: LabelHistograms) -> None:
    for key, histogram in sorted(histograms.by_key.items()):
        family.add_metric(list(key), histogram.cumulative(), histogram.sum)
