"""``/metrics`` for a whole node (``accord serve --processes N``): the metric families of its
processes merged into one answer. Pure: families in, families out; the sockets that carry
them between the processes are :mod:`accord.server._node_metrics`.

A process's families travel as :class:`Family` values (its prometheus_client families, every
sample as name, labels and value), encoded with msgspec. :func:`merge` adds them up, each
family by its kind:

- **Counters and histograms are added** (a histogram's buckets, sum and count, bucket by
  bucket): the node answered every request one of its processes answered. A histogram whose
  buckets differ from the first process's (another build of accord: never the children of
  one supervisor) is left out rather than added into buckets that do not line up.
- **Gauges of accord are added**: streams open, tasks running, followers on the bus, advisory
  locks held — each counts things one process holds, and the node holds their sum.
- **accord_build_info keeps one series per version** (the first process's value): adding
  would say "2" of one build; a node running two builds shows both.
- **The interpreter's own families get a ``process`` label** instead (``process_*``:
  resident memory, CPU seconds, open descriptors, start time; ``python_*``: GC, version): a
  sum of start times means nothing, and a leak or a busy collector shows in one child, which
  a sum would hide. So do families of a kind that cannot be added (summaries, info, …).
- **The store's gauges are read once** (tasks by state, the push outbox: :data:`STORE_READ`):
  they count what the shared database holds, so only the answering process's are kept.

A family only some processes have is merged from those that have it. :func:`node_gauges`
adds ``accord_processes`` (N) and ``accord_processes_scraped`` (how many answered this
scrape, the answering one included): when a process does not answer, its numbers are absent
from that scrape, and its counters seem to drop until it answers again.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import msgspec
from prometheus_client.core import Metric
from prometheus_client.samples import Sample as PromSample

# Gauges only the store knows (read with a query per scrape): the answering process's alone.
STORE_READ = frozenset(
    {
        "accord_tasks",
        "accord_push_outbox_configs",
        "accord_push_outbox_entries",
        "accord_push_configs_failing",
    }
)
# One series per label set, the first process's value (not a count of anything).
FIRST = frozenset({"accord_build_info"})
# Families of one interpreter: a `process` label, never a sum.
PER_PROCESS_PREFIXES = ("process_", "python_")
PROCESS_LABEL = "process"
_ADDED = frozenset({"counter", "gauge", "histogram"})


class Sample(msgspec.Struct, array_like=True, frozen=True):
    """One sample: its name (``accord_requests_total``, ``…_bucket``), labels and value (any
    float: MessagePack carries ``inf`` and ``nan`` as they are)."""

    name: str
    labels: dict[str, str]
    value: float


class Family(msgspec.Struct, array_like=True, frozen=True):
    """One metric family as a process reports it (prometheus_client's name, type, help, unit)."""

    name: str
    type: str
    help: str
    unit: str
    samples: list[Sample]


_decoder = msgspec.msgpack.Decoder(list[Family])
_encoder = msgspec.msgpack.Encoder()


def families(metrics: Iterable[Metric], *, store_read: bool = True) -> list[Family]:
    """``metrics`` (a registry's ``collect()``) as :class:`Family` values; without the
    :data:`STORE_READ` gauges when ``store_read`` is False (what a sibling sends)."""
    out: list[Family] = []
    for metric in metrics:
        if not store_read and metric.name in STORE_READ:
            continue
        samples = [Sample(s.name, dict(s.labels), s.value) for s in metric.samples]
        out.append(Family(metric.name, metric.type, metric.documentation, metric.unit, samples))
    return out


def encode(found: Sequence[Family]) -> bytes:
    return _encoder.encode(found)


def decode(data: bytes) -> list[Family]:
    """The families ``data`` encodes; raises :class:`msgspec.DecodeError` (a ValueError) when
    it is not what :func:`encode` makes."""
    return _decoder.decode(data)


@dataclass
class _Merged:
    name: str
    type: str
    help: str
    unit: str
    # (sample name, labels) -> (labels in their order, value)
    samples: dict[tuple[str, tuple[tuple[str, str], ...]], tuple[dict[str, str], float]] = field(
        default_factory=dict
    )
    bounds: dict[tuple[tuple[str, str], ...], tuple[str, ...]] = field(default_factory=dict)


def _policy(family: Family) -> str:
    if family.name in FIRST:
        return "first"
    if family.name.startswith(PER_PROCESS_PREFIXES) or family.type not in _ADDED:
        return "process"
    return "add"


def _series(labels: dict[str, str]) -> tuple[tuple[str, str], ...]:
    """A histogram's series: its labels but ``le``."""
    return tuple(sorted((k, v) for k, v in labels.items() if k != "le"))


def _histogram_bounds(family: Family) -> dict[tuple[tuple[str, str], ...], tuple[str, ...]]:
    bounds: dict[tuple[tuple[str, str], ...], list[str]] = {}
    for sample in family.samples:
        if sample.name.endswith("_bucket"):
            bounds.setdefault(_series(sample.labels), []).append(sample.labels.get("le", ""))
    return {series: tuple(les) for series, les in bounds.items()}


def merge(parts: Sequence[tuple[int, Sequence[Family]]]) -> list[Family]:
    """The node's families from each process's ``(number, families)``; the first part is
    the answering process's (its store gauges are the ones kept). Families keep the order
    they first appear in, samples too."""
    merged: dict[str, _Merged] = {}
    for position, (process, found) in enumerate(parts):
        for family in found:
            if family.name in STORE_READ and position > 0:
                continue
            into = merged.get(family.name)
            if into is None:
                into = merged[family.name] = _Merged(
                    family.name, family.type, family.help, family.unit
                )
            elif into.type != family.type:
                continue  # another build's family of the same name: not addable
            _merge_family(into, family, process)
    return [
        Family(
            m.name,
            m.type,
            m.help,
            m.unit,
            [Sample(name, labels, value) for (name, _), (labels, value) in m.samples.items()],
        )
        for m in merged.values()
    ]


def _merge_family(into: _Merged, family: Family, process: int) -> None:
    how = _policy(family)
    skipped: set[tuple[tuple[str, str], ...]] = set()
    if family.type == "histogram" and how == "add":
        for series, bounds in _histogram_bounds(family).items():
            if into.bounds.setdefault(series, bounds) != bounds:
                skipped.add(series)
    samples = into.samples
    for sample in family.samples:
        labels = sample.labels
        if skipped and _series(labels) in skipped:
            continue
        if how == "process":
            labels = {**labels, PROCESS_LABEL: str(process)}
        key = (sample.name, tuple(sorted(labels.items())))
        value = sample.value
        held = samples.get(key)
        if held is None:
            samples[key] = (labels, value)
        elif how == "add":
            if sample.name.endswith("_created"):  # when the series began: the earliest
                samples[key] = (held[0], min(held[1], value))
            else:
                samples[key] = (held[0], held[1] + value)
        # "first": the first process's value stays; "process": keys never meet


def node_gauges(processes: int, scraped: int) -> list[Family]:
    """``accord_processes`` and ``accord_processes_scraped`` as families."""
    return [
        Family(
            "accord_processes",
            "gauge",
            "Processes serving this node (accord serve --processes).",
            "",
            [Sample("accord_processes", {}, float(processes))],
        ),
        Family(
            "accord_processes_scraped",
            "gauge",
            "Processes whose numbers this scrape holds (the others did not answer in time).",
            "",
            [Sample("accord_processes_scraped", {}, float(scraped))],
        ),
    ]


def to_metrics(found: Iterable[Family]) -> list[Metric]:
    """:class:`Family` values as prometheus_client families, for its text exposition."""
    out: list[Metric] = []
    for family in found:
        metric = Metric(family.name, family.help, family.type, family.unit)
        metric.samples = [PromSample(s.name, s.labels, s.value) for s in family.samples]
        out.append(metric)
    return out
