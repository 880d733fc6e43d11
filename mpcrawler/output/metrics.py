"""Metrics that monitoring can scrape (``--metrics-port``): ``/metrics`` and ``/status``.

A small HTTP server in a thread of the master serves:

- ``/metrics``: the Prometheus text format, written by prometheus-client
  from the last ``Snapshot`` (see ``metric_families``);
- ``/status``: the same JSON as ``status --json`` (read from the job dir,
  as that command does).

The master is the only writer of crawl state: it hands the server a new
immutable ``Snapshot`` of plain values (``publish``) at most every
``INTERVAL`` seconds from its loop; the server's thread only reads the last
one.  Counters are this run's (Prometheus counters start at zero with the
process); each node of a shared crawl serves its own, labelled ``node``.

``status --redis URL --crawl NAME --serve PORT`` serves a shared crawl's
crawl-wide figures instead: the same server with another ``collect``,
``crawl_families`` of what ``crawl_status`` reads from Redis at each scrape.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from http.server import BaseHTTPRequestHandler

    from prometheus_client.core import Metric

# prometheus-client and http.server are imported where they are used: a
# crawl without --metrics-port (the engine needs only Snapshot) does not pay
# their import (0.13 s of the master's CPU at each start).

__all__ = [
    "INTERVAL",
    "MetricsServer",
    "Snapshot",
    "crawl_families",
    "metric_families",
    "status_class",
]

log = logging.getLogger(__name__)

INTERVAL = 0.25  # seconds between snapshots: /metrics lags the records by less


def status_class(status: str) -> str:
    """A records' status as its class: ``2xx``...; ``none`` and the like as
    they are (the metrics' pages, and the web page's)."""
    return f"{status[0]}xx" if status[:1].isdigit() else status


@dataclass(frozen=True)
class Snapshot:
    """The crawl's figures at one moment, as plain values."""

    pages: dict[str, int] = field(default_factory=dict)  # by status class: 2xx, 4xx, none...
    errors: dict[str, int] = field(default_factory=dict)  # by error kind
    bytes: int = 0
    queued: int = 0
    in_flight: dict[str, int] = field(default_factory=dict)  # buffered, downloading, parsing
    hosts_paced: int = 0
    fetch_buckets: tuple[tuple[float, int], ...] = ()  # (upper bound, count), cumulative
    fetch_sum: float = 0.0
    paused: bool = False


def metric_families(snapshot: Snapshot, labels: dict[str, str]) -> Iterator[Metric]:
    """The Prometheus metrics of ``snapshot``, each with ``labels`` too."""
    from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily

    names, values = list(labels), list(labels.values())
    pages = CounterMetricFamily(
        "mpcrawler_pages", "Pages recorded in this run", labels=[*names, "status"]
    )
    for status, count in sorted(snapshot.pages.items()):
        pages.add_metric([*values, status], count)
    yield pages
    errors = CounterMetricFamily(
        "mpcrawler_errors", "Pages recorded with an error in this run", labels=[*names, "kind"]
    )
    for kind, count in sorted(snapshot.errors.items()):
        errors.add_metric([*values, kind], count)
    yield errors
    size = CounterMetricFamily("mpcrawler_bytes", "Body bytes downloaded in this run", labels=names)
    size.add_metric(values, snapshot.bytes)
    yield size
    queued = GaugeMetricFamily("mpcrawler_queued", "URLs in the frontier", labels=names)
    queued.add_metric(values, snapshot.queued)
    yield queued
    in_flight = GaugeMetricFamily(
        "mpcrawler_in_flight", "URLs taken from the frontier, by state", labels=[*names, "state"]
    )
    for state, count in snapshot.in_flight.items():
        in_flight.add_metric([*values, state], count)
    yield in_flight
    paced = GaugeMetricFamily(
        "mpcrawler_hosts_paced", "Politeness groups slowed down by their answers", labels=names
    )
    paced.add_metric(values, snapshot.hosts_paced)
    yield paced
    paused = GaugeMetricFamily(
        "mpcrawler_paused", "1 while a control command holds the crawl paused", labels=names
    )
    paused.add_metric(values, int(snapshot.paused))
    yield paused
    fetch = HistogramMetricFamily(
        "mpcrawler_fetch_seconds", "Download time of a recorded page", labels=names
    )
    buckets = [(_bound(bound), count) for bound, count in snapshot.fetch_buckets]
    if buckets:  # none before the master's first snapshot
        fetch.add_metric(values, buckets, sum_value=snapshot.fetch_sum)
    yield fetch


def crawl_families(status: dict[str, Any]) -> Iterator[Metric]:
    """The crawl-wide metrics of a shared crawl's ``status`` (as
    :func:`mpcrawler.frontier.redis.status.crawl_status` reads it), labelled
    ``crawl``; the pages of each node as its last heartbeat said."""
    from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

    crawl = [status["crawl"]]
    counters = (
        ("pages", "done", "Pages recorded by every node"),
        ("errors", "errors", "Pages recorded with an error by every node"),
        ("late", "late", "Records written twice: acks of leases passed to another node"),
    )
    for name, key, text in counters:
        family = CounterMetricFamily(f"mpcrawler_crawl_{name}", text, labels=["crawl"])
        family.add_metric(crawl, status[key])
        yield family
    gauges = (
        ("queued", "URLs queued crawl-wide"),
        ("leased", "URLs leased by the nodes and not yet recorded"),
        ("seen", "URLs seen crawl-wide"),
        ("scheduled", "URLs waiting for a revisit"),
    )
    for key, text in gauges:
        family = GaugeMetricFamily(f"mpcrawler_crawl_{key}", text, labels=["crawl"])
        family.add_metric(crawl, status[key])
        yield family
    alive = GaugeMetricFamily("mpcrawler_crawl_nodes_alive", "Nodes alive", labels=["crawl"])
    alive.add_metric(crawl, sum(1 for row in status["nodes"] if row["alive"]))
    yield alive
    lost = GaugeMetricFamily(
        "mpcrawler_crawl_lost", "1 once the crawl's state in Redis was lost", labels=["crawl"]
    )
    lost.add_metric(crawl, int(bool(status["lost"])))
    yield lost
    node_pages = GaugeMetricFamily(
        "mpcrawler_crawl_node_pages",
        "Pages a node recorded, as its last heartbeat said",
        labels=["crawl", "node"],
    )
    for row in status["nodes"]:
        node_pages.add_metric([*crawl, row["node"]], row["pages"])
    yield node_pages


def _bound(value: float) -> str:
    return "+Inf" if value == float("inf") else repr(value)


class _Collect:
    """A collector for the registry: what ``collect`` yields at each scrape."""

    def __init__(self, collect: Callable[[], Iterator[Metric]]) -> None:
        self._collect = collect

    def collect(self) -> Iterator[Metric]:
        return self._collect()


class MetricsServer:
    """Serves /metrics and /status on ``bind``:``port`` from a daemon thread:
    the families ``collect`` yields at each scrape (by default those of the
    last snapshot published)."""

    def __init__(
        self,
        bind: str,
        port: int,
        status: Callable[[], dict[str, Any]],
        labels: dict[str, str] | None = None,
        collect: Callable[[], Iterator[Metric]] | None = None,
    ) -> None:
        from http.server import ThreadingHTTPServer

        from prometheus_client.registry import CollectorRegistry

        self.snapshot = Snapshot()
        self.labels = labels or {}
        self.status = status
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(
            _Collect(collect or (lambda: metric_families(self.snapshot, self.labels)))  # type: ignore[arg-type]
        )
        self.httpd = ThreadingHTTPServer((bind, port), _handler(self))
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, name="metrics", daemon=True)

    @property
    def address(self) -> tuple[str, int]:
        host, port = self.httpd.server_address[:2]
        return str(host), int(port)

    def start(self) -> None:
        self.thread.start()
        log.info("metrics on http://%s:%d/metrics", *self.address)

    def publish(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot  # one reference: the server reads whole ones

    def close(self) -> None:
        if self.thread.is_alive():  # shutdown() waits for a loop that never ran
            self.httpd.shutdown()
        self.httpd.server_close()


def _handler(server: MetricsServer) -> type[BaseHTTPRequestHandler]:
    from http.server import BaseHTTPRequestHandler

    from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest

    class Handler(BaseHTTPRequestHandler):
        """``/metrics`` and ``/status``, from the last snapshot."""

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0]
            if path not in ("/metrics", "/status"):
                self.send_error(404, "try /metrics or /status")
                return
            try:
                if path == "/metrics":
                    body, kind = generate_latest(server.registry), CONTENT_TYPE_LATEST
                else:
                    body, kind = json.dumps(server.status(), indent=2).encode(), "application/json"
            except Exception as exc:  # a job.json being replaced, a Redis down: one answer
                self.send_error(503, f"{path[1:]} unavailable: {exc}")
                return
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    return Handler
