"""deploy/grafana-dashboard.json: every metric it draws is one a live broker exposes."""

import json
import os
import re

from prometheus_client.parser import text_string_to_metric_families

from checkout import ROOT
from sockjs_clients import WebSocketClient, wait_until

DASHBOARD = os.path.join(ROOT, "deploy", "grafana-dashboard.json")
METRIC = re.compile(r"\b((?:sockjs_broker|process)_[a-z_]+)\b")


def dashboard_metrics():
    with open(DASHBOARD) as f:
        dashboard = json.load(f)
    return {name for panel in dashboard["panels"] for target in panel["targets"]
            for name in METRIC.findall(target["expr"])}


def test_every_metric_of_the_dashboard_is_exposed(start_redis, start_broker):
    broker = start_broker("--redis", start_redis().url, "--max-connection-age", "600", "--announce-audience", "5")
    # A connection, so that the families by transport have a sample, and a message through
    # Redis, so that the backplane has a lag; then the room's count, once reported.
    client = WebSocketClient(broker.url).open()
    client.send("through the stream")
    assert client.receive() == ["through the stream"]
    wait_until(lambda: broker.stats()["audience"]["room"] == 1)
    exposed = {sample.name for family in text_string_to_metric_families(broker.request("GET", "/metrics")[1])
               for sample in family.samples}
    wanted = dashboard_metrics()
    assert len(wanted) >= 15
    assert sorted(wanted - exposed) == []
    client.close()
