"""Every metric the documentation names, the dashboard draws or the monitoring
page lists is one a live broker exposes.

One broker, in a cluster through Redis, with ``--max-connection-age`` and
``--announce-audience``, a client connected and a message through the stream,
so that every metric of those modes has appeared. Then:

* every metric deploy/grafana-dashboard.json draws (its queries) or lists brokers by (its
  ``job`` and ``instance`` variables) is in its ``/metrics``;
* every metric the monitoring page lists as appearing in the modes this broker
  runs in (the catalogue, ``docs/_ext/broker_reference.py``, for this
  interpreter) is, and so is every metric of the process and the interpreter;
* every ``sockjs_broker_*`` name README.rst, BENCHMARKS.rst, ``docs/*.rst`` and
  deploy/'s files write is in it, or is one the catalogue has only in a mode
  this broker is not in (the other interpreter's collector; PyPy's heap, after
  its collections): the suite runs on both interpreters.

And, without a broker, every metric a panel of the dashboard queries is selected by the
dashboard's ``job`` and ``instance`` variables, so that choosing brokers there changes every
panel.
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
# What every metric of every panel's query is selected by: the dashboard's two variables.
SELECTOR = '{job=~"$job",instance=~"$instance"}'


def dashboard():
    with open(DASHBOARD) as f:
        return json.load(f)


def panel_queries():
    """``(panel title, query)`` of every query of every panel of the dashboard."""
    return [(panel["title"], target["expr"]) for panel in dashboard()["panels"] for target in panel["targets"]]


def variable_queries():
    """``{name: query}`` of the dashboard's variables that Prometheus answers (the query
    Grafana runs, which its editor shows as the ``definition``)."""
    variables = [variable for variable in dashboard()["templating"]["list"] if variable["type"] == "query"]
    assert all(variable["definition"] == variable["query"]["query"] for variable in variables), variables
    return {variable["name"]: variable["query"]["query"] for variable in variables}


def dashboard_metrics():
    queries = [query for _, query in panel_queries()] + list(variable_queries().values())
    return {name for query in queries for name in METRIC.findall(query)}


def test_every_panel_query_selects_the_chosen_job_and_instance():
    variables = variable_queries()
    assert set(variables) == {"job", "instance"}, variables
    assert re.fullmatch(r"label_values\(sockjs_broker_[a-z_]+, job\)", variables["job"]), variables["job"]
    assert re.fullmatch(r'label_values\(sockjs_broker_[a-z_]+\{job=~"\$job"\}, instance\)',
                        variables["instance"]), variables["instance"]
    unselected = ["%s: %s" % (title, query) for title, query in panel_queries()
                  for match in METRIC.finditer(query) if not query.startswith(SELECTOR, match.end())]
    assert not unselected, "queries not selecting %s:\n%s" % (SELECTOR, "\n".join(unselected))


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
