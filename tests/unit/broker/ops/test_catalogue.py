"""The catalogue: every figure a part states is in /stats and in /metrics, unless it is one-sided."""

import asyncio
import dataclasses
import platform

import pytest

from broker import app, config
from broker.core.figures import KEYED_GAUGES, document
from broker.core.hub import Hub
from broker.ops import catalogue, gc_policy
from broker.ops.metrics import PREFIX, BrokerCollector
from broker.transports.tls import HandshakeFailures


class NurseryOnPyPy:
    """:mod:`broker.ops.pypy_environment` as it answers on PyPy."""

    @staticmethod
    def stats():
        return {"bytes": 4 << 20, "set_by": "broker"}


def pypy_trigger():
    trigger = gc_policy.MajorCollectionTrigger()
    trigger.after_minor(64 << 20)
    trigger.after_major(32 << 20)
    return trigger


async def every_part(collection):
    """A node and router with every part a broker may have, each figure known (none None)."""
    flags = dataclasses.replace(config.parse_args([], {}), redis="redis://127.0.0.1:6379/0",
                                max_connection_age=600.0, ws_ping_interval=25.0)
    backplane = app.cluster_backplane(flags)
    backplane.state.came_up()
    backplane.state.read_through("1700000000000-0", "1700000000000-0", 1)
    backplane.room_audience, backplane.room_brokers = 0, 1
    hub = Hub(lambda callback: None)
    node = app.make_node(flags, hub, app.connection_limits(flags, 1024), backplane, collection, HandshakeFailures())
    return node, app.make_router(flags, node)


@pytest.mark.parametrize("collection", [
    pytest.param(pypy_trigger, id="pypy-trigger"),
    pytest.param(gc_policy.FreezePolicy, id="freeze-policy"),
    pytest.param(lambda: gc_policy.CpythonFreezer(None), id="cpython-freezer",
                 marks=pytest.mark.skipif(platform.python_implementation() != "CPython",
                                          reason="CPython's collector thresholds")),
])
def test_every_figure_is_in_stats_and_metrics_unless_one_sided(collection, monkeypatch):
    monkeypatch.setattr(gc_policy, "pypy_environment", NurseryOnPyPy)
    node, router = asyncio.run(every_part(collection()))
    parts = catalogue.parts(node, router)
    assert all(part is not None for _, part in parts)
    stats = document(parts)
    families = {family.name: family for family in BrokerCollector(node, router).collect()}
    missing = []
    for place, part in parts:
        for figure in part.FIGURES:
            value = figure.value(part)
            if figure.key is not None and not (figure.optional and value is None):
                where = stats
                for name in [name for name in place.split(".") + figure.key.split(".") if name]:
                    where = where.get(name, missing) if isinstance(where, dict) else missing
                if where is missing:
                    missing.append("/stats has no %s.%s" % (place, figure.key))
            if figure.metric is None:
                continue
            name = PREFIX + figure.metric.name
            if figure.metric.kind == KEYED_GAUGES:
                shown = {key for key in families if key.startswith(name + "_")}
                wanted = {name + "_" + key for key, item in value.items()
                          if key == "state" or isinstance(item, (int, float))}
                missing += ["/metrics has no %s" % gone for gone in sorted(wanted - shown)]
            elif name not in families:
                missing.append("/metrics has no %s (%s)" % (name, figure.key))
            elif figure.labels:
                labels = dict(zip(figure.metric.labels, figure.labels))
                if not any(labels.items() <= sample.labels.items() for sample in families[name].samples):
                    missing.append("/metrics has no %s%s" % (name, labels))
    assert not missing, "\n".join(missing)


def test_a_part_the_broker_runs_without_is_left_out():
    node, router = asyncio.run(every_part(None))
    node.backplane = node.ages = node.tls = None
    places = [place for place, _ in catalogue.parts(node, router)]
    assert not {"backplane", "max_connection_age", "tls", "gc"} & set(places)
    stats = document(catalogue.parts(node, router))
    assert not {"backplane", "max_connection_age", "tls", "gc"} & set(stats)
    assert not any(family.name.startswith(PREFIX + "backplane_")
                   for family in BrokerCollector(node, router).collect())
