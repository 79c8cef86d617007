"""sockjs-client in Chromium through deploy/haproxy.cfg, in front of two brokers."""

import pytest

from test_transports import TRANSPORTS

# What a line sent by one browser must reach. Two brokers share no room yet, so each
# browser gets its own line from the broker holding its session: "own". Once brokers join a
# cluster through Redis (--redis), start the cluster with it and expect "all": a line sent by
# a browser on one broker reaches the browser on the other.
CLUSTER_FLAGS = ()
EXPECT = "own"


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_every_transport_works_through_haproxy(start_cluster, browser_script, transport):
    cluster = start_cluster(2, *CLUSTER_FLAGS)
    result = browser_script("transport.js", cluster.origin, transport, EXPECT)
    assert result["used"] == [transport, transport]
    assert sum(broker.stats()["messages_in"] for broker in cluster.brokers) == 2
