"""The metrics families of a snapshot, as Prometheus's own parser reads them."""

from __future__ import annotations

import math

from prometheus_client.core import CollectorRegistry
from prometheus_client.exposition import generate_latest
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import Collector

from mpcrawler.output.metrics import Snapshot, metric_families


def exposed(snapshot: Snapshot, labels: dict[str, str]) -> dict[str, float]:
    class One(Collector):
        def collect(self):  # type: ignore[no-untyped-def]
            return metric_families(snapshot, labels)

    registry = CollectorRegistry(auto_describe=False)
    registry.register(One())
    text = generate_latest(registry).decode()
    return {
        f"{s.name}{sorted(s.labels.items())}": s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def test_an_empty_snapshot_is_served() -> None:
    samples = exposed(Snapshot(), {})
    assert samples["mpcrawler_bytes_total[]"] == 0 and samples["mpcrawler_queued[]"] == 0


def test_a_snapshot_with_a_node_label() -> None:
    snapshot = Snapshot(
        pages={"2xx": 5, "none": 1},
        errors={"timeout": 1},
        bytes=100,
        queued=7,
        in_flight={"buffered": 1, "downloading": 2, "parsing": 0},
        hosts_paced=1,
        fetch_buckets=((0.1, 4), (1.0, 5), (math.inf, 6)),
        fetch_sum=2.5,
        paused=True,
    )
    samples = exposed(snapshot, {"node": "n1"})
    node = ("node", "n1")
    assert samples[f"mpcrawler_pages_total{[node, ('status', '2xx')]}"] == 5
    assert samples[f"mpcrawler_errors_total{[('kind', 'timeout'), node]}"] == 1
    assert samples[f"mpcrawler_in_flight{[node, ('state', 'downloading')]}"] == 2
    assert samples[f"mpcrawler_fetch_seconds_bucket{[('le', '+Inf'), node]}"] == 6
    assert samples[f"mpcrawler_fetch_seconds_sum{[node]}"] == 2.5
    assert samples[f"mpcrawler_hosts_paced{[node]}"] == 1
    assert samples[f"mpcrawler_paused{[node]}"] == 1
    assert exposed(Snapshot(), {})["mpcrawler_paused[]"] == 0


def test_the_snapshot_counts_this_run_by_class() -> None:
    from mpcrawler.master.counters import Counters, metrics_snapshot

    counters = Counters()
    counters.statuses.update({"200": 3, "404": 1})
    counters.errors.update({"http_4xx": 1})
    at_start = (dict(counters.statuses), dict(counters.errors))  # a resumed run's counts
    for record in (
        {"status": 200, "bytes": 10, "elapsed_ms": 3.0, "error": None},
        {"status": 204, "bytes": 0, "elapsed_ms": 40.0, "error": None},
        {"status": None, "bytes": 0, "elapsed_ms": 9000.0, "error": "x", "error_kind": "dns"},
    ):
        counters.count(record)
    states = {"queued": 4, "buffered": 1, "downloading": 2, "parsing": 3}
    snapshot = metrics_snapshot(counters, at_start, states, 1, False)
    assert snapshot.pages == {"2xx": 2, "4xx": 0, "none": 1}
    assert snapshot.errors == {"dns": 1} and snapshot.bytes == 10
    assert snapshot.in_flight == {"buffered": 1, "downloading": 2, "parsing": 3}
    buckets = dict(snapshot.fetch_buckets)
    assert (buckets[0.005], buckets[0.05], buckets[5.0], buckets[10.0]) == (1, 2, 2, 3)
    assert buckets[math.inf] == 3 and snapshot.fetch_sum == 9.043
