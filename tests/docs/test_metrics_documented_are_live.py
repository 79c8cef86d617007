"""Every metric the documentation names, the dashboard draws or the monitoring
page lists is one a live broker exposes.

One broker, in a cluster through Redis, with ``--max-connection-age`` and
``--announce-audience``, a client connected and a message through the stream,
so that every metric of those modes has appeared. Then:

* every metric deploy/grafana-dashboard.json draws (its queries) is in its ``/metrics``;
* every metric the monitoring page lists as appearing in the modes this broker
  runs in (the catalogue, ``docs/_ext/broker_reference.py``, for this
  interpreter) is, and so is every metric of the process and the interpreter;
* every ``sockjs_broker_*`` name README.rst, BENCHMARKS.rst, ``docs/*.rst`` and
  deploy/'s files write is in it, or is one the catalogue has only in a mode
  this broker is not in (the other interpreter's collector; PyPy's heap, after
  its collections): the suite runs on both interpreters.
"""

import json
import os
import platform
import re

from prometheus_client.parser import text_string_to_metric_families

import documentation
from checkout import ROOT
from sockjs_clients import WebSocketClient, wait_until

DASHBOARD = os.path.join(ROOT, "deploy", "grafana-dashboard.json")
METRIC = re.compile(r"\b((?:sockjs_broker|process)_[a-z_]+)\b")
WRITTEN = re.compile(r"\bsockjs_broker_[a-z_]+")
INTERPRETER = "pypy" if platform.python_implementation() == "PyPy" else "cpython"
# The catalogue's modes (docs/_ext/broker_reference.py) this broker runs in.
MODES = {"redis-running", "max-connection-age", INTERPRETER}


def dashboard_metrics():
    with open(DASHBOARD) as f:
        dashboard = json.load(f)
    return {name for panel in dashboard["panels"] for target in panel["targets"]
            for name in METRIC.findall(target["expr"])}


def test_every_metric_documented_or_drawn_is_exposed(start_redis, start_broker):
    broker = start_broker("--redis", start_redis().url, "--max-connection-age", "600", "--announce-audience", "5")
    # A connection, so that the families by transport have a sample, and a message through
    # Redis, so that the backplane has a lag; then the room's count, once reported.
    client = WebSocketClient(broker.url).open()
    client.send("through the stream")
    assert client.receive() == ["through the stream"]
    wait_until(lambda: broker.stats()["audience"]["room"] == 1)
    families = list(text_string_to_metric_families(broker.request("GET", "/metrics")[1]))
    exposed = {sample.name for family in families for sample in family.samples}
    exposed |= {family.name for family in families}
    client.close()

    wanted = dashboard_metrics()
    assert len(wanted) >= 15
    problems = ["deploy/grafana-dashboard.json draws %s" % name for name in sorted(wanted - exposed)]

    reference = documentation.reference()
    catalogue = reference.metric_catalogue()
    for metric in catalogue:
        if metric.modes & MODES:
            problems += ["docs/monitoring.rst lists %s (%s)" % (sample, metric.when)
                         for sample in metric.samples if sample not in exposed]
    for metric in reference.process_metrics():
        problems += ["docs/monitoring.rst lists %s" % sample for sample in metric.samples if sample not in exposed]

    known = exposed | {name for metric in catalogue for name in (metric.name,) + metric.samples}
    for path, text in documentation.pages() + documentation.deploy_files():
        for match in WRITTEN.finditer(text):
            name = match.group(0)
            found = any(other.startswith(name) for other in known) if name.endswith("_") else name in known
            if not found:
                problems.append("%s:%d names %s" % (path, documentation.line_of(text, match.start()), name))
    assert not problems, "not in a live broker's /metrics:\n" + "\n".join(problems)
