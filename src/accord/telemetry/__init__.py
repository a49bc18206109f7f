"""Operating accord: Prometheus metrics, OpenTelemetry traces and structured logs
(docs/operations.md).

- :mod:`accord.telemetry._metrics`: the counters and histograms the hot paths keep (plain
  integers on objects they already hold), read only when ``/metrics`` is scraped;
- :mod:`accord.telemetry._exposition`: the ``/metrics`` endpoint and the collector that turns
  those numbers (and the store's, the push outbox's, the bus's) into Prometheus families;
- :mod:`accord.telemetry._node`: a node's ``/metrics`` under ``accord serve --processes N``,
  every process's families merged (a pure function; the server carries them);
- :mod:`accord.telemetry._tracing`: spans and ``traceparent`` propagation, nothing at all
  while tracing is off;
- :mod:`accord.telemetry._history`: the last hour of those numbers, sampled every 10 s, for
  the dashboard's Activity page;
- :mod:`accord.telemetry._logs`: ``--log-format json`` with the request, task and trace ids;
- :mod:`accord.telemetry.agents`: the small API agents (the harness) report turns, model
  calls, tokens, tool calls and hook aborts with.
"""

from accord.telemetry._context import request_id, task_id, trace_id
from accord.telemetry._exposition import CONTENT_TYPE, Collector, Sources
from accord.telemetry._history import ActivityHistory
from accord.telemetry._logs import ids_from
from accord.telemetry._metrics import (
    BusStats,
    CommitStats,
    EngineStats,
    PushStats,
    RequestMetrics,
    RequestStats,
)
from accord.telemetry._node import Family, merge, node_gauges, to_metrics
from accord.telemetry._node import decode as decode_families
from accord.telemetry._node import encode as encode_families
from accord.telemetry._node import families as families_of

__all__ = [
    "CONTENT_TYPE",
    "ActivityHistory",
    "BusStats",
    "Collector",
    "CommitStats",
    "EngineStats",
    "Family",
    "PushStats",
    "RequestMetrics",
    "RequestStats",
    "Sources",
    "decode_families",
    "encode_families",
    "families_of",
    "ids_from",
    "merge",
    "node_gauges",
    "request_id",
    "task_id",
    "to_metrics",
    "trace_id",
]
