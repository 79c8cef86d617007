"""``GET /metrics``: the broker's counters in the Prometheus text format.

Rules this module keeps:

* Nothing is counted here: :class:`BrokerCollector` reads the counters the hub,
  the router, the limits, the collector and the backplane keep anyway, at
  scrape time. The hot path never calls into prometheus-client.
* PyPy's heap figures appear once the GC has them (after its first minor,
  then major, collection).
* Every broker has its own registry (no global state): its own figures, the
  process's (CPU, memory, open files) and the interpreter's.
* A backplane, when the broker has one, is shown from its ``stats()`` dict:
  each number as a gauge ``sockjs_broker_backplane_<key>``, a ``state`` string
  as ``sockjs_broker_backplane_state{state="..."} 1``. Without one, nothing.
"""

from prometheus_client import CollectorRegistry, PlatformCollector, ProcessCollector
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.exposition import choose_encoder
from prometheus_client.utils import floatToGoString
from tornado.web import RequestHandler

from broker.ops import pypy_environment
from broker.protocol import positions
from broker.protocol.close_codes import SLOW_CONSUMER, TOO_MANY_MESSAGES

PREFIX = "sockjs_broker_"
GC_HELP = {
    "major_started": "PyPy major collections started by the broker's trigger",
    "major_finished": "PyPy major collections finished",
    "minor_collections": "PyPy minor collections",
    "freezes": "Times CPython's tracked objects were frozen out of the collector's walks",
    "audits": "Audits of the frozen objects for cycles kept alive",
    "thaws": "Times the frozen objects were thawed and collected",
}


class BrokerCollector:
    """The figures of one broker: its ``node``'s parts (a
    :class:`broker.core.node.Node`: the room, TCP connections and refusals,
    the drain, and where there are ones, each counter of the collector policy
    and the backplane's state) and its ``router``'s SockJS sessions."""

    def __init__(self, node, router):
        self.node = node
        self.router = router

    def collect(self):
        node = self.node
        hub, limits = node.hub, node.limits
        connections = GaugeMetricFamily(PREFIX + "connections", "Subscribed SockJS and raw websocket "
                                        "connections, by transport", labels=["transport"])
        for transport, count in sorted(hub.by_transport.items()):
            connections.add_metric([transport], count)
        yield connections
        yield GaugeMetricFamily(PREFIX + "sessions", "SockJS sessions alive (a polling session "
                                "counts until it expires)", value=self.router.stats.sess_active)
        yield GaugeMetricFamily(PREFIX + "tcp_connections", "Open TCP connections",
                                value=limits.open)
        yield GaugeMetricFamily(PREFIX + "tcp_connections_limit", "TCP connections allowed "
                                "(--max-connections)", value=limits.max_connections)
        yield CounterMetricFamily(PREFIX + "messages_in", "Messages published (by clients and "
                                  "POST /publish)", value=hub.messages_in)
        yield CounterMetricFamily(PREFIX + "messages_out", "Messages delivered, one per "
                                  "subscriber reached", value=hub.messages_out)
        yield CounterMetricFamily(PREFIX + "flushes", "Batches sent", value=hub.flushes)
        cuts = CounterMetricFamily(PREFIX + "disconnects", "Clients cut off by the broker: too slow to "
                                   "read, publishing too fast, or no pong within --ws-ping-timeout",
                                   labels=["reason"])
        cuts.add_metric(["slow_consumer"], hub.dropped[SLOW_CONSUMER])
        cuts.add_metric(["rate_limited"], hub.dropped[TOO_MANY_MESSAGES])
        cuts.add_metric(["ping_timeout"], node.ping_timeouts)
        yield cuts
        refused = CounterMetricFamily(PREFIX + "refused_connections", "TCP connections or "
                                      "requests refused with 503, and polling or streaming sessions "
                                      "closed as they opened, by the limit reached",
                                      labels=["reason"])
        for reason, count in sorted(limits.refused.items()):
            refused.add_metric([reason], count)
        yield refused
        yield CounterMetricFamily(PREFIX + "accept_pauses", "Times the broker stopped accepting "
                                  "for a moment (out of descriptors)", value=limits.accept_pauses)
        yield GaugeMetricFamily(PREFIX + "connections_behind", "Websockets and streams holding bytes the "
                                "kernel would not take yet", value=len(self.router.behind))
        yield GaugeMetricFamily(PREFIX + "unsent_bytes", "Bytes the websockets and streams behind hold "
                                "for their clients", value=self.router.unsent_bytes())
        yield self.latency()
        yield GaugeMetricFamily(PREFIX + "history_messages", "Messages kept for clients resuming "
                                "(--history)", value=len(hub.history))
        yield CounterMetricFamily(PREFIX + "history_forgotten", "Messages that left the history, by "
                                  "its count or its age", value=hub.history.forgotten)
        once = node.idempotency
        yield CounterMetricFamily(PREFIX + "idempotent_replays", "POST /publish retries answered again, "
                                  "publishing nothing (Idempotency-Key)", value=once.replayed)
        yield CounterMetricFamily(PREFIX + "idempotent_refusals", "POST /publish refused (422): an "
                                  "Idempotency-Key reused with another request", value=once.refused)
        starts = CounterMetricFamily(PREFIX + "position_starts", "Connections with positions, by how they "
                                     "started: open, resumed, or a gap by its reason", labels=["outcome"])
        for outcome in positions.OUTCOMES:
            starts.add_metric([outcome], hub.resumes.starts[outcome])
        yield starts
        if node.drain is not None:
            yield GaugeMetricFamily(PREFIX + "draining", "1 while the broker drains its clients before it "
                                    "exits", value=int(node.drain.draining))
            yield CounterMetricFamily(PREFIX + "drain_refusals", "Requests that would have opened a session "
                                      "while draining, answered 503 for a proxy to ask another broker",
                                      value=node.drain.refused)
        if node.audience is not None and node.audience.room_count() is not None:
            yield GaugeMetricFamily(PREFIX + "audience", "Clients watching the room at every broker (here "
                                    "alone without a cluster)", value=node.audience.room_count())
        if node.ages is not None:
            yield CounterMetricFamily(PREFIX + "connection_age_closes", "Connections closed for reaching "
                                      "--max-connection-age", value=node.ages.closed)
        if node.collection is not None:
            for name, value in sorted(node.collection.stats().items()):
                yield CounterMetricFamily(PREFIX + "gc_" + name, GC_HELP.get(name, name.replace("_", " ")),
                                          value=value)
            if hasattr(node.collection, "heap"):
                yield from gc_heap_metrics(node.collection.heap())
                yield GaugeMetricFamily(PREFIX + "gc_nursery_bytes", "Size of PyPy's nursery (PYPY_GC_NURSERY, "
                                        "or the broker's own)", value=pypy_environment.stats()["bytes"])
        if node.backplane is not None:
            yield from backplane_metrics(node.backplane.stats())

    def latency(self):
        histogram = self.node.hub.latency
        family = HistogramMetricFamily(
            PREFIX + "delivery_latency_seconds",
            "Time from publish to the end of the flush that writes a message to every subscriber; "
            "each message counts at its batch's oldest message's age",
            unit="")
        family.add_metric([], [(floatToGoString(bound), count) for bound, count in histogram.cumulative()],
                          histogram.sum)
        return family


def gc_heap_metrics(heap):
    """PyPy's heap, from the collector policy's ``heap()``: each figure it has yet."""
    for key, help_text in (("used_bytes", "Bytes PyPy's GC held after the last minor collection"),
                           ("live_bytes", "Bytes live after PyPy's last major collection")):
        if heap[key] is not None:
            yield GaugeMetricFamily(PREFIX + "gc_heap_" + key, help_text, value=heap[key])


def backplane_metrics(stats):
    """Metric families for a backplane's ``stats()`` (see the rules above)."""
    for key, value in sorted(stats.items()):
        name = PREFIX + "backplane_" + key
        if key == "state":
            family = GaugeMetricFamily(name, "The backplane's state: 1 for the current one",
                                       labels=["state"])
            family.add_metric([str(value)], 1)
            yield family
        elif isinstance(value, (bool, int, float)):
            yield GaugeMetricFamily(name, "The backplane's %s" % key.replace("_", " "), value=float(value))


def registry(collector):
    """A registry of ``collector``, the process's figures and the interpreter's."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)
    ProcessCollector(registry=registry)
    PlatformCollector(registry=registry)
    return registry


class MetricsHandler(RequestHandler):
    """The registry in the format the scraper asks for (Prometheus text or OpenMetrics)."""

    def initialize(self, registry):
        self.registry = registry

    def get(self):
        encode, content_type = choose_encoder(self.request.headers.get("Accept", ""))
        self.set_header("Content-Type", content_type)
        self.set_header("Cache-Control", "no-store")
        self.finish(encode(self.registry))
