"""``GET /metrics``: the broker's figures in the Prometheus text format.

Rules this module keeps:

* Nothing is counted here: :class:`BrokerCollector` renders the figures the
  broker's parts state (:mod:`broker.core.figures`), in the catalogue's order
  (:mod:`broker.ops.catalogue`), reading the counters they keep anyway at
  scrape time. The hot path never calls into prometheus-client.
* A family is rendered as its :class:`broker.core.figures.Metric` says: a
  counter, a gauge, the delivery latency's histogram; a value None has no
  sample, so PyPy's heap figures appear once the GC has them (after its first
  minor, then major, collection), and the room's audience once it is known.
* Every broker has its own registry (no global state): its own figures, the
  process's (CPU, memory, open files) and the interpreter's.
* A backplane, when the broker has one, is shown from its ``stats()`` dict (its
  figure is :data:`broker.core.figures.KEYED_GAUGES`): each number as a gauge
  ``sockjs_broker_backplane_<key>``, a ``state`` string as
  ``sockjs_broker_backplane_state{state="..."} 1``. Without one, nothing.
"""

from prometheus_client import CollectorRegistry, PlatformCollector, ProcessCollector
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.exposition import choose_encoder
from prometheus_client.utils import floatToGoString
from tornado.web import RequestHandler

from broker.core.figures import COUNTER, HISTOGRAM, KEYED_GAUGES
from broker.ops import catalogue

PREFIX = "sockjs_broker_"


class BrokerCollector:
    """The figures of one broker: its ``node``'s parts (a
    :class:`broker.core.node.Node`) and its ``router``'s, as the catalogue
    lists them, each family once, at its first figure."""

    def __init__(self, node, router):
        self.node = node
        self.router = router

    def collect(self):
        read = {}
        for _, part in catalogue.parts(self.node, self.router):
            for figure in part.FIGURES:
                if figure.metric is not None:
                    read.setdefault(figure.metric, []).append((figure.labels, figure.value(part)))
        for metric, samples in read.items():
            yield from families(metric, samples)


def families(metric, samples):
    """The families of ``metric`` (a :class:`broker.core.figures.Metric`) from its figures'
    ``(label values, value)``, as the module's rules say."""
    name = PREFIX + metric.name
    if metric.kind == KEYED_GAUGES:
        for _, stats in samples:
            yield from backplane_metrics(stats, name + "_", metric.help)
        return
    if metric.kind == HISTOGRAM:
        for _, histogram in samples:
            yield latency(name, metric.help, histogram)
        return
    family = (CounterMetricFamily if metric.kind == COUNTER else GaugeMetricFamily)(name, metric.help,
                                                                                 labels=metric.labels)
    for labels, value in samples:
        if isinstance(value, dict):
            for key, item in value.items():
                family.add_metric(list(labels) + [str(key)], float(item))
        elif value is not None:
            family.add_metric(list(labels), float(value))
    if family.samples or metric.labels:
        yield family


def latency(name, help_text, histogram):
    """The family of a :class:`broker.core.meters.LatencyHistogram`."""
    family = HistogramMetricFamily(name, help_text, unit="")
    family.add_metric([], [(floatToGoString(bound), count) for bound, count in histogram.cumulative()],
                      histogram.sum)
    return family


def backplane_metrics(stats, name=PREFIX + "backplane_", subject="The backplane's"):
    """Metric families for a backplane's ``stats()`` (see the rules above)."""
    for key, value in sorted(stats.items()):
        if key == "state":
            family = GaugeMetricFamily(name + key, "%s state: 1 for the current one" % subject, labels=["state"])
            family.add_metric([str(value)], 1)
            yield family
        elif isinstance(value, (bool, int, float)):
            yield GaugeMetricFamily(name + key, "%s %s" % (subject, key.replace("_", " ")), value=float(value))


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
