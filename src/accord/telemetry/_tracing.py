"""OpenTelemetry traces: a span per request, per commit, per push delivery, and per harness
turn, model call and tool call; ``traceparent`` read from every request and passed on.

Off by default, and then nothing of it runs: :data:`tracer` is None and each instrumented
place tests that one module attribute before doing anything else (no wrappers, no context
lookups). :func:`configure` turns it on:

- ``otlp``: the OpenTelemetry SDK with the OTLP/HTTP exporter (``pip install 'accord[otel]'``),
  configured by the standard ``OTEL_*`` environment variables (``OTEL_EXPORTER_OTLP_ENDPOINT``,
  ``OTEL_SERVICE_NAME`` …), batching spans in the background;
- ``console``: the SDK, printing each span to standard error (for a look at what is traced);
- ``global``: whatever TracerProvider the process set up itself (an application embedding
  accord, ``opentelemetry-instrument``, a test's in-memory exporter).

Only the API (``opentelemetry-api``, a dependency) is imported unless the SDK is asked for.
The client (:mod:`accord.client`) passes the current span's context on in ``traceparent``
whenever there is one, whatever this module's state: it is the caller's trace.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterable, Mapping, MutableMapping
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import propagate, trace
from opentelemetry.trace import Span, SpanKind, Tracer

from accord.errors import AccordError

log = logging.getLogger("accord.telemetry")

MODES = ("off", "otlp", "console", "global")
TRACER_NAME = "accord"

# The tracer while tracing is on; None while it is off (the one attribute hot paths test).
tracer: Tracer | None = None

_sdk_provider: Any = None  # the SDK provider configure() made (shut down by shutdown())


class TracingUnavailable(AccordError, ValueError):
    """Tracing was asked for but the OpenTelemetry SDK is not installed."""


def configure(mode: str, *, service_name: str = "accord") -> None:
    """Turn tracing on (``otlp``, ``console``, ``global``) or off. Raises
    TracingUnavailable naming the extra to install when the SDK is needed but missing."""
    global tracer, _sdk_provider
    if mode not in MODES:
        raise ValueError(f"tracing: expected one of {', '.join(MODES)}, got {mode!r}")
    if mode == "off":
        tracer = None
        return
    if mode in ("otlp", "console") and _sdk_provider is None:
        _sdk_provider = _sdk(mode, service_name)
    provider = _sdk_provider if mode != "global" else trace.get_tracer_provider()
    tracer = provider.get_tracer(TRACER_NAME)


def _sdk(mode: str, service_name: str) -> Any:
    try:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
    except ImportError:
        raise TracingUnavailable(
            f"tracing = {mode!r} needs the OpenTelemetry SDK: pip install 'accord[otel]'"
        ) from None
    resource = Resource.create({"service.name": os.environ.get("OTEL_SERVICE_NAME", service_name)})
    provider = TracerProvider(resource=resource)
    if mode == "otlp":
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        except ImportError:
            raise TracingUnavailable(
                "tracing = 'otlp' needs the OTLP exporter: pip install 'accord[otel]'"
            ) from None
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    else:
        from opentelemetry.sdk.trace.export import ConsoleSpanExporter

        # standard error, as documented: standard output is not the server's to fill
        exporter = ConsoleSpanExporter(out=sys.stderr)
        provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider


def shutdown() -> None:
    """Flush and stop what :func:`configure` started (the exporter's last batch)."""
    global tracer, _sdk_provider
    provider, _sdk_provider = _sdk_provider, None
    tracer = None
    if provider is not None:
        provider.shutdown()


# --- propagation ----------------------------------------------------------------------------

_TRACE_HEADERS = (b"traceparent", b"tracestate", b"baggage")


def context_from(headers: Iterable[tuple[bytes, bytes]]) -> otel_context.Context | None:
    """The trace context an HTTP request (ASGI raw headers) or a gRPC call carries."""
    carrier: dict[str, str] = {}
    for name, value in headers:
        if name in _TRACE_HEADERS:
            carrier[name.decode("latin-1")] = value.decode("latin-1")
    return propagate.extract(carrier) if carrier else None


def context_from_mapping(headers: Mapping[str, str]) -> otel_context.Context | None:
    carrier = {name: headers[name] for name in ("traceparent", "tracestate") if name in headers}
    return propagate.extract(carrier) if carrier else None


def inject(headers: MutableMapping[str, str]) -> None:
    """Add ``traceparent`` (and ``tracestate``) of the current span, if there is one."""
    if trace.get_current_span().get_span_context().is_valid:
        propagate.inject(headers)


def trace_id_of(span: Span | None = None) -> str:
    """The current (or given) span's trace id as 32 hex digits, "" when there is none."""
    context = (span or trace.get_current_span()).get_span_context()
    return format(context.trace_id, "032x") if context.is_valid else ""


__all__ = [
    "MODES",
    "SpanKind",
    "TracingUnavailable",
    "configure",
    "context_from",
    "context_from_mapping",
    "inject",
    "shutdown",
    "trace_id_of",
    "tracer",
]
