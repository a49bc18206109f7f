"""One OpenTelemetry SDK provider for the test process, with an in-memory exporter, and
accord's tracing pointed at it (``tracing = "global"``)."""

from __future__ import annotations

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from accord.telemetry import _tracing as tracing

EXPORTER = InMemorySpanExporter()


def traced() -> InMemorySpanExporter:
    """Tracing on, into :data:`EXPORTER` (emptied)."""
    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(EXPORTER))
        trace.set_tracer_provider(provider)
    tracing.configure("global")
    EXPORTER.clear()
    return EXPORTER


def untraced() -> None:
    tracing.configure("off")


def spans() -> list[ReadableSpan]:
    return list(EXPORTER.get_finished_spans())
