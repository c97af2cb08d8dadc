"""The service's metrics, in the Prometheus text format through its client library: requests by
route and status, request latency, the sizes of the batches the worker ran and its queue's depth.

Each app holds its own registry (two services in one process, as the tests start, count apart).
A service of several processes (HTTP fronts and a batcher, nn/serve/fronts.py) counts through
prometheus_client's multiprocess mode: every process writes its counts to files in the directory
PROMETHEUS_MULTIPROC_DIR names, and /metrics, from any front, sums them all. The queue's depth is
read when /metrics is asked, from the batcher's own queue or from what its process last shared.
`CountRequests` is an ASGI middleware that counts every answer, the 4xx of the body's limits
included; a path that is no route of the app is counted as "other", so that a client cannot grow
the number of series by asking for made-up paths.
"""

import time

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.multiprocess import MultiProcessCollector

LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)


class Metrics:
    def __init__(self, max_batch, queue_depth, shared=False):
        """`queue_depth()` gives the number of requests waiting for the worker; `shared`: this
        process is one of a service's several, in prometheus_client's multiprocess mode."""
        self.registry = CollectorRegistry()
        self.requests = Counter("s2c_requests", "HTTP requests answered, by route and status",
                                ["route", "status"], registry=self.registry)  # fmt: skip
        self.latency = Histogram("s2c_request_seconds", "time from request to answer, by route",
                                 ["route"], buckets=LATENCY_BUCKETS,
                                 registry=self.registry)  # fmt: skip
        sizes = sorted({1, *(2**k for k in range(max_batch.bit_length())), max_batch})
        self.batch_size = Histogram("s2c_batch_size", "requests per forward pass of the worker",
                                    buckets=sizes, registry=self.registry)  # fmt: skip
        self.exposed = self.registry  # what /metrics shows
        if shared:
            self.exposed = CollectorRegistry()
            MultiProcessCollector(self.exposed)
        self.exposed.register(QueueDepth(queue_depth))

    def render(self):
        """The metrics in Prometheus' text format."""
        return generate_latest(self.exposed)


class QueueDepth:
    """A collector of the gauge s2c_queue_depth, read from `queue_depth()` when collected."""

    def __init__(self, queue_depth):
        self.queue_depth = queue_depth

    def collect(self):
        yield GaugeMetricFamily("s2c_queue_depth", "requests waiting for the worker",
                                value=self.queue_depth())  # fmt: skip


class CountRequests:
    def __init__(self, app, metrics, routes):
        """Counts the answers to every request; `routes` are the paths named by their own label."""
        self.app, self.metrics, self.routes = app, metrics, set(routes)

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        route = scope["path"] if scope["path"] in self.routes else "other"
        start, status = time.perf_counter(), 500  # an exception before any answer is a 500

        async def watched_send(message):
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, watched_send)
        finally:
            self.metrics.requests.labels(route, str(status)).inc()
            self.metrics.latency.labels(route).observe(time.perf_counter() - start)
