"""GET /metrics from real brokers, read back with prometheus-client's own parser."""

import types

from broker.ops.gc_policy import MajorCollectionTrigger
from broker.ops.metrics import BrokerCollector, backplane_metrics, families


def gc_heap_metrics(heap):
    """The families of the heap figures PyPy's collector policy states, its heap being ``heap``."""
    trigger = MajorCollectionTrigger()
    trigger.used, trigger.live = heap["used_bytes"], heap["live_bytes"]
    return [family for figure in trigger.FIGURES if figure.key.startswith("heap.")
            for family in families(figure.metric, [(figure.labels, figure.value(trigger))])]


def test_pypy_heap_figures_appear_once_the_gc_has_them():
    assert [f.name for f in gc_heap_metrics({"used_bytes": None, "live_bytes": None})] == []
    families = list(gc_heap_metrics({"used_bytes": 64 << 20, "live_bytes": None}))
    assert [(f.name, f.samples[0].value) for f in families] == [("sockjs_broker_gc_heap_used_bytes", 64 << 20)]
    families = list(gc_heap_metrics({"used_bytes": 64 << 20, "live_bytes": 40 << 20}))
    assert [f.name for f in families] == ["sockjs_broker_gc_heap_used_bytes", "sockjs_broker_gc_heap_live_bytes"]


def test_a_backplane_shows_its_state_and_numbers():
    families = {f.name: f for f in backplane_metrics({"state": "reconnecting", "lag": 42, "connected": False,
                                                      "last_error": "Connection refused"})}
    assert set(families) == {"sockjs_broker_backplane_state", "sockjs_broker_backplane_lag",
                             "sockjs_broker_backplane_connected"}
    assert [(s.labels, s.value) for s in families["sockjs_broker_backplane_state"].samples] == [
        ({"state": "reconnecting"}, 1)]
    assert families["sockjs_broker_backplane_lag"].samples[0].value == 42


def test_the_collector_asks_the_backplane_at_each_scrape():
    from broker.core.hub import Hub
    from broker.core.limits import Limits
    from broker.core.node import Node
    from broker.cluster.backplane import Backplane
    asked = []
    backplane = types.SimpleNamespace(stats=lambda: asked.append(1) or {"state": "connected"},
                                      FIGURES=Backplane.FIGURES)
    router = types.SimpleNamespace(stats=types.SimpleNamespace(sess_active=0), behind=set(), unsent_bytes=lambda: 0,
                                   FIGURES=())
    collector = BrokerCollector(Node(hub=Hub(lambda callback: None), limits=Limits(10), backplane=backplane), router)
    for _ in range(2):
        names = [family.name for family in collector.collect()]
    assert "sockjs_broker_backplane_state" in names
    assert len(asked) == 2
