"""The merge of a node's metric families (``accord serve --processes N``): counters and
histograms added, accord's gauges added, the interpreter's families labelled by process,
build info kept once, the store's gauges taken from the answering process only, a family
only one process has kept as it is — and the whole through the wire form and the text
format."""

from __future__ import annotations

import math
from collections.abc import Iterator

from prometheus_client import generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import Collector

from accord.telemetry import (
    Family,
    decode_families,
    encode_families,
    families_of,
    merge,
    node_gauges,
    to_metrics,
)
from accord.telemetry._metrics import Histogram


def requests(ok: int, failed: int) -> CounterMetricFamily:
    family = CounterMetricFamily("accord_requests", "Requests.", labels=["method", "outcome"])
    family.add_metric(["SendMessage", "ok"], ok)
    if failed:
        family.add_metric(["SendMessage", "invalid-params"], failed)
    return family


def latency(*values: float, bounds: tuple[float, ...] = (0.1, 1.0)) -> HistogramMetricFamily:
    histogram = Histogram(bounds)
    for value in values:
        histogram.observe(value)
    family = HistogramMetricFamily("accord_request_duration_seconds", "Time.", labels=["method"])
    family.add_metric(["SendMessage"], histogram.cumulative(), histogram.sum)
    return family


def gauge(name: str, value: float, **labels: str) -> GaugeMetricFamily:
    family = GaugeMetricFamily(name, "A gauge.", labels=list(labels))
    family.add_metric(list(labels.values()), value)
    return family


def by_sample(found: list[Family]) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    return {(s.name, frozenset(s.labels.items())): float(s.value) for f in found for s in f.samples}


def test_counters_are_added_label_set_by_label_set() -> None:
    merged = by_sample(
        merge([(1, families_of([requests(3, 1)])), (2, families_of([requests(4, 0)]))])
    )
    assert (
        merged[("accord_requests_total", frozenset({("method", "SendMessage"), ("outcome", "ok")}))]
        == 7
    )
    failed = frozenset({("method", "SendMessage"), ("outcome", "invalid-params")})
    assert merged[("accord_requests_total", failed)] == 1  # only process 1 had that series


def test_histograms_with_the_same_buckets_add_bucket_by_bucket() -> None:
    one = families_of([latency(0.05, 0.5)])
    two = families_of([latency(0.05, 5.0, 0.07)])
    merged = by_sample(merge([(1, one), (2, two)]))
    method = ("method", "SendMessage")

    def bucket(le: str) -> float:
        return merged[("accord_request_duration_seconds_bucket", frozenset({method, ("le", le)}))]

    assert (bucket("0.1"), bucket("1.0"), bucket("+Inf")) == (3, 4, 5)
    assert merged[("accord_request_duration_seconds_count", frozenset({method}))] == 5
    total = merged[("accord_request_duration_seconds_sum", frozenset({method}))]
    assert math.isclose(total, 0.05 + 0.5 + 0.05 + 5.0 + 0.07)


def test_a_histogram_whose_buckets_differ_is_left_out_not_added() -> None:
    one = families_of([latency(0.05)])
    other_build = families_of([latency(0.05, 0.05, bounds=(0.2, 2.0))])
    merged = by_sample(merge([(1, one), (2, other_build)]))
    method = ("method", "SendMessage")
    assert merged[("accord_request_duration_seconds_count", frozenset({method}))] == 1
    assert ("accord_request_duration_seconds_bucket", frozenset({method, ("le", "0.2")})) not in (
        merged
    )


def test_accord_gauges_are_added() -> None:
    merged = by_sample(
        merge(
            [
                (1, families_of([gauge("accord_tasks_running", 2)])),
                (2, families_of([gauge("accord_tasks_running", 5)])),
                (3, families_of([gauge("accord_tasks_running", 0)])),
            ]
        )
    )
    assert merged[("accord_tasks_running", frozenset())] == 7


def test_the_interpreters_families_get_a_process_label() -> None:
    def runtime(rss: float, cpu: float) -> list[Metric]:
        cpu_family = CounterMetricFamily("process_cpu_seconds", "CPU.", value=cpu)
        return [gauge("process_resident_memory_bytes", rss), cpu_family]

    merged = by_sample(
        merge([(2, families_of(runtime(100, 1.5))), (1, families_of(runtime(300, 2)))])
    )
    assert merged[("process_resident_memory_bytes", frozenset({("process", "2")}))] == 100
    assert merged[("process_resident_memory_bytes", frozenset({("process", "1")}))] == 300
    assert merged[("process_cpu_seconds_total", frozenset({("process", "1")}))] == 2
    assert ("process_resident_memory_bytes", frozenset()) not in merged


def test_build_info_is_kept_once_per_version() -> None:
    same = by_sample(
        merge(
            [
                (1, families_of([gauge("accord_build_info", 1, version="1.0")])),
                (2, families_of([gauge("accord_build_info", 1, version="1.0")])),
            ]
        )
    )
    assert same == {("accord_build_info", frozenset({("version", "1.0")})): 1}
    skew = by_sample(
        merge(
            [
                (1, families_of([gauge("accord_build_info", 1, version="1.0")])),
                (2, families_of([gauge("accord_build_info", 1, version="1.1")])),
            ]
        )
    )
    assert len(skew) == 2 and set(skew.values()) == {1}


def test_store_gauges_come_from_the_answering_process_only() -> None:
    answering = families_of([gauge("accord_tasks", 10, state="TASK_STATE_WORKING")])
    sibling = families_of([gauge("accord_tasks", 10, state="TASK_STATE_WORKING")])
    merged = by_sample(merge([(2, answering), (1, sibling)]))
    assert merged[("accord_tasks", frozenset({("state", "TASK_STATE_WORKING")}))] == 10
    # and a sibling does not send them at all
    assert families_of([gauge("accord_tasks", 10, state="x")], store_read=False) == []
    assert by_sample(merge([(1, []), (2, sibling)])) == {}


def test_a_family_only_one_process_has_is_kept_as_it_is() -> None:
    harness = CounterMetricFamily("accord_harness_turns", "Turns.", labels=["outcome"])
    harness.add_metric(["ok"], 3)
    merged = merge(
        [(1, families_of([requests(1, 0)])), (2, families_of([requests(1, 0), harness]))]
    )
    assert [f.name for f in merged] == ["accord_requests", "accord_harness_turns"]
    assert by_sample(merged)[("accord_harness_turns_total", frozenset({("outcome", "ok")}))] == 3


def test_the_wire_form_round_trips_values_json_cannot_hold() -> None:
    found = families_of([gauge("accord_odd", math.inf), requests(2, 1), latency(0.3)])
    back = decode_families(encode_families(found))
    assert back == found
    assert math.isinf(float(back[0].samples[0].value))


def test_what_is_not_the_wire_form_does_not_decode() -> None:
    for data in (b"", b"{", b'[["accord_x", "gauge"]]', b'{"families": []}'):
        try:
            decode_families(data)
        except ValueError:
            continue
        raise AssertionError(f"{data!r} decoded")


class Fixed(Collector):
    def __init__(self, metrics: list[Metric]) -> None:
        self.metrics = metrics

    def collect(self) -> Iterator[Metric]:
        return iter(self.metrics)


def test_the_merge_exposes_as_prometheus_text_with_the_node_gauges() -> None:
    one = families_of([requests(3, 0), latency(0.05), gauge("accord_streams_open", 1)])
    two = decode_families(encode_families(families_of([requests(2, 2), latency(2.0)])))
    merged = [*merge([(1, one), (2, two)]), *node_gauges(3, 2)]
    text = generate_latest(Fixed(to_metrics(merged))).decode()
    parsed = {f.name: f for f in text_string_to_metric_families(text)}
    assert parsed["accord_requests"].type == "counter"
    assert sum(s.value for s in parsed["accord_requests"].samples) == 7
    histogram = parsed["accord_request_duration_seconds"]
    assert histogram.type == "histogram"
    count = [s for s in histogram.samples if s.name.endswith("_count")]
    assert [s.value for s in count] == [2]
    assert parsed["accord_processes"].samples[0].value == 3
    assert parsed["accord_processes_scraped"].samples[0].value == 2
    assert parsed["accord_streams_open"].samples[0].value == 1
